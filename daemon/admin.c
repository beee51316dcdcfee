// SPDX-License-Identifier: GPL-2.0
/*
 * The admin API (admin certificates only): policies, direct assignments,
 * hosts. Every change is in the audit log with the operator's certificate
 * name. Rollouts (waves and gates) build on the assignments.
 */
#include <errno.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admin-json.h"
#include "json-text.h"
#include "kmemctl/v1/policy.pb-c.h"
#include "log.h"
#include "message-ids.h"
#include "macro.h"
#include "policydoc.h"
#include "report-check.h"
#include "selector.h"
#include "server.h"
#include "sign.h"
#include "store.h"
#include "text.h"

void reply_rows(struct evhttp_request *req, struct kmemd *k,
		int (*build)(struct store *, json_t **))
{
	json_t *rows = NULL;
	int r = build(k->store, &rows);

	if (r < 0) {
		log_error("store query failed: %s", k->store->ops->error(k->store));
		reply_error(req, HTTP_INTERNAL, "Internal Server Error", "the store failed");
		return;
	}
	reply_json(req, HTTP_OK, "OK", rows);
}

void handle_policies_get(struct evhttp_request *req, struct kmemd *k,
			 const struct tls_identity *peer)
{
	(void)peer;
	reply_rows(req, k, admin_json_policies);
}

static const char *verify_error(int r)
{
	switch (r) {
	case -ENOKEY:
		return "signed by a key kmemd does not pin ([policy] keys_dir)";
	case -EKEYEXPIRED:
		return "the bundle has expired";
	case -ETIME:
		return "the bundle is issued in the future";
	default:
		return "not a validly signed policy (signature or encoding)";
	}
}

/* A signed bundle as `kmemctl policy sign` writes it: checked, then kept as is. */
static int signed_policy(struct evhttp_request *req, struct kmemd *k, const uint8_t *body,
			 size_t len, struct store_policy *p, char *why, size_t whylen)
{
	Kmemctl__V1__PolicyPayload *payload = NULL;
	Kmemctl__V1__SignedPolicy *sp;
	int r;

	(void)req;
	r = policy_verify(k->keys, body, len, time(NULL), &payload);
	if (r < 0) {
		snprintf(why, whylen, "%s", verify_error(r));
		return r;
	}
	sp = kmemctl__v1__signed_policy__unpack(NULL, len, body);
	snprintf(p->name, sizeof(p->name), "%s", payload->name);
	p->version = payload->version;
	p->document_json = strdup(payload->document_json);
	snprintf(p->signer, sizeof(p->signer), "%s", payload->signer);
	snprintf(p->key_id, sizeof(p->key_id), "%s", sp ? sp->key_id : "");
	p->bundle = malloc(len);
	if (p->bundle)
		memcpy(p->bundle, body, len);
	p->bundle_len = len;
	if (sp)
		kmemctl__v1__signed_policy__free_unpacked(sp, NULL);
	kmemctl__v1__policy_payload__free_unpacked(payload, NULL);
	return p->document_json && p->bundle ? 0 : -ENOMEM;
}

/* {"name", "version", "document"}: only where require_signature = no. */
static int unsigned_policy(struct kmemd *k, const uint8_t *body, size_t len, struct store_policy *p,
			   char *why, size_t whylen)
{
	json_t *o, *doc = NULL;
	const char *name = NULL;
	json_int_t version = 0;
	json_error_t je;
	int r = -EINVAL;

	if (k->cfg->require_signature) {
		snprintf(why, whylen,
			 "kmemd takes signed bundles only (%s, from `kmemctl policy "
			 "sign`)",
			 PROTOBUF_TYPE);
		return -EPERM;
	}
	o = json_loadb((const char *)body, len, JSON_REJECT_DUPLICATES, &je);
	if (!o || json_unpack_ex(o, &je, JSON_STRICT, "{s:s, s:I, s:o}", "name", &name, "version",
				 &version, "document", &doc) < 0) {
		snprintf(why, whylen, "want {\"name\", \"version\", \"document\"}: %s", je.text);
		goto out;
	}
	if (version < 1) {
		snprintf(why, whylen, "\"version\" must be a positive integer");
		goto out;
	}
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->version = (uint64_t)version;
	p->document_json = json_dumps(doc, JSON_COMPACT);
	r = p->document_json ? 0 : -ENOMEM;
out:
	json_decref(o);
	return r;
}

void handle_policies_post(struct evhttp_request *req, struct kmemd *k,
			  const struct tls_identity *peer)
{
	struct store_policy p = { 0 };
	struct policy_doc doc;
	char why[512], detail[256];
	const uint8_t *body;
	size_t len;
	int r;

	body = request_body(req, &len);
	if (!body) {
		reply_error(req, HTTP_BADREQUEST, "Bad Request", "empty body");
		return;
	}
	if (content_type_is(req, PROTOBUF_TYPE)) {
		r = signed_policy(req, k, body, len, &p, why, sizeof(why));
	} else if (content_type_is(req, JSON_TYPE)) {
		r = unsigned_policy(k, body, len, &p, why, sizeof(why));
	} else {
		reply_error(req, 415, "Unsupported Media Type",
			    "send a signed bundle as " PROTOBUF_TYPE);
		return;
	}
	if (r == 0 && !policy_name_valid(p.name)) {
		snprintf(why, sizeof(why), "policy name must be " POLICY_NAME_RULE);
		r = -EINVAL;
	}
	if (r == 0)
		r = policy_doc_parse(p.document_json, strlen(p.document_json), &doc, why,
				     sizeof(why));
	if (r == 0)
		r = policy_doc_check_known(&doc, why, sizeof(why));
	if (r == 0) {
		r = k->store->ops->policy_add(k->store, &p, kmemd_now_ms());
		if (r == -EEXIST)
			snprintf(why, sizeof(why),
				 "policy %s version %llu exists; versions are immutable: use a "
				 "higher one",
				 p.name, (unsigned long long)p.version);
		else if (r < 0)
			snprintf(why, sizeof(why), "the store failed: %s",
				 k->store->ops->error(k->store));
	}
	if (r < 0) {
		reply_error(req,
			    r == -EEXIST ? 409 :
			    r == -EIO	 ? HTTP_INTERNAL :
					   HTTP_BADREQUEST,
			    r == -EEXIST ? "Conflict" : "Bad Request", why);
		store_policy_clear(&p);
		return;
	}
	snprintf(detail, sizeof(detail), "%s/%llu%s", p.name, (unsigned long long)p.version,
		 p.bundle ? "" : " (unsigned)");
	kmemd_audit(k, MID_POLICY_UPLOADED, peer->cn, "policy.add", NULL, detail);
	reply_json(req, 201, "Created",
		   json_pack("{s:s, s:I, s:b}", "name", p.name, "version", (json_int_t)p.version,
			     "signed", p.bundle != NULL));
	store_policy_clear(&p);
}

void handle_assignments_post(struct evhttp_request *req, struct kmemd *k,
			     const struct tls_identity *peer)
{
	struct store_assignment a = { 0 };
	struct store_policy p;
	struct selector sel;
	json_t *o, *selector = NULL;
	const char *policy = NULL;
	json_int_t version = 0;
	char why[256], detail[512];
	const uint8_t *body;
	json_error_t je;
	int64_t id;
	size_t len;
	int r;

	body = request_json(req, &len);
	if (!body)
		return;
	o = json_loadb((const char *)body, len, JSON_REJECT_DUPLICATES, &je);
	if (!o || json_unpack_ex(o, &je, JSON_STRICT, "{s:s, s:I, s:o}", "policy", &policy,
				 "version", &version, "selector", &selector) < 0) {
		snprintf(why, sizeof(why), "want {\"policy\", \"version\", \"selector\"}: %s",
			 je.text);
		goto bad;
	}
	a.selector_json = json_dumps(selector, JSON_COMPACT | JSON_SORT_KEYS);
	if (!a.selector_json ||
	    selector_parse(a.selector_json, strlen(a.selector_json), &sel, why, sizeof(why)) < 0)
		goto bad;
	if (version < 1 || k->store->ops->policy_get(k->store, policy, (uint64_t)version, &p) < 0) {
		snprintf(why, sizeof(why), "no policy %s version %lld", policy, (long long)version);
		json_decref(o);
		free(a.selector_json);
		reply_error(req, HTTP_NOTFOUND, "Not Found", why);
		return;
	}
	r = p.bundle ? 0 : -EPERM;
	store_policy_clear(&p);
	if (r < 0) {
		snprintf(why, sizeof(why),
			 "policy %s version %lld is unsigned: agents run signed "
			 "policies only",
			 policy, (long long)version);
		json_decref(o);
		free(a.selector_json);
		reply_error(req, 409, "Conflict", why);
		return;
	}
	snprintf(a.policy, sizeof(a.policy), "%s", policy);
	a.version = (uint64_t)version;
	r = k->store->ops->assign(k->store, &a, kmemd_now_ms(), &id);
	if (r < 0) {
		json_decref(o);
		free(a.selector_json);
		reply_error(req, HTTP_INTERNAL, "Internal Server Error", "the store failed");
		return;
	}
	snprintf(detail, sizeof(detail), "%s/%llu to %s", a.policy, (unsigned long long)a.version,
		 a.selector_json);
	kmemd_audit(k, MID_POLICY_ASSIGNED, peer->cn, "policy.assign", NULL, detail);
	kmemd_desired_refresh(k);
	reply_json(req, 201, "Created", json_pack("{s:I}", "id", (json_int_t)id));
	json_decref(o);
	free(a.selector_json);
	return;
bad:
	json_decref(o);
	free(a.selector_json);
	reply_error(req, HTTP_BADREQUEST, "Bad Request", why);
}

/* {"host": ID} of a request; NULL when it is not that (400 sent). json: free it after. */
static const char *host_body(struct evhttp_request *req, json_t **json)
{
	const char *host = NULL;
	const uint8_t *body;
	json_error_t je;
	size_t len;

	*json = NULL;
	body = request_json(req, &len);
	if (!body)
		return NULL;
	*json = json_loadb((const char *)body, len, JSON_REJECT_DUPLICATES, &je);
	if (!*json || json_unpack_ex(*json, &je, JSON_STRICT, "{s:s}", "host", &host) < 0 ||
	    !text_name_valid(host, REPORT_HOST_ID_MAX)) {
		json_decref(*json);
		*json = NULL;
		reply_error(req, HTTP_BADREQUEST, "Bad Request",
			    "want {\"host\": ID} with an id of 1 to 64 of " TEXT_NAME_CHARSET);
		return NULL;
	}
	return host;
}

/* {"host": ID} done by op, audited as action with mid; answered {"host", key: true}. */
static void host_action(struct evhttp_request *req, struct kmemd *k,
			const struct tls_identity *peer, int (*op)(struct store *, const char *),
			const char *mid, const char *action, const char *key)
{
	json_t *o;
	const char *host = host_body(req, &o);

	if (!host)
		return;
	if (op(k->store, host) < 0) {
		json_decref(o);
		reply_error(req, HTTP_INTERNAL, "Internal Server Error", "the store failed");
		return;
	}
	kmemd_audit(k, mid, peer->cn, action, host, host);
	reply_json(req, HTTP_OK, "OK", json_pack("{s:s, s:b}", "host", host, key, 1));
	json_decref(o);
}

static int revoke_now(struct store *st, const char *host)
{
	return st->ops->revoke(st, host, kmemd_now_ms());
}

static int reenroll(struct store *st, const char *host)
{
	return st->ops->reenroll(st, host);
}

/* {"host": ID}: its certificate is no longer taken for reports. */
void handle_revoke_post(struct evhttp_request *req, struct kmemd *k,
			const struct tls_identity *peer)
{
	host_action(req, k, peer, revoke_now, MID_HOST_REVOKED, "host.revoke", "revoked");
}

/* {"host": ID}: the id may enroll once more (a reinstall), taking it over. */
void handle_reenroll_post(struct evhttp_request *req, struct kmemd *k,
			  const struct tls_identity *peer)
{
	host_action(req, k, peer, reenroll, MID_HOST_REENROLL, "host.reenroll", "reenroll");
}

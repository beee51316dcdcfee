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
#include "macro.h"
#include "policydoc.h"
#include "report-check.h"
#include "requests.h"
#include "selector.h"
#include "revocations.h"
#include "server.h"
#include "sign.h"
#include "store.h"
#include "text.h"

void reply_rows(struct http_request *req, struct kmemd *k, int (*build)(struct store *, json_t **))
{
	json_t *rows = NULL;
	int r = build(k->store, &rows);

	if (r < 0) {
		reply_store_failed(req, k);
		return;
	}
	reply_json(req, HTTP_OK, "OK", rows);
}

/* [?retired=1]: retired versions too. */
void handle_policies_get(struct http_request *req, struct kmemd *k, const struct tls_identity *peer)
{
	_cleanup_query_ struct evkeyvalq q = { 0 };
	int64_t retired = 0;
	json_t *rows = NULL;

	(void)peer;
	if (!request_query(req, &q, "want [?retired=0|1]"))
		return;
	if (query_number(evhttp_find_header(&q, "retired"), 1, &retired) < 0) {
		reply_error(req, HTTP_BADREQUEST, "Bad Request", "retired is 0 or 1");
		return;
	}
	if (admin_json_policies_retired(k->store, retired, &rows) < 0) {
		reply_store_failed(req, k);
		return;
	}
	reply_json(req, HTTP_OK, "OK", rows);
}

/* {"name", "version"}: a version nothing uses retired. */
void handle_policy_retire(struct http_request *req, struct kmemd *k,
			  const struct tls_identity *peer)
{
	const char *name = NULL;
	json_int_t version = 0;
	char why[256] = "", msg[384];
	_cleanup_json_ json_t *o = request_json_unpack(req, "want {\"name\", \"version\"}", false,
						       "{s:s, s:I}", "name", &name, "version",
						       &version);
	int r;

	(void)peer;
	if (!o)
		return;
	r = version < 1 ? -ENOENT :
			  k->store->ops->policy_retire(k->store, name, (uint64_t)version,
						       kmemd_now_ms(), why, sizeof(why));
	if (r == -ENOENT || r == -EBUSY) {
		snprintf(msg, sizeof(msg),
			 r == -ENOENT ? "no policy %s version %lld%s" :
					"policy %s version %lld is in use: %s",
			 name, (long long)version, why);
		reply_error(req, r == -ENOENT ? HTTP_NOTFOUND : 409,
			    r == -ENOENT ? "Not Found" : "Conflict", msg);
		return;
	}
	if (r < 0) {
		reply_store_failed(req, k);
		return;
	}
	audit_detail(req, NULL, "%s/%lld", name, (long long)version);
	reply_json(req, HTTP_OK, "OK",
		   json_pack("{s:s, s:I, s:b}", "name", name, "version", version, "retired", 1));
}

void verify_reason(int r, const char *what, char *why, size_t len)
{
	switch (r) {
	case -ENOKEY:
		snprintf(why, len, "signed by a key kmemd does not pin ([policy] keys_dir)");
		break;
	case -EKEYEXPIRED:
		snprintf(why, len, "the bundle has expired");
		break;
	case -ETIME:
		snprintf(why, len, "the bundle is issued in the future");
		break;
	default:
		snprintf(why, len, "not a validly signed %s (signature or encoding)", what);
	}
}

/* A signed bundle as `kmemctl policy sign` writes it: checked, then kept as is. */
static int signed_policy(struct http_request *req, struct kmemd *k, const uint8_t *body, size_t len,
			 struct store_policy *p, char *why, size_t whylen)
{
	_cleanup_pb_ Kmemctl__V1__PolicyPayload *payload = NULL;
	_cleanup_pb_ Kmemctl__V1__SignedPolicy *sp = NULL;
	int r;

	(void)req;
	r = policy_verify(k->keys, body, len, time(NULL), &payload);
	if (r < 0) {
		verify_reason(r, "policy", why, whylen);
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
	return p->document_json && p->bundle ? 0 : -ENOMEM;
}

/* {"name", "version", "document"}: only where require_signature = no. */
static int unsigned_policy(struct kmemd *k, const uint8_t *body, size_t len, struct store_policy *p,
			   char *why, size_t whylen)
{
	_cleanup_json_ json_t *o = NULL;
	json_t *doc = NULL;
	const char *name = NULL;
	json_int_t version = 0;
	json_error_t je;
	char near[4 * JSON_ERROR_TEXT_LENGTH]; /* jansson quotes the input, control bytes too */

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
		snprintf(why, whylen, "want {\"name\", \"version\", \"document\"}: %s",
			 text_escape(je.text, near, sizeof(near)));
		return -EINVAL;
	}
	if (version < 1) {
		snprintf(why, whylen, "\"version\" must be a positive integer");
		return -EINVAL;
	}
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->version = (uint64_t)version;
	p->document_json = json_dumps(doc, JSON_COMPACT);
	return p->document_json ? 0 : -ENOMEM;
}

void handle_policies_post(struct http_request *req, struct kmemd *k,
			  const struct tls_identity *peer)
{
	_cleanup_(store_policy_clear) struct store_policy p = { 0 };
	struct policy_doc doc;
	char why[512];
	const uint8_t *body;
	size_t len;
	int r;

	(void)peer;
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
		return;
	}
	audit_detail(req, NULL, "%s/%llu%s", p.name, (unsigned long long)p.version,
		     p.bundle ? "" : " (unsigned)");
	reply_json(req, 201, "Created",
		   json_pack("{s:s, s:I, s:b}", "name", p.name, "version", (json_int_t)p.version,
			     "signed", p.bundle != NULL));
}

void handle_assignments_post(struct http_request *req, struct kmemd *k,
			     const struct tls_identity *peer)
{
	_cleanup_(store_policy_clear) struct store_policy p = { 0 };
	_cleanup_free_ char *selector_json = NULL;
	struct store_assignment a = { 0 };
	_cleanup_json_ json_t *o = NULL;
	json_t *selector = NULL;
	const char *policy = NULL;
	json_int_t version = 0;
	struct selector sel;
	char why[256] = "out of memory";
	int64_t id;

	(void)peer;
	o = request_json_unpack(req, "want {\"policy\", \"version\", \"selector\"}", true,
				"{s:s, s:I, s:o}", "policy", &policy, "version", &version,
				"selector", &selector);
	if (!o)
		return;
	selector_json = json_dumps(selector, JSON_COMPACT | JSON_SORT_KEYS);
	if (!selector_json ||
	    selector_parse(selector_json, strlen(selector_json), &sel, why, sizeof(why)) < 0) {
		reply_error(req, HTTP_BADREQUEST, "Bad Request", why);
		return;
	}
	if (version < 1 || k->store->ops->policy_get(k->store, policy, (uint64_t)version, &p) < 0) {
		snprintf(why, sizeof(why), "no policy %s version %lld", policy, (long long)version);
		reply_error(req, HTTP_NOTFOUND, "Not Found", why);
		return;
	}
	if (!p.bundle || p.retired_ms != STORE_NULL) {
		snprintf(why, sizeof(why),
			 p.bundle ? "policy %s version %lld is retired" :
				    "policy %s version %lld is unsigned: agents run signed "
				    "policies only",
			 policy, (long long)version);
		reply_error(req, 409, "Conflict", why);
		return;
	}
	snprintf(a.policy, sizeof(a.policy), "%s", policy);
	a.version = (uint64_t)version;
	a.selector_json = selector_json;
	if (k->store->ops->assign(k->store, &a, kmemd_now_ms(), &id) < 0) {
		reply_error(req, HTTP_INTERNAL, "Internal Server Error", "the store failed");
		return;
	}
	audit_detail(req, NULL, "%s/%llu to %s", a.policy, (unsigned long long)a.version,
		     a.selector_json);
	kmemd_desired_refresh(k);
	reply_json(req, 201, "Created", json_pack("{s:I}", "id", (json_int_t)id));
}

/* {"host": ID} done by op; answered {"host", key: true}. */
static void host_action(struct http_request *req, struct kmemd *k,
			int (*op)(struct store *, const char *), const char *key)
{
	static const char want[] =
		"want {\"host\": ID} with an id of 1 to 64 of " TEXT_NAME_CHARSET;
	const char *host = NULL;
	_cleanup_json_ json_t *o = request_json_unpack(req, want, false, "{s:s}", "host", &host);

	if (!o)
		return;
	if (!text_name_valid(host, REPORT_HOST_ID_MAX)) {
		reply_error(req, HTTP_BADREQUEST, "Bad Request", want);
		return;
	}
	if (op(k->store, host) < 0) {
		reply_error(req, HTTP_INTERNAL, "Internal Server Error", "the store failed");
		return;
	}
	audit_detail(req, host, "%s", host);
	reply_json(req, HTTP_OK, "OK", json_pack("{s:s, s:b}", "host", host, key, 1));
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
void handle_revoke_post(struct http_request *req, struct kmemd *k, const struct tls_identity *peer)
{
	(void)peer;
	k->revocations++;
	host_action(req, k, revoke_now, "revoked");
	revocations_close(k);
}

/* {"host": ID}: the id may enroll once more (a reinstall), taking it over. */
void handle_reenroll_post(struct http_request *req, struct kmemd *k,
			  const struct tls_identity *peer)
{
	(void)peer;
	host_action(req, k, reenroll, "reenroll");
}

void handle_assignments_get(struct http_request *req, struct kmemd *k,
			    const struct tls_identity *peer)
{
	(void)peer;
	reply_rows(req, k, admin_json_assignments);
}

/* {"id": N}: the assignment decides nothing from now on. */
void handle_assignment_delete(struct http_request *req, struct kmemd *k,
			      const struct tls_identity *peer)
{
	json_int_t id = 0;
	_cleanup_json_ json_t *o =
		request_json_unpack(req, "want {\"id\": N}", false, "{s:I}", "id", &id);
	int r;

	(void)peer;
	if (!o)
		return;
	r = k->store->ops->assignment_delete(k->store, id);
	if (r == -ENOENT) {
		reply_error(req, HTTP_NOTFOUND, "Not Found", "no such assignment");
		return;
	}
	if (r < 0) {
		reply_store_failed(req, k);
		return;
	}
	audit_detail(req, NULL, "assignment %lld", (long long)id);
	kmemd_desired_refresh(k);
	reply_json(req, HTTP_OK, "OK", json_pack("{s:I, s:b}", "id", id, "deleted", 1));
}

/* How long a host must have been silent to be forgotten: not one that is alive. */
#define FORGET_SILENT_MS (3600LL * 1000)

/* {"host": ID}: a decommissioned host forgotten. */
void handle_forget_post(struct http_request *req, struct kmemd *k, const struct tls_identity *peer)
{
	static const char want[] =
		"want {\"host\": ID} with an id of 1 to 64 of " TEXT_NAME_CHARSET;
	const char *host = NULL;
	_cleanup_json_ json_t *o = request_json_unpack(req, want, false, "{s:s}", "host", &host);
	int r;

	(void)peer;
	if (!o)
		return;
	if (!text_name_valid(host, REPORT_HOST_ID_MAX)) {
		reply_error(req, HTTP_BADREQUEST, "Bad Request", want);
		return;
	}
	r = k->store->ops->host_forget(k->store, host, kmemd_now_ms() - FORGET_SILENT_MS);
	if (r == -ENOENT || r == -EBUSY) {
		reply_error(req, r == -ENOENT ? HTTP_NOTFOUND : 409,
			    r == -ENOENT ? "Not Found" : "Conflict",
			    r == -ENOENT ? "kmemd knows no such host" :
					   "the host reported within the hour: stop its agent, or "
					   "revoke it, and forget it once it is silent");
		return;
	}
	if (r < 0) {
		reply_store_failed(req, k);
		return;
	}
	audit_detail(req, host, "%s", host);
	reply_json(req, HTTP_OK, "OK", json_pack("{s:s, s:b}", "host", host, "forgotten", 1));
}

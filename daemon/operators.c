// SPDX-License-Identifier: GPL-2.0
/* Operators' identities and their revocation (operators.h). */
#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <string.h>

#include "admin-json.h"
#include "audit.h"
#include "conn.h"
#include "http.h"
#include "json-text.h"
#include "kmemd.h"
#include "log.h"
#include "operators.h"
#include "requests.h"
#include "revocations.h"
#include "server.h"
#include "store.h"
#include "text.h"

/* Certificates noted at a time: as many as kmemd's default max_operators. */
#define OPERATORS_PENDING 64
/* A PEM certificate is a few KiB; a chain of them is not one certificate. */
#define CERT_PEM_MAX (16U << 10)

static void operator_of(const struct tls_identity *id, enum route_role role,
			struct store_operator *o)
{
	memset(o, 0, sizeof(*o));
	snprintf(o->fingerprint, sizeof(o->fingerprint), "%s", id->fingerprint);
	snprintf(o->name, sizeof(o->name), "%s", id->cn);
	snprintf(o->role, sizeof(o->role), "%s", role == ROLE_ANY ? "" : router_role_name(role));
	o->not_after_ms = (int64_t)id->not_after * 1000;
}

/*
 * The certificates used since the last operators_flush(): noting one is a
 * write, and a request must not wait for the store's write lock (another
 * writer may hold it for a while) to read. One loop: no lock.
 */
static struct {
	struct store_operator o[OPERATORS_PENDING];
	int64_t last_ms[OPERATORS_PENDING];
	size_t n;
	struct log_ratelimit rl;
} pending = { .rl = { .interval_ms = 60000, .burst = 1 } };

static void remember(const struct tls_identity *id, enum route_role role)
{
	size_t i;

	for (i = 0; i < pending.n; i++)
		if (!strcmp(pending.o[i].fingerprint, id->fingerprint))
			break;
	if (i == pending.n) {
		/* more certificates in one tick than connections allow: the first ones wait */
		if (pending.n == OPERATORS_PENDING)
			return;
		operator_of(id, role, &pending.o[pending.n++]);
	}
	pending.last_ms[i] = kmemd_now_ms();
}

void operators_flush(struct kmemd *k)
{
	size_t i, kept = 0;

	for (i = 0; i < pending.n; i++) {
		if (k->store->ops->operator_seen(k->store, &pending.o[i], pending.last_ms[i]) == 0)
			continue;
		log_ratelimited(&pending.rl, LOG_WARNING,
				"operator certificate %s of '%s' not noted yet: %s",
				pending.o[i].fingerprint, pending.o[i].name,
				k->store->ops->error(k->store));
		pending.o[kept] = pending.o[i];
		pending.last_ms[kept++] = pending.last_ms[i];
	}
	pending.n = kept;
}

bool operators_admit(struct kmemd *k, struct http_request *req, const struct tls_identity *id,
		     enum route_role role)
{
	int r = k->store->ops->operator_revoked(k->store, id->fingerprint);

	if (r < 0) {
		reply_store_failed(req, k);
		return false;
	}
	if (r > 0) {
		k->operators_refused++;
		reply_text(req, 403, "Forbidden", CONN_TEXT_REVOKED_OPERATOR);
		return false;
	}
	remember(id, role);
	return true;
}

void handle_whoami(struct http_request *req, struct kmemd *k, const struct tls_identity *peer)
{
	enum route_role role = router_caller_role(req);

	(void)k;
	reply_json(req, HTTP_OK, "OK",
		   json_pack("{s:o, s:s, s:s, s:I, s:b, s:o}", "name", json_text(peer->cn), "role",
			     router_role_name(role), "fingerprint", peer->fingerprint,
			     "not_after_ms", (json_int_t)peer->not_after * 1000, "may_change",
			     role == ROLE_OPERATOR, "routes", router_allowed(role)));
}

void handle_operators_get(struct http_request *req, struct kmemd *k,
			  const struct tls_identity *peer)
{
	json_t *rows = NULL;

	(void)peer;
	operators_flush(k);
	if (admin_json_operators(k->store, &rows) < 0) {
		reply_store_failed(req, k);
		return;
	}
	audit_detail(req, NULL, "%zu operator certificates", json_array_size(rows));
	reply_json(req, HTTP_OK, "OK", json_pack("{s:o}", "operators", rows));
}

/* A PEM certificate's identity; false when pem is not exactly one certificate. */
static bool certificate_parse(const char *pem, struct tls_identity *id)
{
	BIO *b;
	X509 *x;
	bool ok;

	if (strlen(pem) > CERT_PEM_MAX)
		return false;
	b = BIO_new_mem_buf(pem, -1);
	x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
	ok = x && tls_cert_identity(x, id) == 0;
	/* a second certificate after the first: which one was meant? */
	if (ok) {
		X509 *more = PEM_read_bio_X509(b, NULL, NULL, NULL);

		ok = !more;
		X509_free(more);
	}
	ERR_clear_error();
	X509_free(x);
	BIO_free(b);
	return ok;
}

static void revoke_name(struct http_request *req, struct kmemd *k, const char *by, const char *name)
{
	char why[256];
	uint64_t n;
	int r;

	if (!text_valid(name, 64) || !*name) {
		reply_error(req, HTTP_BADREQUEST, "Bad Request",
			    "\"name\" is a certificate's CN, 1 to 64 printable characters");
		return;
	}
	r = k->store->ops->operator_revoke_name(k->store, name, by, kmemd_now_ms(), &n);
	if (r == -ENOENT) {
		snprintf(why, sizeof(why),
			 "kmemd has seen no operator certificate named '%s': revoke it by its "
			 "file or fingerprint",
			 name);
		reply_error(req, HTTP_NOTFOUND, "Not Found", why);
		return;
	}
	if (r < 0) {
		reply_store_failed(req, k);
		return;
	}
	revocations_close(k);
	audit_detail(req, NULL, "every certificate of '%s' (%llu newly)", name,
		     (unsigned long long)n);
	reply_json(req, HTTP_OK, "OK",
		   json_pack("{s:o, s:I}", "name", json_text(name), "revoked", (json_int_t)n));
}

static void revoke_one(struct http_request *req, struct kmemd *k, const char *by,
		       const struct store_operator *o)
{
	int r = k->store->ops->operator_revoke(k->store, o, by, kmemd_now_ms());

	if (r < 0) {
		reply_store_failed(req, k);
		return;
	}
	revocations_close(k);
	audit_detail(req, NULL, "certificate %s%s%s%s%s", o->fingerprint, o->name[0] ? " of '" : "",
		     o->name, o->name[0] ? "'" : "", r ? "" : " (revoked already)");
	reply_json(req, HTTP_OK, "OK",
		   json_pack("{s:s, s:o, s:I}", "fingerprint", o->fingerprint, "name",
			     o->name[0] ? json_text(o->name) : json_null(), "revoked",
			     (json_int_t)r));
}

void handle_operator_revoke(struct http_request *req, struct kmemd *k,
			    const struct tls_identity *peer)
{
	static const char want[] = "want one of {\"name\": CN}, {\"fingerprint\": SHA-256 hex} or "
				   "{\"certificate\": PEM}";
	const char *name = NULL, *fp = NULL, *pem = NULL;
	_cleanup_json_ json_t *o = request_json_unpack(req, want, true, "{s?s, s?s, s?s}", "name",
						       &name, "fingerprint", &fp, "certificate",
						       &pem);
	struct store_operator op = { .not_after_ms = STORE_NULL };
	struct tls_identity id;
	enum route_role role;

	if (!o)
		return;
	if (!!name + !!fp + !!pem != 1) {
		reply_error(req, HTTP_BADREQUEST, "Bad Request", want);
		return;
	}
	if (name) {
		/* every certificate of the name used so far, those of this tick too */
		operators_flush(k);
		revoke_name(req, k, peer->cn, name);
		return;
	}
	if (fp && !fingerprint_parse(fp, op.fingerprint)) {
		reply_error(req, HTTP_BADREQUEST, "Bad Request",
			    "\"fingerprint\" is the certificate's SHA-256: 64 hex digits, colons "
			    "between bytes allowed");
		return;
	}
	if (pem) {
		if (!certificate_parse(pem, &id)) {
			reply_error(req, HTTP_BADREQUEST, "Bad Request",
				    "\"certificate\" is one X.509 certificate in PEM");
			return;
		}
		role = router_role(NULL, false, &id);
		operator_of(&id, role == ROLE_HOST ? ROLE_ANY : role, &op);
	}
	revoke_one(req, k, peer->cn, &op);
}

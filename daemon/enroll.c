// SPDX-License-Identifier: GPL-2.0
/*
 * Enrollment: POST /v1/enroll turns an enrollment secret and a CSR into a
 * host certificate from the fleet CA ([ca] key). It is the one route
 * without a client certificate, so it is rate-limited per client address,
 * and secrets are kept as SHA-256 only, expire, and can be revoked
 * (admin: POST /v1/enroll/secrets, POST /v1/enroll/secrets/revoke).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/http.h>
#include <fnmatch.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admin-json.h"
#include "audit.h"
#include "conn.h"
#include "kmemctl/v1/enroll.pb-c.h"
#include "log.h"
#include "macro.h"
#include "pki.h"
#include "requests.h"
#include "server.h"
#include "store.h"
#include "text.h"

#define SECRET_BYTES 24

/* Refusals anyone may cause, logged at a bounded rate. */
static struct log_ratelimit enroll_log;

/*
 * Before any store work, a token from this client network's bucket in
 * memory, of [enroll] rate a minute as the store's: a flood from one
 * network is refused without a store write. Networks whose keys hash to
 * one slot share it, which errs on the side of refusing.
 */
#define PRELIMIT_SLOTS 4096

static struct {
	double tokens;
	int64_t at_ms;
	bool used;
} prelimit[PRELIMIT_SLOTS];

static bool prelimit_take(const char *key, uint64_t per_min, int64_t now)
{
	typeof(&prelimit[0]) b = &prelimit[text_hash(key) % PRELIMIT_SLOTS];

	if (!b->used || now < b->at_ms)
		*b = (typeof(*b)){ .tokens = (double)per_min, .at_ms = now, .used = true };
	b->tokens += (double)(now - b->at_ms) * (double)per_min / 60000.0;
	if (b->tokens > (double)per_min)
		b->tokens = (double)per_min;
	b->at_ms = now;
	if (b->tokens < 1)
		return false;
	b->tokens -= 1;
	return true;
}

/*
 * A token from the store's bucket named key, at per_min a minute, so that
 * every kmemd on it counts the same: 1 taken, 0 limited, or the store's
 * error.
 */
static int rate_take(struct kmemd *k, const char *key, uint64_t per_min)
{
	const char *keys[] = { key };

	return k->store->ops->rate_take(k->store, keys, &per_min, 1, kmemd_now_ms());
}

void sha256_hex(const void *data, size_t len, char hex[65])
{
	unsigned char md[32];
	int i;

	EVP_Digest(data, len, md, NULL, EVP_sha256(), NULL);
	for (i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
}

static void enroll_refuse(struct http_request *req, int code, const char *reason,
			  Kmemctl__V1__Status status, const char *why)
{
	Kmemctl__V1__EnrollReply rr = KMEMCTL__V1__ENROLL_REPLY__INIT;

	rr.status = status;
	rr.reason = (char *)why;
	reply_message(req, code, reason, &rr.base);
}

/* The certificate for host from the fleet CA, as PEM; ca_pem too. */
static int issue(const struct kmemd_config *cfg, EVP_PKEY *pub, const char *host, char **pem,
		 char **ca_pem)
{
	struct pki_subject subj = { .cn = host,
				    .role = PKI_ROLE_HOST,
				    .not_before = -300,
				    .not_after = (long)cfg->host_cert_days * 86400 };
	EVP_PKEY *ca_key = NULL;
	X509 *ca = NULL, *x = NULL;
	int r;

	r = pki_read_cert(cfg->ca, &ca);
	if (r == 0)
		r = pki_read_key(cfg->ca_key, &ca_key);
	if (r == 0)
		r = pki_issue(ca, ca_key, pub, &subj, &x);
	if (r == 0)
		r = pki_cert_pem(x, pem);
	if (r == 0)
		r = pki_cert_pem(ca, ca_pem);
	EVP_PKEY_free(ca_key);
	X509_free(ca);
	X509_free(x);
	return r;
}

/*
 * Whether sec may enroll host now: 0, or a negative errno with why.
 * -EKEYREVOKED, -EKEYEXPIRED, -EDQUOT (uses spent), -EACCES (host id
 * outside its pattern).
 */
static int secret_allows(const struct store_secret *sec, const char *host, int64_t now,
			 const char **why)
{
	if (sec->revoked) {
		*why = "the enrollment secret is revoked";
		return -EKEYREVOKED;
	}
	if (sec->expires_ms && sec->expires_ms < now) {
		*why = "the enrollment secret has expired";
		return -EKEYEXPIRED;
	}
	if (sec->max_uses && sec->uses >= sec->max_uses) {
		*why = "the enrollment secret has enrolled as many hosts as it may";
		return -EDQUOT;
	}
	if (sec->host_pattern[0] && fnmatch(sec->host_pattern, host, 0)) {
		*why = "the enrollment secret may not enroll this host id";
		return -EACCES;
	}
	return 0;
}

/*
 * The request's host may enroll with its secret: 0, or the refusal sent.
 * A host id enrolls once: again only after an operator marked it (kmemctl
 * host reenroll), or anyone holding a secret could take over a host.
 */
static int enroll_allowed(struct http_request *req, struct kmemd *k,
			  const Kmemctl__V1__EnrollRequest *er, const char *addr,
			  struct store_secret *sec)
{
	char hash[65];
	const char *why = "unknown enrollment secret";
	bool taken = false, again = false;
	int code = 403, r;

	sha256_hex(er->secret, strlen(er->secret), hash);
	r = k->store->ops->secret_get(k->store, hash, sec);
	/*
	 * A guess, failed: only guesses spend the bucket of all networks
	 * ([enroll] global_rate), so that guessing from many addresses never
	 * keeps a host with a good secret out.
	 */
	if (r == -ENOENT) {
		r = rate_take(k, "enroll", k->cfg->enroll_global_rate);
		if (r == 0) {
			why = "too many failed enrollments in all; try later";
			code = 429;
		}
		r = r < 0 ? -EIO : -ENOENT;
	}
	if (r == 0)
		r = secret_allows(sec, er->host_id, kmemd_now_ms(), &why);
	if (r == 0 && k->store->ops->revoked(k->store, er->host_id) == 1) {
		why = CONN_TEXT_REVOKED_HOST;
		r = -EPERM;
	}
	if (r == 0)
		r = k->store->ops->enrolled(k->store, er->host_id, &taken, &again);
	/* a certificate for it was used here, its first report still to come */
	if (r == 0 && !taken)
		taken = cert_expiry_seen(&k->host_certs, er->host_id);
	if (r == 0 && taken && !again) {
		why = "this host id is enrolled already; an operator must mark it for "
		      "re-enrollment first (kmemctl host reenroll)";
		code = 409;
		r = -EEXIST;
	}
	if (r == -EIO) {
		why = "the store failed";
		code = HTTP_INTERNAL;
	}
	if (r == 0)
		return 0;
	log_ratelimited(&enroll_log, LOG_WARNING, "enrollment of '%s' from %s refused: %s",
			er->host_id, addr, why);
	enroll_refuse(req, code,
		      code == 409 ? "Conflict" :
		      code == 403 ? "Forbidden" :
		      code == 429 ? "Too Many Requests" :
				    "Internal Server Error",
		      code == HTTP_INTERNAL || code == 429 ?
			      KMEMCTL__V1__STATUS__STATUS_UNAVAILABLE :
			      KMEMCTL__V1__STATUS__STATUS_REVOKED,
		      why);
	return r;
}

/* The request as sent; NULL when it is not one (400 sent). */
static Kmemctl__V1__EnrollRequest *enroll_request(struct http_request *req)
{
	_cleanup_pb_ Kmemctl__V1__EnrollRequest *er = (Kmemctl__V1__EnrollRequest *)request_message(
		req, &kmemctl__v1__enroll_request__descriptor);

	if (er && enroll_request_valid(er))
		return TAKE_PTR(er);
	enroll_refuse(
		req, HTTP_BADREQUEST, "Bad Request", KMEMCTL__V1__STATUS__STATUS_MALFORMED,
		"want an EnrollRequest with a secret, a host id of 1 to 64 of " TEXT_HOST_ID_GRAMMAR
		" and a CSR, no string with a NUL byte");
	return NULL;
}

/* A certificate for er's host, once its CSR checks out: 0, or the refusal sent. */
static int enroll_issue(struct http_request *req, struct kmemd *k,
			const Kmemctl__V1__EnrollRequest *er, char **pem, char **ca_pem)
{
	EVP_PKEY *pub = NULL;
	char cn[65];
	int r;

	r = pki_read_csr(er->csr_pem, strlen(er->csr_pem), &pub, cn);
	if (r < 0 || strcmp(cn, er->host_id)) {
		EVP_PKEY_free(pub);
		enroll_refuse(req, HTTP_BADREQUEST, "Bad Request",
			      KMEMCTL__V1__STATUS__STATUS_MALFORMED,
			      r == -EPERM ?
				      "the CSR's key is not one kmemd certifies: " PKI_KEY_POLICY :
			      r < 0 ? "the CSR does not parse or its signature does not verify" :
				      "the CSR's CN is not the host id");
		return -EINVAL;
	}
	r = issue(k->cfg, pub, er->host_id, pem, ca_pem);
	EVP_PKEY_free(pub);
	if (r < 0) {
		log_error_errno(r, "issuing a certificate for '%s' failed: %m", er->host_id);
		enroll_refuse(req, HTTP_INTERNAL, "Internal Server Error",
			      KMEMCTL__V1__STATUS__STATUS_UNAVAILABLE, "issuing failed");
	}
	return r;
}

/* The secret's use and the host id's enrollment, counted; 0 or the refusal sent. */
static int enroll_record(struct http_request *req, struct kmemd *k,
			 const Kmemctl__V1__EnrollRequest *er, const struct store_secret *sec)
{
	int r = k->store->ops->secret_use(k->store, sec->id);

	if (r == 0)
		r = k->store->ops->enrollment_add(k->store, er->host_id, sec->id, kmemd_now_ms());
	if (r == -EDQUOT)
		enroll_refuse(req, 403, "Forbidden", KMEMCTL__V1__STATUS__STATUS_REVOKED,
			      "the enrollment secret has enrolled as many hosts as it may");
	else if (r < 0)
		enroll_refuse(req, HTTP_INTERNAL, "Internal Server Error",
			      KMEMCTL__V1__STATUS__STATUS_UNAVAILABLE, "the store failed");
	return r;
}

void handle_enroll(struct http_request *req, struct kmemd *k, const struct tls_identity *peer)
{
	Kmemctl__V1__EnrollReply rr = KMEMCTL__V1__ENROLL_REPLY__INIT;
	_cleanup_pb_ Kmemctl__V1__EnrollRequest *er = NULL;
	_cleanup_free_ char *pem = NULL, *ca_pem = NULL;
	char key[48] = "?", addr[64] = "?", net[64];
	struct store_secret sec;
	int r;

	(void)peer;
	/* an anonymous client gets one answer a connection: a refused one handshakes again */
	req->close = true;
	conn_peer(req, addr, sizeof(addr), key, sizeof(key));
	snprintf(net, sizeof(net), "enroll %s", key);
	r = prelimit_take(key, k->cfg->enroll_rate, kmemd_now_ms()) ?
		    rate_take(k, net, k->cfg->enroll_rate) :
		    0;
	if (r < 0) {
		log_error("store query failed: %s", k->store->ops->error(k->store));
		enroll_refuse(req, HTTP_INTERNAL, "Internal Server Error",
			      KMEMCTL__V1__STATUS__STATUS_UNAVAILABLE, "the store failed");
		return;
	}
	if (!r) {
		enroll_refuse(req, 429, "Too Many Requests",
			      KMEMCTL__V1__STATUS__STATUS_UNAVAILABLE,
			      "too many enrollments from this network; try later");
		return;
	}
	if (!k->cfg->ca_key) {
		enroll_refuse(req, 503, "Service Unavailable",
			      KMEMCTL__V1__STATUS__STATUS_UNAVAILABLE,
			      "enrollment is off: kmemd has no CA key ([ca] key)");
		return;
	}
	er = enroll_request(req);
	if (!er || enroll_allowed(req, k, er, addr, &sec) < 0 ||
	    enroll_issue(req, k, er, &pem, &ca_pem) < 0 || enroll_record(req, k, er, &sec) < 0)
		return;
	audit_detail(req, er->host_id, "%s from %s with secret %lld", er->host_id, addr,
		     (long long)sec.id);
	rr.status = KMEMCTL__V1__STATUS__STATUS_OK;
	rr.cert_pem = pem;
	rr.ca_pem = ca_pem;
	reply_message(req, HTTP_OK, "OK", &rr.base);
}

/*
 * A renewed id is an enrolled one: a host whose certificate was issued
 * offline and renewed before its first report is not enrolled again by
 * another secret holder. Its row, when it has one, is kept (an operator's
 * mark for re-enrollment with it). 0, or the refusal sent.
 */
static int renewal_record(struct http_request *req, struct kmemd *k, const char *host)
{
	bool taken = false, again = false;
	int r = k->store->ops->enrolled(k->store, host, &taken, &again);

	if (r == 0 && !taken)
		r = k->store->ops->enrollment_add(k->store, host, 0, kmemd_now_ms());
	if (r < 0)
		enroll_refuse(req, HTTP_INTERNAL, "Internal Server Error",
			      KMEMCTL__V1__STATUS__STATUS_UNAVAILABLE, "the store failed");
	return r;
}

/* Renewals a host may ask for in a minute: a retry or two, not a loop of signing. */
#define RENEW_RATE 2

/*
 * POST /v1/agent/renew: a host's certificate for a new key, asked with its
 * current one before it expires (agent/session.c). The certificate stands
 * for the secret: the CSR must be for the host's own id, which must not be
 * revoked.
 */
void handle_renew(struct http_request *req, struct kmemd *k, const struct tls_identity *peer)
{
	Kmemctl__V1__EnrollReply rr = KMEMCTL__V1__ENROLL_REPLY__INIT;
	_cleanup_pb_ Kmemctl__V1__EnrollRequest *er = NULL;
	_cleanup_free_ char *pem = NULL, *ca_pem = NULL;
	const uint64_t rate = RENEW_RATE;
	char bucket[96], until[32];
	const char *keys[] = { bucket };
	struct tm tm;
	int r;

	if (!k->cfg->ca_key) {
		enroll_refuse(req, 503, "Service Unavailable",
			      KMEMCTL__V1__STATUS__STATUS_UNAVAILABLE,
			      "renewal is off: kmemd has no CA key ([ca] key)");
		return;
	}
	er = (Kmemctl__V1__EnrollRequest *)request_message(
		req, &kmemctl__v1__enroll_request__descriptor);
	if (!er || !renew_request_valid(er)) {
		enroll_refuse(req, HTTP_BADREQUEST, "Bad Request",
			      KMEMCTL__V1__STATUS__STATUS_MALFORMED,
			      "want an EnrollRequest with the host id and a CSR");
		return;
	}
	if (strcmp(er->host_id, peer->cn)) {
		enroll_refuse(req, 403, "Forbidden", KMEMCTL__V1__STATUS__STATUS_WRONG_HOST,
			      "a host renews its own certificate only");
		return;
	}
	snprintf(bucket, sizeof(bucket), "renew %s", peer->cn);
	r = k->store->ops->revoked(k->store, peer->cn);
	if (r == 0)
		r = k->store->ops->rate_take(k->store, keys, &rate, 1, kmemd_now_ms()) ? 0 : -EBUSY;
	if (r != 0) {
		enroll_refuse(req,
			      r == 1	  ? 403 :
			      r == -EBUSY ? 429 :
					    HTTP_INTERNAL,
			      r == 1	  ? "Forbidden" :
			      r == -EBUSY ? "Too Many Requests" :
					    "Internal Server Error",
			      r == 1 ? KMEMCTL__V1__STATUS__STATUS_REVOKED :
				       KMEMCTL__V1__STATUS__STATUS_UNAVAILABLE,
			      r == 1	  ? CONN_TEXT_REVOKED_HOST :
			      r == -EBUSY ? "renewals are limited to 2 a minute per host" :
					    "the store failed");
		return;
	}
	if (enroll_issue(req, k, er, &pem, &ca_pem) < 0 || renewal_record(req, k, peer->cn) < 0)
		return;
	gmtime_r(&peer->not_after, &tm);
	strftime(until, sizeof(until), "%Y-%m-%dT%H:%M:%SZ", &tm);
	audit_detail(req, peer->cn, "%s, whose certificate %.16s ran until %s", peer->cn,
		     peer->fingerprint, until);
	rr.status = KMEMCTL__V1__STATUS__STATUS_OK;
	rr.cert_pem = pem;
	rr.ca_pem = ca_pem;
	reply_message(req, HTTP_OK, "OK", &rr.base);
}

void handle_secrets_get(struct http_request *req, struct kmemd *k, const struct tls_identity *peer)
{
	json_t *rows = NULL;

	(void)peer;
	if (admin_json_secrets(k->store, &rows) < 0) {
		reply_store_failed(req, k);
		return;
	}
	audit_detail(req, NULL, "%zu enrollment secrets", json_array_size(rows));
	reply_json(req, HTTP_OK, "OK", json_pack("{s:o}", "secrets", rows));
}

void handle_secret_post(struct http_request *req, struct kmemd *k, const struct tls_identity *peer)
{
	unsigned char raw[SECRET_BYTES];
	char secret[2 * SECRET_BYTES + 1], why[192];
	struct store_secret sec;
	const uint8_t *body;
	int64_t id;
	size_t len, i;

	(void)peer;
	/*
	 * JSON only, as the other admin routes: a browser holding an operator
	 * certificate cannot send that content type cross-site without a
	 * preflight, which kmemd never grants.
	 */
	if (!content_type_is(req, JSON_TYPE)) {
		reply_error(req, 415, "Unsupported Media Type", "send JSON");
		return;
	}
	body = request_body(req, &len);
	if (secret_request_parse((const char *)body, len, &sec, kmemd_now_ms(), why, sizeof(why)) <
	    0) {
		reply_error(req, HTTP_BADREQUEST, "Bad Request", why);
		return;
	}
	if (RAND_bytes(raw, sizeof(raw)) != 1) {
		reply_error(req, HTTP_INTERNAL, "Internal Server Error", "no randomness");
		return;
	}
	for (i = 0; i < sizeof(raw); i++)
		snprintf(secret + 2 * i, 3, "%02x", raw[i]);
	sha256_hex(secret, strlen(secret), sec.sha256);
	if (k->store->ops->secret_add(k->store, &sec, &id) < 0) {
		reply_error(req, HTTP_INTERNAL, "Internal Server Error", "the store failed");
		return;
	}
	audit_detail(req, NULL, "secret %lld, %lld uses, hosts '%s'", (long long)id,
		     (long long)sec.max_uses, sec.host_pattern);
	reply_json(req, 201, "Created",
		   json_pack("{s:I, s:s, s:I, s:I, s:s?}", "id", (json_int_t)id, "secret", secret,
			     "expires_ms", (json_int_t)sec.expires_ms, "uses",
			     (json_int_t)sec.max_uses, "hosts",
			     sec.host_pattern[0] ? sec.host_pattern : NULL));
}

void handle_secret_revoke(struct http_request *req, struct kmemd *k,
			  const struct tls_identity *peer)
{
	json_int_t id = 0;
	json_t *o = request_json_unpack(req, "want {\"id\": N}", false, "{s:I}", "id", &id);
	int r;

	(void)peer;
	if (!o)
		return;
	json_decref(o);
	r = k->store->ops->secret_revoke(k->store, id);
	if (r < 0) {
		reply_error(req, r == -ENOENT ? HTTP_NOTFOUND : HTTP_INTERNAL,
			    r == -ENOENT ? "Not Found" : "Internal Server Error",
			    r == -ENOENT ? "no such secret" : "the store failed");
		return;
	}
	audit_detail(req, NULL, "secret %lld", (long long)id);
	reply_json(req, HTTP_OK, "OK", json_pack("{s:I, s:b}", "id", id, "revoked", 1));
}

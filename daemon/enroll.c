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
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kmemctl/v1/enroll.pb-c.h"
#include "log.h"
#include "macro.h"
#include "message-ids.h"
#include "pki.h"
#include "server.h"
#include "store.h"

#define SECRET_BYTES 24
#define RATE_SLOTS 256

/* A token bucket per client address: burst, then one per refill_ms. */
static struct {
	char addr[48];
	double tokens;
	int64_t last_ms;
} buckets[RATE_SLOTS];

static bool rate_ok(const char *addr, const struct kmemd_config *cfg, int64_t now)
{
	double per_ms = (double)cfg->enroll_rate / 60000.0;
	size_t i, oldest = 0;

	for (i = 0; i < RATE_SLOTS && strcmp(buckets[i].addr, addr); i++)
		if (buckets[i].last_ms < buckets[oldest].last_ms)
			oldest = i;
	if (i == RATE_SLOTS) {
		/* the least recently seen address gives up its slot */
		i = oldest;
		snprintf(buckets[i].addr, sizeof(buckets[i].addr), "%s", addr);
		buckets[i].tokens = (double)cfg->enroll_rate;
		buckets[i].last_ms = now;
	}
	buckets[i].tokens += (double)(now - buckets[i].last_ms) * per_ms;
	if (buckets[i].tokens > (double)cfg->enroll_rate)
		buckets[i].tokens = (double)cfg->enroll_rate;
	buckets[i].last_ms = now;
	if (buckets[i].tokens < 1)
		return false;
	buckets[i].tokens -= 1;
	return true;
}

static void sha256_hex(const char *text, char hex[65])
{
	unsigned char md[32];
	int i;

	EVP_Digest(text, strlen(text), md, NULL, EVP_sha256(), NULL);
	for (i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
}

static void enroll_refuse(struct evhttp_request *req, int code, const char *reason,
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

static const char *secret_error(int r)
{
	switch (r) {
	case -EKEYREVOKED:
		return "the enrollment secret is revoked";
	case -EKEYEXPIRED:
		return "the enrollment secret has expired";
	default:
		return "unknown enrollment secret";
	}
}

void handle_enroll(struct evhttp_request *req, struct kmemd *k, const struct tls_identity *peer)
{
	Kmemctl__V1__EnrollReply rr = KMEMCTL__V1__ENROLL_REPLY__INIT;
	Kmemctl__V1__EnrollRequest *er = NULL;
	char *addr = NULL, hash[65], cn[65], detail[160];
	_cleanup_free_ char *pem = NULL, *ca_pem = NULL;
	struct evhttp_connection *conn = evhttp_request_get_connection(req);
	const uint8_t *body;
	EVP_PKEY *pub = NULL;
	ev_uint16_t port;
	size_t len;
	int r;

	(void)peer;
	evhttp_connection_get_peer(conn, &addr, &port);
	if (!rate_ok(addr ? addr : "?", k->cfg, kmemd_now_ms())) {
		enroll_refuse(req, 429, "Too Many Requests",
			      KMEMCTL__V1__STATUS__STATUS_UNAVAILABLE,
			      "too many enrollments from this address; try later");
		return;
	}
	if (!k->cfg->ca_key) {
		enroll_refuse(req, 503, "Service Unavailable",
			      KMEMCTL__V1__STATUS__STATUS_UNAVAILABLE,
			      "enrollment is off: kmemd has no CA key ([ca] key)");
		return;
	}
	body = request_body(req, &len);
	if (!content_type_is(req, PROTOBUF_TYPE) || !body ||
	    !(er = kmemctl__v1__enroll_request__unpack(NULL, len, body)) || !er->secret ||
	    !kmemd_name_valid(er->host_id, 64) || !er->csr_pem) {
		enroll_refuse(req, HTTP_BADREQUEST, "Bad Request",
			      KMEMCTL__V1__STATUS__STATUS_MALFORMED,
			      "want an EnrollRequest with a secret, a host id of [A-Za-z0-9._-] "
			      "and a CSR");
		goto out;
	}
	sha256_hex(er->secret, hash);
	r = k->store->ops->secret_use(k->store, hash, kmemd_now_ms());
	if (r < 0) {
		log_warning("enrollment of '%s' from %s refused: %s", er->host_id, addr,
			    secret_error(r));
		enroll_refuse(req, 403, "Forbidden", KMEMCTL__V1__STATUS__STATUS_REVOKED,
			      secret_error(r));
		goto out;
	}
	if (k->store->ops->revoked(k->store, er->host_id) == 1) {
		enroll_refuse(req, 403, "Forbidden", KMEMCTL__V1__STATUS__STATUS_REVOKED,
			      "this host id is revoked");
		goto out;
	}
	r = pki_read_csr(er->csr_pem, strlen(er->csr_pem), &pub, cn);
	if (r < 0 || strcmp(cn, er->host_id)) {
		enroll_refuse(req, HTTP_BADREQUEST, "Bad Request",
			      KMEMCTL__V1__STATUS__STATUS_MALFORMED,
			      r < 0 ? "the CSR does not parse or its signature does not verify" :
				      "the CSR's CN is not the host id");
		goto out;
	}
	r = issue(k->cfg, pub, er->host_id, &pem, &ca_pem);
	if (r < 0) {
		log_error_errno(r, "issuing a certificate for '%s' failed: %m", er->host_id);
		enroll_refuse(req, HTTP_INTERNAL, "Internal Server Error",
			      KMEMCTL__V1__STATUS__STATUS_UNAVAILABLE, "issuing failed");
		goto out;
	}
	snprintf(detail, sizeof(detail), "%s from %s", er->host_id, addr);
	kmemd_audit(k, MID_HOST_ENROLLED, er->host_id, "host.enroll", er->host_id, detail);
	rr.status = KMEMCTL__V1__STATUS__STATUS_OK;
	rr.cert_pem = pem;
	rr.ca_pem = ca_pem;
	reply_message(req, HTTP_OK, "OK", &rr.base);
out:
	EVP_PKEY_free(pub);
	if (er)
		kmemctl__v1__enroll_request__free_unpacked(er, NULL);
}

/* {"expires_in_s": N} (default a week, 0: never) -> {"id", "secret", "expires_ms"}. */
void handle_secret_post(struct evhttp_request *req, struct kmemd *k,
			const struct tls_identity *peer)
{
	json_int_t expires_in = 7 * 86400;
	unsigned char raw[SECRET_BYTES];
	char secret[2 * SECRET_BYTES + 1], hash[65], detail[64];
	int64_t id, expires, now = kmemd_now_ms();
	const uint8_t *body;
	json_error_t je;
	json_t *o = NULL;
	size_t len, i;

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
	if (body) {
		o = json_loadb((const char *)body, len, JSON_REJECT_DUPLICATES, &je);
		if (!o ||
		    json_unpack_ex(o, &je, JSON_STRICT, "{s?I}", "expires_in_s", &expires_in) < 0 ||
		    expires_in < 0) {
			json_decref(o);
			reply_error(req, HTTP_BADREQUEST, "Bad Request",
				    "want {\"expires_in_s\": SECONDS} (0: never), or no body");
			return;
		}
		json_decref(o);
	}
	if (RAND_bytes(raw, sizeof(raw)) != 1) {
		reply_error(req, HTTP_INTERNAL, "Internal Server Error", "no randomness");
		return;
	}
	for (i = 0; i < sizeof(raw); i++)
		snprintf(secret + 2 * i, 3, "%02x", raw[i]);
	sha256_hex(secret, hash);
	expires = expires_in ? now + (int64_t)expires_in * 1000 : 0;
	if (k->store->ops->secret_add(k->store, hash, now, expires, &id) < 0) {
		reply_error(req, HTTP_INTERNAL, "Internal Server Error", "the store failed");
		return;
	}
	snprintf(detail, sizeof(detail), "secret %lld", (long long)id);
	kmemd_audit(k, MID_ENROLL_SECRET_ADDED, peer->cn, "enroll.secret.add", NULL, detail);
	reply_json(req, 201, "Created",
		   json_pack("{s:I, s:s, s:I}", "id", (json_int_t)id, "secret", secret,
			     "expires_ms", (json_int_t)expires));
}

void handle_secret_revoke(struct evhttp_request *req, struct kmemd *k,
			  const struct tls_identity *peer)
{
	json_int_t id = 0;
	const uint8_t *body;
	char detail[64];
	json_error_t je;
	json_t *o;
	size_t len;
	int r;

	body = request_json(req, &len);
	if (!body)
		return;
	o = json_loadb((const char *)body, len, JSON_REJECT_DUPLICATES, &je);
	if (!o || json_unpack_ex(o, &je, JSON_STRICT, "{s:I}", "id", &id) < 0) {
		json_decref(o);
		reply_error(req, HTTP_BADREQUEST, "Bad Request", "want {\"id\": N}");
		return;
	}
	json_decref(o);
	r = k->store->ops->secret_revoke(k->store, id);
	if (r < 0) {
		reply_error(req, r == -ENOENT ? HTTP_NOTFOUND : HTTP_INTERNAL,
			    r == -ENOENT ? "Not Found" : "Internal Server Error",
			    r == -ENOENT ? "no such secret" : "the store failed");
		return;
	}
	snprintf(detail, sizeof(detail), "secret %lld", (long long)id);
	kmemd_audit(k, MID_ENROLL_SECRET_REVOKED, peer->cn, "enroll.secret.revoke", NULL, detail);
	reply_json(req, HTTP_OK, "OK", json_pack("{s:I, s:b}", "id", id, "revoked", 1));
}

// SPDX-License-Identifier: GPL-2.0
/*
 * TLS helper tests: real certificates made with lib/pki, real handshakes
 * over TCP on 127.0.0.1, the server in a thread.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "pki.h"
#include "tls.h"

static char dir[256];

static void path_of(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s/%s", dir, name);
}

static void issue(X509 *ca, EVP_PKEY *ca_key, const char *name, const struct pki_subject *s)
{
	char p[512];
	EVP_PKEY *key;
	X509 *cert;

	assert_int_equal(pki_keygen(s->role, &key), 0);
	assert_int_equal(pki_issue(ca, ca_key, key, s, &cert), 0);
	snprintf(p, sizeof(p), "%s/%s.key", dir, name);
	assert_int_equal(pki_write_key(p, key), 0);
	snprintf(p, sizeof(p), "%s/%s.crt", dir, name);
	assert_int_equal(pki_write_cert(p, cert), 0);
	EVP_PKEY_free(key);
	X509_free(cert);
}

static void make_ca(const char *name, X509 **ca, EVP_PKEY **key)
{
	char p[512];

	assert_int_equal(pki_keygen(PKI_ROLE_SERVER, key), 0);
	assert_int_equal(pki_make_ca(name, 1, *key, ca), 0);
	snprintf(p, sizeof(p), "%s/%s.crt", dir, name);
	assert_int_equal(pki_write_cert(p, *ca), 0);
}

static int setup_pki(void **state)
{
	static const char *const ips[] = { "127.0.0.1", NULL };
	static const char *const dns[] = { "localhost", NULL };
	X509 *ca, *other;
	EVP_PKEY *ca_key, *other_key;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/tls-XXXXXX", getenv("KMEM_TEST_TMP"));
	assert_non_null(mkdtemp(dir));
	make_ca("fleet-ca", &ca, &ca_key);
	make_ca("other-ca", &other, &other_key);
	issue(ca, ca_key, "server",
	      &(struct pki_subject){ "kmemd", PKI_ROLE_SERVER, dns, ips, -60, 3600 });
	issue(ca, ca_key, "host",
	      &(struct pki_subject){ "host-0001", PKI_ROLE_HOST, NULL, NULL, -60, 3600 });
	issue(ca, ca_key, "expired",
	      &(struct pki_subject){ "host-0002", PKI_ROLE_HOST, NULL, NULL, -7200, -3600 });
	issue(other, other_key, "stranger",
	      &(struct pki_subject){ "host-0001", PKI_ROLE_HOST, NULL, NULL, -60, 3600 });
	issue(other, other_key, "other-server",
	      &(struct pki_subject){ "kmemd", PKI_ROLE_SERVER, dns, ips, -60, 3600 });
	X509_free(ca);
	X509_free(other);
	EVP_PKEY_free(ca_key);
	EVP_PKEY_free(other_key);
	return 0;
}

struct server {
	SSL_CTX *ctx;
	int lfd;
	int ok; /* handshake and one byte exchanged */
	int id_result;
	struct tls_identity id;
	STACK_OF(X509) * anchors; /* NULL, or: was the peer anchored in them */
	bool anchored;
};

static void *serve(void *arg)
{
	struct server *s = arg;
	int fd = accept(s->lfd, NULL, NULL);
	SSL *ssl = SSL_new(s->ctx);
	char c = 0;

	SSL_set_fd(ssl, fd);
	s->ok = SSL_accept(ssl) == 1 && SSL_read(ssl, &c, 1) == 1 && c == 'p' &&
		SSL_write(ssl, "q", 1) == 1;
	s->id_result = tls_peer_identity(ssl, &s->id);
	s->anchored = s->anchors && tls_peer_anchored_in(ssl, s->anchors);
	if (s->ok)
		SSL_shutdown(ssl);
	SSL_free(ssl);
	close(fd);
	ERR_clear_error();
	return NULL;
}

struct run {
	const char *srv_cert, *srv_key;
	enum tls_client_auth auth;
	const char *cli_cert, *cli_key, *cli_ca;
	const char *host;
	int tls12_only;
	const char *admin_ca; /* a second CA the server trusts */
};

/* One connection; returns 1 when the client got the server's reply. */
static int handshake(const struct run *r, struct server *s)
{
	char sc[512], sk[512], ca[512], cc[512], ck[512], aca[512];
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	SSL_CTX *cctx;
	SSL *ssl;
	pthread_t t;
	int fd, ok;
	char c = 0;

	path_of(sc, sizeof(sc), r->srv_cert);
	path_of(sk, sizeof(sk), r->srv_key);
	path_of(ca, sizeof(ca), "fleet-ca.crt");
	if (r->admin_ca)
		path_of(aca, sizeof(aca), r->admin_ca);
	assert_int_equal(tls_server_ctx(&(struct tls_config){ sc, sk, ca, r->auth,
							      r->admin_ca ? aca : NULL },
					&s->ctx),
			 0);
	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(s->lfd, 1), 0);
	assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&a, &alen), 0);
	assert_int_equal(pthread_create(&t, NULL, serve, s), 0);

	path_of(ca, sizeof(ca), r->cli_ca);
	if (r->cli_cert) {
		path_of(cc, sizeof(cc), r->cli_cert);
		path_of(ck, sizeof(ck), r->cli_key);
	}
	assert_int_equal(tls_client_ctx(&(struct tls_config){ r->cli_cert ? cc : NULL,
							      r->cli_cert ? ck : NULL, ca },
					&cctx),
			 0);
	if (r->tls12_only) {
		SSL_CTX_set_min_proto_version(cctx, TLS1_2_VERSION);
		SSL_CTX_set_max_proto_version(cctx, TLS1_2_VERSION);
	}
	assert_int_equal(tls_client_ssl(cctx, r->host, &ssl), 0);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	SSL_set_fd(ssl, fd);
	ok = SSL_connect(ssl) == 1 && SSL_write(ssl, "p", 1) == 1 && SSL_read(ssl, &c, 1) == 1 &&
	     c == 'q';
	/* Unblock the server if the client gave up first. */
	shutdown(fd, SHUT_RDWR);
	pthread_join(t, NULL);
	SSL_free(ssl);
	close(fd);
	close(s->lfd);
	SSL_CTX_free(cctx);
	SSL_CTX_free(s->ctx);
	ERR_clear_error();
	return ok;
}

static const struct run good = {
	"server.crt", "server.key",   TLS_CLIENT_REQUIRED, "host.crt",
	"host.key",   "fleet-ca.crt", "127.0.0.1",	   0,
};

static void test_good(void **state)
{
	struct server s = { 0 };

	(void)state;
	assert_int_equal(handshake(&good, &s), 1);
	assert_int_equal(s.ok, 1);
	assert_int_equal(s.id_result, 0);
	assert_string_equal(s.id.cn, "host-0001");
	assert_string_equal(s.id.ou, "host");
	assert_string_equal(s.id.issuer_cn, "fleet-ca");
	assert_int_equal(strlen(s.id.fingerprint), 64);
	assert_true(s.id.not_after > time(NULL));
}

static void test_hostname(void **state)
{
	struct run r = good;
	struct server s = { 0 };

	(void)state;
	r.host = "localhost";
	assert_int_equal(handshake(&r, &s), 1);
	r.host = "kmemd.example.net";
	assert_int_equal(handshake(&r, &s), 0);
	assert_int_equal(s.ok, 0);
}

static void test_client_wrong_ca(void **state)
{
	struct run r = good;
	struct server s = { 0 };

	(void)state;
	r.cli_cert = "stranger.crt";
	r.cli_key = "stranger.key";
	assert_int_equal(handshake(&r, &s), 0);
	assert_int_equal(s.ok, 0);
}

static void test_client_missing_cert(void **state)
{
	struct run r = good;
	struct server s = { 0 };

	(void)state;
	r.cli_cert = NULL;
	assert_int_equal(handshake(&r, &s), 0);
	assert_int_equal(s.ok, 0);

	/* Optional mode lets it in, and the route sees no identity. */
	r.auth = TLS_CLIENT_OPTIONAL;
	assert_int_equal(handshake(&r, &s), 1);
	assert_int_equal(s.id_result, -ENOENT);
}

static void test_client_expired(void **state)
{
	struct run r = good;
	struct server s = { 0 };

	(void)state;
	r.cli_cert = "expired.crt";
	r.cli_key = "expired.key";
	assert_int_equal(handshake(&r, &s), 0);
	assert_int_equal(s.ok, 0);
}

static void test_server_wrong_ca(void **state)
{
	struct run r = good;
	struct server s = { 0 };

	(void)state;
	r.srv_cert = "other-server.crt";
	r.srv_key = "other-server.key";
	assert_int_equal(handshake(&r, &s), 0);
	assert_int_equal(s.ok, 0);
}

static void test_tls12_refused(void **state)
{
	struct run r = good;
	struct server s = { 0 };

	(void)state;
	r.tls12_only = 1;
	assert_int_equal(handshake(&r, &s), 0);
	assert_int_equal(s.ok, 0);
}

/* A second CA for operators: trusted, and told apart from the fleet CA. */
/*
 * A certificate whose subject CN is cn (len bytes, NULs and all, as a CA
 * that does not check could sign), self-signed.
 */
static X509 *cert_named(const char *cn, int len)
{
	EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	X509 *x = X509_new();
	X509_NAME *name = X509_get_subject_name(x);

	assert_non_null(key);
	/* a string type, not MBSTRING_*: OpenSSL's bound on a CN's length is not applied */
	assert_int_equal(X509_NAME_add_entry_by_txt(name, "CN", V_ASN1_UTF8STRING,
						    (const unsigned char *)cn, len, -1, 0),
			 1);
	X509_NAME_add_entry_by_txt(name, "OU", MBSTRING_UTF8, (const unsigned char *)"host", -1, -1,
				   0);
	X509_set_issuer_name(x, name);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	X509_gmtime_adj(X509_getm_notBefore(x), 0);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_set_pubkey(x, key);
	assert_true(X509_sign(x, key, NULL) > 0);
	EVP_PKEY_free(key);
	return x;
}

static void test_identity_names(void **state)
{
	char long_cn[80];
	struct tls_identity id;
	X509 *x;

	(void)state;
	x = cert_named("h2", 2);
	assert_int_equal(tls_cert_identity(x, &id), 0);
	assert_string_equal(id.cn, "h2");
	assert_string_equal(id.ou, "host");
	X509_free(x);
	/* h2\0h1 is not h2 */
	x = cert_named("h2\0h1", 5);
	assert_int_equal(tls_cert_identity(x, &id), -EBADMSG);
	X509_free(x);
	/* 64 bytes fit; 65 are not cut to the first 64 */
	memset(long_cn, 'a', sizeof(long_cn));
	x = cert_named(long_cn, 64);
	assert_int_equal(tls_cert_identity(x, &id), 0);
	assert_int_equal(strlen(id.cn), 64);
	X509_free(x);
	x = cert_named(long_cn, 65);
	assert_int_equal(tls_cert_identity(x, &id), -EBADMSG);
	X509_free(x);
	ERR_clear_error();
}

static void test_admin_ca(void **state)
{
	struct run r = good;
	struct server s = { 0 };
	char p[512];

	(void)state;
	path_of(p, sizeof(p), "other-ca.crt");
	assert_int_equal(tls_read_certs(p, &s.anchors), 0);
	assert_int_equal(sk_X509_num(s.anchors), 1);
	/* not trusted unless given */
	r.cli_cert = "stranger.crt";
	r.cli_key = "stranger.key";
	assert_int_equal(handshake(&r, &s), 0);
	r.admin_ca = "other-ca.crt";
	assert_int_equal(handshake(&r, &s), 1);
	assert_true(s.anchored);
	assert_string_equal(s.id.issuer_cn, "other-ca");
	/* a fleet certificate on the same server is not anchored in it */
	r.cli_cert = "host.crt";
	r.cli_key = "host.key";
	assert_int_equal(handshake(&r, &s), 1);
	assert_false(s.anchored);
	sk_X509_pop_free(s.anchors, X509_free);

	/* a bundle with no certificate, or no file */
	path_of(p, sizeof(p), "host.key");
	assert_int_equal(tls_read_certs(p, &s.anchors), -EINVAL);
	assert_int_equal(tls_read_certs("/nonexistent", &s.anchors), -EINVAL);
	ERR_clear_error();
}

static void test_ctx_errors(void **state)
{
	char sc[512], sk[512], hk[512];
	SSL_CTX *ctx;

	(void)state;
	path_of(sc, sizeof(sc), "server.crt");
	path_of(sk, sizeof(sk), "server.key");
	path_of(hk, sizeof(hk), "host.key");
	/* Key that does not belong to the certificate. */
	assert_int_equal(tls_server_ctx(&(struct tls_config){ sc, hk, NULL, TLS_CLIENT_NONE },
					&ctx),
			 -EINVAL);
	/* Client certificates asked for but no CA to check them. */
	assert_int_equal(tls_server_ctx(&(struct tls_config){ sc, sk, NULL, TLS_CLIENT_REQUIRED },
					&ctx),
			 -EINVAL);
	/* A client with nothing pinned is refused outright. */
	assert_int_equal(tls_client_ctx(&(struct tls_config){ NULL, NULL, NULL }, &ctx), -EINVAL);
	assert_int_equal(tls_client_ctx(&(struct tls_config){ NULL, NULL, "/nonexistent" }, &ctx),
			 -EINVAL);
	ERR_clear_error();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_admin_ca),
		cmocka_unit_test(test_identity_names),
		cmocka_unit_test(test_hostname),
		cmocka_unit_test(test_client_wrong_ca),
		cmocka_unit_test(test_client_missing_cert),
		cmocka_unit_test(test_client_expired),
		cmocka_unit_test(test_server_wrong_ca),
		cmocka_unit_test(test_tls12_refused),
		cmocka_unit_test(test_ctx_errors),
	};

	return cmocka_run_group_tests(tests, setup_pki, NULL);
}

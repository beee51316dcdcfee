// SPDX-License-Identifier: GPL-2.0
/*
 * The parent's check of a renewed host certificate the network child hands
 * over (agent/hostcert.c): only a certificate for the key sent with it,
 * from the fleet CA, a host's with the id in use and running longer, is
 * kept, and what is refused leaves the files as they were.
 */
#include <errno.h>
#include <openssl/pem.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "hostcert.h"
#include "macro.h"
#include "pki.h"

static char dir[1024], cert[1100], key[1100], ca[1100];
static struct agent_config cfg;
static EVP_PKEY *ca_key, *other_key;
static X509 *ca_x, *other_x;

static X509 *issue(X509 *by, EVP_PKEY *by_key, const char *cn, enum pki_role role, long end_s,
		   EVP_PKEY *subject)
{
	struct pki_subject subj = { .cn = cn, .role = role, .not_before = -60, .not_after = end_s };
	X509 *x = NULL;

	assert_int_equal(pki_issue(by, by_key, subject, &subj, &x), 0);
	return x;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf = calloc(1, 65536);

	assert_non_null(f);
	assert_true(fread(buf, 1, 65535, f) > 0);
	fclose(f);
	return buf;
}

/* The message the network child sends: key and certificate PEM, a NUL after each. */
static uint8_t *message(EVP_PKEY *k, X509 *x, size_t *len)
{
	_cleanup_free_ char *kp = NULL, *cp = NULL;
	uint8_t *m;
	size_t kl, cl;

	assert_int_equal(pki_key_pem(k, &kp), 0);
	assert_int_equal(pki_cert_pem(x, &cp), 0);
	kl = strlen(kp) + 1;
	cl = strlen(cp) + 1;
	m = malloc(kl + cl);
	memcpy(m, kp, kl);
	memcpy(m + kl, cp, cl);
	*len = kl + cl;
	return m;
}

static int setup(void **state)
{
	EVP_PKEY *k = NULL;
	X509 *x;
	char cmd[2200];

	(void)state;
	snprintf(dir, sizeof(dir), "%s/hostcert-test", getenv("KMEM_TEST_TMP"));
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s'", dir, dir);
	if (system(cmd))
		return -1;
	snprintf(cert, sizeof(cert), "%s/h1.crt", dir);
	snprintf(key, sizeof(key), "%s/h1.key", dir);
	snprintf(ca, sizeof(ca), "%s/ca.crt", dir);
	cfg.cert = cert;
	cfg.key = key;
	cfg.ca = ca;
	if (pki_keygen(PKI_ROLE_SERVER, &ca_key) || pki_make_ca("fleet", 10, ca_key, &ca_x) ||
	    pki_keygen(PKI_ROLE_SERVER, &other_key) ||
	    pki_make_ca("other", 10, other_key, &other_x) || pki_keygen(PKI_ROLE_HOST, &k))
		return -1;
	x = issue(ca_x, ca_key, "h1", PKI_ROLE_HOST, 3600, k);
	if (pki_write_cert(ca, ca_x) || pki_write_cert(cert, x) || pki_write_key(key, k))
		return -1;
	X509_free(x);
	EVP_PKEY_free(k);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	EVP_PKEY_free(ca_key);
	EVP_PKEY_free(other_key);
	X509_free(ca_x);
	X509_free(other_x);
	return 0;
}

/* Offers x for k; the files are as before whenever it is refused. */
static int offer(EVP_PKEY *k, X509 *x)
{
	_cleanup_free_ char *c0 = slurp(cert), *k0 = slurp(key), *c1 = NULL, *k1 = NULL;
	_cleanup_free_ uint8_t *m = NULL;
	size_t len;
	int r;

	m = message(k, x, &len);
	r = hostcert_keep(&cfg, m, len);
	if (r < 0) {
		c1 = slurp(cert);
		k1 = slurp(key);
		assert_string_equal(c0, c1);
		assert_string_equal(k0, k1);
	}
	X509_free(x);
	return r;
}

static void test_refused(void **state)
{
	EVP_PKEY *k = NULL, *k2 = NULL;

	(void)state;
	assert_int_equal(pki_keygen(PKI_ROLE_HOST, &k), 0);
	assert_int_equal(pki_keygen(PKI_ROLE_HOST, &k2), 0);
	/* for another key than the one sent */
	assert_int_equal(offer(k, issue(ca_x, ca_key, "h1", PKI_ROLE_HOST, 7200, k2)), -EBADMSG);
	/* another host's, or not a host's */
	assert_int_equal(offer(k, issue(ca_x, ca_key, "h2", PKI_ROLE_HOST, 7200, k)), -EBADMSG);
	assert_int_equal(offer(k, issue(ca_x, ca_key, "h1", PKI_ROLE_OPERATOR, 7200, k)), -EBADMSG);
	/* from another CA */
	assert_int_equal(offer(k, issue(other_x, other_key, "h1", PKI_ROLE_HOST, 7200, k)),
			 -EBADMSG);
	/* no longer than the one in use */
	assert_int_equal(offer(k, issue(ca_x, ca_key, "h1", PKI_ROLE_HOST, 1800, k)), -EBADMSG);
	EVP_PKEY_free(k);
	EVP_PKEY_free(k2);
}

static void test_malformed(void **state)
{
	static const char *const bad[] = { "", "x", "key\0", "key\0cert",
					   "-----BEGIN PRIVATE KEY-----\0junk\0" };
	static const size_t lens[] = { 0, 1, 4, 8, 34 };
	EVP_PKEY *k = NULL;
	_cleanup_free_ uint8_t *m = NULL;
	X509 *x;
	size_t len;

	(void)state;
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		assert_int_equal(hostcert_keep(&cfg, (const uint8_t *)bad[i], lens[i]), -EBADMSG);
	/* a good message cut short, or with its last NUL gone */
	assert_int_equal(pki_keygen(PKI_ROLE_HOST, &k), 0);
	x = issue(ca_x, ca_key, "h1", PKI_ROLE_HOST, 7200, k);
	m = message(k, x, &len);
	assert_int_equal(hostcert_keep(&cfg, m, len - 1), -EBADMSG);
	assert_int_equal(hostcert_keep(&cfg, m, len / 2), -EBADMSG);
	X509_free(x);
	EVP_PKEY_free(k);
}

static void test_kept(void **state)
{
	_cleanup_free_ char *want_key = NULL, *want_cert = NULL, *got_key = NULL, *got_cert = NULL;
	_cleanup_free_ char *prev = NULL, *tmp = NULL;
	EVP_PKEY *k = NULL;
	struct stat st;
	X509 *x;

	(void)state;
	assert_null(hostcert_prev(key));
	assert_int_equal(pki_keygen(PKI_ROLE_HOST, &k), 0);
	x = issue(ca_x, ca_key, "h1", PKI_ROLE_HOST, 86400, k);
	assert_int_equal(pki_key_pem(k, &want_key), 0);
	assert_int_equal(pki_cert_pem(x, &want_cert), 0);
	assert_int_equal(offer(k, x), 0);
	got_key = slurp(key);
	got_cert = slurp(cert);
	assert_string_equal(got_key, want_key);
	assert_string_equal(got_cert, want_cert);
	assert_int_equal(stat(key, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	/* nothing of the renewal is left beside the files */
	assert_null(hostcert_prev(key));
	assert_true(asprintf(&tmp, "%s.new", cert) > 0);
	assert_int_equal(access(tmp, F_OK), -1);
	/* a stop between the key and its certificate: the old key is at KEY.prev */
	assert_true(asprintf(&prev, "%s.prev", key) > 0);
	assert_int_equal(link(key, prev), 0);
	free(prev);
	prev = hostcert_prev(key);
	assert_non_null(prev);
	unlink(prev);
	EVP_PKEY_free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_kept),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

// SPDX-License-Identifier: GPL-2.0
/* lib/pki.c's CSRs, as enrollment sends and checks them. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <openssl/pem.h>

#include "pki.h"

/* Host keys (enrollment CSRs) are Ed25519; a P-256 CSR is accepted too. */
static void csr_round_trip(enum pki_role role, int key_type)
{
	EVP_PKEY *key = NULL, *pub = NULL;
	char *pem = NULL, cn[65];
	char *b64;

	assert_int_equal(pki_keygen(role, &key), 0);
	assert_int_equal(EVP_PKEY_get_id(key), key_type);
	assert_int_equal(pki_make_csr(key, "web-0421", &pem), 0);
	assert_int_equal(pki_read_csr(pem, strlen(pem), &pub, cn), 0);
	assert_string_equal(cn, "web-0421");
	assert_int_equal(EVP_PKEY_eq(key, pub), 1);
	EVP_PKEY_free(pub);

	/* one changed character in the signed body: the signature fails */
	b64 = strchr(pem, '\n') + 10;
	*b64 = *b64 == 'A' ? 'B' : 'A';
	assert_int_equal(pki_read_csr(pem, strlen(pem), &pub, cn), -EBADMSG);
	free(pem);

	assert_int_equal(pki_read_csr("", 0, &pub, cn), -EBADMSG);
	assert_int_equal(pki_read_csr("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n", 40, &pub, cn),
			 -EBADMSG);
	/* OpenSSL itself refuses a CN over 64 characters */
	assert_int_equal(pki_make_csr(key,
				      "a-host-name-that-is-far-longer-than-sixty-four-characters-"
				      "allowed",
				      &pem),
			 -EIO);
	EVP_PKEY_free(key);
}

/* Roles by name; "admin", the operator's OU before observers, reads as operator. */
static void test_role_names(void **state)
{
	static const char *const bad[] = { "", "Operator", "admins", "observer ", "ca" };
	enum pki_role r;

	(void)state;
	for (int i = PKI_ROLE_HOST; i <= PKI_ROLE_SERVER; i++) {
		assert_int_equal(pki_role_from_name(pki_role_name((enum pki_role)i), &r), 0);
		assert_int_equal(r, i);
	}
	assert_int_equal(pki_role_from_name("admin", &r), 0);
	assert_int_equal(r, PKI_ROLE_OPERATOR);
	assert_string_equal(pki_role_name(PKI_ROLE_OBSERVER), "observer");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(pki_role_from_name(bad[i], &r), -EINVAL);
}

static void test_csr(void **state)
{
	(void)state;
	csr_round_trip(PKI_ROLE_HOST, EVP_PKEY_ED25519);
	csr_round_trip(PKI_ROLE_OPERATOR, EVP_PKEY_EC);
	csr_round_trip(PKI_ROLE_OBSERVER, EVP_PKEY_EC);
}

/* A CSR whose CN is the given ASN.1 string, signed by a new host key, as PEM. */
static char *csr_with_cn(int type, const char *bytes, int len)
{
	X509_REQ *req = X509_REQ_new();
	BIO *b = BIO_new(BIO_s_mem());
	EVP_PKEY *key = NULL;
	char *mem, *pem;
	long n;

	assert_non_null(req);
	assert_non_null(b);
	assert_int_equal(pki_keygen(PKI_ROLE_HOST, &key), 0);
	assert_true(X509_NAME_add_entry_by_NID(X509_REQ_get_subject_name(req), NID_commonName, type,
					       (const unsigned char *)bytes, len, -1, 0));
	assert_true(X509_REQ_set_pubkey(req, key) && X509_REQ_sign(req, key, NULL));
	assert_true(PEM_write_bio_X509_REQ(b, req));
	n = BIO_get_mem_data(b, &mem);
	pem = strndup(mem, (size_t)n);
	assert_non_null(pem);
	BIO_free(b);
	X509_REQ_free(req);
	EVP_PKEY_free(key);
	return pem;
}

/*
 * The CN is read as UTF-8 whatever string type the CSR chose (a BMPString
 * "host" read raw was empty; tests/fuzz/corpus/csr has one), and one with a
 * NUL is refused.
 */
#define A64 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

static void test_csr_cn_types(void **state)
{
	static const struct {
		int type;
		const char *bytes;
		int len;
		const char *cn; /* NULL: -EINVAL */
	} cases[] = {
		{ V_ASN1_BMPSTRING, "\0h\0o\0s\0t", 8, "host" },
		{ V_ASN1_BMPSTRING, "\x01\x27\0o\0s\0t", 8, "\xc4\xa7ost" },
		{ V_ASN1_UTF8STRING, "db\0-7", 5, NULL },
		{ V_ASN1_T61STRING, "h\xf6st", 4, "h\xc3\xb6st" },
		{ V_ASN1_PRINTABLESTRING, "web-1", 5, "web-1" },
		/* a host id of 64 characters, the longest there is; 65 are none */
		{ V_ASN1_UTF8STRING, A64 "a", 64, A64 },
		{ V_ASN1_UTF8STRING, A64 "a", 65, NULL },
	};
	EVP_PKEY *pub;
	char cn[65], *pem;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		pem = csr_with_cn(cases[i].type, cases[i].bytes, cases[i].len);
		pub = NULL;
		if (cases[i].cn) {
			assert_int_equal(pki_read_csr(pem, strlen(pem), &pub, cn), 0);
			assert_string_equal(cn, cases[i].cn);
		} else {
			assert_int_equal(pki_read_csr(pem, strlen(pem), &pub, cn), -EINVAL);
		}
		EVP_PKEY_free(pub);
		free(pem);
	}
}

/* The keys kmemd certifies, and a CSR of any other refused before its signature is checked. */
static void test_key_policy(void **state)
{
	static const struct {
		const char *type, *arg;
		size_t bits;
		bool allowed;
	} keys[] = {
		{ "ED25519", NULL, 0, true }, { "EC", "P-256", 0, true },
		{ "EC", "P-384", 0, true },   { "RSA", NULL, 2048, true },
		{ "EC", "P-521", 0, false },  { "ED448", NULL, 0, false },
		{ "RSA", NULL, 1024, false },
	};
	EVP_PKEY *key, *pub;
	char *pem, cn[65];

	(void)state;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (keys[i].bits)
			key = EVP_PKEY_Q_keygen(NULL, NULL, keys[i].type, keys[i].bits);
		else if (keys[i].arg)
			key = EVP_PKEY_Q_keygen(NULL, NULL, keys[i].type, keys[i].arg);
		else
			key = EVP_PKEY_Q_keygen(NULL, NULL, keys[i].type);
		assert_non_null(key);
		assert_int_equal(pki_key_allowed(key), keys[i].allowed);
		assert_int_equal(pki_make_csr(key, "web-1", &pem), 0);
		pub = NULL;
		assert_int_equal(pki_read_csr(pem, strlen(pem), &pub, cn),
				 keys[i].allowed ? 0 : -EPERM);
		EVP_PKEY_free(pub);
		EVP_PKEY_free(key);
		free(pem);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_role_names),
		cmocka_unit_test(test_key_policy),
		cmocka_unit_test(test_csr),
		cmocka_unit_test(test_csr_cn_types),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

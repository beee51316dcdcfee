// SPDX-License-Identifier: GPL-2.0
/* lib/pki.c's CSRs, as enrollment sends and checks them. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

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

static void test_csr(void **state)
{
	(void)state;
	csr_round_trip(PKI_ROLE_HOST, EVP_PKEY_ED25519);
	csr_round_trip(PKI_ROLE_ADMIN, EVP_PKEY_EC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_csr),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

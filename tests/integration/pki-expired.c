// SPDX-License-Identifier: GPL-2.0
/*
 * pki-expired DIR NAME [FROM_S TO_S]: a host certificate NAME from the CA
 * in DIR (as `kmemctl pki init` made it) that expired yesterday, for
 * kmemd's refusal tests, or valid from FROM_S to TO_S seconds from now
 * (one that expires during a test). kmemctl itself issues neither.
 */
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>

#include "pki.h"

int main(int argc, char **argv)
{
	struct pki_subject subj = { .role = PKI_ROLE_HOST,
				    .not_before = -2 * 86400,
				    .not_after = -86400 };
	char cacrt[4096], cakey[4096], crt[4096], key[4096];
	EVP_PKEY *ck = NULL, *k = NULL;
	X509 *ca = NULL, *x = NULL;
	int r;

	if (argc != 3 && argc != 5) {
		fprintf(stderr, "usage: pki-expired DIR NAME [FROM_S TO_S]\n");
		return 2;
	}
	if (argc == 5) {
		subj.not_before = strtol(argv[3], NULL, 10);
		subj.not_after = strtol(argv[4], NULL, 10);
	}
	subj.cn = argv[2];
	snprintf(cacrt, sizeof(cacrt), "%s/ca.crt", argv[1]);
	snprintf(cakey, sizeof(cakey), "%s/ca.key", argv[1]);
	snprintf(crt, sizeof(crt), "%s/%s.crt", argv[1], argv[2]);
	snprintf(key, sizeof(key), "%s/%s.key", argv[1], argv[2]);
	r = pki_read_cert(cacrt, &ca);
	if (r == 0)
		r = pki_read_key(cakey, &ck);
	if (r == 0)
		r = pki_keygen(subj.role, &k);
	if (r == 0)
		r = pki_issue(ca, ck, k, &subj, &x);
	if (r == 0)
		r = pki_write_key(key, k);
	if (r == 0)
		r = pki_write_cert(crt, x);
	EVP_PKEY_free(ck);
	EVP_PKEY_free(k);
	X509_free(ca);
	X509_free(x);
	if (r < 0)
		fprintf(stderr, "pki-expired: failed (%d)\n", r);
	return r < 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * kmemctl pki: a fleet CA for small fleets.
 *   kmemctl pki init DIR [days N]
 *   kmemctl pki issue DIR ROLE NAME [ip ADDR]... [dns NAME]... [days N]
 * ROLE is host, observer, operator (or admin, its old name) or server.
 * Files: DIR/ca.{crt,key}, DIR/NAME.{crt,key}.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kmemctl.h"
#include "log.h"
#include "macro.h"
#include "pki.h"
#include "report-check.h"
#include "text.h"

#define PKI_MAX_NAMES 8

struct issue_args {
	const char *ips[PKI_MAX_NAMES + 1];
	const char *dns[PKI_MAX_NAMES + 1];
	size_t n_ips, n_dns;
	long days;
};

static int parse_days(const char *s, long *days)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*end || end == s || v < 1 || v > 36500) {
		fprintf(stderr, "kmemctl pki: days '%s' is not a number from 1 to 36500\n", s);
		return -EINVAL;
	}
	*days = v;
	return 0;
}

static int pki_init(int argc, char **argv)
{
	_cleanup_free_ char *crt = NULL, *key = NULL;
	EVP_PKEY *k = NULL;
	X509 *ca = NULL;
	long days = 3650;
	int r;

	if (argc != 2 && !(argc == 4 && strcmp(argv[2], "days") == 0)) {
		fprintf(stderr, "usage: kmemctl pki init DIR [days N]\n");
		return EXIT_USAGE;
	}
	if (argc == 4 && parse_days(argv[3], &days) < 0)
		return EXIT_USAGE;
	if (mkdir(argv[1], 0700) < 0 && errno != EEXIST)
		return log_error_errno(-errno, "cannot create '%s': %m", argv[1]), EXIT_ERROR;
	if (asprintf(&crt, "%s/ca.crt", argv[1]) < 0 || asprintf(&key, "%s/ca.key", argv[1]) < 0)
		return EXIT_ERROR;
	if (access(key, F_OK) == 0) {
		log_error("'%s' exists; refusing to replace a CA key", key);
		return EXIT_ERROR;
	}
	r = pki_keygen(PKI_ROLE_SERVER, &k);
	if (r == 0)
		r = pki_make_ca("kmemctl fleet CA", days, k, &ca);
	if (r == 0)
		r = pki_write_key(key, k);
	if (r == 0)
		r = pki_write_cert(crt, ca);
	EVP_PKEY_free(k);
	X509_free(ca);
	if (r < 0)
		return log_error_errno(r, "creating the CA in '%s' failed: %m", argv[1]),
		       EXIT_ERROR;
	printf("%s\n", crt);
	return EXIT_OK;
}

static int parse_issue_opts(int argc, char **argv, struct issue_args *a)
{
	for (int i = 0; i < argc; i += 2) {
		if (i + 1 >= argc) {
			fprintf(stderr, "kmemctl pki issue: '%s' needs a value\n", argv[i]);
			return -EINVAL;
		}
		if (strcmp(argv[i], "ip") == 0 && a->n_ips < PKI_MAX_NAMES)
			a->ips[a->n_ips++] = argv[i + 1];
		else if (strcmp(argv[i], "dns") == 0 && a->n_dns < PKI_MAX_NAMES)
			a->dns[a->n_dns++] = argv[i + 1];
		else if (strcmp(argv[i], "days") == 0) {
			if (parse_days(argv[i + 1], &a->days) < 0)
				return -EINVAL;
		} else {
			fprintf(stderr,
				"kmemctl pki issue: unknown option '%s'; one of: ip dns days\n",
				argv[i]);
			return -EINVAL;
		}
	}
	return 0;
}

static int issue(const char *dir, const struct pki_subject *subj)
{
	_cleanup_free_ char *cacrt = NULL, *cakey = NULL, *crt = NULL, *key = NULL;
	EVP_PKEY *ck = NULL, *k = NULL;
	X509 *ca = NULL, *x = NULL;
	int r = -ENOMEM;

	if (asprintf(&cacrt, "%s/ca.crt", dir) < 0 || asprintf(&cakey, "%s/ca.key", dir) < 0 ||
	    asprintf(&crt, "%s/%s.crt", dir, subj->cn) < 0 ||
	    asprintf(&key, "%s/%s.key", dir, subj->cn) < 0)
		return r;
	r = pki_read_cert(cacrt, &ca);
	if (r == 0)
		r = pki_read_key(cakey, &ck);
	if (r == 0)
		r = pki_keygen(subj->role, &k);
	if (r == 0)
		r = pki_issue(ca, ck, k, subj, &x);
	if (r == 0)
		r = pki_write_key(key, k);
	if (r == 0)
		r = pki_write_cert(crt, x);
	if (r == 0)
		printf("%s\n", crt);
	EVP_PKEY_free(ck);
	EVP_PKEY_free(k);
	X509_free(ca);
	X509_free(x);
	return r;
}

static int pki_issue_cmd(int argc, char **argv)
{
	struct issue_args a = { .days = 825 };
	struct pki_subject subj = { 0 };
	int r;

	if (argc < 4) {
		fprintf(stderr, "usage: kmemctl pki issue DIR ROLE NAME [ip ADDR]... [dns NAME]... "
				"[days N]\n");
		return EXIT_USAGE;
	}
	if (pki_role_from_name(argv[2], &subj.role) < 0) {
		fprintf(stderr,
			"kmemctl pki issue: unknown role '%s'; one of: host observer "
			"operator server\n",
			argv[2]);
		return EXIT_USAGE;
	}
	if (!*argv[3] || strchr(argv[3], '/') || strlen(argv[3]) > 64) {
		fprintf(stderr,
			"kmemctl pki issue: name '%s' must be 1-64 characters without '/'\n",
			argv[3]);
		return EXIT_USAGE;
	}
	/* a host's name is its id: kmemd takes no other */
	if (subj.role == PKI_ROLE_HOST && !text_host_id_valid(argv[3], REPORT_HOST_ID_MAX)) {
		fprintf(stderr,
			"kmemctl pki issue: a host id is 1 to %d of " TEXT_HOST_ID_GRAMMAR
			", not '%s'\n",
			REPORT_HOST_ID_MAX, argv[3]);
		return EXIT_USAGE;
	}
	if (parse_issue_opts(argc - 4, argv + 4, &a) < 0)
		return EXIT_USAGE;
	subj.cn = argv[3];
	subj.ips = a.ips;
	subj.dns = a.dns;
	subj.not_before = -300;
	subj.not_after = a.days * 86400L;
	r = issue(argv[1], &subj);
	if (r < 0)
		return log_error_errno(r, "issuing '%s' from the CA in '%s' failed: %m", argv[3],
				       argv[1]),
		       EXIT_ERROR;
	return EXIT_OK;
}

int do_pki(int argc, char **argv)
{
	static const struct cmd verbs[] = {
		{ "init", pki_init, "create the fleet CA in DIR" },
		{ "issue", pki_issue_cmd,
		  "issue a host, observer, operator or server certificate" },
		{ NULL, NULL, NULL },
	};

	return cmd_dispatch("pki", verbs, argc, argv);
}

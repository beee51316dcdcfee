// SPDX-License-Identifier: GPL-2.0
/*
 * kmemctl policy: signing keys and signed policy bundles (docs/policy.md).
 *   kmemctl policy keygen NAME
 *   kmemctl policy sign -k KEY -n NAME -v VERSION [-s SIGNER] [-e DAYS] [-o OUT] DOC.json
 *   kmemctl policy verify -K KEYS_DIR BUNDLE
 * Signing happens offline, on the operator's machine: the private key
 * never goes to kmemd or to hosts, which hold only NAME.pem.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fileio.h"
#include "kmemctl.h"
#include "log.h"
#include "macro.h"
#include "pki.h"
#include "policydoc.h"
#include "sign.h"

/* What an agent takes: a bigger bundle never reaches a host. */
#define BUNDLE_MAX (64 << 10)

int write_out(const char *path, const void *data, size_t len)
{
	_cleanup_free_ char *tmp = NULL;
	int fd, r = 0;

	if (!path || !strcmp(path, "-"))
		return fwrite(data, 1, len, stdout) == len && fflush(stdout) == 0 ? 0 : -EIO;
	if (asprintf(&tmp, "%s.tmp", path) < 0)
		return -ENOMEM;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return negative_errno();
	if (write(fd, data, len) != (ssize_t)len || fsync(fd) < 0)
		r = errno ? negative_errno() : -EIO;
	if (close(fd) < 0 && r == 0)
		r = negative_errno();
	/* agents may read the bundle at any time: never a half-written one */
	if (r == 0 && rename(tmp, path) < 0)
		r = negative_errno();
	if (r < 0)
		unlink(tmp);
	return r;
}

static int policy_keygen(int argc, char **argv)
{
	_cleanup_free_ char *priv = NULL, *pub = NULL;
	char id[SIGN_KEY_ID_LEN + 1];
	EVP_PKEY *key = NULL;
	int r;

	if (argc != 2) {
		fprintf(stderr, "usage: kmemctl policy keygen NAME\n"
				"  writes NAME.key (private, keep it offline) and NAME.pem (pin it "
				"on hosts)\n");
		return EXIT_USAGE;
	}
	if (asprintf(&priv, "%s.key", argv[1]) < 0 || asprintf(&pub, "%s.pem", argv[1]) < 0)
		return EXIT_ERROR;
	if (access(priv, F_OK) == 0) {
		log_error("'%s' exists; not overwriting a signing key", priv);
		return EXIT_ERROR;
	}
	r = sign_keygen(&key);
	if (r == 0)
		r = pki_write_key(priv, key);
	if (r == 0)
		r = sign_write_public(pub, key);
	if (r == 0)
		r = sign_key_id(key, id);
	EVP_PKEY_free(key);
	if (r < 0)
		return log_error_errno(r, "creating the signing key '%s' failed: %m", priv),
		       EXIT_ERROR;
	printf("key %s: private %s, public %s\n", id, priv, pub);
	return EXIT_OK;
}

static int parse_u64(const char *what, const char *s, uint64_t min, uint64_t max, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || *v < min || *v > max) {
		fprintf(stderr, "kmemctl policy: %s '%s' is not a number from %llu to %llu\n", what,
			s, (unsigned long long)min, (unsigned long long)max);
		return -EINVAL;
	}
	return 0;
}

static int policy_sign_cmd(int argc, char **argv)
{
	static const char usage[] =
		"usage: kmemctl policy sign -k KEY -n NAME -v VERSION [-s SIGNER] [-e DAYS] "
		"[-o OUT] DOC.json\n";
	Kmemctl__V1__PolicyPayload p = KMEMCTL__V1__POLICY_PAYLOAD__INIT;
	const char *keyfile = NULL, *out = NULL;
	_cleanup_free_ uint8_t *bundle = NULL;
	_cleanup_free_ char *doc = NULL;
	struct policy_doc parsed;
	char err[256];
	uint64_t days = 0;
	size_t len;
	EVP_PKEY *key = NULL;
	struct passwd *pw;
	int c, r;

	pw = getpwuid(getuid());
	p.signer = getenv("USER") ?: pw ? pw->pw_name : "";
	optind = 0;
	while ((c = getopt(argc, argv, "k:n:v:s:e:o:")) != -1) {
		switch (c) {
		case 'k':
			keyfile = optarg;
			break;
		case 'n':
			p.name = optarg;
			break;
		case 'v':
			if (parse_u64("version", optarg, 1, UINT64_MAX, &p.version) < 0)
				return EXIT_USAGE;
			break;
		case 's':
			p.signer = optarg;
			break;
		case 'e':
			if (parse_u64("days", optarg, 1, 36500, &days) < 0)
				return EXIT_USAGE;
			break;
		case 'o':
			out = optarg;
			break;
		default:
			fputs(usage, stderr);
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 1 || !keyfile || !p.name || !p.version) {
		fputs(usage, stderr);
		return EXIT_USAGE;
	}
	if (!policy_name_valid(p.name)) {
		log_error("policy name must be " POLICY_NAME_RULE
			  ": kmemd and agents refuse any other");
		return EXIT_USAGE;
	}
	r = read_file_max(argv[optind], BUNDLE_MAX, &doc, &len);
	if (r < 0)
		return log_error_errno(r, "reading '%s' failed: %m", argv[optind]), EXIT_ERROR;
	/* a bundle every agent would refuse is caught here, not on the fleet */
	if (policy_doc_parse(doc, len, &parsed, err, sizeof(err)) < 0) {
		log_error("%s: %s", argv[optind], err);
		return EXIT_ERROR;
	}
	r = pki_read_key(keyfile, &key);
	if (r == 0 && EVP_PKEY_get_id(key) != EVP_PKEY_ED25519)
		r = -EINVAL;
	if (r < 0) {
		EVP_PKEY_free(key);
		return log_error_errno(r, "'%s' is not an Ed25519 signing key: %m", keyfile),
		       EXIT_ERROR;
	}
	p.document_json = doc;
	p.issued_unix = time(NULL);
	p.not_after_unix = days ? p.issued_unix + (int64_t)days * 86400 : 0;
	r = policy_sign(key, &p, &bundle, &len);
	EVP_PKEY_free(key);
	if (r == 0 && len > BUNDLE_MAX)
		r = -EFBIG;
	if (r == 0)
		r = write_out(out, bundle, len);
	if (r < 0)
		return log_error_errno(r, "signing '%s' failed: %m", argv[optind]), EXIT_ERROR;
	return EXIT_OK;
}

int read_signed(int argc, char **argv, struct keyring *kr, char **buf, size_t *len)
{
	const char *dir = NULL;
	int c, r;

	optind = 0;
	while ((c = getopt(argc, argv, "K:")) != -1) {
		if (c != 'K')
			return -EINVAL;
		dir = optarg;
	}
	if (!dir || optind != argc - 1)
		return -EINVAL;
	r = keyring_load_dir(kr, dir);
	if (r == 0 && kr->n == 0)
		r = -ENOKEY;
	if (r < 0) {
		keyring_free(kr);
		return log_error_errno(r, "loading the keys in '%s' failed: %m", dir), -EIO;
	}
	r = read_file_max(argv[optind], BUNDLE_MAX, buf, len);
	if (r < 0) {
		keyring_free(kr);
		return log_error_errno(r, "reading '%s' failed: %m", argv[optind]), -EIO;
	}
	return 0;
}

static int policy_verify_cmd(int argc, char **argv)
{
	Kmemctl__V1__PolicyPayload *p = NULL;
	struct keyring kr = { 0 };
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	r = read_signed(argc, argv, &kr, &buf, &len);
	if (r == -EINVAL)
		goto usage;
	if (r < 0)
		return EXIT_ERROR;
	r = policy_verify(&kr, (const uint8_t *)buf, len, time(NULL), &p);
	keyring_free(&kr);
	if (r < 0)
		return log_error_errno(r, "'%s' does not verify: %m", argv[optind]), EXIT_ERROR;
	if (!policy_name_valid(p->name)) {
		log_error("'%s': its policy name is not " POLICY_NAME_RULE
			  ": kmemd and agents refuse it",
			  argv[optind]);
		kmemctl__v1__policy_payload__free_unpacked(p, NULL);
		return EXIT_ERROR;
	}
	printf("name %s\nversion %llu\nsigner %s\nissued %lld\nnot_after %lld\n%s\n", p->name,
	       (unsigned long long)p->version, p->signer, (long long)p->issued_unix,
	       (long long)p->not_after_unix, p->document_json);
	kmemctl__v1__policy_payload__free_unpacked(p, NULL);
	return EXIT_OK;
usage:
	fprintf(stderr, "usage: kmemctl policy verify -K KEYS_DIR BUNDLE\n");
	return EXIT_USAGE;
}

/* What kmemd would say of a document on upload, with the path of the bad key. */
static int policy_validate(int argc, char **argv)
{
	_cleanup_free_ char *buf = NULL;
	struct policy_doc doc;
	char err[512];
	size_t len;
	int r;

	if (argc != 2) {
		fprintf(stderr, "usage: kmemctl policy validate DOCUMENT.json\n");
		return EXIT_USAGE;
	}
	r = read_file_max(argv[1], BUNDLE_MAX, &buf, &len);
	if (r < 0)
		return log_error_errno(r, "reading '%s' failed: %m", argv[1]), EXIT_ERROR;
	if (policy_doc_parse(buf, len, &doc, err, sizeof(err)) < 0 ||
	    policy_doc_check_known(&doc, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", argv[1], err);
		return EXIT_ERROR;
	}
	printf("%s: valid: %zu mitigations, %zu probes\n", argv[1], doc.nmitigations, doc.nprobes);
	return EXIT_OK;
}

int do_policy(int argc, char **argv)
{
	static const struct cmd verbs[] = {
		{ "keygen", policy_keygen, "create an Ed25519 policy signing key" },
		{ "sign", policy_sign_cmd, "sign a policy document into a bundle" },
		{ "verify", policy_verify_cmd, "check a bundle against pinned keys and show it" },
		{ "validate", policy_validate,
		  "check a document as kmemd would, naming the bad key" },
		{ "create", policy_create, "upload a signed bundle to kmemd" },
		{ "list", policy_list, "every version kmemd has" },
		{ "show", policy_show, "one version's document (the newest without VERSION)" },
		{ "diff", policy_diff, "what one version changes from another" },
		{ "retire", policy_retire, "a version nothing uses out of the lists, for good" },
		{ NULL, NULL, NULL },
	};

	return cmd_dispatch("policy", verbs, argc, argv);
}

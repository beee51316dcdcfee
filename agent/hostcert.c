// SPDX-License-Identifier: GPL-2.0
/* A renewed host certificate checked and kept (hostcert.h). */
#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hostcert.h"
#include "log.h"
#include "macro.h"
#include "pki.h"

char *hostcert_prev(const char *key)
{
	char *prev = NULL;

	if (asprintf(&prev, "%s.prev", key) < 0)
		return NULL;
	if (access(prev, F_OK) == 0)
		return prev;
	free(prev);
	return NULL;
}

static void name_of(X509 *x, int nid, char *buf, size_t size)
{
	if (X509_NAME_get_text_by_NID(X509_get_subject_name(x), nid, buf, (int)size) < 0)
		buf[0] = '\0';
}

/* x chains to the CAs in ca_file. */
static bool from_ca(X509 *x, const char *ca_file)
{
	X509_STORE *st = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	bool ok = st && ctx && X509_STORE_load_file(st, ca_file) == 1 &&
		  X509_STORE_CTX_init(ctx, st, x, NULL) == 1 &&
		  X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_CLIENT) == 1 &&
		  X509_verify_cert(ctx) == 1;

	X509_STORE_CTX_free(ctx);
	X509_STORE_free(st);
	return ok;
}

/* The renewal of cur: key's, the fleet CA's, a host's of the same id, running longer. */
static int check(X509 *x, EVP_PKEY *key, X509 *cur, const char *ca_file)
{
	char cn[65], cur_cn[65], ou[65];

	name_of(x, NID_commonName, cn, sizeof(cn));
	name_of(cur, NID_commonName, cur_cn, sizeof(cur_cn));
	name_of(x, NID_organizationalUnitName, ou, sizeof(ou));
	if (X509_check_private_key(x, key) != 1)
		return log_error_errno(-EBADMSG, "the renewed certificate is not for its key"),
		       -EBADMSG;
	if (!cn[0] || strcmp(cn, cur_cn) || strcmp(ou, "host"))
		return log_error_errno(
			       -EBADMSG,
			       "the renewed certificate is for '%s' (OU '%s'), not host '%s'", cn,
			       ou, cur_cn),
		       -EBADMSG;
	if (!from_ca(x, ca_file))
		return log_error_errno(-EBADMSG,
				       "the renewed certificate does not verify against '%s'",
				       ca_file),
		       -EBADMSG;
	if (ASN1_TIME_compare(X509_get0_notAfter(x), X509_get0_notAfter(cur)) <= 0)
		return log_error_errno(
			       -EBADMSG,
			       "the renewed certificate expires no later than the one in use"),
		       -EBADMSG;
	return 0;
}

/* path's new content through path.new, renamed over it. */
static int replace(const char *path, int (*write)(const char *, void *), void *what)
{
	_cleanup_free_ char *tmp = NULL;
	int r;

	if (asprintf(&tmp, "%s.new", path) < 0)
		return -ENOMEM;
	r = write(tmp, what);
	if (r == 0 && rename(tmp, path) < 0)
		r = negative_errno();
	if (r < 0)
		unlink(tmp);
	return r;
}

static int write_key(const char *path, void *key)
{
	return pki_write_key(path, key);
}

static int write_cert(const char *path, void *x)
{
	return pki_write_cert(path, x);
}

int hostcert_keep(const struct agent_config *cfg, const uint8_t *buf, size_t len)
{
	const char *key_pem = (const char *)buf, *cert_pem;
	_cleanup_free_ char *prev = NULL;
	size_t kl = strnlen(key_pem, len);
	EVP_PKEY *key = NULL;
	X509 *x = NULL, *cur = NULL;
	BIO *b;
	int r = -EBADMSG;

	if (!cfg->cert || !cfg->key || !cfg->ca || kl + 1 >= len || buf[len - 1] != '\0')
		return -EBADMSG;
	cert_pem = key_pem + kl + 1;
	b = BIO_new_mem_buf(key_pem, (int)kl);
	key = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
	BIO_free(b);
	b = BIO_new_mem_buf(cert_pem, -1);
	x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
	BIO_free(b);
	if (key && x && pki_read_cert(cfg->cert, &cur) == 0)
		r = check(x, key, cur, cfg->ca);
	ERR_clear_error();
	if (r == 0 && asprintf(&prev, "%s.prev", cfg->key) < 0)
		r = -ENOMEM;
	/* the old key stays reachable until the certificate for the new is in place */
	if (r == 0) {
		unlink(prev);
		if (link(cfg->key, prev) < 0)
			r = negative_errno();
	}
	if (r == 0)
		r = replace(cfg->key, write_key, key);
	if (r == 0)
		r = replace(cfg->cert, write_cert, x);
	if (r == 0)
		unlink(prev);
	if (r < 0 && r != -EBADMSG)
		log_error_errno(r, "keeping the renewed host certificate in '%s' failed: %m",
				cfg->cert);
	EVP_PKEY_free(key);
	X509_free(x);
	X509_free(cur);
	return r;
}

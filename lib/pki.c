// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "pki.h"

static const char *const role_names[] = {
	[PKI_ROLE_HOST] = "host",
	[PKI_ROLE_OBSERVER] = "observer",
	[PKI_ROLE_OPERATOR] = "operator",
	[PKI_ROLE_SERVER] = "server",
};

const char *pki_role_name(enum pki_role role)
{
	return role_names[role];
}

int pki_role_from_name(const char *s, enum pki_role *role)
{
	if (strcmp(s, "admin") == 0) {
		*role = PKI_ROLE_OPERATOR;
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(role_names); i++) {
		if (strcmp(s, role_names[i]) == 0) {
			*role = (enum pki_role)i;
			return 0;
		}
	}
	return -EINVAL;
}

int pki_keygen(enum pki_role role, EVP_PKEY **out)
{
	*out = role == PKI_ROLE_HOST ? EVP_PKEY_Q_keygen(NULL, NULL, "ED25519") :
				       EVP_EC_gen("P-256");
	return *out ? 0 : -EIO;
}

/* Ed25519 signs the message itself; it takes no digest */
static const EVP_MD *key_md(EVP_PKEY *key)
{
	/* EdDSA signs the message itself, with no digest of ours */
	return EVP_PKEY_get_id(key) == EVP_PKEY_ED25519 || EVP_PKEY_get_id(key) == EVP_PKEY_ED448 ?
		       NULL :
		       EVP_sha256();
}

static int set_serial(X509 *x)
{
	unsigned char raw[16];
	BIGNUM *bn;
	int ok;

	if (RAND_bytes(raw, sizeof(raw)) != 1)
		return -EIO;
	raw[0] &= 0x7f; /* positive, as RFC 5280 asks */
	bn = BN_bin2bn(raw, sizeof(raw), NULL);
	ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x));
	BN_free(bn);
	return ok ? 0 : -EIO;
}

static int add_ext(X509 *issuer, X509 *x, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *ext;
	int ok;

	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	if (!ext)
		return -EINVAL;
	ok = X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	return ok ? 0 : -EIO;
}

static int set_name(X509 *x, const char *cn, const char *ou)
{
	X509_NAME *name = X509_get_subject_name(x);

	if (!X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, (const unsigned char *)"kmemctl",
					-1, -1, 0))
		return -EINVAL;
	if (ou && !X509_NAME_add_entry_by_txt(name, "OU", MBSTRING_UTF8, (const unsigned char *)ou,
					      -1, -1, 0))
		return -EINVAL;
	if (!X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1,
					-1, 0))
		return -EINVAL;
	return 0;
}

static X509 *new_cert(EVP_PKEY *key, long not_before, long not_after)
{
	X509 *x = X509_new();

	if (!x)
		return NULL;
	if (!X509_set_version(x, 2) || set_serial(x) < 0 ||
	    !X509_gmtime_adj(X509_getm_notBefore(x), not_before) ||
	    !X509_gmtime_adj(X509_getm_notAfter(x), not_after) || !X509_set_pubkey(x, key)) {
		X509_free(x);
		return NULL;
	}
	return x;
}

int pki_make_ca(const char *cn, long days, EVP_PKEY *key, X509 **out)
{
	X509 *x = new_cert(key, -300, days * 86400L);

	if (!x)
		return -EIO;
	if (set_name(x, cn, NULL) < 0 || !X509_set_issuer_name(x, X509_get_subject_name(x)) ||
	    add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") < 0 ||
	    add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") < 0 ||
	    add_ext(x, x, NID_subject_key_identifier, "hash") < 0 ||
	    !X509_sign(x, key, key_md(key))) {
		X509_free(x);
		return -EIO;
	}
	*out = x;
	return 0;
}

static int add_sans(X509 *ca, X509 *x, const struct pki_subject *subj)
{
	char buf[1024] = "";
	size_t off = 0;

	for (size_t i = 0; subj->dns && subj->dns[i]; i++)
		off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%sDNS:%s", off ? "," : "",
					subj->dns[i]);
	for (size_t i = 0; subj->ips && subj->ips[i]; i++)
		off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%sIP:%s", off ? "," : "",
					subj->ips[i]);
	if (off >= sizeof(buf))
		return -ENAMETOOLONG;
	return off ? add_ext(ca, x, NID_subject_alt_name, buf) : 0;
}

int pki_issue(X509 *ca, EVP_PKEY *ca_key, EVP_PKEY *subject_key, const struct pki_subject *subj,
	      X509 **out)
{
	const char *eku = subj->role == PKI_ROLE_SERVER ? "serverAuth" : "clientAuth";
	X509 *x = new_cert(subject_key, subj->not_before, subj->not_after);

	if (!x)
		return -EIO;
	if (set_name(x, subj->cn, pki_role_name(subj->role)) < 0 ||
	    !X509_set_issuer_name(x, X509_get_subject_name(ca)) ||
	    add_ext(ca, x, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
	    add_ext(ca, x, NID_key_usage, "critical,digitalSignature") < 0 ||
	    add_ext(ca, x, NID_ext_key_usage, eku) < 0 ||
	    add_ext(ca, x, NID_authority_key_identifier, "keyid") < 0 ||
	    add_sans(ca, x, subj) < 0 || !X509_sign(x, ca_key, key_md(ca_key))) {
		X509_free(x);
		return -EIO;
	}
	*out = x;
	return 0;
}

static int bio_text(BIO *b, char **out)
{
	char *data;
	long n = BIO_get_mem_data(b, &data);
	char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;

	if (!text)
		return -ENOMEM;
	memcpy(text, data, (size_t)n);
	text[n] = '\0';
	*out = text;
	return 0;
}

int pki_make_csr(EVP_PKEY *key, const char *cn, char **pem)
{
	X509_REQ *req = X509_REQ_new();
	BIO *b = BIO_new(BIO_s_mem());
	X509_NAME *name;
	int r = -EIO;

	if (!req || !b)
		goto out;
	name = X509_REQ_get_subject_name(req);
	if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1,
				       0) &&
	    X509_REQ_set_pubkey(req, key) && X509_REQ_sign(req, key, key_md(key)) &&
	    PEM_write_bio_X509_REQ(b, req))
		r = bio_text(b, pem);
out:
	X509_REQ_free(req);
	BIO_free(b);
	return r;
}

int pki_name_utf8(const X509_NAME *name, int nid, char *buf, size_t size)
{
	int i = X509_NAME_get_index_by_NID(name, nid, -1), n;
	unsigned char *utf8 = NULL;

	buf[0] = '\0';
	if (i < 0)
		return -ENOENT;
	n = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i)));
	if (n < 0 || (size_t)n >= size || memchr(utf8, '\0', (size_t)n)) {
		OPENSSL_free(utf8);
		return -EINVAL;
	}
	memcpy(buf, utf8, (size_t)n);
	buf[n] = '\0';
	OPENSSL_free(utf8);
	return 0;
}

bool pki_key_allowed(EVP_PKEY *key)
{
	char group[32];
	size_t n;
	int bits;

	switch (EVP_PKEY_get_base_id(key)) {
	case EVP_PKEY_ED25519:
		return true;
	case EVP_PKEY_EC:
		if (!EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, group,
						    sizeof(group), &n))
			return false;
		return !strcmp(group, "prime256v1") || !strcmp(group, "secp384r1");
	case EVP_PKEY_RSA:
		bits = EVP_PKEY_get_bits(key);
		return bits >= 2048 && bits <= 4096;
	default:
		return false;
	}
}

int pki_read_csr(const char *pem, size_t len, EVP_PKEY **pub, char cn[65])
{
	BIO *b = BIO_new_mem_buf(pem, (int)len);
	X509_REQ *req = b ? PEM_read_bio_X509_REQ(b, NULL, NULL, NULL) : NULL;
	EVP_PKEY *key = req ? X509_REQ_get_pubkey(req) : NULL;
	int r = -EBADMSG;

	if (!key)
		goto out;
	/* before its signature is checked: an RSA key of 16,384 bits costs that much */
	if (!pki_key_allowed(key)) {
		r = -EPERM;
		goto out;
	}
	if (X509_REQ_verify(req, key) != 1)
		goto out;
	/* no CN, an empty one, one with a NUL or past 64 bytes: no host id */
	r = pki_name_utf8(X509_REQ_get_subject_name(req), NID_commonName, cn, 65);
	r = r < 0 || !cn[0] ? -EINVAL : 0;
	if (r < 0)
		goto out;
	*pub = key;
	key = NULL;
	r = 0;
out:
	EVP_PKEY_free(key);
	X509_REQ_free(req);
	BIO_free(b);
	return r;
}

int pki_cert_pem(X509 *cert, char **pem)
{
	BIO *b = BIO_new(BIO_s_mem());
	int r = b && PEM_write_bio_X509(b, cert) ? bio_text(b, pem) : -EIO;

	BIO_free(b);
	return r;
}

int pki_key_pem(EVP_PKEY *key, char **pem)
{
	BIO *b = BIO_new(BIO_s_mem());
	int r = b && PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL) ?
			bio_text(b, pem) :
			-EIO;

	BIO_free(b);
	return r;
}

/* Keys are written 0600 from the start, never chmod-ed after the fact. */
int pki_write_key(const char *path, EVP_PKEY *key)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	FILE *f;
	int ok;

	if (fd < 0)
		return negative_errno();
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	ok = PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL);
	return fclose(f) == 0 && ok ? 0 : -EIO;
}

int pki_write_cert(const char *path, X509 *cert)
{
	_cleanup_fclose_ FILE *f = fopen(path, "we");

	if (!f)
		return negative_errno();
	if (!PEM_write_X509(f, cert))
		return -EIO;
	return fflush(f) == 0 ? 0 : -EIO;
}

int pki_read_key(const char *path, EVP_PKEY **out)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");

	if (!f)
		return negative_errno();
	*out = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	return *out ? 0 : -EBADMSG;
}

int pki_read_cert(const char *path, X509 **out)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");

	if (!f)
		return negative_errno();
	*out = PEM_read_X509(f, NULL, NULL, NULL);
	return *out ? 0 : -EBADMSG;
}

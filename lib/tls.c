// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <string.h>

#include "pki.h"
#include "tls.h"

static int base_ctx(const SSL_METHOD *method, const struct tls_config *cfg, SSL_CTX **out)
{
	SSL_CTX *ctx = SSL_CTX_new(method);

	if (!ctx)
		return -ENOMEM;
	if (!SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) ||
	    !SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION))
		goto err;
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
	/*
	 * Idle connections give back their 16 KiB record buffers (kmemd holds
	 * thousands). No auto chain: a peer already trusts our CA, and every
	 * certificate sent is parsed and kept for the connection's life (about
	 * 4 KiB each in kmemd); intermediates go in the certificate file.
	 */
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_NO_AUTO_CHAIN);
	if (cfg->cert && SSL_CTX_use_certificate_chain_file(ctx, cfg->cert) != 1)
		goto err;
	if (cfg->key && SSL_CTX_use_PrivateKey_file(ctx, cfg->key, SSL_FILETYPE_PEM) != 1)
		goto err;
	if (cfg->cert && cfg->key && SSL_CTX_check_private_key(ctx) != 1)
		goto err;
	if (cfg->ca && SSL_CTX_load_verify_file(ctx, cfg->ca) != 1)
		goto err;
	*out = ctx;
	return 0;
err:
	SSL_CTX_free(ctx);
	return -EINVAL;
}

int tls_server_ctx(const struct tls_config *cfg, SSL_CTX **out)
{
	SSL_CTX *ctx;
	int r, mode = SSL_VERIFY_NONE;

	if (!cfg->cert || !cfg->key || (cfg->client_auth != TLS_CLIENT_NONE && !cfg->ca))
		return -EINVAL;
	r = base_ctx(TLS_server_method(), cfg, &ctx);
	if (r < 0)
		return r;
	if (cfg->client_auth == TLS_CLIENT_OPTIONAL)
		mode = SSL_VERIFY_PEER;
	else if (cfg->client_auth == TLS_CLIENT_REQUIRED)
		mode = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
	SSL_CTX_set_verify(ctx, mode, NULL);
	/*
	 * No resumption: clients hold one connection for hours, and a cached
	 * session per connection (with the client's certificate) is memory
	 * kmemd would keep for every host of the fleet.
	 */
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_num_tickets(ctx, 0);
	if (cfg->client_auth != TLS_CLIENT_NONE) {
		STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(cfg->ca);

		if (!names || (cfg->admin_ca &&
			       (SSL_CTX_load_verify_file(ctx, cfg->admin_ca) != 1 ||
				!SSL_add_file_cert_subjects_to_stack(names, cfg->admin_ca)))) {
			sk_X509_NAME_pop_free(names, X509_NAME_free);
			SSL_CTX_free(ctx);
			return -EINVAL;
		}
		SSL_CTX_set_client_CA_list(ctx, names);
	}
	*out = ctx;
	return 0;
}

int tls_client_ctx(const struct tls_config *cfg, SSL_CTX **out)
{
	SSL_CTX *ctx;
	int r;

	if (!cfg->ca)
		return -EINVAL;
	r = base_ctx(TLS_client_method(), cfg, &ctx);
	if (r < 0)
		return r;
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	*out = ctx;
	return 0;
}

int tls_client_ssl(SSL_CTX *ctx, const char *host, SSL **out)
{
	SSL *ssl = SSL_new(ctx);
	X509_VERIFY_PARAM *param;
	ASN1_OCTET_STRING *ip;
	int ok;

	if (!ssl)
		return -ENOMEM;
	param = SSL_get0_param(ssl);
	ip = a2i_IPADDRESS(host);
	if (ip) {
		ok = X509_VERIFY_PARAM_set1_ip(param, ASN1_STRING_get0_data(ip),
					       (size_t)ASN1_STRING_length(ip));
		ASN1_OCTET_STRING_free(ip);
	} else {
		ok = SSL_set_tlsext_host_name(ssl, host) && SSL_set1_host(ssl, host);
	}
	if (!ok) {
		SSL_free(ssl);
		return -EINVAL;
	}
	*out = ssl;
	return 0;
}

/* The first nid entry of name as UTF-8; a name with a NUL or past size makes no identity. */
static int name_entry(const X509_NAME *name, int nid, char *buf, size_t size)
{
	int r = pki_name_utf8(name, nid, buf, size);

	return r == -ENOENT ? 0 : r;
}

static void hex(const unsigned char *p, size_t n, char *out, size_t size)
{
	size_t i;

	for (i = 0; i < n && 2 * i + 2 < size; i++)
		snprintf(out + 2 * i, 3, "%02x", p[i]);
	out[2 * i] = '\0';
}

int tls_cert_identity(X509 *cert, struct tls_identity *id)
{
	unsigned char md[EVP_MAX_MD_SIZE], raw[64];
	unsigned int mdlen;
	const ASN1_INTEGER *serial = X509_get0_serialNumber(cert);
	struct tm tm;
	BIGNUM *bn;
	int n;

	memset(id, 0, sizeof(*id));
	if (name_entry(X509_get_subject_name(cert), NID_commonName, id->cn, sizeof(id->cn)) < 0 ||
	    name_entry(X509_get_subject_name(cert), NID_organizationalUnitName, id->ou,
		       sizeof(id->ou)) < 0 ||
	    name_entry(X509_get_issuer_name(cert), NID_commonName, id->issuer_cn,
		       sizeof(id->issuer_cn)) < 0)
		return -EBADMSG;
	if (!X509_digest(cert, EVP_sha256(), md, &mdlen))
		return -EIO;
	hex(md, mdlen, id->fingerprint, sizeof(id->fingerprint));
	bn = ASN1_INTEGER_to_BN(serial, NULL);
	if (!bn)
		return -EIO;
	n = BN_bn2bin(bn, raw);
	BN_free(bn);
	if (n < 0 || (size_t)n > sizeof(raw))
		return -EIO;
	hex(raw, (size_t)n, id->serial, sizeof(id->serial));
	if (!ASN1_TIME_to_tm(X509_get0_notAfter(cert), &tm))
		return -EIO;
	id->not_after = timegm(&tm);
	return id->cn[0] ? 0 : -EBADMSG;
}

int tls_read_certs(const char *path, STACK_OF(X509) * *out)
{
	STACK_OF(X509) *certs = sk_X509_new_null();
	BIO *b = BIO_new_file(path, "r");
	X509 *x;

	while (certs && b && (x = PEM_read_bio_X509(b, NULL, NULL, NULL)))
		if (!sk_X509_push(certs, x))
			X509_free(x);
	ERR_clear_error(); /* the end of the file */
	BIO_free(b);
	if (!certs || !sk_X509_num(certs)) {
		sk_X509_free(certs);
		return -EINVAL;
	}
	*out = certs;
	return 0;
}

bool tls_peer_anchored_in(SSL *ssl, STACK_OF(X509) * cas)
{
	STACK_OF(X509) *chain = SSL_get0_verified_chain(ssl);
	X509 *anchor;
	int i;

	if (!chain || !sk_X509_num(chain) || SSL_get_verify_result(ssl) != X509_V_OK)
		return false;
	anchor = sk_X509_value(chain, sk_X509_num(chain) - 1);
	for (i = 0; i < sk_X509_num(cas); i++)
		if (!X509_cmp(anchor, sk_X509_value(cas, i)))
			return true;
	return false;
}

int tls_peer_identity(SSL *ssl, struct tls_identity *id)
{
	X509 *cert = SSL_get0_peer_certificate(ssl);

	if (!cert)
		return -ENOENT;
	if (SSL_get_verify_result(ssl) != X509_V_OK)
		return -EPERM;
	return tls_cert_identity(cert, id);
}

const char *tls_error_string(char *buf, size_t size)
{
	unsigned long e = ERR_get_error();

	if (!e) {
		snprintf(buf, size, "no TLS error queued");
		return buf;
	}
	ERR_error_string_n(e, buf, size);
	ERR_clear_error();
	return buf;
}

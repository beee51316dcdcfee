/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Keys and X.509 certificates for the fleet PKI: the fleet CA, kmemd's
 * server certificate, host and operator client certificates.
 *
 * Host keys are Ed25519: kmemd keeps every connected host's parsed
 * certificate, and an Ed25519 key is a fraction of a P-256 one in memory.
 * The CA, server and operator keys are ECDSA P-256 because browsers (the
 * dashboard with an operator's client certificate) do not accept Ed25519
 * in TLS. Identity lives in the subject: CN is the host id or the
 * operator's name, OU the role ("host", "observer", "operator",
 * "server"); kmemd authorizes on the OU, and only certificates its own CAs
 * signed reach that check.
 */
#ifndef KMEMCTL_PKI_H
#define KMEMCTL_PKI_H

#include <openssl/evp.h>
#include <openssl/x509.h>
#include <stdbool.h>

enum pki_role {
	PKI_ROLE_HOST,
	PKI_ROLE_OBSERVER, /* reads the admin API, the dashboard and /metrics */
	PKI_ROLE_OPERATOR, /* also changes things */
	PKI_ROLE_SERVER,
};

struct pki_subject {
	const char *cn;
	enum pki_role role;
	const char *const *dns; /* NULL-terminated; server certificates */
	const char *const *ips; /* NULL-terminated; server certificates */
	long not_before; /* seconds from now, may be negative */
	long not_after; /* seconds from now, may be negative (expired) */
};

const char *pki_role_name(enum pki_role role);
/* "admin", the operator's OU before observers existed, is read as operator. */
int pki_role_from_name(const char *s, enum pki_role *role);

/* A new key for a certificate of role; the CA's is PKI_ROLE_SERVER's kind. */
int pki_keygen(enum pki_role role, EVP_PKEY **out);
int pki_make_ca(const char *cn, long days, EVP_PKEY *key, X509 **out);
int pki_issue(X509 *ca, EVP_PKEY *ca_key, EVP_PKEY *subject_key, const struct pki_subject *subj,
	      X509 **out);

/* A PEM certificate signing request for cn, signed by key (malloc'ed). */
int pki_make_csr(EVP_PKEY *key, const char *cn, char **pem);
/*
 * The keys kmemd certifies: Ed25519, ECDSA on P-256 or P-384, RSA of 2048
 * to 4096 bits. Others are refused, so that no host's key costs kmemd more
 * to check than these (PKI_KEY_POLICY says it).
 */
#define PKI_KEY_POLICY "Ed25519, ECDSA on P-256 or P-384, or RSA of 2048 to 4096 bits"
bool pki_key_allowed(EVP_PKEY *key);
/*
 * Reads a PEM CSR of at most len bytes, checks its key (pki_key_allowed())
 * and self-signature and returns its public key and subject CN. -EBADMSG
 * when it does not parse or verify, -EPERM when its key is not one kmemd
 * certifies, -EINVAL when it has no CN, one past 64 bytes or one with a NUL;
 * the CN is returned as UTF-8.
 */
int pki_read_csr(const char *pem, size_t len, EVP_PKEY **pub, char cn[65]);
/*
 * The first nid entry of name as UTF-8 into buf, whatever string type the
 * certificate or CSR chose (a BMPString "host" read raw is "\0h\0o\0s\0t",
 * empty as a C string; tests/fuzz/corpus/csr has one). -ENOENT when there
 * is none (buf ""), -EINVAL when it holds a NUL or does not fit size:
 * where a C string would say less than the name does (h2\0h1 read as h2,
 * two long names cut to one).
 */
int pki_name_utf8(const X509_NAME *name, int nid, char *buf, size_t size);
/* PEM text of cert (malloc'ed). */
int pki_cert_pem(X509 *cert, char **pem);
/* PEM text of a private key (malloc'ed; clear and free it when done). */
int pki_key_pem(EVP_PKEY *key, char **pem);

int pki_write_key(const char *path, EVP_PKEY *key);
int pki_write_cert(const char *path, X509 *cert);
int pki_read_key(const char *path, EVP_PKEY **out);
int pki_read_cert(const char *path, X509 **out);

#endif

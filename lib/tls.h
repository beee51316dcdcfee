/* SPDX-License-Identifier: GPL-2.0 */
/*
 * OpenSSL contexts for mutual TLS between agents, operators and kmemd.
 *
 * TLS 1.3 only. Trust is pinned: a context trusts exactly the CA file it is
 * given and never the system store. The server decides per context whether
 * a client certificate is required (agent and admin API), optional (the
 * listener that also serves enrollment; routes then check) or not asked.
 */
#ifndef KMEMCTL_TLS_H
#define KMEMCTL_TLS_H

#include <openssl/ssl.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

enum tls_client_auth {
	TLS_CLIENT_NONE,
	TLS_CLIENT_OPTIONAL,
	TLS_CLIENT_REQUIRED,
};

struct tls_config {
	const char *cert; /* PEM certificate (chain) */
	const char *key; /* PEM private key */
	const char *ca; /* PEM CA: verifies the peer */
	enum tls_client_auth client_auth; /* server contexts only */
	const char *admin_ca; /* server: a second CA clients may come from; NULL: none */
};

struct tls_identity {
	char cn[65];
	char ou[65];
	char issuer_cn[65];
	char serial[64]; /* hex */
	char fingerprint[65]; /* SHA-256 of the DER, hex */
	time_t not_after;
};

int tls_server_ctx(const struct tls_config *cfg, SSL_CTX **out);
int tls_client_ctx(const struct tls_config *cfg, SSL_CTX **out);
/* A client SSL that sends SNI and verifies the server's name or IP address. */
int tls_client_ssl(SSL_CTX *ctx, const char *host, SSL **out);

int tls_cert_identity(X509 *cert, struct tls_identity *id);
/* Every certificate in a PEM file (a CA bundle); -EINVAL when it holds none. */
int tls_read_certs(const char *path, STACK_OF(X509) * *out);
/* The peer's verified chain ends at one of cas. */
bool tls_peer_anchored_in(SSL *ssl, STACK_OF(X509) * cas);
/* -ENOENT when the peer sent no certificate, -EPERM when it did not verify. */
int tls_peer_identity(SSL *ssl, struct tls_identity *id);

/* The oldest queued OpenSSL error as text, for the caller's log line. */
const char *tls_error_string(char *buf, size_t size);

#endif

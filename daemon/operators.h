/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Operators' identities: who the caller is and what it may do, the
 * operator certificates kmemd has seen, and their revocation.
 *
 * A certificate is revoked by its SHA-256 fingerprint, kept in the store:
 * every kmemd on it refuses the certificate from its next request on,
 * connections already open included, and after restarts. A name revokes
 * every certificate of that name kmemd has seen; one it has not seen is
 * revoked by its file or fingerprint. Use is noted off the request path
 * (operators_flush()): a read never waits for the store's write lock.
 */
#ifndef KMEMD_OPERATORS_H
#define KMEMD_OPERATORS_H

#include <stdbool.h>

#include "router.h"
#include "tls.h"

struct http_request;
struct kmemd;

/*
 * The router, before an observer's or operator's route: false, with 403
 * (revoked) or 503 (the store failed) sent, when id may not go on. The
 * certificate is remembered as used, for operators_flush().
 */
bool operators_admit(struct kmemd *k, struct http_request *req, const struct tls_identity *id,
		     enum route_role role);
/*
 * The certificates used since the last call noted in the store (those it
 * could not keep for the next). Every rollout tick, before operators are
 * listed or revoked by name, and at a stop.
 */
void operators_flush(struct kmemd *k);

/* GET /v1/whoami: the caller's name, role, certificate, and the routes it may call. */
void handle_whoami(struct http_request *req, struct kmemd *k, const struct tls_identity *peer);
/* GET /v1/operators: every operator certificate seen or revoked. */
void handle_operators_get(struct http_request *req, struct kmemd *k,
			  const struct tls_identity *peer);
/* POST /v1/operators/revoke: {"name"}, {"fingerprint"} or {"certificate": PEM}. */
void handle_operator_revoke(struct http_request *req, struct kmemd *k,
			    const struct tls_identity *peer);

#endif

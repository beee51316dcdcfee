/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every revocation the store holds, in memory: revoked host ids and
 * revoked operator certificates (by fingerprint). A connection is
 * classed by them at its handshake, so a revoked certificate never holds
 * a host's or an operator's slot (conn.h), and each refresh that finds a
 * new one closes that identity's open connections at once.
 *
 * Read from the store at start, at every rollout tick (a revocation
 * another kmemd on the store made) and after each revocation here. The
 * routes still ask the store on their own (report.c, operators.c), so a
 * revocation elsewhere is refused at the next request even before this
 * kmemd's next tick.
 */
#ifndef KMEMD_REVOCATIONS_H
#define KMEMD_REVOCATIONS_H

#include <stdbool.h>

struct kmemd;
struct revocations;

/*
 * k->revoked read again from the store; when it holds a revocation it
 * did not, every open connection is classed again (conns_revisit()). A
 * negative errno when the store failed: what was known is kept.
 */
int revocations_refresh(struct kmemd *k);
/* After a revocation here: refreshed, its connections closed, a failure logged. */
void revocations_close(struct kmemd *k);
bool revocations_host(const struct revocations *r, const char *host_id);
bool revocations_operator(const struct revocations *r, const char *fingerprint);
/* How many revocations are known. */
unsigned long revocations_count(const struct revocations *r);
void revocations_free(struct revocations *r);

#endif

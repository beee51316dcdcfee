/* SPDX-License-Identifier: GPL-2.0 */
/*
 * When the host certificates in use expire, for /metrics: each host's
 * latest certificate as its connections and reports come, kept in memory
 * by a 64-bit hash of its id (24 bytes a host), and the earliest of those
 * seen lately. A renewed certificate replaces the host's old one; a host
 * that stopped reporting drops out. It also tells enrollment which ids a
 * certificate was used for before their first report (cert_expiry_seen()).
 */
#ifndef KMEMD_CERT_EXPIRY_H
#define KMEMD_CERT_EXPIRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cert_expiry {
	struct cert_slot *slots; /* open addressing, a power of two of them */
	size_t cap, n;
};

/* host's certificate runs until not_after_s, seen at now_ms; -ENOMEM. */
int cert_expiry_note(struct cert_expiry *t, const char *host, int64_t not_after_s, int64_t now_ms);
/*
 * The earliest expiry (unix seconds) of the hosts noted since
 * now_ms - window_ms, 0 for none; *n: how many. The others are forgotten.
 */
int64_t cert_expiry_earliest(struct cert_expiry *t, int64_t now_ms, int64_t window_ms, size_t *n);
/* Whether a certificate of host was noted and not yet forgotten. */
bool cert_expiry_seen(const struct cert_expiry *t, const char *host);
void cert_expiry_free(struct cert_expiry *t);

#endif

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What clients send kmemd besides reports (lib/report-check.h), parsed
 * and bounded apart from the handlers, so each parser is tested and
 * fuzzed on its own (tests/fuzz): enrollment requests, admin JSON bodies
 * and query parameters. Every number from outside is range-checked here
 * before any arithmetic is done with it.
 */
#ifndef KMEMD_REQUESTS_H
#define KMEMD_REQUESTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kmemctl/v1/enroll.pb-c.h"
#include "store.h"

/* A CSR in PEM: an Ed25519 or P-256 one is well under 2 KiB. */
#define ENROLL_CSR_MAX (16U << 10)
/* A secret's uses and validity at most: a million hosts, a decade. */
#define SECRET_USES_MAX 1000000
#define SECRET_EXPIRES_MAX_S (10LL * 366 * 86400)
/* Times in queries: unix milliseconds up to the year 9999, so sums of two never overflow. */
#define QUERY_MS_MAX 253402300799999LL

/* A secret, a host id of TEXT_NAME_CHARSET and a CSR, each within its bounds. */
bool enroll_request_valid(const Kmemctl__V1__EnrollRequest *er);
/* A renewal's: the same without a secret (the host's certificate stands for it). */
bool renew_request_valid(const Kmemctl__V1__EnrollRequest *er);

/*
 * The body of POST /v1/enroll/secrets (len 0: none): {"expires_in_s": N
 * (default a week, 0: never), "uses": N (0: any number), "hosts":
 * PATTERN} into sec, its expiry from now. -EINVAL with why otherwise.
 */
int secret_request_parse(const char *body, size_t len, struct store_secret *sec, int64_t now,
			 char *why, size_t whylen);

/*
 * A certificate's SHA-256 fingerprint as an operator gives it (POST
 * /v1/operators/revoke): 64 hex digits, colons between bytes allowed,
 * into fp lower-cased without them.
 */
bool fingerprint_parse(const char *s, char fp[65]);

/* A pattern of host ids for fnmatch(3): their charset and its wildcards. */
bool host_pattern_valid(const char *p);

/*
 * A query's decimal number from 0 to max (NULL: *out kept); -EINVAL for
 * anything else: signs, spaces, trailing text, overflow.
 */
int query_number(const char *s, int64_t max, int64_t *out);

#endif

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A large rollout in a real store, for bench/rollout-engine and the
 * series test: hosts host-00000... in 4 strata (2 kernel builds, 2
 * roles), each with reports over an hour (one vmap-purge sample each),
 * and rollout "bench" of every host in 3 waves, baking an hour.
 */
#ifndef KMEMCTL_BENCH_ROLLOUT_STORE_H
#define KMEMCTL_BENCH_ROLLOUT_STORE_H

#include <stdint.h>

#include "rollout.h"
#include "store.h"

extern const char rollout_store_doc[];

/* The hosts' names and strata into m[0..n). */
void rollout_store_hosts(struct rollout_member *m, unsigned long n);

/* reports per host (>= 2) from t0 to an hour later, one commit per round; -EIO: see error(). */
int rollout_store_reports(struct store *st, const struct rollout_member *m, unsigned long n,
			  unsigned long reports, int64_t t0);

/* One more report of host i at t, with sequence number seq. */
int rollout_store_report(struct store *st, const struct rollout_member *m, unsigned long i,
			 uint64_t seq, int64_t t);

/* Rollout "bench" of m[0..n), planned into m, its first wave started at t0. */
int rollout_store_start(struct store *st, struct rollout_member *m, unsigned long n, int64_t t0);

#endif

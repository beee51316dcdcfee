/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The statistics of rollout gates: an exact test that a canary's event rate
 * (lockups per host-hour) exceeds its baseline's, and the Mann-Whitney U
 * test for latencies. Results match SciPy's (tests/unit/stats/), which
 * is where an operator will check a verdict.
 */
#ifndef KMEMCTL_STATS_H
#define KMEMCTL_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* P(Z >= z) for a standard normal Z. */
double stats_norm_sf(double z);
/* P(X >= k) for X ~ Binomial(n, p). */
double stats_binom_sf(uint64_t k, uint64_t n, double p);

/*
 * One-sided p-value that events x1 over exposure t1 come at a higher rate
 * than x2 over t2 (Poisson counts): conditioned on x1 + x2, x1 is binomial
 * with p = t1 / (t1 + t2) when the rates are equal. SciPy:
 * binomtest(x1, x1 + x2, t1 / (t1 + t2), alternative="greater"). 1 when
 * there are no events; -1 when an exposure is not positive.
 */
double stats_rate_test(uint64_t x1, double t1, uint64_t x2, double t2);

enum stats_alternative {
	STATS_GREATER, /* x tends to be larger than y */
	STATS_LESS,
	STATS_TWO_SIDED,
};

struct stats_mwu {
	double u1; /* U of x: pairs where x > y, plus half the ties */
	double p;
	bool exact; /* the exact null distribution, else the normal approximation */
	double effect; /* u1 / (n1 n2): P(x > y) + P(x = y) / 2; 0.5 when alike */
};

/*
 * Mann-Whitney U test of x against y, as SciPy's mannwhitneyu() with its
 * defaults: exact when a sample has at most 8 values and there are no ties,
 * else normal with tie and continuity corrections. -EINVAL on an empty
 * sample or a NaN, -ENOMEM.
 */
int stats_mwu(const double *x, size_t n1, const double *y, size_t n2, enum stats_alternative alt,
	      struct stats_mwu *out);

#endif

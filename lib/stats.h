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

/*
 * Power of the final look: P(stats_rate_test-style exact conditional test at level alpha
 * fails) when canary lockups ~ Poisson(ratio * mu0) and baseline lockups ~ Poisson(rho * mu0)
 * (rho: baseline over canary host-hours). Fails on p <= alpha. rho = INFINITY is the
 * limit of a baseline rate known exactly: the one-sample test P(Poisson(mu0) >= x) <= alpha.
 * 0 when mu0, rho or ratio is not positive, mu0 is not finite or alpha <= 0 (a test that
 * cannot run has no power), or an argument is NaN; 1 when alpha >= 1.
 */
double stats_rate_power(double ratio, double mu0, double rho, double alpha);
/* The smallest mu0 with stats_rate_power(ratio, mu0, rho, alpha) >= power; INFINITY if none up to 1e7. */
double stats_rate_mu_needed(double ratio, double rho, double alpha, double power);
/* The smallest ratio in [1, 1000] with that power at mu0; INFINITY if none. */
double stats_rate_detectable(double mu0, double rho, double alpha, double power);

/* One stratum-and-segment cell of a stratified rate comparison. */
struct stats_cell {
	uint64_t x1; /* canary events */
	double t1; /* canary host-hours */
	uint64_t x2; /* baseline events */
	double t2;
};

/*
 * One-sided p-value that canaries come at a higher rate than baselines, over
 * cells with their own rates: P(sum of Binomial(x1 + x2, t1 / (t1 + t2)) >= sum
 * of x1) (the score test for a common ratio). Cells with t1 or t2 <= 0 are
 * left out; 1 when none is left or there are no events. Exact when the events
 * total at most 5000, else normal with continuity correction. One cell: equals
 * stats_rate_test().
 */
double stats_rate_test_cells(const struct stats_cell *c, size_t n);

#define STATS_MSPRT_RATIOS 8 /* theta_i = 2^(i/2), i = 1..8 */
/*
 * Adds one increment (events and host-hours since the last look) of one
 * stratum to a mixture SPRT's log likelihood ratios (theta_i against 1); an
 * increment with t1 or t2 <= 0 adds nothing. stats_msprt_lr() is their mean
 * likelihood ratio: under equal rates P(it ever reaches 1/alpha) <= alpha.
 */
void stats_msprt_add(double log_lr[STATS_MSPRT_RATIOS], const struct stats_cell *inc);
double stats_msprt_lr(const double log_lr[STATS_MSPRT_RATIOS]);

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

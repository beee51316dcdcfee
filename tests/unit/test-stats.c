// SPDX-License-Identifier: GPL-2.0
/*
 * lib/stats.c against SciPy: every case in stats/ref.txt (made by
 * stats/make-ref.py with Debian's python3-scipy) to 1e-9 relative; the power
 * and the stratified test against plain sums in stats/power-ref.txt (made by
 * stats/make-power-ref.py, standard library only); the mixture SPRT by a
 * seeded simulation.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "stats.h"

static void close_to(double got, double want, const char *line)
{
	double tol = 1e-9 * fmax(fabs(want), 1e-300);

	if (!(fabs(got - want) <= tol || (want < 1e-200 && got < 1e-200)))
		fail_msg("got %.17g, want %.17g: %s", got, want, line);
}

static void close_to_rel(double got, double want, double rel, const char *what)
{
	if (!(fabs(got - want) <= rel * fmax(fabs(want), 1e-300)))
		fail_msg("got %.17g, want %.17g: %s", got, want, what);
}

static enum stats_alternative alternative(const char *s)
{
	if (!strcmp(s, "greater"))
		return STATS_GREATER;
	if (!strcmp(s, "less"))
		return STATS_LESS;
	assert_string_equal(s, "two-sided");
	return STATS_TWO_SIDED;
}

/* "mwu ALT N1 N2 X... Y... U1 P" */
static void check_mwu(char *line)
{
	char *save = NULL, *tok = strtok_r(line + 4, " ", &save);
	enum stats_alternative alt = alternative(tok);
	size_t n1 = strtoul(strtok_r(NULL, " ", &save), NULL, 10);
	size_t n2 = strtoul(strtok_r(NULL, " ", &save), NULL, 10);
	double *v = calloc(n1 + n2, sizeof(*v)), u, p;
	struct stats_mwu r;

	assert_non_null(v);
	for (size_t i = 0; i < n1 + n2; i++)
		v[i] = strtod(strtok_r(NULL, " ", &save), NULL);
	u = strtod(strtok_r(NULL, " ", &save), NULL);
	p = strtod(strtok_r(NULL, " \n", &save), NULL);
	assert_int_equal(stats_mwu(v, n1, v + n1, n2, alt, &r), 0);
	close_to(r.u1, u, "U");
	close_to(r.p, p, "mwu p");
	close_to(r.effect, u / ((double)n1 * (double)n2), "effect");
	free(v);
}

static void test_reference(void **state)
{
	char path[4096], line[65536], copy[65536];
	unsigned rates = 0, mwus = 0;
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/stats/ref.txt", getenv("KMEM_TEST_DATA"));
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long x1, x2;
		double t1, t2, p;

		snprintf(copy, sizeof(copy), "%s", line);
		if (sscanf(line, "rate %llu %lf %llu %lf %lf", &x1, &t1, &x2, &t2, &p) == 5) {
			close_to(stats_rate_test(x1, t1, x2, t2), p, copy);
			rates++;
		} else if (!strncmp(line, "mwu ", 4)) {
			check_mwu(line);
			mwus++;
		}
	}
	fclose(f);
	/* the file was read, all of it */
	assert_int_equal(rates, 40);
	assert_int_equal(mwus, 72);
}

static void test_edges(void **state)
{
	struct stats_mwu r;
	double x[] = { 1, 2, 3 }, nan_ = NAN;

	(void)state;
	assert_true(stats_rate_test(1, 0, 1, 1) < 0);
	assert_true(stats_rate_test(1, 1, 1, -1) < 0);
	assert_true(stats_rate_test(0, 1, 0, 1) == 1);
	assert_true(stats_binom_sf(0, 5, 0.3) == 1);
	assert_true(stats_binom_sf(6, 5, 0.3) == 0);
	assert_true(stats_binom_sf(3, 5, 0) == 0);
	assert_true(stats_binom_sf(3, 5, 1) == 1);
	close_to(stats_norm_sf(0), 0.5, "sf(0)");
	assert_int_equal(stats_mwu(x, 0, x, 3, STATS_GREATER, &r), -EINVAL);
	assert_int_equal(stats_mwu(x, 3, &nan_, 1, STATS_GREATER, &r), -EINVAL);
	/* identical samples: no evidence either way */
	assert_int_equal(stats_mwu(x, 3, x, 3, STATS_TWO_SIDED, &r), 0);
	close_to(r.effect, 0.5, "effect of equal samples");
	assert_true(r.p == 1);
}

/* "cells N X1 T1 X2 T2 ... P" */
static void check_cells(char *line, const char *copy)
{
	char *save = NULL, *tok = strtok_r(line + 6, " ", &save);
	size_t n = strtoul(tok, NULL, 10);
	struct stats_cell *c = calloc(n, sizeof(*c));

	assert_non_null(c);
	for (size_t i = 0; i < n; i++) {
		c[i].x1 = strtoull(strtok_r(NULL, " ", &save), NULL, 10);
		c[i].t1 = strtod(strtok_r(NULL, " ", &save), NULL);
		c[i].x2 = strtoull(strtok_r(NULL, " ", &save), NULL, 10);
		c[i].t2 = strtod(strtok_r(NULL, " ", &save), NULL);
	}
	close_to_rel(stats_rate_test_cells(c, n), strtod(strtok_r(NULL, " \n", &save), NULL), 1e-9,
		     copy);
	free(c);
}

/* power-ref.txt: the power and the stratified test, by stats/make-power-ref.py */
static void test_power_reference(void **state)
{
	char path[4096], line[65536], copy[65536];
	unsigned powers = 0, cells = 0;
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/stats/power-ref.txt", getenv("KMEM_TEST_DATA"));
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		double k, mu0, rho, alpha, p;
		char r[32];

		snprintf(copy, sizeof(copy), "%s", line);
		if (sscanf(line, "power %lf %lf %31s %lf %lf", &k, &mu0, r, &alpha, &p) == 5) {
			rho = strcmp(r, "inf") ? strtod(r, NULL) : INFINITY;
			/* both sums are cut at 10 sd; the rest is rounding */
			close_to_rel(stats_rate_power(k, mu0, rho, alpha), p, 1e-7, copy);
			powers++;
		} else if (!strncmp(line, "cells ", 6)) {
			check_cells(line, copy);
			cells++;
		}
	}
	fclose(f);
	assert_int_equal(powers, 38);
	assert_int_equal(cells, 11);
}

/*
 * The numbers: 80% power at alpha 0.01 against a large baseline
 * needs mu0 about 5 for 3x, 15-17 for 2x and 51-57 for 1.5x.
 */
static void test_mu_needed(void **state)
{
	const double ratios[] = { 3, 2, 1.5 }, lo[] = { 4.5, 14.5, 50 }, hi[] = { 5.5, 17, 57 };
	const double rhos[] = { 10, 100, INFINITY }, alphas[] = { 0.01, 0.005, 0.0025 };

	(void)state;
	for (int i = 0; i < 3; i++) {
		double mu = stats_rate_mu_needed(ratios[i], 100, 0.01, 0.8);

		assert_true(mu >= lo[i] && mu <= hi[i]);
	}
	/* what it returns has the power; a little less does not (smooth for finite rho) */
	for (int r = 0; r < 3; r++)
		for (int a = 0; a < 3; a++)
			for (int i = 0; i < 3; i++) {
				double mu =
					stats_rate_mu_needed(ratios[i], rhos[r], alphas[a], 0.8);

				assert_true(isfinite(mu));
				assert_true(stats_rate_power(ratios[i], mu, rhos[r], alphas[a]) >=
					    0.8);
				if (isfinite(rhos[r]))
					assert_true(stats_rate_power(ratios[i], mu * 0.999, rhos[r],
								     alphas[a]) < 0.8);
			}
	/* a smaller alpha, or a smaller baseline, needs more */
	assert_true(stats_rate_mu_needed(2, 100, 0.0025, 0.8) >
		    stats_rate_mu_needed(2, 100, 0.01, 0.8));
	assert_true(stats_rate_mu_needed(2, 1, 0.01, 0.8) > stats_rate_mu_needed(2, 10, 0.01, 0.8));
	/* no ratio above 1: never */
	assert_true(isinf(stats_rate_mu_needed(1, 100, 0.01, 0.8)));
}

static void test_detectable(void **state)
{
	double k;

	(void)state;
	/* the inverse of mu_needed */
	k = stats_rate_detectable(stats_rate_mu_needed(2, 100, 0.01, 0.8), 100, 0.01, 0.8);
	close_to_rel(k, 2, 1e-4, "detectable at mu_needed(2x)");
	k = stats_rate_detectable(5, 100, 0.01, 0.8);
	assert_true(k > 2.5 && k < 3.5);
	assert_true(stats_rate_power(k, 5, 100, 0.01) >= 0.8);
	assert_true(stats_rate_power(k * 0.999, 5, 100, 0.01) < 0.8);
	/* the 24 host-hours at 0.01/h: 0.24 expected lockups */
	k = stats_rate_detectable(0.24, 100, 0.01, 0.8);
	assert_true(k > 15 && k < 1000);
	assert_true(isinf(stats_rate_detectable(0.001, 100, 0.01, 0.8)));
	assert_true(isinf(stats_rate_detectable(0, 100, 0.01, 0.8)));
	assert_true(isinf(stats_rate_detectable(NAN, 100, 0.01, 0.8)));
}

/* Bad input: a defined answer, never a crash or a hang. */
static void test_power_edges(void **state)
{
	(void)state;
	assert_true(stats_rate_power(2, 0, 100, 0.01) == 0);
	assert_true(stats_rate_power(2, -1, 100, 0.01) == 0);
	assert_true(stats_rate_power(2, NAN, 100, 0.01) == 0);
	assert_true(stats_rate_power(2, INFINITY, 100, 0.01) == 0);
	assert_true(stats_rate_power(NAN, 5, 100, 0.01) == 0);
	assert_true(stats_rate_power(-2, 5, 100, 0.01) == 0);
	assert_true(stats_rate_power(2, 5, 0, 0.01) == 0);
	assert_true(stats_rate_power(2, 5, -3, 0.01) == 0);
	assert_true(stats_rate_power(2, 5, NAN, 0.01) == 0);
	assert_true(stats_rate_power(2, 5, 100, 0) == 0);
	assert_true(stats_rate_power(2, 5, 100, NAN) == 0);
	assert_true(stats_rate_power(2, 5, 100, 1) == 1);
	assert_true(stats_rate_power(INFINITY, 5, 100, 0.01) == 1);
	/* baseline exposure too small to compare with: no power, and no endless search */
	assert_true(stats_rate_power(2, 5, 1e-12, 0.01) < 1e-12);
	assert_true(stats_rate_power(2, 5, 1e-300, 0.01) == 0);
	/* at ratio 1 the power is the test's size: at most alpha */
	assert_true(stats_rate_power(1, 20, 10, 0.01) <= 0.01);
	assert_true(stats_rate_power(1, 5000, 10, 0.01) <= 0.0101);
	/* a huge baseline is the one-sample test against a known rate */
	close_to_rel(stats_rate_power(2, 5, 1e12, 0.01), stats_rate_power(2, 5, INFINITY, 0.01),
		     1e-9, "rho 1e12 against INFINITY");
	close_to_rel(stats_rate_power(1.5, 50, 1e6, 0.01),
		     stats_rate_power(1.5, 50, INFINITY, 0.01), 0.01, "rho 1e6 against INFINITY");
	assert_true(stats_rate_mu_needed(2, 100, 0.01, NAN) == INFINITY);
	assert_true(stats_rate_mu_needed(2, 100, 0.01, 0) == 0);
	assert_true(stats_rate_mu_needed(2, 0, 0.01, 0.8) == INFINITY);
	assert_true(stats_rate_mu_needed(NAN, 100, 0.01, 0.8) == INFINITY);
	assert_true(stats_rate_detectable(5, 100, 0.01, NAN) == INFINITY);
	assert_true(stats_rate_detectable(5, 100, 0.01, 0) == 1);
}

/* The normal approximation takes over from the exact sum at mu0 = 1e4; they agree there. */
static void test_power_switch(void **state)
{
	const double rhos[] = { 0.05, 1, 10, 100 };

	(void)state;
	for (int i = 0; i < 4; i++) {
		double below = stats_rate_power(1.03, 9999.99, rhos[i], 0.005);
		double above = stats_rate_power(1.03, 10000.01, rhos[i], 0.005);

		assert_true(fabs(below - above) < 2e-4);
	}
	/* huge counts stay a number (and fast: no sum over 1e8 baseline counts) */
	assert_true(stats_rate_power(1.01, 1e6, 100, 0.01) > 0.99);
	assert_true(stats_rate_power(1.001, 1e6, 100, 0.01) > 0.05);
	assert_true(stats_rate_power(1.001, 1e6, 100, 0.01) < 0.5);
}

static void test_cells(void **state)
{
	struct stats_cell c[4] = {
		{ 3, 24, 1, 96 },
		{ 2, 0, 5, 10 }, /* no canary exposure: left out */
		{ 0, 5, 0, -1 }, /* nor a negative baseline */
		{ 1, NAN, 4, 3 },
	};
	struct stats_cell big[2], edge[2];

	(void)state;
	/* one cell is stats_rate_test(), bit for bit */
	assert_true(stats_rate_test_cells(c, 1) == stats_rate_test(3, 24, 1, 96));
	assert_true(stats_rate_test_cells(c, 4) == stats_rate_test(3, 24, 1, 96));
	assert_true(stats_rate_test_cells(c + 1, 3) == 1);
	assert_true(stats_rate_test_cells(NULL, 0) == 1);
	c[0].x1 = c[0].x2 = 0;
	assert_true(stats_rate_test_cells(c, 1) == 1);
	/* the normal branch past 5000 events against the exact one at 5000 */
	big[0] = (struct stats_cell){ 79, 100, 2421, 3000 };
	big[1] = (struct stats_cell){ 150, 200, 2350, 4000 };
	edge[0] = big[0];
	edge[1] = big[1];
	edge[0].x2++;
	{
		double exact = stats_rate_test_cells(big, 2),
		       normal = stats_rate_test_cells(edge, 2);

		/* one more baseline event lowers p a little: 0.0203 and 0.0188 */
		assert_true(exact > 0.015 && exact < 0.025);
		assert_true(normal < exact);
		close_to_rel(normal, exact, 0.1, "normal at 5001 against exact at 5000");
	}
	/* a tiny p-value keeps its digits (the upper tail is summed, not 1 - lower) */
	big[0] = (struct stats_cell){ 40, 1, 10, 1000 };
	big[1] = (struct stats_cell){ 30, 1, 5, 1000 };
	assert_true(stats_rate_test_cells(big, 2) > 0);
	assert_true(stats_rate_test_cells(big, 2) < 1e-100);
}

/* splitmix64: a fixed sequence, so the simulations below count the same every run */
static uint64_t next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double uniform(uint64_t *s)
{
	return (double)(next(s) >> 11) * 0x1.0p-53;
}

/* Knuth's: fine for the small means of one tick */
static uint64_t poisson(uint64_t *s, double m)
{
	double limit = exp(-m), p = uniform(s);
	uint64_t k = 0;

	while (p > limit) {
		p *= uniform(s);
		k++;
	}
	return k;
}

/*
 * Sequences of 100 ticks with Poisson increments (exposures varying tick to
 * tick, 5 canary lockups expected under the baseline rate in all): the number
 * whose likelihood ratio ever reaches 1/alpha.
 */
static unsigned msprt_crossings(double ratio, unsigned runs, double alpha, uint64_t seed)
{
	unsigned crossed = 0;

	for (unsigned r = 0; r < runs; r++) {
		double log_lr[STATS_MSPRT_RATIOS] = { 0 };

		for (int tick = 0; tick < 100; tick++) {
			struct stats_cell inc = { .t1 = 0.5 + uniform(&seed),
						  .t2 = 10 + 20 * uniform(&seed) };

			inc.x1 = poisson(&seed, ratio * 0.05 * inc.t1);
			inc.x2 = poisson(&seed, 0.05 * inc.t2);
			stats_msprt_add(log_lr, &inc);
			if (stats_msprt_lr(log_lr) >= 1 / alpha) {
				crossed++;
				break;
			}
		}
	}
	return crossed;
}

static void test_msprt(void **state)
{
	const unsigned runs = 20000;
	double log_lr[STATS_MSPRT_RATIOS] = { 0 }, se = sqrt(0.05 * 0.95 / runs);
	struct stats_cell none = { 3, 0, 1, 10 }, inc = { 4, 1, 0, 1 };
	unsigned null, bad;

	(void)state;
	/* Ville: under equal rates at most alpha ever cross (+3 standard errors) */
	null = msprt_crossings(1, runs, 0.05, 20250125);
	print_message("msprt: %u of %u null sequences crossed 20\n", null, runs);
	assert_true((double)null / runs <= 0.05 + 3 * se);
	/* and it is not vacuous: a 3x regression crosses in most */
	bad = msprt_crossings(3, 2000, 0.05, 7);
	print_message("msprt: %u of 2000 3x sequences crossed 20\n", bad);
	assert_true(bad > 1400);
	/* no exposure: nothing added; no evidence: a ratio of 1 */
	close_to_rel(stats_msprt_lr(log_lr), 1, 1e-15, "empty lr");
	stats_msprt_add(log_lr, &none);
	none.t1 = NAN;
	stats_msprt_add(log_lr, &none);
	close_to_rel(stats_msprt_lr(log_lr), 1, 1e-15, "lr after nothing");
	/* equal exposures, 4 to 0: theta_i's ratio is (2 theta / (1 + theta))^4 */
	stats_msprt_add(log_lr, &inc);
	for (int i = 0; i < STATS_MSPRT_RATIOS; i++) {
		double theta = pow(2, (i + 1) / 2.0);

		close_to_rel(log_lr[i], 4 * log(2 * theta / (1 + theta)), 1e-12, "log lr");
	}
	/* the mean of huge ratios is infinite or huge, never NaN */
	for (int i = 0; i < STATS_MSPRT_RATIOS; i++)
		log_lr[i] = 800 + i;
	assert_true(stats_msprt_lr(log_lr) >= 1e300);
	for (int i = 0; i < STATS_MSPRT_RATIOS; i++)
		log_lr[i] = -INFINITY;
	assert_true(stats_msprt_lr(log_lr) == 0);
}

struct work {
	double out[6];
};

static void *compute(void *arg)
{
	struct work *w = arg;
	struct stats_cell cells[2] = { { 3, 24, 1, 96 }, { 7, 30, 20, 300 } };
	double log_lr[STATS_MSPRT_RATIOS] = { 0 };

	stats_msprt_add(log_lr, &cells[1]);
	w->out[0] = stats_rate_power(2, 16, 100, 0.005);
	w->out[1] = stats_rate_power(1.5, 3e4, 10, 0.01);
	w->out[2] = stats_rate_mu_needed(3, 10, 0.0025, 0.8);
	w->out[3] = stats_rate_detectable(9, INFINITY, 0.01, 0.8);
	w->out[4] = stats_rate_test_cells(cells, 2);
	w->out[5] = stats_msprt_lr(log_lr);
	return NULL;
}

/*
 * The gates call these from any thread: no static state (the source has no
 * static variable), and two threads at once get what one thread alone gets.
 */
static void test_pure(void **state)
{
	struct work alone, w[2];
	pthread_t t[2];
	char path[4096], line[4096];
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/../../lib/stats.c", getenv("KMEM_TEST_DATA"));
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		/* a static at the top level must be a function; none inside one */
		if (!strncmp(line, "static ", 7) && !strchr(line, '('))
			fail_msg("static state: %s", line);
		if (line[0] == '\t' && strstr(line, "static "))
			fail_msg("static state: %s", line);
	}
	fclose(f);
	compute(&alone);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, compute, &w[i]), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_memory_equal(w[i].out, alone.out, sizeof(alone.out));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reference),	cmocka_unit_test(test_edges),
		cmocka_unit_test(test_power_reference), cmocka_unit_test(test_mu_needed),
		cmocka_unit_test(test_detectable),	cmocka_unit_test(test_power_edges),
		cmocka_unit_test(test_power_switch),	cmocka_unit_test(test_cells),
		cmocka_unit_test(test_msprt),		cmocka_unit_test(test_pure),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

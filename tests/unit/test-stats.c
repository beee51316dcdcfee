// SPDX-License-Identifier: GPL-2.0
/*
 * lib/stats.c against SciPy: every case in stats/ref.txt (made by
 * stats/make-ref.py with Debian's python3-scipy) to 1e-9 relative.
 */
#include <errno.h>
#include <math.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reference),
		cmocka_unit_test(test_edges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

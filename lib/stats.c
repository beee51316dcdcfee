// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"

double stats_norm_sf(double z)
{
	return 0.5 * erfc(z / M_SQRT2);
}

/* Continued fraction of the incomplete beta function (modified Lentz). */
static double betacf(double a, double b, double x)
{
	const double tiny = 1e-300, eps = 1e-16;
	double c = 1, d = 1 - (a + b) * x / (a + 1), h;
	int m;

	if (fabs(d) < tiny)
		d = tiny;
	d = 1 / d;
	h = d;
	for (m = 1; m <= 10000; m++) {
		double aa = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)), del;

		d = 1 + aa * d;
		d = fabs(d) < tiny ? 1 / tiny : 1 / d;
		c = 1 + aa / c;
		if (fabs(c) < tiny)
			c = tiny;
		h *= d * c;
		aa = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1));
		d = 1 + aa * d;
		d = fabs(d) < tiny ? 1 / tiny : 1 / d;
		c = 1 + aa / c;
		if (fabs(c) < tiny)
			c = tiny;
		del = d * c;
		h *= del;
		if (fabs(del - 1) < eps)
			break;
	}
	return h;
}

/* The regularized incomplete beta function I_x(a, b). */
static double betai(double a, double b, double x)
{
	double front;

	if (x <= 0)
		return 0;
	if (x >= 1)
		return 1;
	front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
	/* the fraction converges fast on this side; use the symmetry on the other */
	if (x < (a + 1) / (a + b + 2))
		return front * betacf(a, b, x) / a;
	return 1 - front * betacf(b, a, 1 - x) / b;
}

double stats_binom_sf(uint64_t k, uint64_t n, double p)
{
	if (k == 0)
		return 1;
	if (k > n)
		return 0;
	if (p <= 0)
		return 0;
	if (p >= 1)
		return 1;
	/* P(X >= k) = I_p(k, n - k + 1) */
	return betai((double)k, (double)(n - k + 1), p);
}

double stats_rate_test(uint64_t x1, double t1, uint64_t x2, double t2)
{
	if (!(t1 > 0) || !(t2 > 0))
		return -1;
	return stats_binom_sf(x1, x1 + x2, t1 / (t1 + t2));
}

struct ranked {
	double v;
	bool from_x;
};

static int by_value(const void *a, const void *b)
{
	double x = ((const struct ranked *)a)->v, y = ((const struct ranked *)b)->v;

	return (x > y) - (x < y);
}

/*
 * P(U >= u) under the null. The number of orderings giving each U is a
 * coefficient of the Gaussian binomial [m + n, m]_q = prod (1 - q^(n + i)) /
 * (1 - q^i), i = 1..m: m passes over m * n + 1 coefficients (long double
 * holds them exactly up to 2^64).
 */
static int exact_sf(size_t m, size_t n, long u, double *p)
{
	size_t deg = m * n, i, k;
	long double *c = calloc(deg + 1, sizeof(*c)), total = 0, tail = 0;

	if (!c)
		return -ENOMEM;
	c[0] = 1;
	for (i = 1; i <= m; i++) {
		for (k = deg; k >= n + i; k--)
			c[k] -= c[k - (n + i)];
		for (k = i; k <= deg; k++)
			c[k] += c[k - i];
	}
	for (k = 0; k <= deg; k++) {
		total += c[k];
		if ((long)k >= u)
			tail += c[k];
	}
	free(c);
	*p = (double)(tail / total);
	return 0;
}

int stats_mwu(const double *x, size_t n1, const double *y, size_t n2, enum stats_alternative alt,
	      struct stats_mwu *out)
{
	size_t n = n1 + n2, i, j;
	struct ranked *r;
	double r1 = 0, ties = 0, u1, u2, u, f = 1;
	bool tied = false;
	int ret = 0;

	if (!n1 || !n2)
		return -EINVAL;
	r = malloc(n * sizeof(*r));
	if (!r)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		r[i].v = i < n1 ? x[i] : y[i - n1];
		r[i].from_x = i < n1;
		if (isnan(r[i].v)) {
			free(r);
			return -EINVAL;
		}
	}
	qsort(r, n, sizeof(*r), by_value);
	/* midranks over each run of equal values */
	for (i = 0; i < n; i = j) {
		double t, rank;

		for (j = i + 1; j < n && r[j].v == r[i].v; j++)
			;
		t = (double)(j - i);
		rank = ((double)i + 1 + (double)j) / 2;
		for (size_t k = i; k < j; k++)
			if (r[k].from_x)
				r1 += rank;
		ties += t * t * t - t;
		tied |= j - i > 1;
	}
	free(r);
	u1 = r1 - (double)n1 * ((double)n1 + 1) / 2;
	u2 = (double)n1 * (double)n2 - u1;
	if (alt == STATS_GREATER) {
		u = u1;
	} else if (alt == STATS_LESS) {
		u = u2;
	} else {
		u = u1 > u2 ? u1 : u2;
		f = 2;
	}
	out->u1 = u1;
	out->effect = u1 / ((double)n1 * (double)n2);
	out->exact = !(n1 > 8 && n2 > 8) && !tied;
	if (out->exact) {
		/* the null distribution is the same with the samples' roles swapped */
		ret = n1 <= n2 ? exact_sf(n1, n2, lround(u), &out->p) :
				 exact_sf(n2, n1, lround(u), &out->p);
	} else {
		double nn = (double)n;
		double s = sqrt((double)n1 * (double)n2 / 12 * ((nn + 1) - ties / (nn * (nn - 1))));

		out->p = stats_norm_sf((u - (double)n1 * (double)n2 / 2 - 0.5) / s);
	}
	out->p *= f;
	if (out->p > 1)
		out->p = 1;
	if (out->p < 0)
		out->p = 0;
	return ret;
}

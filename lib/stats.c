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

/* exp(-x) x^a / Gamma(a), the factor in front of both incomplete gamma expansions */
static double gamma_front(double a, double x)
{
	return exp(a * log(x) - x - lgamma(a));
}

/*
 * The regularized incomplete gamma functions P(a, x) (lower) and Q(a, x) =
 * 1 - P: the series where it converges fast (x < a + 1), else the continued
 * fraction (modified Lentz), each computing the smaller side directly.
 */
static double gamma_pq(double a, double x, bool upper)
{
	const double tiny = 1e-300, eps = 1e-16;
	double v;
	int i;

	if (x <= 0)
		return upper ? 1 : 0;
	if (x < a + 1) {
		double sum = 1 / a, del = sum, ap = a;

		for (i = 1; i <= 100000; i++) {
			ap++;
			del *= x / ap;
			sum += del;
			if (fabs(del) < fabs(sum) * eps)
				break;
		}
		v = sum * gamma_front(a, x);
		return upper ? 1 - v : v;
	} else {
		double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;

		for (i = 1; i <= 100000; i++) {
			double an = -i * (i - a), del;

			b += 2;
			d = an * d + b;
			if (fabs(d) < tiny)
				d = tiny;
			c = b + an / c;
			if (fabs(c) < tiny)
				c = tiny;
			d = 1 / d;
			del = d * c;
			h *= del;
			if (fabs(del - 1) < eps)
				break;
		}
		v = gamma_front(a, x) * h;
		return upper ? v : 1 - v;
	}
}

/* P(X >= c) for X ~ Poisson(m) */
static double pois_sf(uint64_t c, double m)
{
	if (c == 0)
		return 1;
	return gamma_pq((double)c, m, false);
}

/* P(X <= b) for X ~ Poisson(m); 0 for b < 0 */
static double pois_cdf(int64_t b, double m)
{
	if (b < 0)
		return 0;
	return gamma_pq((double)b + 1, m, true);
}

/* z with P(Z >= z) = alpha, by bisection: it runs once per power */
static double norm_isf(double alpha)
{
	double lo = -40, hi = 40;

	for (int i = 0; i < 200 && hi - lo > 1e-15; i++) {
		double mid = (lo + hi) / 2;

		if (stats_norm_sf(mid) > alpha)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

/* The rejection region of the exact conditional test, c canary events against xb. */
struct region {
	double p0, alpha;
	uint64_t cmax; /* no further canary count has weight */
	uint64_t xmax; /* nor baseline count */
};

static bool rejects(const struct region *r, uint64_t c, uint64_t xb)
{
	if (c > r->cmax)
		return true; /* stands for "never within the sum", keeps the searches finite */
	return stats_binom_sf(c, c + xb, r->p0) <= r->alpha;
}

/* The smallest c >= from rejecting against xb (galloping, then bisection). */
static uint64_t least_c(const struct region *r, uint64_t from, uint64_t xb)
{
	uint64_t lo = from, hi, step = 1;

	if (rejects(r, lo, xb))
		return lo;
	for (;;) {
		hi = lo + step;
		if (rejects(r, hi, xb))
			break;
		lo = hi;
		step *= 2;
	}
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (rejects(r, mid, xb))
			hi = mid;
		else
			lo = mid;
	}
	return hi;
}

/* The largest xb' in [xb, xmax] that c still rejects against, given it rejects xb. */
static uint64_t most_xb(const struct region *r, uint64_t c, uint64_t xb)
{
	uint64_t lo = xb, hi, step = 1;

	for (;;) {
		hi = lo + step;
		if (hi > r->xmax || !rejects(r, c, hi))
			break;
		lo = hi;
		step *= 2;
	}
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (mid <= r->xmax && rejects(r, c, mid))
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The design's sum over baseline counts xb within 10 sd of their mean,
 * Pois(xb; rho mu0) P(X_c >= c(xb)), taken a run of equal c(xb) at a time:
 * c(xb) is non-decreasing, so a run's weight is a difference of Poisson
 * CDFs, and the cost grows with the number of critical values, not of xb.
 */
static double power_exact(double ratio, double mu0, double rho, double alpha)
{
	double lb = rho * mu0, mc = ratio * mu0, power = 0;
	struct region r = {
		.p0 = 1 / (1 + rho),
		.alpha = alpha,
		.cmax = (uint64_t)ceil(mc + 10 * sqrt(mc) + 10),
		.xmax = (uint64_t)ceil(lb + 10 * sqrt(lb) + 10),
	};
	uint64_t xb = (uint64_t)fmax(0, floor(lb - 10 * sqrt(lb))), c;

	c = least_c(&r, 0, xb);
	while (xb <= r.xmax && c <= r.cmax) {
		uint64_t last = most_xb(&r, c, xb);

		power += (pois_cdf((int64_t)last, lb) - pois_cdf((int64_t)xb - 1, lb)) *
			 pois_sf(c, mc);
		xb = last + 1;
		c = least_c(&r, c + 1, xb);
	}
	return power;
}

/* rho = INFINITY: the baseline rate is known; reject on P(Poisson(mu0) >= x) <= alpha */
static double power_known(double ratio, double mu0, double alpha)
{
	uint64_t lo = 0, hi = 1;

	/* the smallest x with pois_sf(x, mu0) <= alpha, galloping then bisection */
	while (pois_sf(hi, mu0) > alpha) {
		lo = hi;
		hi *= 2;
	}
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (pois_sf(mid, mu0) <= alpha)
			hi = mid;
		else
			lo = mid;
	}
	if (pois_sf(lo, mu0) <= alpha)
		hi = lo;
	return pois_sf(hi, ratio * mu0);
}

/*
 * Normal approximation for large counts, with Cornish-Fisher skewness terms
 * (without them it is off by 0.01 at mu0 = 2500). The test rejects when
 * D = x_c - p0 n >= s (z + g0 (z^2 - 1) / 6) + 1/2: s and g0 the sd and
 * skewness of the conditional binomial, n at its mean; D = q0 x_c - p0 x_b
 * is a difference of Poissons with known cumulants.
 */
static double power_normal(double ratio, double mu0, double rho, double alpha)
{
	double p0 = 1 / (1 + rho), q0 = rho / (1 + rho), z = norm_isf(alpha);
	double s = sqrt((ratio + rho) * mu0 * p0 * q0), g0 = (q0 - p0) / s;
	double t = 0.5 + s * (z + g0 * (z * z - 1) / 6);
	double mean = (q0 * ratio - p0 * rho) * mu0;
	double sd = sqrt((q0 * q0 * ratio + p0 * p0 * rho) * mu0);
	double g = (q0 * q0 * q0 * ratio - p0 * p0 * p0 * rho) * mu0 / (sd * sd * sd);
	double x = (t - mean) / sd;

	return stats_norm_sf(x - g * (x * x - 1) / 6);
}

/*
 * Canary lockups expected under the baseline rate beyond which the exact sum
 * costs milliseconds (one run per critical value) and the normal above agrees
 * with it to 1e-4.
 */
#define POWER_EXACT_MAX_MU 1e4

double stats_rate_power(double ratio, double mu0, double rho, double alpha)
{
	if (isnan(ratio) || isnan(mu0) || isnan(rho) || isnan(alpha))
		return 0;
	if (alpha >= 1)
		return 1;
	if (!(ratio > 0) || !(mu0 > 0) || !isfinite(mu0) || !(rho > 0) || !(alpha > 0))
		return 0;
	if (isinf(ratio))
		return 1;
	/*
	 * Past 1e11 expected baseline events the incomplete gamma and beta lose
	 * digits (their prefactors cancel terms of 1e12), and the baseline rate
	 * is known to 3e-6: the one-sample limit is the same test.
	 */
	if (isinf(rho) || rho * mu0 > 1e11)
		return power_known(ratio, mu0, alpha);
	if (mu0 > POWER_EXACT_MAX_MU)
		return power_normal(ratio, mu0, rho, alpha);
	return power_exact(ratio, mu0, rho, alpha);
}

/*
 * Power grows with mu0 but, the test being discrete, not strictly (with a
 * known baseline rate it falls each time the critical count steps up): the
 * answer is the first point of the grid 1e-3 * 2^j reaching the power,
 * refined by bisection between it and the grid point before, so a larger
 * mu0 may dip just below the power again, never by much.
 */
double stats_rate_mu_needed(double ratio, double rho, double alpha, double power)
{
	double lo = 0, hi = 1e-3;

	if (isnan(power) || power > 1)
		return INFINITY;
	if (power <= 0)
		return 0;

	while (stats_rate_power(ratio, hi, rho, alpha) < power) {
		lo = hi;
		hi *= 2;
		if (hi > 1e7)
			return INFINITY;
	}
	while (hi - lo > 1e-6 * hi) {
		double mid = (lo + hi) / 2;

		if (stats_rate_power(ratio, mid, rho, alpha) >= power)
			hi = mid;
		else
			lo = mid;
	}
	return hi;
}

double stats_rate_detectable(double mu0, double rho, double alpha, double power)
{
	double lo = 0, hi = log(1000);

	/* power grows with the ratio (the canary tail does), so bisection is exact */
	if (isnan(power))
		return INFINITY;
	if (stats_rate_power(1, mu0, rho, alpha) >= power)
		return 1;
	if (!(stats_rate_power(1000, mu0, rho, alpha) >= power))
		return INFINITY;
	while (hi - lo > 1e-9) {
		double mid = (lo + hi) / 2;

		if (stats_rate_power(exp(mid), mu0, rho, alpha) >= power)
			hi = mid;
		else
			lo = mid;
	}
	return exp(hi);
}

static bool cell_counts(const struct stats_cell *c)
{
	return c->t1 > 0 && c->t2 > 0 && isfinite(c->t1) && isfinite(c->t2);
}

/*
 * The pmf of Binomial(n, p) into out[0..n], scaled to its largest term: the
 * scale cancels when the convolution's tail is divided by its total.
 */
static void binom_pmf(uint64_t n, double p, double *out)
{
	double lp = log(p), lq = log1p(-p), top = -INFINITY;
	uint64_t k;

	for (k = 0; k <= n; k++) {
		out[k] = lgamma((double)n + 1) - lgamma((double)k + 1) -
			 lgamma((double)(n - k) + 1) + (double)k * lp + (double)(n - k) * lq;
		top = fmax(top, out[k]);
	}
	for (k = 0; k <= n; k++)
		out[k] = exp(out[k] - top);
}

/* Exact: convolve the cells' binomials, then the upper tail over the total. */
static double cells_exact(const struct stats_cell *c, size_t n, uint64_t events, uint64_t x)
{
	double *dist = calloc(events + 1, sizeof(*dist)),
	       *pmf = malloc((events + 1) * sizeof(*pmf));
	double *tmp = calloc(events + 1, sizeof(*tmp)), tail = 0, total = 0, p = -1;
	uint64_t have = 0;

	if (!dist || !pmf || !tmp)
		goto out;
	dist[0] = 1;
	for (size_t i = 0; i < n; i++) {
		uint64_t m = c[i].x1 + c[i].x2;

		if (!cell_counts(&c[i]) || !m)
			continue;
		binom_pmf(m, c[i].t1 / (c[i].t1 + c[i].t2), pmf);
		memset(tmp, 0, (have + m + 1) * sizeof(*tmp));
		for (uint64_t a = 0; a <= have; a++)
			for (uint64_t b = 0; b <= m; b++)
				tmp[a + b] += dist[a] * pmf[b];
		have += m;
		memcpy(dist, tmp, (have + 1) * sizeof(*dist));
	}
	/* summed from the small end of each side, so a small tail keeps its digits */
	for (uint64_t k = events + 1; k-- > 0;) {
		if (k >= x)
			tail += dist[k];
		total += dist[k];
	}
	p = tail / total;
out:
	free(dist);
	free(pmf);
	free(tmp);
	return p;
}

#define CELLS_EXACT_MAX_EVENTS 5000

double stats_rate_test_cells(const struct stats_cell *c, size_t n)
{
	uint64_t events = 0, x = 0;
	double mean = 0, var = 0, xd = 0, p;
	size_t used = 0, last = 0;
	bool wrapped = false;

	for (size_t i = 0; i < n; i++) {
		if (!cell_counts(&c[i]))
			continue;
		/* a total past 2^64 takes the normal branch, in doubles, never a short exact sum */
		wrapped |= __builtin_add_overflow(events, c[i].x1, &events) ||
			   __builtin_add_overflow(events, c[i].x2, &events) ||
			   __builtin_add_overflow(x, c[i].x1, &x);
		used++;
		last = i;
	}
	if (!used || (!events && !wrapped))
		return 1;
	if (used == 1)
		return stats_rate_test(c[last].x1, c[last].t1, c[last].x2, c[last].t2);
	if (!wrapped && events <= CELLS_EXACT_MAX_EVENTS) {
		p = cells_exact(c, n, events, x);
		if (p >= 0)
			return fmin(p, 1);
	}
	for (size_t i = 0; i < n; i++) {
		double pi;

		if (!cell_counts(&c[i]))
			continue;
		pi = c[i].t1 / (c[i].t1 + c[i].t2);
		mean += ((double)c[i].x1 + (double)c[i].x2) * pi;
		var += ((double)c[i].x1 + (double)c[i].x2) * pi * (1 - pi);
		xd += (double)c[i].x1;
	}
	if (!(var > 0))
		return xd - 0.5 > mean ? 0 : 1;
	return stats_norm_sf((xd - 0.5 - mean) / sqrt(var));
}

void stats_msprt_add(double log_lr[STATS_MSPRT_RATIOS], const struct stats_cell *inc)
{
	double share;

	if (!cell_counts(inc))
		return;
	/* p_theta / p_1 = theta (t1 + t2) / (theta t1 + t2), (1 - p_theta) / (1 - p_1) = (t1 + t2) / (theta t1 + t2) */
	share = inc->t1 / (inc->t1 + inc->t2);
	for (int i = 0; i < STATS_MSPRT_RATIOS; i++) {
		double log_theta = (i + 1) * M_LN2 / 2;

		log_lr[i] += (double)inc->x1 * log_theta -
			     (double)(inc->x1 + inc->x2) * log1p(expm1(log_theta) * share);
	}
}

double stats_msprt_lr(const double log_lr[STATS_MSPRT_RATIOS])
{
	double top = -INFINITY, sum = 0;

	for (int i = 0; i < STATS_MSPRT_RATIOS; i++)
		top = fmax(top, log_lr[i]);
	if (top == -INFINITY)
		return 0;
	for (int i = 0; i < STATS_MSPRT_RATIOS; i++)
		sum += exp(log_lr[i] - top);
	return exp(top) * sum / STATS_MSPRT_RATIOS;
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

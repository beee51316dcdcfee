// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hist.h"

unsigned hist_bucket(uint64_t v)
{
	unsigned b;

	if (v <= 1)
		return 0;
	b = 64 - (unsigned)__builtin_clzll(v - 1);
	return b < HIST_BUCKETS ? b : HIST_BUCKETS - 1;
}

uint64_t hist_upper(unsigned b)
{
	return b >= 63 ? UINT64_MAX : 1ULL << b;
}

static uint64_t hist_lower(unsigned b)
{
	return b == 0 ? 0 : 1ULL << (b - 1);
}

void hist_record(struct hist *h, uint64_t v)
{
	h->buckets[hist_bucket(v)]++;
	h->count++;
	h->sum_ns += v;
	if (v > h->max_ns)
		h->max_ns = v;
}

/* Fleet sums saturate: a total stuck at its maximum is wrong, a wrapped one is wrong and small. */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
	uint64_t s;

	return __builtin_add_overflow(a, b, &s) ? UINT64_MAX : s;
}

void hist_merge(struct hist *dst, const struct hist *src)
{
	for (unsigned b = 0; b < HIST_BUCKETS; b++)
		dst->buckets[b] = sat_add(dst->buckets[b], src->buckets[b]);
	dst->count = sat_add(dst->count, src->count);
	dst->sum_ns = sat_add(dst->sum_ns, src->sum_ns);
	if (src->max_ns > dst->max_ns)
		dst->max_ns = src->max_ns;
}

void hist_scale_to(struct hist *h, uint64_t cap)
{
	double f, carry = 0;
	uint64_t n = 0;

	if (h->count <= cap)
		return;
	f = (double)cap / (double)h->count;
	/* rounding carried from bucket to bucket: the counts still add up to cap */
	for (unsigned b = 0; b < HIST_BUCKETS; b++) {
		double want = (double)h->buckets[b] * f + carry;
		uint64_t got = (uint64_t)(want + 0.5);

		if (got > cap - n)
			got = cap - n;
		carry = want - (double)got;
		h->buckets[b] = got;
		n += got;
	}
	h->count = n;
	h->sum_ns = (uint64_t)((double)h->sum_ns * f);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

uint64_t hist_lower_median(uint64_t *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_u64);
	return v[(n - 1) / 2];
}

uint64_t hist_weight_cap(uint64_t m)
{
	return m > UINT64_MAX / HIST_HOST_WEIGHT_MAX ? UINT64_MAX : m * HIST_HOST_WEIGHT_MAX;
}

size_t hist_merge_hosts(struct hist *out, const struct hist *h, size_t n)
{
	uint64_t *counts = n ? malloc(n * sizeof(*counts)) : NULL, cap = UINT64_MAX;
	size_t i, k = 0, scaled = 0;
	struct hist x;

	memset(out, 0, sizeof(*out));
	for (i = 0; counts && i < n; i++)
		if (h[i].count)
			counts[k++] = h[i].count;
	/* of the hosts with values, the lower median */
	if (k)
		cap = hist_weight_cap(hist_lower_median(counts, k));
	free(counts);
	/* out of memory: merged as they are, and not a host said to be scaled */
	for (i = 0; i < n; i++) {
		x = h[i];
		if (x.count > cap) {
			hist_scale_to(&x, cap);
			scaled++;
		}
		hist_merge(out, &x);
	}
	return scaled;
}

static bool went_down(const struct hist *prev, const struct hist *cur)
{
	if (cur->count < prev->count || cur->sum_ns < prev->sum_ns || cur->max_ns < prev->max_ns)
		return true;
	for (unsigned b = 0; b < HIST_BUCKETS; b++)
		if (cur->buckets[b] < prev->buckets[b])
			return true;
	return false;
}

int hist_delta(struct hist *out, const struct hist *prev, const struct hist *cur)
{
	int top = -1;

	if (went_down(prev, cur)) {
		*out = *cur;
		return 1;
	}
	for (unsigned b = 0; b < HIST_BUCKETS; b++) {
		out->buckets[b] = cur->buckets[b] - prev->buckets[b];
		if (out->buckets[b])
			top = (int)b;
	}
	out->count = cur->count - prev->count;
	out->sum_ns = cur->sum_ns - prev->sum_ns;
	if (top < 0)
		out->max_ns = 0;
	else if (cur->max_ns > prev->max_ns)
		out->max_ns = cur->max_ns;
	else
		out->max_ns = hist_upper((unsigned)top) < cur->max_ns ? hist_upper((unsigned)top) :
									cur->max_ns;
	return 0;
}

uint64_t hist_quantile(const struct hist *h, double q)
{
	uint64_t total = 0, seen = 0, lo, hi;
	double rank, frac;

	for (unsigned b = 0; b < HIST_BUCKETS; b++)
		total += h->buckets[b];
	if (total == 0)
		return 0;
	if (q < 0)
		q = 0;
	if (q > 1)
		q = 1;
	rank = q * (double)total;
	for (unsigned b = 0; b < HIST_BUCKETS; b++) {
		if (!h->buckets[b] || (double)(seen + h->buckets[b]) < rank) {
			seen += h->buckets[b];
			continue;
		}
		lo = hist_lower(b);
		hi = hist_upper(b);
		if (h->max_ns && hi > h->max_ns)
			hi = h->max_ns > lo ? h->max_ns : lo;
		frac = (rank - (double)seen) / (double)h->buckets[b];
		return lo + (uint64_t)(frac * (double)(hi - lo));
	}
	return h->max_ns;
}

void hist_to_pb(const struct hist *h, Kmemctl__V1__Histogram *pb, uint64_t *storage)
{
	int first = -1, last = -1;

	for (unsigned b = 0; b < HIST_BUCKETS; b++) {
		if (!h->buckets[b])
			continue;
		if (first < 0)
			first = (int)b;
		last = (int)b;
	}
	pb->count = h->count;
	pb->sum_ns = h->sum_ns;
	pb->max_ns = h->max_ns;
	pb->first_bucket = first < 0 ? 0 : (uint32_t)first;
	pb->n_counts = first < 0 ? 0 : (size_t)(last - first + 1);
	pb->counts = storage;
	if (pb->n_counts)
		memcpy(storage, &h->buckets[first], pb->n_counts * sizeof(*storage));
}

int hist_from_pb(struct hist *h, const Kmemctl__V1__Histogram *pb)
{
	struct hist t = { 0 };
	uint64_t total = 0;
	unsigned top = 0;

	if (pb->first_bucket >= HIST_BUCKETS || pb->n_counts > HIST_BUCKETS - pb->first_bucket)
		return -EINVAL;
	for (size_t i = 0; i < pb->n_counts; i++) {
		if (__builtin_add_overflow(total, pb->counts[i], &total))
			return -EINVAL;
		t.buckets[pb->first_bucket + i] = pb->counts[i];
		if (pb->counts[i])
			top = pb->first_bucket + (unsigned)i;
	}
	if (total != pb->count)
		return -EINVAL;
	/*
	 * The maximum is at least in the highest non-empty bucket; it may be
	 * above: the module's max_ns is read after its buckets, and a value
	 * recorded in between raises only the maximum.
	 */
	if (pb->count && hist_bucket(pb->max_ns) < top)
		return -EINVAL;
	t.count = pb->count;
	t.sum_ns = pb->sum_ns;
	t.max_ns = pb->max_ns;
	*h = t;
	return 0;
}

static int parse_hist_line(const char *p, const char **next, uint64_t *upper, uint64_t *count)
{
	char *end;

	if (*p < '0' || *p > '9')
		return -EINVAL;
	errno = 0;
	*upper = strtoull(p, &end, 10);
	if (errno || *end != ' ')
		return -EINVAL;
	p = end + 1;
	if (*p < '0' || *p > '9')
		return -EINVAL;
	*count = strtoull(p, &end, 10);
	if (errno || (*end != '\n' && *end != '\0'))
		return -EINVAL;
	*next = *end ? end + 1 : end;
	return 0;
}

int hist_parse_text(struct hist *h, const char *text, unsigned *bad_line)
{
	struct hist t = { 0 };
	const char *p = text;
	unsigned line = 0;
	int prev = -1;

	while (*p) {
		uint64_t upper, count;
		unsigned b;

		line++;
		if (parse_hist_line(p, &p, &upper, &count) < 0)
			goto bad;
		if (upper == 0 || (upper & (upper - 1)))
			goto bad;
		/* Bucket 0's bound is 1 = 2^0, so the bucket is log2 of its bound. */
		b = (unsigned)__builtin_ctzll(upper);
		if ((int)b <= prev || b >= HIST_BUCKETS)
			goto bad;
		if (__builtin_add_overflow(t.count, count, &t.count))
			goto bad;
		t.buckets[b] = count;
		prev = (int)b;
	}
	memcpy(h->buckets, t.buckets, sizeof(t.buckets));
	h->count = t.count;
	return 0;
bad:
	if (bad_line)
		*bad_line = line;
	return -EINVAL;
}

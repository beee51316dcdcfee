// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hist.h"

static void record_range(struct hist *h, uint64_t from, uint64_t to)
{
	for (uint64_t v = from; v <= to; v++)
		hist_record(h, v);
}

static void test_buckets(void **state)
{
	static const struct {
		uint64_t v;
		unsigned b;
	} cases[] = {
		{ 0, 0 },	    { 1, 0 },
		{ 2, 1 },	    { 3, 2 },
		{ 4, 2 },	    { 5, 3 },
		{ 1024, 10 },	    { 1025, 11 },
		{ 1ULL << 62, 62 }, { (1ULL << 62) + 1, 63 },
		{ UINT64_MAX, 63 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(hist_bucket(cases[i].v), cases[i].b);
		/* Every value lies at or below its bucket's upper bound. */
		assert_true(cases[i].v <= hist_upper(cases[i].b));
	}
}

static void test_quantiles(void **state)
{
	struct hist h = { 0 };

	(void)state;
	record_range(&h, 1, 1000);
	assert_int_equal(h.count, 1000);
	assert_int_equal(h.sum_ns, 500500);
	assert_int_equal(h.max_ns, 1000);
	assert_int_equal(h.buckets[9], 256); /* 257..512 */
	assert_int_equal(h.buckets[10], 488); /* 513..1000 */
	/* Uniform data: linear interpolation inside a bucket is exact. */
	assert_int_equal(hist_quantile(&h, 0.5), 500);
	assert_int_equal(hist_quantile(&h, 0.99), 990);
	assert_int_equal(hist_quantile(&h, 1.0), 1000);
	assert_int_equal(hist_quantile(&h, 0.0), 0);
	assert_int_equal(hist_quantile(&(struct hist){ 0 }, 0.5), 0);
}

static void test_quantile_skewed(void **state)
{
	struct hist h = { 0 };

	(void)state;
	/* 99 fast events and one 40 ms stall: p99 stays fast, p99.9 sees the stall. */
	for (int i = 0; i < 99; i++)
		hist_record(&h, 1000);
	hist_record(&h, 40000000);
	assert_true(hist_quantile(&h, 0.99) <= 1024);
	assert_true(hist_quantile(&h, 0.999) > 33554432);
	assert_true(hist_quantile(&h, 0.999) <= 40000000);
}

static void test_merge(void **state)
{
	struct hist a = { 0 }, b = { 0 }, all = { 0 };

	(void)state;
	record_range(&a, 1, 500);
	record_range(&b, 501, 5000);
	record_range(&all, 1, 5000);
	hist_merge(&a, &b);
	assert_memory_equal(&a, &all, sizeof(a));
	/* sums over a fleet stop at their maximum instead of wrapping to small numbers */
	b.count = UINT64_MAX - 1;
	b.sum_ns = UINT64_MAX;
	b.buckets[3] = UINT64_MAX;
	hist_merge(&a, &b);
	assert_true(a.count == UINT64_MAX);
	assert_true(a.sum_ns == UINT64_MAX);
	assert_true(a.buckets[3] == UINT64_MAX);
}

static void test_delta(void **state)
{
	struct hist prev = { 0 }, cur, d, want = { 0 };

	(void)state;
	record_range(&prev, 1, 100);
	cur = prev;
	record_range(&cur, 10, 60);
	record_range(&want, 10, 60);
	assert_int_equal(hist_delta(&d, &prev, &cur), 0);
	assert_memory_equal(d.buckets, want.buckets, sizeof(d.buckets));
	assert_int_equal(d.count, want.count);
	assert_int_equal(d.sum_ns, want.sum_ns);
	/* The maximum (100) was reached before: bound by the top bucket, 64. */
	assert_int_equal(d.max_ns, 64);

	hist_record(&cur, 5000);
	prev = cur;
	hist_record(&cur, 7000);
	assert_int_equal(hist_delta(&d, &prev, &cur), 0);
	assert_int_equal(d.count, 1);
	assert_int_equal(d.max_ns, 7000);

	/* Nothing new: an empty delta with no maximum. */
	assert_int_equal(hist_delta(&d, &cur, &cur), 0);
	assert_int_equal(d.count, 0);
	assert_int_equal(d.max_ns, 0);

	/* A reset producer: the delta is the new snapshot. */
	want = (struct hist){ 0 };
	hist_record(&want, 3);
	assert_int_equal(hist_delta(&d, &cur, &want), 1);
	assert_memory_equal(&d, &want, sizeof(d));
}

static void test_pb_roundtrip(void **state)
{
	Kmemctl__V1__Histogram pb = KMEMCTL__V1__HISTOGRAM__INIT, *dec;
	uint64_t storage[HIST_BUCKETS];
	struct hist h = { 0 }, back;
	uint8_t buf[1024];
	size_t len;

	(void)state;
	record_range(&h, 100, 3000);
	hist_record(&h, 123456789);
	hist_to_pb(&h, &pb, storage);
	assert_int_equal(pb.first_bucket, 7);
	assert_int_equal(pb.n_counts, 27 - 7 + 1);
	len = kmemctl__v1__histogram__get_packed_size(&pb);
	assert_true(len < sizeof(buf));
	kmemctl__v1__histogram__pack(&pb, buf);
	dec = kmemctl__v1__histogram__unpack(NULL, len, buf);
	assert_non_null(dec);
	assert_int_equal(hist_from_pb(&back, dec), 0);
	assert_memory_equal(&back, &h, sizeof(h));
	kmemctl__v1__histogram__free_unpacked(dec, NULL);

	memset(&h, 0, sizeof(h));
	hist_to_pb(&h, &pb, storage);
	assert_int_equal(pb.n_counts, 0);
	assert_int_equal(hist_from_pb(&back, &pb), 0);
	assert_int_equal(back.count, 0);
}

static void test_pb_bad(void **state)
{
	uint64_t counts[3] = { 1, 2, 3 };
	Kmemctl__V1__Histogram pb = KMEMCTL__V1__HISTOGRAM__INIT;
	struct hist h = { .count = 77 };

	(void)state;
	pb.counts = counts;
	pb.n_counts = 3;
	pb.first_bucket = 62; /* runs past bucket 63 */
	pb.count = 6;
	pb.max_ns = 1ULL << 63;
	assert_int_equal(hist_from_pb(&h, &pb), -EINVAL);
	pb.first_bucket = 64;
	assert_int_equal(hist_from_pb(&h, &pb), -EINVAL);
	pb.first_bucket = 4;
	pb.max_ns = 60;
	pb.count = 7; /* counts sum to 6 */
	assert_int_equal(hist_from_pb(&h, &pb), -EINVAL);
	pb.count = 6;
	pb.max_ns = 10; /* below the top non-empty bucket (33..64) */
	assert_int_equal(hist_from_pb(&h, &pb), -EINVAL);
	counts[0] = UINT64_MAX; /* sum overflows */
	pb.max_ns = 60;
	assert_int_equal(hist_from_pb(&h, &pb), -EINVAL);
	/* Refused input leaves the target alone. */
	assert_int_equal(h.count, 77);
	counts[0] = 1;
	assert_int_equal(hist_from_pb(&h, &pb), 0);
	assert_int_equal(h.buckets[6], 3);
	/* a maximum above the top bucket: recorded after the buckets were read */
	pb.max_ns = 5000;
	assert_int_equal(hist_from_pb(&h, &pb), 0);
	assert_int_equal(h.max_ns, 5000);
}

static void test_text(void **state)
{
	struct hist h = { .sum_ns = 5, .max_ns = 1000 };
	unsigned bad = 0;

	(void)state;
	assert_int_equal(hist_parse_text(&h, "1 2\n2 0\n512 7\n1024 1\n", &bad), 0);
	assert_int_equal(h.buckets[0], 2);
	assert_int_equal(h.buckets[9], 7);
	assert_int_equal(h.buckets[10], 1);
	assert_int_equal(h.count, 10);
	assert_int_equal(h.sum_ns, 5);
	assert_int_equal(hist_parse_text(&h, "", &bad), 0);
	assert_int_equal(h.count, 0);
	/* No trailing newline is fine. */
	assert_int_equal(hist_parse_text(&h, "4 1", &bad), 0);
	assert_int_equal(h.buckets[2], 1);
}

static void test_text_bad(void **state)
{
	static const struct {
		const char *text;
		unsigned line;
	} cases[] = {
		{ "3 1\n", 1 }, /* not a power of two */
		{ "0 1\n", 1 }, /* zero bound */
		{ "4 1\n2 1\n", 2 }, /* decreasing */
		{ "4 1\n4 1\n", 2 }, /* repeated */
		{ "4 x\n", 1 }, /* not a number */
		{ "4 1 junk\n", 1 }, /* trailing junk */
		{ "4\t1\n", 1 }, /* wrong separator */
		{ "-4 1\n", 1 }, /* negative */
		{ "4 1\n\n", 2 }, /* empty line */
		{ "4 99999999999999999999\n", 1 }, /* overflow */
		{ "4 18446744073709551615\n8 1\n", 2 }, /* total overflows */
		{ "18446744073709551616 1\n", 1 }, /* bound overflows */
	};
	struct hist h = { .count = 42 };

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned bad = 0;

		assert_int_equal(hist_parse_text(&h, cases[i].text, &bad), -EINVAL);
		assert_int_equal(bad, cases[i].line);
		assert_int_equal(h.count, 42);
	}
}

static void test_scale(void **state)
{
	struct hist h = { 0 };
	uint64_t n = 0;

	(void)state;
	for (uint64_t v = 1; v < 5000; v++)
		hist_record(&h, v * 997);
	/* within its cap: as it was */
	struct hist same = h;
	hist_scale_to(&same, h.count);
	assert_memory_equal(&same, &h, sizeof(h));
	hist_scale_to(&h, 1000);
	for (unsigned b = 0; b < HIST_BUCKETS; b++)
		n += h.buckets[b];
	assert_int_equal(h.count, 1000);
	assert_int_equal(n, 1000);
	assert_int_equal(h.max_ns, 4999ULL * 997);
	/* the shape kept: the median where it was, within a bucket */
	assert_int_equal(hist_bucket(hist_quantile(&h, 0.5)), hist_bucket(2500 * 997));
}

/* One host claiming more values than the fleet: it weighs ten median hosts, no more. */
static void test_merge_hosts(void **state)
{
	struct hist h[25] = { 0 }, out;

	(void)state;
	for (int i = 0; i < 24; i++)
		for (int k = 0; k < 100; k++)
			hist_record(&h[i], 1000);
	for (int k = 0; k < 100000; k++)
		hist_record(&h[24], 1 << 30);
	assert_int_equal(hist_merge_hosts(&out, h, 25), 1);
	assert_int_equal(out.count, 2400 + HIST_HOST_WEIGHT_MAX * 100);
	assert_int_equal(out.max_ns, 1 << 30);
	/* the fleet's median is the fleet's, not the one host's */
	assert_true(hist_quantile(&out, 0.5) <= 1024);
	/* hosts alike: none scaled, the plain merge */
	assert_int_equal(hist_merge_hosts(&out, h, 24), 0);
	assert_int_equal(out.count, 2400);
	/* hosts without values do not pull the median down */
	memset(h, 0, 20 * sizeof(h[0]));
	assert_int_equal(hist_merge_hosts(&out, h, 24), 0);
	assert_int_equal(out.count, 400);
	assert_int_equal(hist_merge_hosts(&out, h, 0), 0);
	assert_int_equal(out.count, 0);
}

/* The lower median, sorting; ten times it, saturated. */
static void test_median(void **state)
{
	uint64_t v[] = { 9, 1, 5, 7 }, one[] = { 3 };

	(void)state;
	assert_true(hist_lower_median(v, 0) == 0);
	assert_true(hist_lower_median(one, 1) == 3);
	assert_true(hist_lower_median(v, 4) == 5);
	assert_true(v[0] == 1 && v[3] == 9);
	assert_true(hist_lower_median(v, 3) == 5);
	assert_true(hist_weight_cap(7) == 70);
	assert_true(hist_weight_cap(UINT64_MAX / 10 + 1) == UINT64_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buckets),		cmocka_unit_test(test_quantiles),
		cmocka_unit_test(test_quantile_skewed), cmocka_unit_test(test_merge),
		cmocka_unit_test(test_delta),		cmocka_unit_test(test_pb_roundtrip),
		cmocka_unit_test(test_pb_bad),		cmocka_unit_test(test_text),
		cmocka_unit_test(test_text_bad),	cmocka_unit_test(test_scale),
		cmocka_unit_test(test_merge_hosts),	cmocka_unit_test(test_median),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Log2 histograms of nanoseconds, the same buckets the kernel module keeps.
 *
 * Bucket b counts values v with 2^(b-1) < v <= 2^b; bucket 0 counts v <= 1.
 * The upper bound 2^b is inclusive, like Prometheus' `le`, so buckets map
 * onto Prometheus histograms without rebinning. Values above 2^62 land in
 * the last bucket.
 */
#ifndef KMEMCTL_HIST_H
#define KMEMCTL_HIST_H

#include <stdbool.h>
#include <stdint.h>

#include "kmemctl/v1/telemetry.pb-c.h"

#define HIST_BUCKETS 64

struct hist {
	uint64_t buckets[HIST_BUCKETS];
	uint64_t count;
	uint64_t sum_ns;
	uint64_t max_ns;
};

unsigned hist_bucket(uint64_t v);
uint64_t hist_upper(unsigned b);
void hist_record(struct hist *h, uint64_t v);
/* dst += src; each sum stops at UINT64_MAX rather than wrap. */
void hist_merge(struct hist *dst, const struct hist *src);

/*
 * h scaled down to a count of at most cap (buckets and sum in proportion,
 * its max kept); h as it was when its count is within cap.
 */
void hist_scale_to(struct hist *h, uint64_t cap);

/*
 * A fleet's histogram in which no host weighs more than HIST_HOST_WEIGHT_MAX
 * times the median host: hosts' counts are self-reported, and one host
 * claiming more values than the rest of the fleet together would decide
 * every fleet quantile. Each host whose count is above that is scaled down
 * to it (hist_scale_to()) before the merge, its shape kept. Into out, the
 * merge of h[0..n); how many hosts were scaled down.
 */
#define HIST_HOST_WEIGHT_MAX 10
size_t hist_merge_hosts(struct hist *out, const struct hist *h, size_t n);

/* v[0..n) sorted, and its lower median (with two, the smaller); 0 when n is 0. */
uint64_t hist_lower_median(uint64_t *v, size_t n);
/* The most one host may weigh against a median of m: HIST_HOST_WEIGHT_MAX * m, saturated. */
uint64_t hist_weight_cap(uint64_t m);

/*
 * out = cur - prev. When any counter went down (the producer was reset or
 * restarted) the delta is cur itself and 1 is returned; 0 otherwise. The
 * delta's max is exact when cur reached a new maximum, else the upper bound
 * of its highest non-empty bucket, capped by cur->max_ns.
 */
int hist_delta(struct hist *out, const struct hist *prev, const struct hist *cur);

/* q in [0, 1]; interpolates linearly inside the bucket; 0 for an empty histogram. */
uint64_t hist_quantile(const struct hist *h, double q);

/*
 * Fill pb (already initialised) from h; counts points into `storage`, which
 * must have HIST_BUCKETS entries and live as long as pb.
 */
void hist_to_pb(const struct hist *h, Kmemctl__V1__Histogram *pb, uint64_t *storage);
/* -EINVAL when the message is inconsistent (buckets out of range, counts disagree). */
int hist_from_pb(struct hist *h, const Kmemctl__V1__Histogram *pb);

/*
 * Parse the module's sysfs `hist` text: lines "<upper_bound_ns> <count>".
 * Upper bounds must be powers of two in increasing order. Fills buckets and
 * count; sum_ns and max_ns have their own sysfs files and are left as they
 * are. -EINVAL on any bad line, with *bad_line set to its 1-based number; h is
 * untouched then.
 */
int hist_parse_text(struct hist *h, const char *text, unsigned *bad_line);

#endif

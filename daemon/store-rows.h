/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A report's probe histograms as one row, the same bytes in every backend
 * of kmemd's store (store.h): made by ingest, read by every reader of
 * samples. The SQLite backend keeps them in report_samples' BLOBs, the
 * PostgreSQL one in its BYTEAs.
 */
#ifndef KMEMD_STORE_ROWS_H
#define KMEMD_STORE_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hist.h"
#include "kmemctl/v1/report.pb-c.h"

/* A buffer reused from report to report. */
struct buf {
	uint8_t *p;
	size_t len, cap;
};

/*
 * A report's probe histograms as one report_samples row (migration 8;
 * store-rows.c, docs/kmemd.md): in probes, RS_FORMAT, then per
 * probe its name's length (u8), the name, its first bucket and number of
 * buckets (u8 each), then start_ms, count, sum_ns and max_ns (64-bit
 * little-endian); in counts, each probe's buckets in the same order as
 * native-endian u64s, with nothing before, between or after them.
 */
#define RS_FORMAT 1
#define RS_NAME_MAX 255
#define RS_FIXED (1 + 2 + 4 * 8) /* a probe's bytes in probes besides its name */

/* One probe of a row; name and buckets point into the row (buckets unaligned). */
struct rs_probe {
	const char *name;
	size_t name_len; /* no NUL in the row */
	int64_t start_ms;
	unsigned first_bucket, nbuckets;
	const uint8_t *buckets;
	uint64_t count, sum_ns, max_ns;
};

/* A row checked whole by rs_open(), read with rs_next(). */
struct rs_row {
	const uint8_t *p, *end, *counts;
};

/* Room for probes then each probe (rs_room()), then rs_add() cannot fail. */
int buf_reserve(struct buf *b, size_t n);
static inline size_t rs_room(size_t name_len)
{
	return RS_FIXED + name_len;
}

/* A new row in probes and counts, reserved (1 + each probe's rs_room()). */
void rs_begin(struct buf *probes, struct buf *counts);
/* x into the row: name_len <= RS_NAME_MAX, first_bucket + nbuckets <= HIST_BUCKETS. */
void rs_add(struct buf *probes, struct buf *counts, const struct rs_probe *x);

/*
 * 0 when probes and counts are a whole, consistent row; -EBADMSG with
 * why otherwise (truncated, buckets out of range, counts not what its
 * probes say), having read nothing past either's end.
 */
int rs_open(struct rs_row *row, const void *probes, size_t len, const void *counts,
	    size_t counts_len, const char **why);
/* The row's next probe into x; false after its last. */
bool rs_next(struct rs_row *row, struct rs_probe *x);
bool rs_is(const struct rs_probe *x, const char *name);
void rs_hist(const struct rs_probe *x, struct hist *h);
/* h += x, as hist_merge() adds (saturating), touching only x's buckets. */
void rs_merge(struct hist *h, const struct rs_probe *x);

/*
 * Room in probes and counts for every row of rep's histograms, one after
 * the other (a row per probe at most: rs_add_sample() then cannot fail).
 * -EINVAL: a probe a row cannot hold (report_check() refuses it first).
 */
int rs_reserve_report(struct buf *probes, struct buf *counts, const Kmemctl__V1__Report *rep);
/* A probe sample of a report into the row being made (native-endian buckets). */
void rs_add_sample(struct buf *probes, struct buf *counts, const Kmemctl__V1__ProbeSample *x);

/* An hour's samples of one probe of a host being rolled up. */
struct rs_acc {
	char probe[RS_NAME_MAX + 1];
	struct hist h;
	uint64_t n; /* intervals merged */
};

/* The probes of one hour, as many as its rows hold. */
struct rs_hour {
	int64_t ms;
	struct rs_acc *a;
	size_t n, cap;
};

/* p merged into its probe's sum of the hour; -ENOMEM. */
int rs_hour_add(struct rs_hour *hr, const struct rs_probe *p);

#endif

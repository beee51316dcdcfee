// SPDX-License-Identifier: GPL-2.0
/*
 * kmemd's SQLite store, upkeep: telemetry expired, and raw samples rolled up into hours.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "store-sqlite.h"

enum stmt {
	ST_EXPIRE_SAMPLES,
	ST_EXPIRE_COUNTERS,
	ST_EXPIRE_EVENTS,
	ST_EXPIRE_ROLLUPS,
	ST_ROLLUP_HOSTS,
	ST_ROLLUP_READ,
	ST_ROLLUP_GET,
	ST_ROLLUP_PUT,
	ST_ROLLUP_DROP,
	ST_ROLLUP_COUNTERS,
	ST_N,
};

static const char *const sql[ST_N] = {
	[ST_EXPIRE_SAMPLES] = "DELETE FROM report_samples WHERE end_ms < ?1",
	[ST_EXPIRE_COUNTERS] = "DELETE FROM counters WHERE unix_ms < ?1",
	[ST_EXPIRE_EVENTS] = "DELETE FROM events WHERE unix_ms < ?1",
	[ST_EXPIRE_ROLLUPS] = "DELETE FROM rollups WHERE hour_ms + 3600000 <= ?1",
	[ST_ROLLUP_HOSTS] =
		"SELECT host_id FROM hosts WHERE host_id > ?1 ORDER BY host_id LIMIT ?2",
	[ST_ROLLUP_READ] = "SELECT end_ms, probes, counts FROM report_samples"
			   " WHERE host_id = ?1 AND end_ms < ?2 ORDER BY end_ms",
	[ST_ROLLUP_GET] = "SELECT first_bucket, counts, count, sum_ns, max_ns, samples FROM rollups"
			  " WHERE host_id = ?1 AND probe = ?2 AND hour_ms = ?3",
	[ST_ROLLUP_PUT] =
		"INSERT OR REPLACE INTO rollups VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
	[ST_ROLLUP_DROP] = "DELETE FROM report_samples WHERE host_id = ?1 AND end_ms < ?2",
	/* counters are cumulative: an hour keeps its last report */
	[ST_ROLLUP_COUNTERS] =
		"DELETE FROM counters WHERE host_id = ?1 AND unix_ms < ?2 AND rowid"
		" NOT IN (SELECT rowid FROM (SELECT rowid, max(unix_ms) FROM counters"
		" WHERE host_id = ?1 AND unix_ms < ?2 GROUP BY unix_ms / 3600000))",
};

/* stepped for one row and left there: sq_stmt() resets them */
static const bool one_row[ST_N] = {
	[ST_ROLLUP_GET] = true,
};

const struct sq_area sq_upkeep_area = {
	.id = SQ_UPKEEP,
	.sql = sql,
	.one_row = one_row,
	.n = ST_N,
};

static sqlite3_stmt *stmt(struct store *s, enum stmt which)
{
	return sq_stmt(s, &sq_upkeep_area, which);
}

int sq_expire(struct store *s, int64_t before_ms, uint64_t *rows)
{
	static const enum stmt q[] = { ST_EXPIRE_SAMPLES, ST_EXPIRE_COUNTERS, ST_EXPIRE_EVENTS,
				       ST_EXPIRE_ROLLUPS };
	sqlite3_stmt *st;
	size_t i;
	int r;

	*rows = 0;
	r = sq_write_begin(s, true);
	if (r < 0)
		return r;
	for (i = 0; r == 0 && i < ARRAY_SIZE(q); i++) {
		st = stmt(s, q[i]);
		sqlite3_bind_int64(st, 1, before_ms);
		r = step_done(st);
		*rows += (uint64_t)sqlite3_changes(DB(s));
	}
	r = sq_write_end(s, true, r);
	if (r < 0)
		*rows = 0;
	return r;
}

/* Adds h (n intervals) to the host's rollup of probe and hour. */
static int rollup_add(struct store *s, const char *host, const char *probe, int64_t hour,
		      const struct hist *h, uint64_t n)
{
	sqlite3_stmt *st = stmt(s, ST_ROLLUP_GET);
	struct hist sum = *h;
	int rc;

	sqlite3_bind_text(st, 1, host, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, probe, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, hour);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		struct hist old;

		column_hist(st, 0, &old);
		hist_merge(&sum, &old);
		n += (uint64_t)sqlite3_column_int64(st, 5);
	} else if (rc != SQLITE_DONE) {
		return -EIO;
	}
	st = stmt(s, ST_ROLLUP_PUT);
	sqlite3_bind_text(st, 1, host, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, probe, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, hour);
	bind_hist(st, 4, &sum);
	sqlite3_bind_int64(st, 9, (sqlite3_int64)n);
	return step_done(st);
}

static int hour_flush(struct store *s, const char *host, struct rs_hour *hr)
{
	int r = 0;

	for (size_t i = 0; r == 0 && i < hr->n; i++)
		r = rollup_add(s, host, hr->a[i].probe, hr->ms, &hr->a[i].h, hr->a[i].n);
	hr->n = 0;
	return r;
}

/*
 * One host's samples before before_ms into hourly rows; its counters
 * thinned to one per hour. Its rows come in time order, each with its
 * report's probes: each hour's are merged by probe, then written.
 */
static int rollup_host(struct store *s, const char *host, int64_t before_ms, uint64_t *rows)
{
	struct sqlite_store *q = (struct sqlite_store *)s;
	sqlite3_stmt *st = stmt(s, ST_ROLLUP_READ);
	struct rs_hour hr = { .ms = -1 };
	struct rs_probe p;
	struct rs_row row;
	int rc, r = 0;

	sqlite3_bind_text(st, 1, host, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 2, before_ms);
	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t end = sqlite3_column_int64(st, 0), ms = end / 3600000 * 3600000;

		if (!sq_row_open(q, st, 1, host, end, &row))
			continue;
		if (ms != hr.ms)
			r = hour_flush(s, host, &hr);
		hr.ms = ms;
		while (r == 0 && rs_next(&row, &p)) {
			r = rs_hour_add(&hr, &p);
			(*rows)++;
		}
	}
	sqlite3_reset(st);
	if (r == 0 && rc != SQLITE_DONE)
		r = -EIO;
	if (r == 0)
		r = hour_flush(s, host, &hr);
	free(hr.a);
	if (r == 0) {
		st = stmt(s, ST_ROLLUP_DROP);
		sqlite3_bind_text(st, 1, host, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, before_ms);
		r = step_done(st);
	}
	if (r == 0) {
		st = stmt(s, ST_ROLLUP_COUNTERS);
		sqlite3_bind_text(st, 1, host, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, before_ms);
		r = step_done(st);
		*rows += (uint64_t)sqlite3_changes(DB(s));
	}
	return r;
}

int sq_rollup(struct store *s, int64_t before_ms, char cursor[STORE_ID_MAX], unsigned max_hosts,
	      uint64_t *rows)
{
	char hosts[16][STORE_ID_MAX];
	unsigned n = 0, i;
	sqlite3_stmt *st = stmt(s, ST_ROLLUP_HOSTS);
	int rc, r;

	*rows = 0;
	if (max_hosts > ARRAY_SIZE(hosts))
		max_hosts = ARRAY_SIZE(hosts);
	sqlite3_bind_text(st, 1, cursor, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, (int)max_hosts);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		snprintf(hosts[n++], STORE_ID_MAX, "%s", sqlite3_column_text(st, 0));
	if (rc != SQLITE_DONE)
		return -EIO;
	/* the hosts were read: nothing is stepped across the write */
	r = sq_write_begin(s, true);
	if (r < 0)
		return r;
	for (i = 0; r == 0 && i < n; i++)
		r = rollup_host(s, hosts[i], before_ms, rows);
	r = sq_write_end(s, true, r);
	if (r < 0) {
		*rows = 0;
		return r;
	}
	if (n)
		snprintf(cursor, STORE_ID_MAX, "%s", hosts[n - 1]);
	return n == max_hosts;
}

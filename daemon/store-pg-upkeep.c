// SPDX-License-Identifier: GPL-2.0
/*
 * kmemd's PostgreSQL store, upkeep: telemetry expired, and raw samples
 * rolled up into hours. Every kmemd on the database runs upkeep, and
 * reports keep coming through the others meanwhile: a raw row is read by
 * the statement that deletes it, so each is merged once, and none that
 * came in after it was read is deleted unmerged.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "store-pg.h"

enum stmt {
	ST_EXPIRE_SAMPLES,
	ST_EXPIRE_COUNTERS,
	ST_EXPIRE_EVENTS,
	ST_EXPIRE_ROLLUPS,
	ST_ROLLUP_HOSTS,
	ST_ROLLUP_TAKE,
	ST_ROLLUP_NEW,
	ST_ROLLUP_GET,
	ST_ROLLUP_PUT,
	ST_ROLLUP_COUNTERS,
	ST_N,
};

static const char *const sql[ST_N] = {
	[ST_EXPIRE_SAMPLES] = "DELETE FROM report_samples WHERE end_ms < $1",
	[ST_EXPIRE_COUNTERS] = "DELETE FROM counters WHERE unix_ms < $1",
	[ST_EXPIRE_EVENTS] = "DELETE FROM events WHERE unix_ms < $1",
	[ST_EXPIRE_ROLLUPS] = "DELETE FROM rollups WHERE hour_ms + 3600000 <= $1",
	[ST_ROLLUP_HOSTS] =
		"SELECT host_id FROM hosts WHERE host_id > $1 ORDER BY host_id LIMIT $2",
	/* up to $3 of a host's oldest rows, deleted and returned in time order */
	[ST_ROLLUP_TAKE] = "WITH d AS (DELETE FROM report_samples WHERE ctid = ANY (ARRAY("
			   "SELECT ctid FROM report_samples WHERE host_id = $1 AND end_ms < $2"
			   " ORDER BY end_ms LIMIT $3)) RETURNING end_ms, probes, counts)"
			   " SELECT end_ms, probes, counts FROM d ORDER BY end_ms",
	[ST_ROLLUP_NEW] =
		"INSERT INTO rollups (host_id, probe, hour_ms, first_bucket, counts, count,"
		" sum_ns, max_ns, samples) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
		" ON CONFLICT (host_id, probe, hour_ms) DO NOTHING",
	[ST_ROLLUP_GET] = "SELECT first_bucket, counts, count, sum_ns, max_ns, samples FROM rollups"
			  " WHERE host_id = $1 AND probe = $2 AND hour_ms = $3 FOR UPDATE",
	[ST_ROLLUP_PUT] = "UPDATE rollups SET first_bucket = $4, counts = $5, count = $6,"
			  " sum_ns = $7, max_ns = $8, samples = $9"
			  " WHERE host_id = $1 AND probe = $2 AND hour_ms = $3",
	/* counters are cumulative: an hour keeps its last report */
	[ST_ROLLUP_COUNTERS] =
		"DELETE FROM counters c WHERE host_id = $1 AND unix_ms < $2 AND EXISTS (SELECT 1"
		" FROM counters l WHERE l.host_id = $1 AND l.unix_ms < $2"
		" AND l.unix_ms / 3600000 = c.unix_ms / 3600000"
		" AND (l.unix_ms, l.seq) > (c.unix_ms, c.seq))",
};

const struct pg_area pg_upkeep_area = {
	.id = PG_UPKEEP,
	.sql = sql,
	.n = ST_N,
};

/* Raw rows read (and deleted) per statement: a backlog of weeks is not read at once. */
#define TAKE_ROWS 4096

int pg_expire(struct store *s, int64_t before_ms, uint64_t *rows)
{
	static const enum stmt q[] = { ST_EXPIRE_SAMPLES, ST_EXPIRE_COUNTERS, ST_EXPIRE_EVENTS,
				       ST_EXPIRE_ROLLUPS };
	struct pg_args a = { 0 };
	uint64_t n;
	size_t i;
	int r;

	*rows = 0;
	r = pg_write_begin(s);
	if (r < 0)
		return r;
	pg_int(&a, before_ms);
	for (i = 0; r == 0 && i < ARRAY_SIZE(q); i++) {
		r = pg_changed(s, &pg_upkeep_area, q[i], &a, &n);
		if (r == 0)
			*rows += n;
	}
	r = pg_write_end(s, r);
	if (r < 0)
		*rows = 0;
	return r;
}

/* The columns of the host's rollup of probe and hour: h, merged of n intervals. */
static void rollup_args(struct pg_args *a, const char *host, const char *probe, int64_t hour,
			const struct hist *h, uint64_t n)
{
	pg_text(a, host);
	pg_text(a, probe);
	pg_int(a, hour);
	pg_hist(a, h);
	pg_int(a, (int64_t)n);
}

/*
 * Adds h (n intervals) to the host's rollup of probe and hour: a new row,
 * else the one there (locked, so that another kmemd adding to it waits)
 * merged with h. Its row can only be gone in between when expired: then
 * it is new again.
 */
static int rollup_add(struct store *s, const char *host, const char *probe, int64_t hour,
		      const struct hist *h, uint64_t n)
{
	struct pg_args a;
	struct hist sum, old;
	PGresult *res;
	uint64_t added;
	int r;

	for (;;) {
		a = (struct pg_args){ 0 };
		rollup_args(&a, host, probe, hour, h, n);
		r = pg_changed(s, &pg_upkeep_area, ST_ROLLUP_NEW, &a, &added);
		if (r < 0 || added)
			return r;
		a = (struct pg_args){ 0 };
		pg_text(&a, host);
		pg_text(&a, probe);
		pg_int(&a, hour);
		res = pg_run(s, &pg_upkeep_area, ST_ROLLUP_GET, &a);
		if (!res)
			return -EIO;
		if (PQntuples(res))
			break;
		PQclear(res);
	}
	pg_col_hist(res, 0, 0, &old);
	sum = *h;
	hist_merge(&sum, &old);
	n += (uint64_t)pg_col_int(res, 0, 5);
	PQclear(res);
	a = (struct pg_args){ 0 };
	rollup_args(&a, host, probe, hour, &sum, n);
	return pg_do(s, &pg_upkeep_area, ST_ROLLUP_PUT, &a);
}

static int acc_cmp(const void *x, const void *y)
{
	return strcmp(((const struct rs_acc *)x)->probe, ((const struct rs_acc *)y)->probe);
}

static int hour_flush(struct store *s, const char *host, struct rs_hour *hr)
{
	int r = 0;

	/* rollup rows locked in one order by every kmemd: two adding to an hour do not deadlock */
	if (hr->n)
		qsort(hr->a, hr->n, sizeof(*hr->a), acc_cmp);
	for (size_t i = 0; r == 0 && i < hr->n; i++)
		r = rollup_add(s, host, hr->a[i].probe, hr->ms, &hr->a[i].h, hr->a[i].n);
	hr->n = 0;
	return r;
}

/* A batch of raw rows taken, in time order, merged into hr; *taken: how many. */
static int rollup_take(struct store *s, const char *host, int64_t before_ms, struct rs_hour *hr,
		       int *taken, uint64_t *rows)
{
	struct pg_args a = { 0 };
	struct rs_probe p;
	struct rs_row row;
	uint8_t *mem[2];
	PGresult *res;
	int i, r = 0;

	pg_text(&a, host);
	pg_int(&a, before_ms);
	pg_int(&a, TAKE_ROWS);
	res = pg_run(s, &pg_upkeep_area, ST_ROLLUP_TAKE, &a);
	if (!res)
		return -EIO;
	*taken = PQntuples(res);
	for (i = 0; r == 0 && i < *taken; i++) {
		int64_t end = pg_col_int(res, i, 0), ms = end / 3600000 * 3600000;

		if (!pg_row_open(PG(s), res, i, 1, host, end, &row, mem))
			continue;
		if (ms != hr->ms)
			r = hour_flush(s, host, hr);
		hr->ms = ms;
		while (r == 0 && rs_next(&row, &p)) {
			r = rs_hour_add(hr, &p);
			(*rows)++;
		}
		PQfreemem(mem[0]);
		PQfreemem(mem[1]);
	}
	PQclear(res);
	return r;
}

/*
 * One host's samples before before_ms into hourly rows; its counters
 * thinned to one per hour. Its rows come in time order, each with its
 * report's probes: each hour's are merged by probe, then written.
 */
static int rollup_host(struct store *s, const char *host, int64_t before_ms, uint64_t *rows)
{
	struct rs_hour hr = { .ms = -1 };
	struct pg_args a = { 0 };
	int taken = TAKE_ROWS, r = 0;
	uint64_t n;

	while (r == 0 && taken == TAKE_ROWS)
		r = rollup_take(s, host, before_ms, &hr, &taken, rows);
	if (r == 0)
		r = hour_flush(s, host, &hr);
	free(hr.a);
	if (r == 0) {
		pg_text(&a, host);
		pg_int(&a, before_ms);
		r = pg_changed(s, &pg_upkeep_area, ST_ROLLUP_COUNTERS, &a, &n);
		if (r == 0)
			*rows += n;
	}
	return r;
}

int pg_rollup(struct store *s, int64_t before_ms, char cursor[STORE_ID_MAX], unsigned max_hosts,
	      uint64_t *rows)
{
	char hosts[16][STORE_ID_MAX];
	struct pg_args a = { 0 };
	unsigned n, i;
	PGresult *res;
	int r;

	*rows = 0;
	if (max_hosts > ARRAY_SIZE(hosts))
		max_hosts = ARRAY_SIZE(hosts);
	pg_text(&a, cursor);
	pg_int(&a, max_hosts);
	res = pg_run(s, &pg_upkeep_area, ST_ROLLUP_HOSTS, &a);
	if (!res)
		return -EIO;
	n = (unsigned)PQntuples(res);
	for (i = 0; i < n; i++)
		snprintf(hosts[i], STORE_ID_MAX, "%s", pg_col_or_empty(res, i, 0));
	PQclear(res);
	r = pg_write_begin(s);
	if (r < 0)
		return r;
	for (i = 0; r == 0 && i < n; i++)
		r = rollup_host(s, hosts[i], before_ms, rows);
	r = pg_write_end(s, r);
	if (r < 0) {
		*rows = 0;
		return r;
	}
	if (n)
		snprintf(cursor, STORE_ID_MAX, "%s", hosts[n - 1]);
	return n == max_hosts;
}

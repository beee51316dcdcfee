// SPDX-License-Identifier: GPL-2.0
/*
 * kmemd's SQLite store, a report's probe histograms (store-rows.h) read
 * from a row, and schema 7's rows (probes in JSON) converted to them.
 */
#include <jansson.h>
#include <string.h>

#include "store-sqlite.h"

bool sq_row_open(struct sqlite_store *q, sqlite3_stmt *st, int col, const char *host,
		 int64_t end_ms, struct rs_row *row)
{
	const char *why;

	if (rs_open(row, sqlite3_column_blob(st, col), (size_t)sqlite3_column_bytes(st, col),
		    sqlite3_column_blob(st, col + 1), (size_t)sqlite3_column_bytes(st, col + 1),
		    &why) == 0)
		return true;
	q->skipped++;
	log_ratelimited(&q->skip_rl, LOG_WARNING,
			"store: the probe samples of '%s' ending at %lld are skipped: %s", host,
			(long long)end_ms, why);
	return false;
}

/* One probe of a schema-7 row: [start_ms, first_bucket, count, sum_ns, max_ns, offset, length]. */
static int json_probe(const char *name, json_t *a, size_t counts_len, struct rs_probe *x)
{
	json_int_t v[7];

	if (!json_is_array(a) || json_array_size(a) != 7 || strlen(name) > RS_NAME_MAX)
		return -EBADMSG;
	for (size_t i = 0; i < 7; i++) {
		if (!json_is_integer(json_array_get(a, i)))
			return -EBADMSG;
		v[i] = json_integer_value(json_array_get(a, i));
	}
	if (v[1] < 0 || v[1] > HIST_BUCKETS || v[5] < 0 || v[6] < 0 || v[6] % 8 ||
	    v[6] / 8 > HIST_BUCKETS - v[1] || (size_t)v[5] > counts_len ||
	    (size_t)v[6] > counts_len - (size_t)v[5])
		return -EBADMSG;
	*x = (struct rs_probe){ .name = name,
				.name_len = strlen(name),
				.start_ms = v[0],
				.first_bucket = (unsigned)v[1],
				.nbuckets = (unsigned)(v[6] / 8),
				.count = (uint64_t)v[2],
				.sum_ns = (uint64_t)v[3],
				.max_ns = (uint64_t)v[4] };
	return (int)v[5];
}

/* A schema-7 row as RS_FORMAT into probes and counts. */
static int json_row(const char *text, size_t len, const uint8_t *counts, size_t counts_len,
		    struct buf *probes, struct buf *out)
{
	json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL), *a;
	struct rs_probe x;
	const char *name;
	size_t room = 1;
	int r = json_is_object(o) ? 0 : -EBADMSG;

	json_object_foreach(o, name, a) room += rs_room(strlen(name));
	if (r == 0)
		r = buf_reserve(probes, room) ?: buf_reserve(out, counts_len ?: 1);
	if (r == 0)
		rs_begin(probes, out);
	json_object_foreach(o, name, a)
	{
		int off = r == 0 ? json_probe(name, a, counts_len, &x) : r;

		if (off < 0) {
			r = off;
			break;
		}
		x.buckets = counts + off;
		rs_add(probes, out, &x);
	}
	json_decref(o);
	return r;
}

int rs_migrate_json(sqlite3 *db)
{
	struct buf probes = { 0 }, counts = { 0 };
	sqlite3_stmt *rd = NULL, *wr = NULL;
	unsigned skipped = 0;
	int rc = SQLITE_DONE, r = 0;

	if (sqlite3_prepare_v2(db,
			       "SELECT host_id, end_ms, probes, counts FROM report_samples"
			       " ORDER BY rowid",
			       -1, &rd, NULL) ||
	    sqlite3_prepare_v2(db, "INSERT INTO report_samples8 VALUES (?1, ?2, ?3, ?4)", -1, &wr,
			       NULL))
		r = -EIO;
	while (r == 0 && (rc = sqlite3_step(rd)) == SQLITE_ROW) {
		int k = json_row((const char *)sqlite3_column_text(rd, 2),
				 (size_t)sqlite3_column_bytes(rd, 2), sqlite3_column_blob(rd, 3),
				 (size_t)sqlite3_column_bytes(rd, 3), &probes, &counts);

		if (k == -EBADMSG) {
			skipped++;
			continue;
		}
		if (k < 0) {
			r = k;
			break;
		}
		sqlite3_reset(wr);
		sqlite3_bind_value(wr, 1, sqlite3_column_value(rd, 0));
		sqlite3_bind_value(wr, 2, sqlite3_column_value(rd, 1));
		sqlite3_bind_blob(wr, 3, probes.p, (int)probes.len, SQLITE_STATIC);
		sqlite3_bind_blob(wr, 4, counts.p, (int)counts.len, SQLITE_STATIC);
		r = step_done(wr);
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = -EIO;
	sqlite3_finalize(rd);
	sqlite3_finalize(wr);
	free(probes.p);
	free(counts.p);
	if (skipped)
		log_warning("store: %u rows of probe samples unreadable (their JSON), left out",
			    skipped);
	if (r < 0)
		return r;
	return exec(db, "DROP TABLE report_samples;"
			"ALTER TABLE report_samples8 RENAME TO report_samples;"
			"CREATE INDEX report_samples_by_host ON report_samples (host_id, end_ms);"
			"CREATE INDEX report_samples_by_time ON report_samples (end_ms);");
}

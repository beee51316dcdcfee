// SPDX-License-Identifier: GPL-2.0
/*
 * kmemd's SQLite store, builds: the kernel builds waiting hosts sent their
 * build files of, and the signed build records operators published.
 */
#include <stdlib.h>
#include <string.h>

#include "store-sqlite.h"

enum stmt {
	ST_BUILD_SEEN,
	ST_BUILDS,
	ST_BUILDS_WAITING,
	ST_BUILD_FILE,
	ST_RECORD_ADD,
	ST_RECORDS,
	ST_RECORD_COUNT,
	ST_N,
};

/* A build's last_seen_ms is rewritten once it is this old, not on every report. */
#define BUILD_SEEN_EVERY_MS 60000

static const char *const sql[ST_N] = {
	/* the first build file kept: a build's file is the same on every host */
	[ST_BUILD_SEEN] = "INSERT INTO builds VALUES (?1, ?2, ?3, ?4, ?5, ?5)"
			  " ON CONFLICT (build_id) DO UPDATE SET last_seen_ms = ?5"
			  " WHERE last_seen_ms < ?5 - ?6",
	/* builds seen, and those only a record names (published ahead) */
	[ST_BUILDS] =
		"WITH ids(build_id) AS (SELECT build_id FROM builds"
		" UNION SELECT build_id FROM build_records),"
		" h(build_id, n) AS (SELECT build_id, count(*) FROM hosts"
		" WHERE last_seq > 0 AND revoked = 0 GROUP BY build_id),"
		" r(build_id, n, release, version) AS (SELECT build_id, count(*), min(release),"
		" min(version) FROM build_records GROUP BY build_id)"
		" SELECT ids.build_id, coalesce(b.release, r.release), coalesce(b.version, r.version),"
		" b.first_seen_ms, b.last_seen_ms, coalesce(h.n, 0), coalesce(r.n, 0) FROM ids"
		" LEFT JOIN builds b USING (build_id) LEFT JOIN h USING (build_id)"
		" LEFT JOIN r USING (build_id) ORDER BY 2, 1",
	[ST_BUILDS_WAITING] = "SELECT h.build_id, j.value, count(*) FROM hosts h,"
			      " json_each(h.waiting) j WHERE h.waiting IS NOT NULL"
			      " AND h.last_seq > 0 AND h.revoked = 0 GROUP BY 1, 2 ORDER BY 1, 2",
	[ST_BUILD_FILE] = "SELECT build_file FROM builds WHERE build_id = ?1",
	[ST_RECORD_ADD] = "INSERT INTO build_records VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
			  " ON CONFLICT (sha256) DO NOTHING",
	[ST_RECORDS] = "SELECT sha256, build_id, release, version, bundle, signer, key_id,"
		       " created_ms FROM build_records ORDER BY created_ms, sha256",
	[ST_RECORD_COUNT] = "SELECT count(*) FROM build_records",
};

static const bool one_row[ST_N] = {
	[ST_BUILD_FILE] = true,
	[ST_RECORD_COUNT] = true,
};

const struct sq_area sq_builds_area = {
	.id = SQ_BUILDS,
	.sql = sql,
	.one_row = one_row,
	.n = ST_N,
};

static sqlite3_stmt *stmt(struct store *s, enum stmt which)
{
	return sq_stmt(s, &sq_builds_area, which);
}

/* On the ingest writer's connection, in its batch; alone elsewhere. */
int sq_build_seen(struct store *s, const struct store_build *b, int64_t now_ms)
{
	sqlite3_stmt *st;

	sq_write_begin(s, false);
	st = stmt(s, ST_BUILD_SEEN);
	sqlite3_bind_text(st, 1, b->build_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, b->release, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, b->version, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, b->file, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, now_ms);
	sqlite3_bind_int64(st, 6, BUILD_SEEN_EVERY_MS);
	return sq_write_end(s, false, step_done(st));
}

int sq_builds(struct store *s, const struct store_builds_cb *cb, void *arg)
{
	sqlite3_stmt *st = stmt(s, ST_BUILDS);
	int r = 0, rc;

	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct store_build_row b = {
			.build_id = text_or_empty(st, 0),
			.release = text_or_empty(st, 1),
			.version = text_or_empty(st, 2),
			.first_seen_ms = int_or_null(st, 3),
			.last_seen_ms = int_or_null(st, 4),
			.hosts = (uint64_t)sqlite3_column_int64(st, 5),
			.records = (uint64_t)sqlite3_column_int64(st, 6),
		};

		r = cb->build(arg, &b);
	}
	if (r == 0 && rc != SQLITE_DONE)
		return -EIO;
	st = stmt(s, ST_BUILDS_WAITING);
	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
		r = cb->waiting(arg, text_or_empty(st, 0), text_or_empty(st, 1),
				(uint64_t)sqlite3_column_int64(st, 2));
	if (r == 0 && rc != SQLITE_DONE)
		return -EIO;
	return r;
}

int sq_build_file(struct store *s, const char *build_id, char **file)
{
	sqlite3_stmt *st = stmt(s, ST_BUILD_FILE);
	int r;

	sqlite3_bind_text(st, 1, build_id, -1, SQLITE_STATIC);
	r = step_row(st);
	if (r < 0)
		return r;
	*file = strdup(text_or_empty(st, 0));
	return *file ? 0 : -ENOMEM;
}

int sq_build_record_add(struct store *s, const struct store_build_record *rec)
{
	sqlite3_stmt *st;
	int r;

	sq_write_begin(s, false);
	st = stmt(s, ST_RECORD_ADD);
	sqlite3_bind_text(st, 1, rec->sha256, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, rec->build_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, rec->release, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, rec->version, -1, SQLITE_STATIC);
	sqlite3_bind_blob(st, 5, rec->bundle, (int)rec->bundle_len, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, rec->signer, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 7, rec->key_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 8, rec->created_ms);
	r = step_done(st);
	if (r == 0)
		r = sqlite3_changes(DB(s)) > 0;
	return sq_write_end(s, false, r);
}

int sq_build_records(struct store *s, int (*cb)(void *arg, const struct store_build_record *r),
		     void *arg)
{
	sqlite3_stmt *st = stmt(s, ST_RECORDS);
	int r = 0, rc;

	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct store_build_record rec = {
			.sha256 = text_or_empty(st, 0),
			.build_id = text_or_empty(st, 1),
			.release = text_or_empty(st, 2),
			.version = text_or_empty(st, 3),
			.bundle = sqlite3_column_blob(st, 4),
			.bundle_len = (size_t)sqlite3_column_bytes(st, 4),
			.signer = text_or_empty(st, 5),
			.key_id = text_or_empty(st, 6),
			.created_ms = sqlite3_column_int64(st, 7),
		};

		r = cb(arg, &rec);
	}
	if (r == 0 && rc != SQLITE_DONE)
		return -EIO;
	return r;
}

int sq_build_record_count(struct store *s, uint64_t *n)
{
	sqlite3_stmt *st = stmt(s, ST_RECORD_COUNT);
	int r = step_row(st);

	*n = r == 0 ? (uint64_t)sqlite3_column_int64(st, 0) : 0;
	return r;
}

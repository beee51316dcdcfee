// SPDX-License-Identifier: GPL-2.0
/*
 * kmemd's PostgreSQL store, builds: SQLite's (store-sqlite-builds.c) in
 * PostgreSQL's dialect, with nothing that assumes one writer.
 */
#include <stdlib.h>
#include <string.h>

#include "store-pg.h"

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

static const char *const sql[ST_N] = {
	/*
	 * As the statement's snapshot has it, a row seen within the minute is
	 * not written, nor locked (ON CONFLICT's WHERE would lock it): every
	 * waiting host of a build sends its build file with every report.
	 */
	[ST_BUILD_SEEN] =
		"INSERT INTO builds SELECT $1::text, $2::text, $3::text, $4::text, $5::bigint, $5"
		" WHERE NOT EXISTS (SELECT FROM builds WHERE build_id = $1"
		" AND last_seen_ms >= $5 - 60000)"
		" ON CONFLICT (build_id) DO UPDATE SET last_seen_ms ="
		" greatest(builds.last_seen_ms, excluded.last_seen_ms)",
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
		" LEFT JOIN r USING (build_id)"
		" ORDER BY coalesce(b.release, r.release) COLLATE \"C\", ids.build_id COLLATE \"C\"",
	[ST_BUILDS_WAITING] =
		"SELECT h.build_id, j.value, count(*) FROM hosts h,"
		" json_array_elements_text(h.waiting::json) j(value)"
		" WHERE h.waiting IS NOT NULL AND h.last_seq > 0 AND h.revoked = 0"
		" GROUP BY 1, 2 ORDER BY h.build_id COLLATE \"C\", j.value COLLATE \"C\"",
	[ST_BUILD_FILE] = "SELECT build_file FROM builds WHERE build_id = $1::text",
	[ST_RECORD_ADD] = "INSERT INTO build_records VALUES ($1::text, $2::text, $3::text,"
			  " $4::text, $5::bytea, $6::text, $7::text, $8::bigint)"
			  " ON CONFLICT (sha256) DO NOTHING",
	[ST_RECORDS] = "SELECT sha256, build_id, release, version, bundle, signer, key_id,"
		       " created_ms FROM build_records ORDER BY created_ms, sha256 COLLATE \"C\"",
	[ST_RECORD_COUNT] = "SELECT count(*) FROM build_records",
};

const struct pg_area pg_builds_area = {
	.id = PG_BUILDS,
	.sql = sql,
	.n = ST_N,
};

static PGresult *run(struct store *s, enum stmt which, const struct pg_args *a)
{
	return pg_run(s, &pg_builds_area, which, a);
}

int pg_build_seen(struct store *s, const struct store_build *b, int64_t now_ms)
{
	struct pg_args a = { 0 };

	pg_text(&a, b->build_id);
	pg_text(&a, b->release);
	pg_text(&a, b->version);
	pg_text(&a, b->file);
	pg_int(&a, now_ms);
	return pg_do(s, &pg_builds_area, ST_BUILD_SEEN, &a);
}

/* Rows are in memory whole: cb may call the store again. */
int pg_builds(struct store *s, const struct store_builds_cb *cb, void *arg)
{
	PGresult *res = run(s, ST_BUILDS, NULL);
	int i, r = 0;

	if (!res)
		return -EIO;
	for (i = 0; r == 0 && i < PQntuples(res); i++) {
		struct store_build_row b = {
			.build_id = pg_col_or_empty(res, i, 0),
			.release = pg_col_or_empty(res, i, 1),
			.version = pg_col_or_empty(res, i, 2),
			.first_seen_ms = pg_col_int(res, i, 3),
			.last_seen_ms = pg_col_int(res, i, 4),
			.hosts = (uint64_t)pg_col_int(res, i, 5),
			.records = (uint64_t)pg_col_int(res, i, 6),
		};

		r = cb->build(arg, &b);
	}
	PQclear(res);
	res = r == 0 ? run(s, ST_BUILDS_WAITING, NULL) : NULL;
	if (r == 0 && !res)
		return -EIO;
	for (i = 0; r == 0 && i < PQntuples(res); i++)
		r = cb->waiting(arg, pg_col_or_empty(res, i, 0), pg_col_or_empty(res, i, 1),
				(uint64_t)pg_col_int(res, i, 2));
	PQclear(res);
	return r;
}

int pg_build_file(struct store *s, const char *build_id, char **file)
{
	struct pg_args a = { 0 };
	PGresult *res;
	int r = 0;

	pg_text(&a, build_id);
	res = run(s, ST_BUILD_FILE, &a);
	if (!res)
		return -EIO;
	if (!PQntuples(res))
		r = -ENOENT;
	else if (!(*file = strdup(pg_col_or_empty(res, 0, 0))))
		r = -ENOMEM;
	PQclear(res);
	return r;
}

int pg_build_record_add(struct store *s, const struct store_build_record *rec)
{
	struct pg_args a = { 0 };
	uint64_t n;
	int r;

	pg_text(&a, rec->sha256);
	pg_text(&a, rec->build_id);
	pg_text(&a, rec->release);
	pg_text(&a, rec->version);
	pg_blob(&a, rec->bundle, rec->bundle_len);
	pg_text(&a, rec->signer);
	pg_text(&a, rec->key_id);
	pg_int(&a, rec->created_ms);
	r = pg_changed(s, &pg_builds_area, ST_RECORD_ADD, &a, &n);
	return r < 0 ? r : n > 0;
}

int pg_build_records(struct store *s, int (*cb)(void *arg, const struct store_build_record *r),
		     void *arg)
{
	PGresult *res = run(s, ST_RECORDS, NULL);
	int i, r = 0;

	if (!res)
		return -EIO;
	for (i = 0; r == 0 && i < PQntuples(res); i++) {
		size_t len = 0;
		uint8_t *bundle = pg_col_blob(res, i, 4, &len);
		struct store_build_record rec = {
			.sha256 = pg_col_or_empty(res, i, 0),
			.build_id = pg_col_or_empty(res, i, 1),
			.release = pg_col_or_empty(res, i, 2),
			.version = pg_col_or_empty(res, i, 3),
			.bundle = bundle,
			.bundle_len = len,
			.signer = pg_col_or_empty(res, i, 5),
			.key_id = pg_col_or_empty(res, i, 6),
			.created_ms = pg_col_int(res, i, 7),
		};

		r = bundle ? cb(arg, &rec) : -ENOMEM;
		PQfreemem(bundle);
	}
	PQclear(res);
	return r;
}

int pg_build_record_count(struct store *s, uint64_t *n)
{
	PGresult *res = run(s, ST_RECORD_COUNT, NULL);

	*n = 0;
	if (!res)
		return -EIO;
	*n = (uint64_t)pg_col_int(res, 0, 0);
	PQclear(res);
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * `kmemd migrate`: a SQLite store copied into PostgreSQL, for a fleet that
 * outgrew one file. Both are brought to this kmemd's schema first by
 * opening them as kmemd would; PostgreSQL's tables have SQLite's columns
 * (store-pg.c), so each table is copied row by row, column by name, in one
 * transaction: a copy that fails leaves the database as it was.
 */
#include <errno.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "store-migrate.h"
#include "store.h"

/*
 * What is copied, parents before the rows that refer to them. Leases and
 * rate buckets are not: they are of the kmemd that ran, and expire.
 */
static const char *const tables[] = {
	"hosts",       "states", "report_samples", "counters",	"events",   "policies",
	"assignments", "audit",	 "enroll_secrets", "rollups",	"rollouts", "rollout_hosts",
	"verdicts",    "names",	 "enrollments",	   "operators", "builds",   "build_records",
};

/* Tables whose ids PostgreSQL counts: its next id follows the copied ones. */
static const char *const identities[] = { "assignments", "audit", "enroll_secrets", "verdicts" };

static PGresult *pq_ok(PGconn *c, PGresult *r, char *err, size_t errlen)
{
	ExecStatusType st = PQresultStatus(r);

	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
		return r;
	snprintf(err, errlen, "%s", r ? PQresultErrorMessage(r) : PQerrorMessage(c));
	err[strcspn(err, "\n")] = 0;
	PQclear(r);
	return NULL;
}

static int exec_sqlite(sqlite3 *db, const char *sql, char *err, size_t errlen)
{
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK)
		return 0;
	snprintf(err, errlen, "%s", sqlite3_errmsg(db));
	return -EIO;
}

static int pq_exec(PGconn *c, const char *sql, char *err, size_t errlen)
{
	PGresult *r = pq_ok(c, PQexec(c, sql), err, errlen);

	PQclear(r);
	return r ? 0 : -EIO;
}

/* 0 when every table copied to is empty: a copy over a store would mix two fleets. */
static int target_empty(PGconn *c, char *err, size_t errlen)
{
	char sql[160];
	PGresult *r;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(tables); i++) {
		snprintf(sql, sizeof(sql), "SELECT EXISTS (SELECT 1 FROM %s)", tables[i]);
		r = pq_ok(c, PQexec(c, sql), err, errlen);
		if (!r)
			return -EIO;
		if (PQgetvalue(r, 0, 0)[0] == 't') {
			snprintf(err, errlen,
				 "the database holds a store already (table %s has rows)",
				 tables[i]);
			PQclear(r);
			return -EEXIST;
		}
		PQclear(r);
	}
	return 0;
}

/* The INSERT of a row of st's columns into table, prepared as "copy". */
static int prepare_insert(PGconn *c, sqlite3_stmt *st, const char *table, char *err, size_t errlen)
{
	char sql[2048];
	size_t n;
	int i, cols = sqlite3_column_count(st);
	PGresult *r;

	n = (size_t)snprintf(sql, sizeof(sql), "INSERT INTO %s (", table);
	for (i = 0; i < cols && n < sizeof(sql); i++)
		n += (size_t)snprintf(sql + n, sizeof(sql) - n, "%s%s", i ? ", " : "",
				      sqlite3_column_name(st, i));
	for (i = 0; i < cols && n < sizeof(sql); i++)
		n += (size_t)snprintf(sql + n, sizeof(sql) - n, "%s$%d", i ? ", " : ") VALUES (",
				      i + 1);
	if (n + 2 >= sizeof(sql)) {
		snprintf(err, errlen, "table %s: too many columns", table);
		return -E2BIG;
	}
	strcat(sql, ")");
	if (pq_exec(c, "DEALLOCATE ALL", err, errlen) < 0)
		return -EIO;
	r = pq_ok(c, PQprepare(c, "copy", sql, 0, NULL), err, errlen);
	PQclear(r);
	return r ? 0 : -EIO;
}

/*
 * One SQLite row into PostgreSQL: blobs as binary BYTEA, doubles to the
 * last bit, the rest as SQLite's text of it.
 */
static int copy_row(PGconn *c, sqlite3_stmt *st, char *err, size_t errlen)
{
	const char *v[32];
	char num[32][32];
	int len[32], fmt[32], i, cols = sqlite3_column_count(st);
	PGresult *r;

	if (cols > (int)ARRAY_SIZE(v))
		return -E2BIG;
	for (i = 0; i < cols; i++) {
		int type = sqlite3_column_type(st, i);

		fmt[i] = type == SQLITE_BLOB;
		len[i] = 0;
		if (type == SQLITE_NULL) {
			v[i] = NULL;
		} else if (type == SQLITE_BLOB) {
			v[i] = sqlite3_column_blob(st, i) ?: "";
			len[i] = sqlite3_column_bytes(st, i);
		} else if (type == SQLITE_FLOAT) {
			snprintf(num[i], sizeof(num[i]), "%.17g", sqlite3_column_double(st, i));
			v[i] = num[i];
		} else {
			v[i] = (const char *)sqlite3_column_text(st, i);
		}
	}
	r = pq_ok(c, PQexecPrepared(c, "copy", cols, v, len, fmt, 0), err, errlen);
	PQclear(r);
	return r ? 0 : -EIO;
}

static int copy_table(sqlite3 *db, PGconn *c, const char *table, FILE *progress, char *err,
		      size_t errlen)
{
	char sql[128];
	sqlite3_stmt *st;
	uint64_t rows = 0;
	int r = 0, rc;

	snprintf(sql, sizeof(sql), "SELECT * FROM %s", table);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL)) {
		snprintf(err, errlen, "%s: %s", table, sqlite3_errmsg(db));
		return -EIO;
	}
	r = prepare_insert(c, st, table, err, errlen);
	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		r = copy_row(c, st, err, errlen);
		rows++;
	}
	if (r == 0 && rc != SQLITE_DONE) {
		snprintf(err, errlen, "%s: %s", table, sqlite3_errmsg(db));
		r = -EIO;
	}
	sqlite3_finalize(st);
	if (r == 0 && progress)
		fprintf(progress, "%-16s %" PRIu64 " rows\n", table, rows);
	return r;
}

int store_migrate(const char *path, const char *url, FILE *progress, char *err, size_t errlen)
{
	struct store *s;
	sqlite3 *db = NULL;
	PGconn *c = NULL;
	char sql[256];
	size_t i;
	int r;

	if (store_backend(path) != &store_sqlite_ops || store_backend(url) != &store_pg_ops) {
		snprintf(err, errlen, "copies a SQLite file into a postgresql:// URL");
		return -EINVAL;
	}
	/* opening a SQLite path that is not there would make an empty store of it */
	if (access(path, R_OK) < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	/* each at this kmemd's schema: the SQLite file migrated, PostgreSQL's tables made */
	r = store_open(path, &s, err, errlen);
	if (r == 0) {
		s->ops->close(s);
		r = store_open(url, &s, err, errlen);
	}
	if (r < 0)
		return r;
	s->ops->close(s);
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL)) {
		snprintf(err, errlen, "%s: %s", path, sqlite3_errmsg(db));
		r = -EIO;
		goto out;
	}
	c = PQconnectdb(url);
	if (PQstatus(c) != CONNECTION_OK) {
		snprintf(err, errlen, "%s", PQerrorMessage(c));
		err[strcspn(err, "\n")] = 0;
		r = -EIO;
		goto out;
	}
	/* one read snapshot of the file, one transaction in the database */
	r = exec_sqlite(db, "BEGIN", err, errlen);
	if (r == 0)
		r = pq_exec(c, "BEGIN", err, errlen);
	if (r == 0)
		r = target_empty(c, err, errlen);
	for (i = 0; r == 0 && i < ARRAY_SIZE(tables); i++)
		r = copy_table(db, c, tables[i], progress, err, errlen);
	for (i = 0; r == 0 && i < ARRAY_SIZE(identities); i++) {
		snprintf(sql, sizeof(sql),
			 "SELECT setval(pg_get_serial_sequence('%s', 'id'),"
			 " coalesce(max(id), 0) + 1, false) FROM %s",
			 identities[i], identities[i]);
		r = pq_exec(c, sql, err, errlen);
	}
	if (r == 0)
		r = pq_exec(c, "COMMIT", err, errlen);
out:
	PQfinish(c);
	sqlite3_close(db);
	return r;
}

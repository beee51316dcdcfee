// SPDX-License-Identifier: GPL-2.0
/*
 * kmemd's SQLite store, access: the audit log, the operator certificates
 * kmemd saw or revoked (daemon/operators.h), and the fleet stop.
 */
#include <stdio.h>
#include <string.h>

#include "store-sqlite.h"

enum stmt {
	ST_AUDIT,
	ST_AUDIT_ROWS,
	ST_OPERATOR_SEEN,
	ST_OPERATOR_REVOKE,
	ST_OPERATOR_REVOKE_NAME,
	ST_OPERATOR_NAMED,
	ST_OPERATOR_REVOKED,
	ST_REVOCATIONS,
	ST_OPERATORS,
	ST_FLEET_STOP_GET,
	ST_FLEET_STOP_SET,
	ST_N,
};

#define OPERATOR_ROW                                                                             \
	"SELECT fingerprint, name, role, not_after_ms, first_seen_ms, last_seen_ms, revoked_ms," \
	" revoked_by FROM operators"

static const char *const sql[ST_N] = {
	[ST_AUDIT] = "INSERT INTO audit (ts_ms, actor, action, host, detail)"
		     " VALUES (?1, ?2, ?3, ?4, ?5)",
	[ST_AUDIT_ROWS] = "SELECT id, ts_ms, actor, action, host, detail FROM audit"
			  " WHERE (?1 IS NULL OR actor = ?1) AND (?2 IS NULL OR action = ?2)"
			  " AND (?3 IS NULL OR host = ?3) AND (?4 IS NULL OR ts_ms >= ?4)"
			  " AND (?5 IS NULL OR ts_ms < ?5) AND (?6 = 0 OR id < ?6)"
			  " ORDER BY id DESC LIMIT ?7",
	[ST_OPERATOR_SEEN] = "INSERT INTO operators (fingerprint, name, role, not_after_ms,"
			     " first_seen_ms, last_seen_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?5)"
			     " ON CONFLICT (fingerprint) DO UPDATE SET name = ?2, role = ?3,"
			     " not_after_ms = ?4, last_seen_ms = ?5,"
			     " first_seen_ms = coalesce(first_seen_ms, ?5)",
	/* no row changed: it was revoked already */
	[ST_OPERATOR_REVOKE] = "INSERT INTO operators (fingerprint, name, role, not_after_ms,"
			       " revoked_ms, revoked_by) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
			       " ON CONFLICT (fingerprint) DO UPDATE SET revoked_ms = ?5,"
			       " revoked_by = ?6 WHERE revoked_ms IS NULL",
	[ST_OPERATOR_REVOKE_NAME] = "UPDATE operators SET revoked_ms = ?3, revoked_by = ?2"
				    " WHERE name = ?1 AND revoked_ms IS NULL",
	[ST_OPERATOR_NAMED] = "SELECT count(*) FROM operators WHERE name = ?1",
	[ST_OPERATOR_REVOKED] = "SELECT revoked_ms IS NOT NULL FROM operators"
				" WHERE fingerprint = ?1",
	[ST_REVOCATIONS] = "SELECT 'h', host_id FROM hosts WHERE revoked = 1"
			   " UNION ALL SELECT 'o', fingerprint FROM operators"
			   " WHERE revoked_ms IS NOT NULL",
	[ST_OPERATORS] = OPERATOR_ROW " ORDER BY name, first_seen_ms, fingerprint",
	[ST_FLEET_STOP_GET] = "SELECT stopped, since_ms, actor, reason FROM fleet_stop"
			      " WHERE name = 'fleet'",
	/* no row changed: it was so already */
	[ST_FLEET_STOP_SET] = "INSERT INTO fleet_stop VALUES ('fleet', ?1, ?2, ?3, ?4)"
			      " ON CONFLICT (name) DO UPDATE SET stopped = ?1, since_ms = ?2,"
			      " actor = ?3, reason = ?4 WHERE stopped != ?1",
};

static const bool one_row[ST_N] = {
	[ST_OPERATOR_NAMED] = true,
	[ST_OPERATOR_REVOKED] = true,
	[ST_FLEET_STOP_GET] = true,
};

const struct sq_area sq_access_area = {
	.id = SQ_ACCESS,
	.sql = sql,
	.one_row = one_row,
	.n = ST_N,
};

static sqlite3_stmt *stmt(struct store *s, enum stmt which)
{
	return sq_stmt(s, &sq_access_area, which);
}

static void bind_text_or_null(sqlite3_stmt *st, int col, const char *t)
{
	if (t)
		sqlite3_bind_text(st, col, t, -1, SQLITE_STATIC);
}

static void bind_int_or_null(sqlite3_stmt *st, int col, int64_t v)
{
	if (v != STORE_NULL)
		sqlite3_bind_int64(st, col, v);
}

int sq_audit(struct store *s, int64_t now_ms, const char *actor, const char *action,
	     const char *host, const char *detail)
{
	sqlite3_stmt *st;

	sq_write_begin(s, false);
	st = stmt(s, ST_AUDIT);
	sqlite3_bind_int64(st, 1, now_ms);
	sqlite3_bind_text(st, 2, actor, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, action, -1, SQLITE_STATIC);
	bind_text_or_null(st, 4, host);
	sqlite3_bind_text(st, 5, detail, -1, SQLITE_STATIC);
	return sq_write_end(s, false, step_done(st));
}

int sq_audit_rows(struct store *s, const struct store_audit_query *q,
		  int (*cb)(void *arg, const struct store_audit_row *row), void *arg)
{
	sqlite3_stmt *st = stmt(s, ST_AUDIT_ROWS);
	struct store_audit_row row;
	int rc, r = 0;

	bind_text_or_null(st, 1, q->actor);
	bind_text_or_null(st, 2, q->action);
	bind_text_or_null(st, 3, q->host);
	bind_int_or_null(st, 4, q->from_ms);
	bind_int_or_null(st, 5, q->to_ms);
	sqlite3_bind_int64(st, 6, q->before_id);
	sqlite3_bind_int64(st, 7, q->limit);
	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		row = (struct store_audit_row){
			.id = sqlite3_column_int64(st, 0),
			.ts_ms = sqlite3_column_int64(st, 1),
			.actor = text_or_empty(st, 2),
			.action = text_or_empty(st, 3),
			.host = text_or_null(st, 4),
			.detail = text_or_empty(st, 5),
		};
		r = cb(arg, &row);
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = -EIO;
	return r > 0 ? 0 : r;
}

static void bind_operator(sqlite3_stmt *st, const struct store_operator *o)
{
	sqlite3_bind_text(st, 1, o->fingerprint, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, o->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, o->role, -1, SQLITE_STATIC);
	bind_int_or_null(st, 4, o->not_after_ms);
}

int sq_operator_seen(struct store *s, const struct store_operator *o, int64_t now_ms)
{
	sqlite3_stmt *st;

	sq_write_begin(s, false);
	st = stmt(s, ST_OPERATOR_SEEN);
	bind_operator(st, o);
	sqlite3_bind_int64(st, 5, now_ms);
	return sq_write_end(s, false, step_done(st));
}

int sq_operator_revoke(struct store *s, const struct store_operator *o, const char *by,
		       int64_t now_ms)
{
	sqlite3_stmt *st;
	int r;

	sq_write_begin(s, false);
	st = stmt(s, ST_OPERATOR_REVOKE);
	bind_operator(st, o);
	sqlite3_bind_int64(st, 5, now_ms);
	sqlite3_bind_text(st, 6, by, -1, SQLITE_STATIC);
	r = step_done(st);
	if (r == 0)
		r = sqlite3_changes(DB(s)) > 0;
	return sq_write_end(s, false, r);
}

int sq_operator_revoke_name(struct store *s, const char *name, const char *by, int64_t now_ms,
			    uint64_t *n)
{
	sqlite3_stmt *st;
	int r;

	*n = 0;
	r = sq_write_begin(s, true);
	if (r < 0)
		return r;
	st = stmt(s, ST_OPERATOR_NAMED);
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	r = step_row(st);
	if (r == 0 && sqlite3_column_int64(st, 0) == 0)
		r = -ENOENT;
	if (r == 0) {
		st = stmt(s, ST_OPERATOR_REVOKE_NAME);
		sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, by, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, now_ms);
		r = step_done(st);
		*n = r == 0 ? (uint64_t)sqlite3_changes(DB(s)) : 0;
	}
	return sq_write_end(s, true, r);
}

int sq_operator_revoked(struct store *s, const char *fingerprint)
{
	sqlite3_stmt *st = stmt(s, ST_OPERATOR_REVOKED);
	int r;

	sqlite3_bind_text(st, 1, fingerprint, -1, SQLITE_STATIC);
	r = step_row(st);
	if (r == -ENOENT)
		return 0;
	return r < 0 ? r : sqlite3_column_int(st, 0) != 0;
}

int sq_revocations(struct store *s, int (*cb)(void *arg, char kind, const char *key), void *arg)
{
	sqlite3_stmt *st = stmt(s, ST_REVOCATIONS);
	int rc, r = 0;

	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
		r = cb(arg, text_or_empty(st, 0)[0], text_or_empty(st, 1));
	if (r == 0 && rc != SQLITE_DONE)
		r = -EIO;
	return r > 0 ? 0 : r;
}

int sq_operators(struct store *s, int (*cb)(void *arg, const struct store_operator *o), void *arg)
{
	sqlite3_stmt *st = stmt(s, ST_OPERATORS);
	struct store_operator o;
	int rc, r = 0;

	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		memset(&o, 0, sizeof(o));
		snprintf(o.fingerprint, sizeof(o.fingerprint), "%s", text_or_empty(st, 0));
		snprintf(o.name, sizeof(o.name), "%s", text_or_empty(st, 1));
		snprintf(o.role, sizeof(o.role), "%s", text_or_empty(st, 2));
		o.not_after_ms = int_or_null(st, 3);
		o.first_seen_ms = int_or_null(st, 4);
		o.last_seen_ms = int_or_null(st, 5);
		o.revoked_ms = int_or_null(st, 6);
		snprintf(o.revoked_by, sizeof(o.revoked_by), "%s", text_or_empty(st, 7));
		r = cb(arg, &o);
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = -EIO;
	return r > 0 ? 0 : r;
}

int sq_fleet_stop_get(struct store *s, struct store_fleet_stop *f)
{
	sqlite3_stmt *st = stmt(s, ST_FLEET_STOP_GET);
	int r = step_row(st);

	memset(f, 0, sizeof(*f));
	f->since_ms = STORE_NULL;
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	f->stopped = sqlite3_column_int(st, 0) != 0;
	f->since_ms = int_or_null(st, 1);
	snprintf(f->actor, sizeof(f->actor), "%s", text_or_empty(st, 2));
	snprintf(f->reason, sizeof(f->reason), "%s", text_or_empty(st, 3));
	return 0;
}

int sq_fleet_stop_set(struct store *s, const struct store_fleet_stop *f)
{
	sqlite3_stmt *st;
	int r;

	sq_write_begin(s, false);
	st = stmt(s, ST_FLEET_STOP_SET);
	sqlite3_bind_int(st, 1, f->stopped);
	sqlite3_bind_int64(st, 2, f->since_ms);
	sqlite3_bind_text(st, 3, f->actor, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, f->reason, -1, SQLITE_STATIC);
	r = step_done(st);
	if (r == 0)
		r = sqlite3_changes(DB(s)) > 0;
	return sq_write_end(s, false, r);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * kmemd's PostgreSQL store, access: the audit log, the operator
 * certificates kmemd saw or revoked (daemon/operators.h), and the fleet
 * stop. Every kmemd on the database reads the same revocations and stop.
 */
#include <stdio.h>
#include <string.h>

#include "store-pg.h"

enum stmt {
	ST_AUDIT,
	ST_AUDIT_ROWS,
	ST_OPERATOR_SEEN,
	ST_OPERATOR_REVOKE,
	ST_OPERATOR_REVOKE_NAME,
	ST_OPERATOR_REVOKED,
	ST_REVOCATIONS,
	ST_OPERATORS,
	ST_FLEET_STOP_GET,
	ST_FLEET_STOP_SET,
	ST_N,
};

static const char *const sql[ST_N] = {
	[ST_AUDIT] = "INSERT INTO audit (ts_ms, actor, action, host, detail)"
		     " VALUES ($1, $2, $3, $4, $5)",
	[ST_AUDIT_ROWS] = "SELECT id, ts_ms, actor, action, host, detail FROM audit"
			  " WHERE ($1::text IS NULL OR actor = $1)"
			  " AND ($2::text IS NULL OR action = $2)"
			  " AND ($3::text IS NULL OR host = $3)"
			  " AND ($4::bigint IS NULL OR ts_ms >= $4)"
			  " AND ($5::bigint IS NULL OR ts_ms < $5) AND ($6 = 0 OR id < $6)"
			  " ORDER BY id DESC LIMIT $7",
	[ST_OPERATOR_SEEN] = "INSERT INTO operators AS o (fingerprint, name, role, not_after_ms,"
			     " first_seen_ms, last_seen_ms) VALUES ($1, $2, $3, $4, $5, $5)"
			     " ON CONFLICT (fingerprint) DO UPDATE SET name = $2, role = $3,"
			     " not_after_ms = $4, last_seen_ms = $5,"
			     " first_seen_ms = coalesce(o.first_seen_ms, $5)",
	/* no row changed: it was revoked already */
	[ST_OPERATOR_REVOKE] = "INSERT INTO operators AS o (fingerprint, name, role, not_after_ms,"
			       " revoked_ms, revoked_by) VALUES ($1, $2, $3, $4, $5, $6)"
			       " ON CONFLICT (fingerprint) DO UPDATE SET revoked_ms = $5,"
			       " revoked_by = $6 WHERE o.revoked_ms IS NULL",
	/* how many have the name, and how many of them this revoked */
	[ST_OPERATOR_REVOKE_NAME] = "WITH done AS (UPDATE operators SET revoked_ms = $3,"
				    " revoked_by = $2 WHERE name = $1 AND revoked_ms IS NULL"
				    " RETURNING 1)"
				    " SELECT (SELECT count(*) FROM operators WHERE name = $1),"
				    " (SELECT count(*) FROM done)",
	[ST_OPERATOR_REVOKED] = "SELECT revoked_ms IS NOT NULL FROM operators"
				" WHERE fingerprint = $1",
	[ST_REVOCATIONS] = "SELECT 'h', host_id FROM hosts WHERE revoked = 1"
			   " UNION ALL SELECT 'o', fingerprint FROM operators"
			   " WHERE revoked_ms IS NOT NULL",
	[ST_OPERATORS] = "SELECT fingerprint, name, role, not_after_ms, first_seen_ms,"
			 " last_seen_ms, revoked_ms, revoked_by FROM operators"
			 " ORDER BY name, first_seen_ms NULLS FIRST, fingerprint",
	[ST_FLEET_STOP_GET] = "SELECT stopped, since_ms, actor, reason FROM fleet_stop"
			      " WHERE name = 'fleet'",
	/* no row changed: it was so already */
	[ST_FLEET_STOP_SET] = "INSERT INTO fleet_stop AS f VALUES ('fleet', $1, $2, $3, $4)"
			      " ON CONFLICT (name) DO UPDATE SET stopped = $1, since_ms = $2,"
			      " actor = $3, reason = $4 WHERE f.stopped != $1",
};

const struct pg_area pg_access_area = {
	.id = PG_ACCESS,
	.sql = sql,
	.n = ST_N,
};

static PGresult *run(struct store *s, enum stmt which, const struct pg_args *a)
{
	return pg_run(s, &pg_access_area, which, a);
}

int pg_audit(struct store *s, int64_t now_ms, const char *actor, const char *action,
	     const char *host, const char *detail)
{
	struct pg_args a = { 0 };

	pg_int(&a, now_ms);
	pg_text(&a, actor);
	pg_text(&a, action);
	pg_text(&a, host);
	pg_text(&a, detail);
	return pg_do(s, &pg_access_area, ST_AUDIT, &a);
}

int pg_audit_rows(struct store *s, const struct store_audit_query *q,
		  int (*cb)(void *arg, const struct store_audit_row *row), void *arg)
{
	struct pg_args a = { 0 };
	PGresult *res;
	int i, n, r = 0;

	pg_text(&a, q->actor);
	pg_text(&a, q->action);
	pg_text(&a, q->host);
	pg_int(&a, q->from_ms);
	pg_int(&a, q->to_ms);
	pg_int(&a, q->before_id);
	pg_int(&a, q->limit);
	res = run(s, ST_AUDIT_ROWS, &a);
	if (!res)
		return -EIO;
	n = PQntuples(res);
	for (i = 0; r == 0 && i < n; i++)
		r = cb(arg, &(struct store_audit_row){
				    .id = pg_col_int(res, i, 0),
				    .ts_ms = pg_col_int(res, i, 1),
				    .actor = pg_col_or_empty(res, i, 2),
				    .action = pg_col_or_empty(res, i, 3),
				    .host = pg_col(res, i, 4),
				    .detail = pg_col_or_empty(res, i, 5),
			    });
	PQclear(res);
	return r > 0 ? 0 : r;
}

static void operator_args(struct pg_args *a, const struct store_operator *o)
{
	pg_text(a, o->fingerprint);
	pg_text(a, o->name);
	pg_text(a, o->role);
	pg_int(a, o->not_after_ms);
}

int pg_operator_seen(struct store *s, const struct store_operator *o, int64_t now_ms)
{
	struct pg_args a = { 0 };

	operator_args(&a, o);
	pg_int(&a, now_ms);
	return pg_do(s, &pg_access_area, ST_OPERATOR_SEEN, &a);
}

int pg_operator_revoke(struct store *s, const struct store_operator *o, const char *by,
		       int64_t now_ms)
{
	struct pg_args a = { 0 };
	uint64_t n;
	int r;

	operator_args(&a, o);
	pg_int(&a, now_ms);
	pg_text(&a, by);
	r = pg_changed(s, &pg_access_area, ST_OPERATOR_REVOKE, &a, &n);
	return r < 0 ? r : n > 0;
}

int pg_operator_revoke_name(struct store *s, const char *name, const char *by, int64_t now_ms,
			    uint64_t *n)
{
	struct pg_args a = { 0 };
	PGresult *res;
	int r;

	*n = 0;
	pg_text(&a, name);
	pg_text(&a, by);
	pg_int(&a, now_ms);
	res = run(s, ST_OPERATOR_REVOKE_NAME, &a);
	if (!res)
		return -EIO;
	r = pg_col_int(res, 0, 0) > 0 ? 0 : -ENOENT;
	*n = (uint64_t)pg_col_int(res, 0, 1);
	PQclear(res);
	return r;
}

int pg_operator_revoked(struct store *s, const char *fingerprint)
{
	struct pg_args a = { 0 };
	PGresult *res;
	int r;

	pg_text(&a, fingerprint);
	res = run(s, ST_OPERATOR_REVOKED, &a);
	if (!res)
		return -EIO;
	r = PQntuples(res) && pg_col_bool(res, 0, 0);
	PQclear(res);
	return r;
}

int pg_revocations(struct store *s, int (*cb)(void *arg, char kind, const char *key), void *arg)
{
	PGresult *res = run(s, ST_REVOCATIONS, NULL);
	int i, n, r = 0;

	if (!res)
		return -EIO;
	n = PQntuples(res);
	for (i = 0; r == 0 && i < n; i++)
		r = cb(arg, pg_col_or_empty(res, i, 0)[0], pg_col_or_empty(res, i, 1));
	PQclear(res);
	return r > 0 ? 0 : r;
}

int pg_operators(struct store *s, int (*cb)(void *arg, const struct store_operator *o), void *arg)
{
	PGresult *res = run(s, ST_OPERATORS, NULL);
	struct store_operator o;
	int i, n, r = 0;

	if (!res)
		return -EIO;
	n = PQntuples(res);
	for (i = 0; r == 0 && i < n; i++) {
		memset(&o, 0, sizeof(o));
		snprintf(o.fingerprint, sizeof(o.fingerprint), "%s", pg_col_or_empty(res, i, 0));
		snprintf(o.name, sizeof(o.name), "%s", pg_col_or_empty(res, i, 1));
		snprintf(o.role, sizeof(o.role), "%s", pg_col_or_empty(res, i, 2));
		o.not_after_ms = pg_col_int(res, i, 3);
		o.first_seen_ms = pg_col_int(res, i, 4);
		o.last_seen_ms = pg_col_int(res, i, 5);
		o.revoked_ms = pg_col_int(res, i, 6);
		snprintf(o.revoked_by, sizeof(o.revoked_by), "%s", pg_col_or_empty(res, i, 7));
		r = cb(arg, &o);
	}
	PQclear(res);
	return r > 0 ? 0 : r;
}

int pg_fleet_stop_get(struct store *s, struct store_fleet_stop *f)
{
	PGresult *res = run(s, ST_FLEET_STOP_GET, NULL);

	memset(f, 0, sizeof(*f));
	f->since_ms = STORE_NULL;
	if (!res)
		return -EIO;
	if (PQntuples(res)) {
		f->stopped = pg_col_int(res, 0, 0) != 0;
		f->since_ms = pg_col_int(res, 0, 1);
		snprintf(f->actor, sizeof(f->actor), "%s", pg_col_or_empty(res, 0, 2));
		snprintf(f->reason, sizeof(f->reason), "%s", pg_col_or_empty(res, 0, 3));
	}
	PQclear(res);
	return 0;
}

int pg_fleet_stop_set(struct store *s, const struct store_fleet_stop *f)
{
	struct pg_args a = { 0 };
	uint64_t n;
	int r;

	pg_int(&a, f->stopped);
	pg_int(&a, f->since_ms);
	pg_text(&a, f->actor);
	pg_text(&a, f->reason);
	r = pg_changed(s, &pg_access_area, ST_FLEET_STOP_SET, &a, &n);
	return r < 0 ? r : n > 0;
}

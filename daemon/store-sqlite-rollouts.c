// SPDX-License-Identifier: GPL-2.0
/*
 * kmemd's SQLite store, rollouts: their documents, states, members and verdicts.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "store-sqlite.h"

enum stmt {
	ST_ROLLOUT_ADD,
	ST_ROLLOUT_GET,
	ST_ROLLOUTS,
	ST_ARCHIVE,
	ST_WAVE_COUNTS,
	ST_ROLLOUT_UPDATE,
	ST_MEMBER_ADD,
	ST_MEMBERS,
	ST_ROLLOUTS_STARTED,
	ST_CHANGES,
	ST_ROLLOUTS_ACTIVE,
	ST_ROLLOUT_GAUGES,
	ST_VERDICT_ADD,
	ST_VERDICT_LAST,
	ST_VERDICTS,
	ST_LEASE,
	ST_LEASE_HELD,
	ST_N,
};

static const char *const sql[ST_N] = {
	[ST_ROLLOUT_ADD] = "INSERT INTO rollouts (name, spec, state, created_ms, updated_ms)"
			   " VALUES (?1, ?2, ?4, ?3, ?3)",
	[ST_ROLLOUT_GET] = "SELECT spec, state, wave, wave_started_ms, reason, created_ms,"
			   " updated_ms, evidence FROM rollouts WHERE name = ?1",
	[ST_ROLLOUTS] = "SELECT name, spec, state, wave, wave_started_ms, reason, created_ms,"
			" updated_ms, archived_ms FROM rollouts ORDER BY created_ms DESC, name",
	[ST_ARCHIVE] = "UPDATE rollouts SET archived_ms = coalesce(archived_ms, ?2) WHERE name = ?1"
		       " AND state IN ('done', 'rolled-back', 'aborted')",
	[ST_WAVE_COUNTS] = "SELECT count(*) FROM rollout_hosts WHERE rollout = ?1"
			   " GROUP BY wave ORDER BY wave",
	[ST_ROLLOUT_UPDATE] = "UPDATE rollouts SET updated_ms = CASE WHEN state = ?2 AND wave = ?3"
			      " AND wave_started_ms IS ?4 AND reason IS ?5 AND ?8"
			      " THEN updated_ms ELSE ?6 END, state = ?2, wave = ?3,"
			      " wave_started_ms = ?4, reason = ?5,"
			      " evidence = coalesce(?7, evidence) WHERE name = ?1 AND (NOT ?9"
			      " OR (state = ?10 AND wave = ?11 AND wave_started_ms IS ?12))",
	[ST_MEMBER_ADD] = "INSERT INTO rollout_hosts VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
	[ST_MEMBERS] = "SELECT m.host_id, m.stratum, m.position, m.wave, m.prev_policy,"
		       " m.prev_version, h.host_id IS NOT NULL, h.revoked, h.policy_name,"
		       " h.policy_version, h.last_seen_ms FROM rollout_hosts m"
		       " LEFT JOIN hosts h ON h.host_id = m.host_id WHERE m.rollout = ?1"
		       " ORDER BY m.wave, m.position, m.host_id",
	[ST_ROLLOUTS_STARTED] =
		"SELECT name, spec, state, wave, wave_started_ms, reason,"
		" created_ms, updated_ms FROM rollouts WHERE state != ?1 ORDER BY created_ms DESC, name",
	[ST_CHANGES] = "SELECT (SELECT count(*) FROM assignments),"
		       " (SELECT coalesce(max(id), 0) FROM assignments),"
		       " (SELECT count(*) FROM rollouts),"
		       " (SELECT coalesce(sum(updated_ms), 0) FROM rollouts)",
	[ST_LEASE] = "INSERT INTO leases VALUES (?1, ?2, ?3 + ?4) ON CONFLICT (name) DO UPDATE"
		     " SET holder = ?2, expires_ms = ?3 + ?4"
		     " WHERE leases.holder = ?2 OR leases.expires_ms <= ?3",
	[ST_LEASE_HELD] = "UPDATE leases SET expires_ms = expires_ms WHERE name = 'engine'"
			  " AND holder = ?1",
	[ST_ROLLOUTS_ACTIVE] = "SELECT name FROM rollouts WHERE state IN"
			       " (?1, ?2, ?3, ?4)"
			       " ORDER BY created_ms, name",
	[ST_ROLLOUT_GAUGES] =
		"SELECT r.name, json_extract(r.spec, '$.policy') || '@' ||"
		" json_extract(r.spec, '$.version'), r.state, r.wave,"
		" r.spec,"
		" (SELECT count(*) FROM rollout_hosts m WHERE m.rollout = r.name),"
		" (SELECT count(*) FROM rollout_hosts m WHERE m.rollout = r.name"
		" AND m.wave <= r.wave),"
		" (SELECT count(*) FROM rollout_hosts m JOIN hosts h ON h.host_id = m.host_id"
		" WHERE m.rollout = r.name AND h.policy_name = json_extract(r.spec, '$.policy')"
		" AND h.policy_version = json_extract(r.spec, '$.version')),"
		" v.detail IS NOT NULL, json_extract(v.detail, '$.canary.events'),"
		" json_extract(v.detail, '$.canary.hours'), json_extract(v.detail, '$.baseline.events'),"
		" json_extract(v.detail, '$.baseline.hours'),"
		" coalesce(json_extract(v.detail, '$.lockup_p'), -1),"
		" (SELECT count(*) FROM verdicts x WHERE x.rollout = r.name AND x.verdict = 'pass'),"
		" (SELECT count(*) FROM verdicts x WHERE x.rollout = r.name AND x.verdict = 'fail'),"
		" (SELECT count(*) FROM verdicts x WHERE x.rollout = r.name"
		" AND x.verdict = 'inconclusive'),"
		" json_extract(v.detail, '$.evidence.lockups.mu0'),"
		" json_extract(v.detail, '$.evidence.lockups.mu_needed'),"
		" json_extract(v.detail, '$.evidence.lockups.detectable_ratio'),"
		" json_extract(v.detail, '$.evidence.lockups.lr')"
		" FROM rollouts r LEFT JOIN verdicts v ON v.id ="
		" (SELECT max(id) FROM verdicts WHERE rollout = r.name)"
		" WHERE r.state NOT IN (?2, ?3, ?4) OR r.updated_ms > ?1"
		" ORDER BY r.created_ms, r.name",
	[ST_VERDICT_ADD] =
		"INSERT INTO verdicts (rollout, wave, ts_ms, verdict, gate, reason, detail)"
		" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
	[ST_VERDICT_LAST] = "SELECT wave, verdict, gate FROM verdicts WHERE rollout = ?1"
			    " ORDER BY id DESC LIMIT 1",
	[ST_VERDICTS] = "SELECT wave, ts_ms, verdict, gate, reason, detail FROM verdicts"
			" WHERE rollout = ?1 ORDER BY id",
};

/* stepped for one row and left there: sq_stmt() resets them */
static const bool one_row[ST_N] = {
	[ST_ROLLOUT_GET] = true,
	[ST_CHANGES] = true,
	[ST_VERDICT_LAST] = true,
};

const struct sq_area sq_rollouts_area = {
	.id = SQ_ROLLOUTS,
	.sql = sql,
	.one_row = one_row,
	.n = ST_N,
};

static sqlite3_stmt *stmt(struct store *s, enum stmt which)
{
	return sq_stmt(s, &sq_rollouts_area, which);
}

int sq_rollout_add(struct store *s, const char *name, const char *spec_json, int64_t now_ms)
{
	sqlite3_stmt *st;
	int rc;

	sq_write_begin(s, false);
	st = stmt(s, ST_ROLLOUT_ADD);
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, spec_json, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, now_ms);
	sqlite3_bind_text(st, 4, rollout_state_name(ROLLOUT_PENDING), -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	return sq_write_end(s, false,
			    rc == SQLITE_CONSTRAINT ? -EEXIST :
			    rc == SQLITE_DONE	    ? 0 :
						      -EIO);
}

/*
 * The state, wave, wave start, reason, created and updated columns from col
 * on; -EINVAL: a state kmemd does not know.
 */
static int column_rollout(sqlite3_stmt *st, int col, struct store_rollout *r)
{
	int state = rollout_state_parse(text_or_empty(st, col));

	if (state < 0)
		return state;
	r->state = (enum rollout_state)state;
	r->wave = (unsigned)sqlite3_column_int(st, col + 1);
	r->wave_started_ms = int_or_null(st, col + 2);
	snprintf(r->reason, sizeof(r->reason), "%s", text_or_empty(st, col + 3));
	r->has_reason = sqlite3_column_type(st, col + 3) != SQLITE_NULL;
	r->created_ms = int_or_null(st, col + 4);
	r->updated_ms = int_or_null(st, col + 5);
	return 0;
}

/* A row of name, spec, then column_rollout()'s; the spec is lent until the next step. */
static int row_rollout(sqlite3_stmt *st, struct store_rollout *r)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s", text_or_empty(st, 0));
	r->spec_json = (char *)text_or_empty(st, 1);
	return column_rollout(st, 2, r);
}

int sq_rollout_get(struct store *s, const char *name, struct store_rollout *r)
{
	sqlite3_stmt *st = stmt(s, ST_ROLLOUT_GET);
	int rc;

	memset(r, 0, sizeof(*r));
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	rc = step_row(st);
	if (rc < 0)
		return rc;
	snprintf(r->name, sizeof(r->name), "%s", name);
	if (column_rollout(st, 1, r) < 0)
		return -EIO;
	r->as_read.read = true;
	r->as_read.state = r->state;
	r->as_read.wave = r->wave;
	r->as_read.wave_started_ms = r->wave_started_ms;
	r->spec_json = strdup(text_or_empty(st, 0));
	if (sqlite3_column_type(st, 7) != SQLITE_NULL)
		r->evidence_json = strdup(text_or_empty(st, 7));
	if (!r->spec_json || (sqlite3_column_type(st, 7) != SQLITE_NULL && !r->evidence_json)) {
		store_rollout_clear(r);
		return -ENOMEM;
	}
	return 0;
}

int sq_rollouts_started(struct store *s, int (*cb)(void *arg, const struct store_rollout *r),
			void *arg)
{
	sqlite3_stmt *st = stmt(s, ST_ROLLOUTS_STARTED);
	struct store_rollout r;
	int rc, ret = 0;

	sqlite3_bind_text(st, 1, rollout_state_name(ROLLOUT_PENDING), -1, SQLITE_STATIC);
	while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (row_rollout(st, &r) < 0)
			return -EIO;
		ret = cb(arg, &r);
	}
	if (ret)
		return ret;
	return rc == SQLITE_DONE ? 0 : -EIO;
}

int sq_changes(struct store *s, struct store_changes *c)
{
	sqlite3_stmt *st = stmt(s, ST_CHANGES);

	if (sqlite3_step(st) != SQLITE_ROW)
		return -EIO;
	c->assignments = sqlite3_column_int64(st, 0);
	c->assignment_last = sqlite3_column_int64(st, 1);
	c->rollouts = sqlite3_column_int64(st, 2);
	c->rollouts_updated = sqlite3_column_int64(st, 3);
	return 0;
}

int sq_rollouts(struct store *s,
		int (*cb)(void *arg, const struct store_rollout *r, const uint64_t *members,
			  size_t n),
		void *arg)
{
	sqlite3_stmt *st = stmt(s, ST_ROLLOUTS), *wc;
	/* a plan's waves and the release of its holdback */
	uint64_t members[ROLLOUT_MAX_WAVES + 1];
	struct store_rollout r;
	size_t n;
	int rc, wrc, ret = 0;

	while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (row_rollout(st, &r) < 0)
			return -EIO;
		r.archived_ms = int_or_null(st, 8);
		wc = stmt(s, ST_WAVE_COUNTS);
		sqlite3_bind_text(wc, 1, r.name, -1, SQLITE_STATIC);
		for (n = 0; (wrc = sqlite3_step(wc)) == SQLITE_ROW && n < ARRAY_SIZE(members); n++)
			members[n] = (uint64_t)sqlite3_column_int64(wc, 0);
		if (wrc != SQLITE_DONE)
			return -EIO;
		ret = cb(arg, &r, members, n);
	}
	if (ret)
		return ret;
	return rc == SQLITE_DONE ? 0 : -EIO;
}

/* States by name from first on, as rollout.c names them. */
static void bind_states(sqlite3_stmt *st, int first, const enum rollout_state *states, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sqlite3_bind_text(st, first + (int)i, rollout_state_name(states[i]), -1,
				  SQLITE_STATIC);
}

int sq_rollouts_active(struct store *s, store_name_cb cb, void *arg)
{
	static const enum rollout_state moving[] = { ROLLOUT_RUNNING, ROLLOUT_HOLDING,
						     ROLLOUT_PAUSED, ROLLOUT_ROLLING_BACK };
	sqlite3_stmt *st = stmt(s, ST_ROLLOUTS_ACTIVE);
	int r = 0, rc;

	bind_states(st, 1, moving, ARRAY_SIZE(moving));
	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
		r = cb(arg, text_or_empty(st, 0));
	if (r)
		return r;
	return rc == SQLITE_DONE ? 0 : -EIO;
}

/* A column that is NULL when a verdict's JSON lacks the number, or says null (infinite). */
static double real_or_nan(sqlite3_stmt *st, int col)
{
	return sqlite3_column_type(st, col) == SQLITE_NULL ? NAN : sqlite3_column_double(st, col);
}

int sq_rollout_gauges(struct store *s, int64_t since_ms,
		      int (*cb)(void *arg, const struct store_rollout_gauges *g), void *arg)
{
	static const enum rollout_state finished[] = { ROLLOUT_DONE, ROLLOUT_ROLLED_BACK,
						       ROLLOUT_ABORTED };
	sqlite3_stmt *st = stmt(s, ST_ROLLOUT_GAUGES);
	struct store_rollout_gauges g;
	int rc, r = 0, state;

	sqlite3_bind_int64(st, 1, since_ms);
	bind_states(st, 2, finished, ARRAY_SIZE(finished));
	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		state = rollout_state_parse(text_or_empty(st, 2));
		if (state < 0)
			return -EIO;
		g = (struct store_rollout_gauges){
			.name = text_or_empty(st, 0),
			.policy = text_or_empty(st, 1),
			.state = (enum rollout_state)state,
			.wave = (unsigned)sqlite3_column_int(st, 3),
			.spec_json = text_or_empty(st, 4),
			.members = (uint64_t)sqlite3_column_int64(st, 5),
			.reached = (uint64_t)sqlite3_column_int64(st, 6),
			.running = (uint64_t)sqlite3_column_int64(st, 7),
			.judged = sqlite3_column_int(st, 8),
			.canary_lockups = (uint64_t)sqlite3_column_int64(st, 9),
			.canary_hours = sqlite3_column_double(st, 10),
			.baseline_lockups = (uint64_t)sqlite3_column_int64(st, 11),
			.baseline_hours = sqlite3_column_double(st, 12),
			.lockup_p = sqlite3_column_double(st, 13),
			.verdicts = { (uint64_t)sqlite3_column_int64(st, 14),
				      (uint64_t)sqlite3_column_int64(st, 15),
				      (uint64_t)sqlite3_column_int64(st, 16) },
			.expected_lockups = real_or_nan(st, 17),
			.needed_lockups = real_or_nan(st, 18),
			.detectable_ratio = real_or_nan(st, 19),
			.sequential_lr = real_or_nan(st, 20),
		};
		r = cb(arg, &g);
	}
	if (r)
		return r;
	return rc == SQLITE_DONE ? 0 : -EIO;
}

/* A row that changes only in its evidence keeps its updated_ms: hosts' policies did not change. */
/* A time, or NULL for STORE_NULL. */
static void bind_ms(sqlite3_stmt *st, int i, int64_t ms)
{
	if (ms == STORE_NULL)
		sqlite3_bind_null(st, i);
	else
		sqlite3_bind_int64(st, i, ms);
}

static int update(struct store *s, const struct store_rollout *r, bool verdict, int64_t now_ms)
{
	sqlite3_stmt *st = stmt(s, ST_ROLLOUT_UPDATE);

	sqlite3_bind_text(st, 1, r->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, rollout_state_name(r->state), -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 3, (int)r->wave);
	bind_ms(st, 4, r->wave_started_ms);
	sqlite3_bind_text(st, 5, r->reason, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 6, now_ms);
	if (r->evidence_json)
		sqlite3_bind_text(st, 7, r->evidence_json, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, 7);
	sqlite3_bind_int(st, 8, !verdict && r->evidence_json);
	sqlite3_bind_int(st, 9, r->as_read.read);
	sqlite3_bind_text(st, 10, rollout_state_name(r->as_read.state), -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 11, (int)r->as_read.wave);
	bind_ms(st, 12, r->as_read.wave_started_ms);
	if (step_done(st) < 0)
		return -EIO;
	if (sqlite3_changes(DB(s)))
		return 0;
	return r->as_read.read ? -ESTALE : -ENOENT;
}

static int verdict_add(struct store *s, const char *rollout, const struct store_verdict *v)
{
	sqlite3_stmt *st = stmt(s, ST_VERDICT_ADD);

	sqlite3_bind_text(st, 1, rollout, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, (int)v->wave);
	sqlite3_bind_int64(st, 3, v->ts_ms);
	sqlite3_bind_text(st, 4, v->verdict, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, v->gate, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, v->reason, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 7, v->detail_json, -1, SQLITE_STATIC);
	return step_done(st);
}

/* In a write transaction: -ENOLCK unless holder holds the engine's lease. */
static int lease_held(struct store *s, const char *holder)
{
	sqlite3_stmt *st = stmt(s, ST_LEASE_HELD);
	int r;

	sqlite3_bind_text(st, 1, holder, -1, SQLITE_STATIC);
	r = step_done(st);
	if (r == 0 && !sqlite3_changes(DB(s)))
		r = -ENOLCK;
	return r;
}

int sq_rollout_update(struct store *s, struct store_rollout *r, const struct store_verdict *v,
		      int64_t now_ms, const char *engine)
{
	int ret = sq_write_begin(s, true);

	if (ret < 0)
		return ret;
	ret = engine ? lease_held(s, engine) : 0;
	if (ret == 0)
		ret = update(s, r, v != NULL, now_ms);
	if (ret == 0 && v)
		ret = verdict_add(s, r->name, v);
	ret = sq_write_end(s, true, ret);
	if (ret == 0 && r->as_read.read) {
		r->as_read.state = r->state;
		r->as_read.wave = r->wave;
		r->as_read.wave_started_ms = r->wave_started_ms;
	}
	return ret;
}

int sq_verdict_last(struct store *s, const char *rollout, unsigned *wave, char verdict[16],
		    char gate[32])
{
	sqlite3_stmt *st = stmt(s, ST_VERDICT_LAST);
	int rc;

	sqlite3_bind_text(st, 1, rollout, -1, SQLITE_STATIC);
	rc = step_row(st);
	if (rc < 0)
		return rc;
	*wave = (unsigned)sqlite3_column_int(st, 0);
	snprintf(verdict, 16, "%s", text_or_empty(st, 1));
	snprintf(gate, 32, "%s", text_or_empty(st, 2));
	return 0;
}

int sq_verdicts(struct store *s, const char *rollout,
		int (*cb)(void *arg, const struct store_verdict *v), void *arg)
{
	sqlite3_stmt *st = stmt(s, ST_VERDICTS);
	struct store_verdict v;
	int r = 0, rc;

	sqlite3_bind_text(st, 1, rollout, -1, SQLITE_STATIC);
	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		v = (struct store_verdict){
			.wave = (unsigned)sqlite3_column_int(st, 0),
			.ts_ms = sqlite3_column_int64(st, 1),
			.verdict = text_or_null(st, 2),
			.gate = text_or_null(st, 3),
			.reason = text_or_null(st, 4),
			.detail_json = text_or_null(st, 5),
		};
		r = cb(arg, &v);
	}
	if (r)
		return r;
	return rc == SQLITE_DONE ? 0 : -EIO;
}

int sq_rollout_start(struct store *s, const struct store_rollout *ro, const struct store_member *m,
		     size_t n, int64_t now_ms)
{
	sqlite3_stmt *st;
	size_t i;
	int r = sq_write_begin(s, true);

	if (r < 0)
		return r;
	for (i = 0; r == 0 && i < n; i++) {
		st = stmt(s, ST_MEMBER_ADD);
		sqlite3_bind_text(st, 1, ro->name, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, m[i].host_id, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, m[i].stratum, -1, SQLITE_STATIC);
		sqlite3_bind_double(st, 4, m[i].position);
		sqlite3_bind_int(st, 5, (int)m[i].wave);
		if (m[i].prev_policy) {
			sqlite3_bind_text(st, 6, m[i].prev_policy, -1, SQLITE_STATIC);
			sqlite3_bind_int64(st, 7, (sqlite3_int64)m[i].prev_version);
		}
		r = step_done(st);
	}
	if (r == 0)
		r = update(s, ro, true, now_ms);
	return sq_write_end(s, true, r);
}

int sq_members(struct store *s, const char *rollout,
	       int (*cb)(void *arg, const struct store_member *m), void *arg)
{
	sqlite3_stmt *st = stmt(s, ST_MEMBERS);
	struct store_member m;
	int rc, r = 0;

	sqlite3_bind_text(st, 1, rollout, -1, SQLITE_STATIC);
	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		m.host_id = text_or_empty(st, 0);
		m.stratum = text_or_empty(st, 1);
		m.position = sqlite3_column_double(st, 2);
		m.wave = (unsigned)sqlite3_column_int(st, 3);
		m.prev_policy = sqlite3_column_text(st, 4) ? text_or_empty(st, 4) : NULL;
		m.prev_version = (uint64_t)sqlite3_column_int64(st, 5);
		m.host = sqlite3_column_int(st, 6) != 0;
		m.revoked = sqlite3_column_int(st, 7) == 1;
		m.policy = text_or_null(st, 8);
		m.version = int_or_null(st, 9);
		m.last_seen_ms = int_or_null(st, 10);
		r = cb(arg, &m);
	}
	if (r)
		return r;
	return rc == SQLITE_DONE ? 0 : -EIO;
}

int sq_lease(struct store *s, const char *name, const char *holder, int64_t now_ms, int64_t ttl_ms)
{
	sqlite3_stmt *st;
	int r = sq_write_begin(s, false);

	if (r < 0)
		return r;
	st = stmt(s, ST_LEASE);
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, holder, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, now_ms);
	sqlite3_bind_int64(st, 4, ttl_ms);
	r = step_done(st);
	if (r == 0)
		r = sqlite3_changes(DB(s)) > 0;
	return sq_write_end(s, false, r);
}

int sq_rollout_archive(struct store *s, const char *name, int64_t now_ms)
{
	struct store_rollout r;
	sqlite3_stmt *st;
	int ret;

	sq_write_begin(s, false);
	st = stmt(s, ST_ARCHIVE);
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, now_ms);
	ret = step_done(st);
	if (ret == 0 && !sqlite3_changes(DB(s)))
		ret = -EBUSY;
	ret = sq_write_end(s, false, ret);
	/* nothing archived: no such rollout, or one not finished */
	if (ret == -EBUSY && sq_rollout_get(s, name, &r) == -ENOENT)
		return -ENOENT;
	if (ret == -EBUSY)
		store_rollout_clear(&r);
	return ret;
}

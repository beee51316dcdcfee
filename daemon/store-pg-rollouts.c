// SPDX-License-Identifier: GPL-2.0
/*
 * kmemd's PostgreSQL store, rollouts: their documents, states, members and
 * verdicts. Several kmemd may move one rollout: every change of its state
 * is a compare-and-set in one UPDATE, which PostgreSQL re-checks against
 * the row a concurrent writer left.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "store-pg.h"

enum stmt {
	ST_ROLLOUT_ADD,
	ST_ROLLOUT_GET,
	ST_ROLLOUTS,
	ST_ARCHIVE,
	ST_ROLLOUT_UPDATE,
	ST_MEMBERS_ADD,
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
	/* a name taken is no error: one that aborted a batch's transaction would undo the batch */
	[ST_ROLLOUT_ADD] = "INSERT INTO rollouts (name, spec, state, created_ms, updated_ms)"
			   " VALUES ($1, $2, $4, $3, $3) ON CONFLICT (name) DO NOTHING",
	[ST_ROLLOUT_GET] = "SELECT spec, state, wave, wave_started_ms, reason, created_ms,"
			   " updated_ms, evidence FROM rollouts WHERE name = $1",
	/* the member count of each wave that has members, in wave order: "3,40" */
	[ST_ROLLOUTS] = "SELECT name, spec, state, wave, wave_started_ms, reason, created_ms,"
			" updated_ms, (SELECT string_agg(w.n::text, ',' ORDER BY w.wave)"
			" FROM (SELECT wave, count(*) AS n FROM rollout_hosts m"
			" WHERE m.rollout = r.name GROUP BY wave) w), archived_ms"
			" FROM rollouts r ORDER BY created_ms DESC, name",
	[ST_ARCHIVE] = "UPDATE rollouts SET archived_ms = coalesce(archived_ms, $2) WHERE name = $1"
		       " AND state IN ('done', 'rolled-back', 'aborted')",
	[ST_ROLLOUT_UPDATE] =
		"UPDATE rollouts SET updated_ms = CASE WHEN state = $2 AND wave = $3"
		" AND wave_started_ms IS NOT DISTINCT FROM $4::bigint"
		" AND reason IS NOT DISTINCT FROM $5::text AND $8::boolean"
		" THEN updated_ms ELSE $6::bigint END, state = $2, wave = $3,"
		" wave_started_ms = $4::bigint, reason = $5::text,"
		" evidence = coalesce($7::text, evidence) WHERE name = $1 AND (NOT $9::boolean"
		" OR (state = $10 AND wave = $11 AND wave_started_ms IS NOT DISTINCT FROM $12::bigint))",
	/* every member in one statement, from arrays of their columns */
	[ST_MEMBERS_ADD] =
		"INSERT INTO rollout_hosts (rollout, host_id, stratum, position, wave,"
		" prev_policy, prev_version) SELECT $1::text, u.* FROM unnest($2::text[],"
		" $3::text[], $4::float8[], $5::integer[], $6::text[], $7::bigint[]) u",
	[ST_MEMBERS] = "SELECT m.host_id, m.stratum, m.position, m.wave, m.prev_policy,"
		       " m.prev_version, h.host_id IS NOT NULL, h.revoked, h.policy_name,"
		       " h.policy_version, h.last_seen_ms FROM rollout_hosts m"
		       " LEFT JOIN hosts h ON h.host_id = m.host_id WHERE m.rollout = $1"
		       " ORDER BY m.wave, m.position, m.host_id",
	[ST_ROLLOUTS_STARTED] =
		"SELECT name, spec, state, wave, wave_started_ms, reason,"
		" created_ms, updated_ms FROM rollouts WHERE state != $1 ORDER BY created_ms DESC, name",
	[ST_CHANGES] = "SELECT (SELECT count(*) FROM assignments),"
		       " (SELECT coalesce(max(id), 0) FROM assignments),"
		       " (SELECT count(*) FROM rollouts),"
		       " (SELECT coalesce(sum(updated_ms), 0) FROM rollouts)",
	[ST_ROLLOUTS_ACTIVE] = "SELECT name FROM rollouts WHERE state IN ($1, $2, $3, $4)"
			       " ORDER BY created_ms, name",
	/*
	 * Each document and last verdict parsed once per rollout (a CTE kept
	 * whole, a LIMIT), not once per member counted. A verdict's numbers
	 * come as text: one that is not a number reads as 0, as in SQLite,
	 * rather than failing the query.
	 */
	[ST_ROLLOUT_GAUGES] =
		"WITH r AS MATERIALIZED (SELECT name, spec, state, wave, created_ms,"
		" spec::jsonb ->> 'policy' AS policy, spec::jsonb -> 'version' AS version"
		" FROM rollouts WHERE state NOT IN ($2, $3, $4) OR updated_ms > $1)"
		" SELECT r.name, r.policy || '@' || (r.version #>> '{}'), r.state, r.wave, r.spec,"
		" c.members, c.reached,"
		" (SELECT count(*) FROM rollout_hosts m JOIN hosts h ON h.host_id = m.host_id"
		" WHERE m.rollout = r.name AND h.policy_name = r.policy"
		" AND to_jsonb(h.policy_version) = r.version),"
		" v.d IS NOT NULL, v.d #>> '{canary,events}', v.d #>> '{canary,hours}',"
		" v.d #>> '{baseline,events}', v.d #>> '{baseline,hours}',"
		" coalesce(v.d ->> 'lockup_p', '-1'), x.pass, x.fail, x.inconclusive,"
		" v.d #>> '{evidence,lockups,mu0}', v.d #>> '{evidence,lockups,mu_needed}',"
		" v.d #>> '{evidence,lockups,detectable_ratio}', v.d #>> '{evidence,lockups,lr}'"
		" FROM r CROSS JOIN LATERAL (SELECT count(*) AS members,"
		" count(*) FILTER (WHERE m.wave <= r.wave) AS reached FROM rollout_hosts m"
		" WHERE m.rollout = r.name) c"
		" CROSS JOIN LATERAL (SELECT count(*) FILTER (WHERE verdict = 'pass') AS pass,"
		" count(*) FILTER (WHERE verdict = 'fail') AS fail,"
		" count(*) FILTER (WHERE verdict = 'inconclusive') AS inconclusive"
		" FROM verdicts WHERE rollout = r.name) x"
		" LEFT JOIN LATERAL (SELECT detail::jsonb AS d FROM verdicts WHERE rollout = r.name"
		" ORDER BY id DESC LIMIT 1) v ON true ORDER BY r.created_ms, r.name",
	[ST_VERDICT_ADD] =
		"INSERT INTO verdicts (rollout, wave, ts_ms, verdict, gate, reason, detail)"
		" VALUES ($1, $2, $3, $4, $5, $6, $7)",
	[ST_VERDICT_LAST] = "SELECT wave, verdict, gate FROM verdicts WHERE rollout = $1"
			    " ORDER BY id DESC LIMIT 1",
	[ST_VERDICTS] = "SELECT wave, ts_ms, verdict, gate, reason, detail FROM verdicts"
			" WHERE rollout = $1 ORDER BY id",
	/* one statement: two kmemd taking it at once, one of them changes the row */
	[ST_LEASE] = "INSERT INTO leases VALUES ($1, $2, $3::bigint + $4::bigint)"
		     " ON CONFLICT (name) DO UPDATE SET holder = excluded.holder,"
		     " expires_ms = excluded.expires_ms"
		     " WHERE leases.holder = excluded.holder OR leases.expires_ms <= $3::bigint",
	/* the row locked to the transaction's end: no kmemd takes the lease meanwhile */
	[ST_LEASE_HELD] = "UPDATE leases SET expires_ms = expires_ms WHERE name = 'engine'"
			  " AND holder = $1",
};

const struct pg_area pg_rollouts_area = {
	.id = PG_ROLLOUTS,
	.sql = sql,
	.n = ST_N,
};

static PGresult *run(struct store *s, enum stmt which, const struct pg_args *a)
{
	return pg_run(s, &pg_rollouts_area, which, a);
}

/* A column SQLite's backend reads as 0 when it is NULL. */
static int64_t col_int0(const PGresult *res, int row, int col)
{
	int64_t v = pg_col_int(res, row, col);

	return v == STORE_NULL ? 0 : v;
}

/* A number of a verdict's JSON: NAN when it lacks it, or says null (infinite). */
static double col_real_or_nan(const PGresult *res, int row, int col)
{
	return PQgetisnull(res, row, col) ? NAN : pg_col_real(res, row, col);
}

int pg_rollout_add(struct store *s, const char *name, const char *spec_json, int64_t now_ms)
{
	struct pg_args a = { 0 };
	uint64_t n;

	pg_text(&a, name);
	pg_text(&a, spec_json);
	pg_int(&a, now_ms);
	pg_text(&a, rollout_state_name(ROLLOUT_PENDING));
	if (pg_changed(s, &pg_rollouts_area, ST_ROLLOUT_ADD, &a, &n) < 0)
		return -EIO;
	return n ? 0 : -EEXIST;
}

/*
 * The state, wave, wave start, reason, created and updated columns from col
 * on; -EINVAL: a state kmemd does not know.
 */
static int column_rollout(const PGresult *res, int row, int col, struct store_rollout *r)
{
	int state = rollout_state_parse(pg_col_or_empty(res, row, col));

	if (state < 0)
		return state;
	r->state = (enum rollout_state)state;
	r->wave = (unsigned)col_int0(res, row, col + 1);
	r->wave_started_ms = pg_col_int(res, row, col + 2);
	snprintf(r->reason, sizeof(r->reason), "%s", pg_col_or_empty(res, row, col + 3));
	r->has_reason = !PQgetisnull(res, row, col + 3);
	r->created_ms = pg_col_int(res, row, col + 4);
	r->updated_ms = pg_col_int(res, row, col + 5);
	return 0;
}

/* A row of name, spec, then column_rollout()'s; the spec is lent until res is cleared. */
static int row_rollout(const PGresult *res, int row, struct store_rollout *r)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s", pg_col_or_empty(res, row, 0));
	r->spec_json = (char *)pg_col_or_empty(res, row, 1);
	return column_rollout(res, row, 2, r);
}

int pg_rollout_get(struct store *s, const char *name, struct store_rollout *r)
{
	struct pg_args a = { 0 };
	PGresult *res;
	int ret = 0;

	memset(r, 0, sizeof(*r));
	pg_text(&a, name);
	res = run(s, ST_ROLLOUT_GET, &a);
	if (!res)
		return -EIO;
	if (!PQntuples(res)) {
		PQclear(res);
		return -ENOENT;
	}
	snprintf(r->name, sizeof(r->name), "%s", name);
	if (column_rollout(res, 0, 1, r) < 0) {
		PQclear(res);
		return -EIO;
	}
	r->as_read.read = true;
	r->as_read.state = r->state;
	r->as_read.wave = r->wave;
	r->as_read.wave_started_ms = r->wave_started_ms;
	r->spec_json = strdup(pg_col_or_empty(res, 0, 0));
	if (!PQgetisnull(res, 0, 7))
		r->evidence_json = strdup(pg_col_or_empty(res, 0, 7));
	if (!r->spec_json || (!PQgetisnull(res, 0, 7) && !r->evidence_json)) {
		store_rollout_clear(r);
		ret = -ENOMEM;
	}
	PQclear(res);
	return ret;
}

int pg_rollouts_started(struct store *s, int (*cb)(void *arg, const struct store_rollout *r),
			void *arg)
{
	struct pg_args a = { 0 };
	struct store_rollout r;
	PGresult *res;
	int i, ret = 0;

	pg_text(&a, rollout_state_name(ROLLOUT_PENDING));
	res = run(s, ST_ROLLOUTS_STARTED, &a);
	if (!res)
		return -EIO;
	for (i = 0; ret == 0 && i < PQntuples(res); i++) {
		if (row_rollout(res, i, &r) < 0)
			ret = -EIO;
		else
			ret = cb(arg, &r);
	}
	PQclear(res);
	return ret;
}

int pg_changes(struct store *s, struct store_changes *c)
{
	PGresult *res = run(s, ST_CHANGES, NULL);

	if (!res)
		return -EIO;
	/* the sum is a NUMERIC: pg_col_int() reads its digits */
	c->assignments = col_int0(res, 0, 0);
	c->assignment_last = col_int0(res, 0, 1);
	c->rollouts = col_int0(res, 0, 2);
	c->rollouts_updated = col_int0(res, 0, 3);
	PQclear(res);
	return 0;
}

/*
 * The counts of ST_ROLLOUTS' last column. Room for a plan's waves and its
 * release wave (rollout.h), the most a rollout's members are in.
 */
static size_t wave_counts(const char *text, uint64_t *members, size_t max)
{
	size_t n = 0;
	char *end;

	while (text && *text && n < max) {
		members[n++] = strtoull(text, &end, 10);
		text = *end == ',' ? end + 1 : NULL;
	}
	return n;
}

int pg_rollouts(struct store *s,
		int (*cb)(void *arg, const struct store_rollout *r, const uint64_t *members,
			  size_t n),
		void *arg)
{
	uint64_t members[ROLLOUT_MAX_WAVES + 1];
	struct store_rollout r;
	PGresult *res = run(s, ST_ROLLOUTS, NULL);
	size_t n;
	int i, ret = 0;

	if (!res)
		return -EIO;
	for (i = 0; ret == 0 && i < PQntuples(res); i++) {
		if (row_rollout(res, i, &r) < 0) {
			ret = -EIO;
			break;
		}
		n = wave_counts(pg_col(res, i, 8), members, ARRAY_SIZE(members));
		r.archived_ms = pg_col_int(res, i, 9);
		ret = cb(arg, &r, members, n);
	}
	PQclear(res);
	return ret;
}

/* States by name, as rollout.c names them. */
static void arg_states(struct pg_args *a, const enum rollout_state *states, size_t n)
{
	for (size_t i = 0; i < n; i++)
		pg_text(a, rollout_state_name(states[i]));
}

int pg_rollouts_active(struct store *s, store_name_cb cb, void *arg)
{
	static const enum rollout_state moving[] = { ROLLOUT_RUNNING, ROLLOUT_HOLDING,
						     ROLLOUT_PAUSED, ROLLOUT_ROLLING_BACK };
	struct pg_args a = { 0 };
	PGresult *res;
	int i, r = 0;

	arg_states(&a, moving, ARRAY_SIZE(moving));
	res = run(s, ST_ROLLOUTS_ACTIVE, &a);
	if (!res)
		return -EIO;
	for (i = 0; r == 0 && i < PQntuples(res); i++)
		r = cb(arg, pg_col_or_empty(res, i, 0));
	PQclear(res);
	return r;
}

int pg_rollout_gauges(struct store *s, int64_t since_ms,
		      int (*cb)(void *arg, const struct store_rollout_gauges *g), void *arg)
{
	static const enum rollout_state finished[] = { ROLLOUT_DONE, ROLLOUT_ROLLED_BACK,
						       ROLLOUT_ABORTED };
	struct store_rollout_gauges g;
	struct pg_args a = { 0 };
	PGresult *res;
	int i, r = 0, state;

	pg_int(&a, since_ms);
	arg_states(&a, finished, ARRAY_SIZE(finished));
	res = run(s, ST_ROLLOUT_GAUGES, &a);
	if (!res)
		return -EIO;
	for (i = 0; r == 0 && i < PQntuples(res); i++) {
		state = rollout_state_parse(pg_col_or_empty(res, i, 2));
		if (state < 0) {
			r = -EIO;
			break;
		}
		g = (struct store_rollout_gauges){
			.name = pg_col_or_empty(res, i, 0),
			.policy = pg_col_or_empty(res, i, 1),
			.state = (enum rollout_state)state,
			.wave = (unsigned)col_int0(res, i, 3),
			.spec_json = pg_col_or_empty(res, i, 4),
			.members = (uint64_t)col_int0(res, i, 5),
			.reached = (uint64_t)col_int0(res, i, 6),
			.running = (uint64_t)col_int0(res, i, 7),
			.judged = pg_col_bool(res, i, 8),
			.canary_lockups = (uint64_t)col_int0(res, i, 9),
			.canary_hours = pg_col_real(res, i, 10),
			.baseline_lockups = (uint64_t)col_int0(res, i, 11),
			.baseline_hours = pg_col_real(res, i, 12),
			.lockup_p = pg_col_real(res, i, 13),
			.verdicts = { (uint64_t)col_int0(res, i, 14),
				      (uint64_t)col_int0(res, i, 15),
				      (uint64_t)col_int0(res, i, 16) },
			.expected_lockups = col_real_or_nan(res, i, 17),
			.needed_lockups = col_real_or_nan(res, i, 18),
			.detectable_ratio = col_real_or_nan(res, i, 19),
			.sequential_lr = col_real_or_nan(res, i, 20),
		};
		r = cb(arg, &g);
	}
	PQclear(res);
	return r;
}

/* A row that changes only in its evidence keeps its updated_ms: hosts' policies did not change. */
static int update(struct store *s, const struct store_rollout *r, bool verdict, int64_t now_ms)
{
	struct pg_args a = { 0 };
	uint64_t n;

	pg_text(&a, r->name);
	pg_text(&a, rollout_state_name(r->state));
	pg_int(&a, r->wave);
	pg_int(&a, r->wave_started_ms);
	pg_text(&a, r->reason);
	pg_int(&a, now_ms);
	pg_text(&a, r->evidence_json);
	pg_bool(&a, !verdict && r->evidence_json);
	pg_bool(&a, r->as_read.read);
	pg_text(&a, rollout_state_name(r->as_read.state));
	pg_int(&a, r->as_read.wave);
	pg_int(&a, r->as_read.wave_started_ms);
	if (pg_changed(s, &pg_rollouts_area, ST_ROLLOUT_UPDATE, &a, &n) < 0)
		return -EIO;
	if (n)
		return 0;
	return r->as_read.read ? -ESTALE : -ENOENT;
}

static int verdict_add(struct store *s, const char *rollout, const struct store_verdict *v)
{
	struct pg_args a = { 0 };

	pg_text(&a, rollout);
	pg_int(&a, v->wave);
	pg_int(&a, v->ts_ms);
	pg_text(&a, v->verdict);
	pg_text(&a, v->gate);
	pg_text(&a, v->reason);
	pg_text(&a, v->detail_json);
	return pg_do(s, &pg_rollouts_area, ST_VERDICT_ADD, &a);
}

/* In a write transaction: -ENOLCK unless holder holds the engine's lease. */
static int lease_held(struct store *s, const char *holder)
{
	struct pg_args a = { 0 };
	uint64_t n;

	pg_text(&a, holder);
	if (pg_changed(s, &pg_rollouts_area, ST_LEASE_HELD, &a, &n) < 0)
		return -EIO;
	return n ? 0 : -ENOLCK;
}

int pg_rollout_update(struct store *s, struct store_rollout *r, const struct store_verdict *v,
		      int64_t now_ms, const char *engine)
{
	int ret = pg_write_begin(s);

	if (ret < 0)
		return ret;
	ret = engine ? lease_held(s, engine) : 0;
	if (ret == 0)
		ret = update(s, r, v != NULL, now_ms);
	if (ret == 0 && v)
		ret = verdict_add(s, r->name, v);
	ret = pg_write_end(s, ret);
	if (ret == 0 && r->as_read.read) {
		r->as_read.state = r->state;
		r->as_read.wave = r->wave;
		r->as_read.wave_started_ms = r->wave_started_ms;
	}
	return ret;
}

int pg_verdict_last(struct store *s, const char *rollout, unsigned *wave, char verdict[16],
		    char gate[32])
{
	struct pg_args a = { 0 };
	PGresult *res;

	pg_text(&a, rollout);
	res = run(s, ST_VERDICT_LAST, &a);
	if (!res)
		return -EIO;
	if (!PQntuples(res)) {
		PQclear(res);
		return -ENOENT;
	}
	*wave = (unsigned)col_int0(res, 0, 0);
	snprintf(verdict, 16, "%s", pg_col_or_empty(res, 0, 1));
	snprintf(gate, 32, "%s", pg_col_or_empty(res, 0, 2));
	PQclear(res);
	return 0;
}

int pg_verdicts(struct store *s, const char *rollout,
		int (*cb)(void *arg, const struct store_verdict *v), void *arg)
{
	struct store_verdict v;
	struct pg_args a = { 0 };
	PGresult *res;
	int i, r = 0;

	pg_text(&a, rollout);
	res = run(s, ST_VERDICTS, &a);
	if (!res)
		return -EIO;
	for (i = 0; r == 0 && i < PQntuples(res); i++) {
		v = (struct store_verdict){
			.wave = (unsigned)col_int0(res, i, 0),
			.ts_ms = col_int0(res, i, 1),
			.verdict = pg_col(res, i, 2),
			.gate = pg_col(res, i, 3),
			.reason = pg_col(res, i, 4),
			.detail_json = pg_col(res, i, 5),
		};
		r = cb(arg, &v);
	}
	PQclear(res);
	return r;
}

enum { COL_HOST, COL_STRATUM, COL_POSITION, COL_WAVE, COL_PREV, COL_PREV_VERSION, COLS };

/* The members as one array literal per column of rollout_hosts. */
static int members_arrays(const struct store_member *m, size_t n, struct buf col[COLS])
{
	char num[32];
	int r = 0;

	for (size_t i = 0; r == 0 && i < n; i++) {
		r = pg_arr_text(&col[COL_HOST], m[i].host_id);
		if (r == 0)
			r = pg_arr_text(&col[COL_STRATUM], m[i].stratum);
		/* %.17g: the double read back is the one sent */
		snprintf(num, sizeof(num), "%.17g", m[i].position);
		if (r == 0)
			r = pg_arr_text(&col[COL_POSITION], num);
		snprintf(num, sizeof(num), "%u", m[i].wave);
		if (r == 0)
			r = pg_arr_text(&col[COL_WAVE], num);
		if (r == 0)
			r = pg_arr_text(&col[COL_PREV], m[i].prev_policy);
		snprintf(num, sizeof(num), "%lld", (long long)m[i].prev_version);
		if (r == 0)
			r = pg_arr_text(&col[COL_PREV_VERSION], m[i].prev_policy ? num : NULL);
	}
	for (size_t c = 0; r == 0 && c < COLS; c++)
		r = pg_arr_end(&col[c]);
	return r;
}

/*
 * The state first: of two kmemd starting one rollout the second waits for
 * the first's row, then finds it started (-ESTALE when it read it) before
 * writing a member.
 */
int pg_rollout_start(struct store *s, const struct store_rollout *ro, const struct store_member *m,
		     size_t n, int64_t now_ms)
{
	struct buf col[COLS] = { 0 };
	struct pg_args a = { 0 };
	size_t c;
	int r = members_arrays(m, n, col);

	if (r == 0)
		r = pg_write_begin(s);
	if (r < 0)
		goto out;
	r = update(s, ro, true, now_ms);
	if (r == 0 && n) {
		pg_text(&a, ro->name);
		for (c = 0; c < COLS; c++)
			pg_text(&a, (const char *)col[c].p);
		r = pg_do(s, &pg_rollouts_area, ST_MEMBERS_ADD, &a);
	}
	r = pg_write_end(s, r);
out:
	for (c = 0; c < COLS; c++)
		free(col[c].p);
	return r;
}

int pg_members(struct store *s, const char *rollout,
	       int (*cb)(void *arg, const struct store_member *m), void *arg)
{
	struct store_member m;
	struct pg_args a = { 0 };
	PGresult *res;
	int i, r = 0;

	pg_text(&a, rollout);
	res = run(s, ST_MEMBERS, &a);
	if (!res)
		return -EIO;
	for (i = 0; r == 0 && i < PQntuples(res); i++) {
		m.host_id = pg_col_or_empty(res, i, 0);
		m.stratum = pg_col_or_empty(res, i, 1);
		m.position = pg_col_real(res, i, 2);
		m.wave = (unsigned)col_int0(res, i, 3);
		m.prev_policy = pg_col(res, i, 4);
		m.prev_version = (uint64_t)col_int0(res, i, 5);
		m.host = pg_col_bool(res, i, 6);
		m.revoked = pg_col_int(res, i, 7) == 1;
		m.policy = pg_col(res, i, 8);
		m.version = pg_col_int(res, i, 9);
		m.last_seen_ms = pg_col_int(res, i, 10);
		r = cb(arg, &m);
	}
	PQclear(res);
	return r;
}

int pg_lease(struct store *s, const char *name, const char *holder, int64_t now_ms, int64_t ttl_ms)
{
	struct pg_args a = { 0 };
	uint64_t n;

	pg_text(&a, name);
	pg_text(&a, holder);
	pg_int(&a, now_ms);
	pg_int(&a, ttl_ms);
	if (pg_changed(s, &pg_rollouts_area, ST_LEASE, &a, &n) < 0)
		return -EIO;
	return n > 0;
}

int pg_rollout_archive(struct store *s, const char *name, int64_t now_ms)
{
	struct store_rollout r;
	struct pg_args a = { 0 };
	uint64_t n;
	int ret;

	pg_text(&a, name);
	pg_int(&a, now_ms);
	ret = pg_changed(s, &pg_rollouts_area, ST_ARCHIVE, &a, &n);
	if (ret < 0 || n)
		return ret;
	/* nothing archived: no such rollout, or one not finished */
	ret = pg_rollout_get(s, name, &r);
	if (ret < 0)
		return ret;
	store_rollout_clear(&r);
	return -EBUSY;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * kmemd's PostgreSQL store, hosts and policies: hosts as their reports
 * left them, policy versions, assignments, host revocation, enrollment
 * secrets and the names hosts brought in.
 *
 * The schema orders host ids, state ids and names as bytes (COLLATE "C"),
 * as SQLite's BINARY: hosts() merges two results by strcmp(), and
 * hosts_page()'s cursor is a host id.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-text.h"
#include "store-pg.h"

enum stmt {
	ST_HOST,
	ST_HOST_STATES,
	ST_HOSTS,
	ST_HOSTS_STATES,
	ST_HOSTS_PAGE,
	ST_HOSTS_PAGE_STATES,
	ST_HOST_FACTS,
	ST_POLICY_ADD,
	ST_POLICY_GET,
	ST_POLICIES,
	ST_POLICY_RETIRE,
	ST_ASSIGN,
	ST_ASSIGNMENTS,
	ST_REVOKE,
	ST_REVOKED,
	ST_SECRET_ADD,
	ST_SECRET_FIND,
	ST_SECRET_USE,
	ST_RATE_TAKE,
	ST_RATE_PRUNE,
	ST_SECRET_REVOKE,
	ST_NAMES,
	ST_NAME_ADD,
	ST_ENROLLED,
	ST_ENROLLMENT_ADD,
	ST_REENROLL,
	ST_SECRETS,
	ST_ASSIGNMENT_DELETE,
	ST_FORGET,
	ST_N,
};

#define HOST_ROW                                                                            \
	"SELECT host_id, hostname, kernel_release, build_id, possible_cpus, online_cpus,"   \
	" mem_total, kasan, module_version, labels, first_seen_ms, last_seen_ms, last_seq," \
	" revoked, policy_name, policy_version, off FROM hosts"
#define STATE_ROW "SELECT host_id, id, state, mode, source, reason FROM states"
#define BY_STATE " ORDER BY host_id, id"
#define PAGE                                                                   \
	" WHERE host_id > $1 AND ($2::text IS NULL OR strpos(host_id, $2) > 0" \
	" OR strpos(hostname, $2) > 0 OR strpos(kernel_release, $2) > 0)"      \
	" ORDER BY host_id LIMIT $3"

/* a bucket refilled since its last take, up to its rate; less the one taken, it is stored */
#define REFILL "LEAST($2, b.tokens + GREATEST(0, $3 - b.last_ms) * $2 / 60000.0)"

static const char *const sql[ST_N] = {
	[ST_HOST] = HOST_ROW " WHERE host_id = $1",
	[ST_HOST_STATES] = STATE_ROW " WHERE host_id = $1" BY_STATE,
	[ST_HOSTS] = HOST_ROW " ORDER BY host_id",
	[ST_HOSTS_STATES] = STATE_ROW BY_STATE,
	[ST_HOSTS_PAGE] = HOST_ROW PAGE,
	/* the page's hosts again: the same parameters give the same hosts */
	[ST_HOSTS_PAGE_STATES] = STATE_ROW " WHERE host_id IN (SELECT host_id FROM hosts" PAGE
					   ")" BY_STATE,
	[ST_HOST_FACTS] = "SELECT host_id, hostname, kernel_release, build_id, possible_cpus,"
			  " online_cpus, mem_total, kasan, labels, policy_name, policy_version"
			  " FROM hosts WHERE revoked = 0 AND last_seq > 0"
			  " ORDER BY host_id",
	/* no row inserted: that version exists (no error, which would end a caller's batch) */
	[ST_POLICY_ADD] = "INSERT INTO policies (name, version, document, bundle, signer, key_id,"
			  " created_ms) VALUES ($1, $2, $3, $4, $5, $6, $7)"
			  " ON CONFLICT DO NOTHING",
	[ST_POLICY_GET] = "SELECT document, bundle, signer, key_id, created_ms, retired_ms"
			  " FROM policies WHERE name = $1 AND version = $2",
	[ST_POLICIES] = "SELECT name, version, document, bundle IS NOT NULL, signer, key_id,"
			" created_ms, retired_ms FROM policies ORDER BY name, version",
	/* who uses it, then the retirement when nothing does, in one statement */
	[ST_POLICY_RETIRE] =
		"WITH h AS (SELECT count(*) AS n FROM hosts WHERE policy_name = $1"
		" AND policy_version = $2 AND revoked = 0),"
		" a AS (SELECT min(id) AS id FROM assignments WHERE policy = $1 AND version = $2),"
		" r AS (SELECT min(name) AS name FROM rollouts WHERE state NOT IN ('aborted',"
		" 'rolled-back') AND ((spec::json->>'policy' = $1"
		" AND (spec::json->>'version')::bigint = $2) OR (spec::json->'rollback'->>'policy' = $1"
		" AND (spec::json->'rollback'->>'version')::bigint = $2))),"
		" u AS (UPDATE policies SET retired_ms = coalesce(retired_ms, $3) WHERE name = $1"
		" AND version = $2 AND (SELECT n FROM h) = 0 AND (SELECT id FROM a) IS NULL"
		" AND (SELECT name FROM r) IS NULL RETURNING 1)"
		" SELECT (SELECT n FROM h), (SELECT id FROM a), (SELECT name FROM r),"
		" (SELECT count(*) FROM u), (SELECT count(*) FROM policies WHERE name = $1"
		" AND version = $2)",
	/* policies are never deleted: no row inserted is no such version */
	[ST_ASSIGN] = "INSERT INTO assignments (policy, version, selector, created_ms)"
		      " SELECT $1::text, $2::bigint, $3::text, $4::bigint WHERE EXISTS"
		      " (SELECT 1 FROM policies WHERE name = $1 AND version = $2) RETURNING id",
	[ST_ASSIGNMENTS] = "SELECT id, policy, version, selector, created_ms FROM assignments"
			   " ORDER BY id DESC",
	[ST_REVOKE] = "INSERT INTO hosts (host_id, first_seen_ms, revoked) VALUES ($1, $2, 1)"
		      " ON CONFLICT (host_id) DO UPDATE SET revoked = 1",
	[ST_REVOKED] = "SELECT revoked FROM hosts WHERE host_id = $1",
	[ST_SECRET_ADD] = "INSERT INTO enroll_secrets (sha256, created_ms, expires_ms, max_uses,"
			  " host_pattern) VALUES ($1, $2, $3, $4, $5) RETURNING id",
	[ST_SECRET_FIND] = "SELECT id, expires_ms, revoked, uses, max_uses, host_pattern"
			   " FROM enroll_secrets WHERE sha256 = $1",
	/* the limit is checked here too: two kmemd must not both take the last use */
	[ST_SECRET_USE] = "UPDATE enroll_secrets SET uses = uses + 1 WHERE id = $1"
			  " AND (max_uses = 0 OR uses < max_uses)",
	[ST_RATE_TAKE] = "INSERT INTO rate_buckets AS b VALUES ($1, $2::float8 - 1, $3::bigint)"
			 " ON CONFLICT (key) DO UPDATE SET tokens = " REFILL " - 1, last_ms = $3"
			 " WHERE " REFILL " >= 1",
	/*
	 * A minute refills any bucket: an older one is as good as none. Rows
	 * another kmemd holds are left to it, so that the prune never waits.
	 */
	[ST_RATE_PRUNE] = "DELETE FROM rate_buckets WHERE key IN (SELECT key FROM rate_buckets"
			  " WHERE last_ms < $1::bigint - 60000 FOR UPDATE SKIP LOCKED)",
	[ST_SECRET_REVOKE] = "UPDATE enroll_secrets SET revoked = 1 WHERE id = $1",
	/* ties as SQLite's table (WITHOUT ROWID, by its key) gives them */
	[ST_NAMES] = "SELECT kind, name, host_id FROM names"
		     " ORDER BY created_ms, kind, name",
	[ST_NAME_ADD] = "INSERT INTO names VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
	/* a host id is taken once it enrolled or reported */
	[ST_ENROLLED] = "SELECT EXISTS (SELECT 1 FROM hosts WHERE host_id = $1 AND last_seq > 0)"
			" OR EXISTS (SELECT 1 FROM enrollments WHERE host_id = $1),"
			" coalesce((SELECT reenroll FROM enrollments WHERE host_id = $1), 0)",
	[ST_ENROLLMENT_ADD] = "INSERT INTO enrollments VALUES ($1, $2, $3, 0)"
			      " ON CONFLICT (host_id) DO UPDATE SET secret_id = EXCLUDED.secret_id,"
			      " enrolled_ms = EXCLUDED.enrolled_ms, reenroll = 0",
	[ST_REENROLL] = "INSERT INTO enrollments (host_id, reenroll) VALUES ($1, 1)"
			" ON CONFLICT (host_id) DO UPDATE SET reenroll = 1",
	[ST_SECRETS] = "SELECT id, created_ms, expires_ms, revoked, uses, max_uses, host_pattern"
		       " FROM enroll_secrets ORDER BY id DESC",
	[ST_ASSIGNMENT_DELETE] = "DELETE FROM assignments WHERE id = $1",
	/*
	 * in one statement: whether it is known and when it last reported, and
	 * the forgetting when it has not since $2 (a revoked id keeps its row:
	 * it stays refused, and listed as revoked)
	 */
	[ST_FORGET] =
		"WITH h AS (SELECT coalesce(last_seen_ms, 0) AS seen FROM hosts"
		" WHERE host_id = $1 FOR UPDATE),"
		" ok AS (SELECT 1 FROM h WHERE seen < $2),"
		" s AS (DELETE FROM states WHERE host_id = $1 AND EXISTS (SELECT FROM ok)),"
		" e AS (DELETE FROM enrollments WHERE host_id = $1 AND EXISTS (SELECT FROM ok)),"
		" d AS (DELETE FROM hosts WHERE host_id = $1 AND revoked = 0"
		" AND EXISTS (SELECT FROM ok))"
		" SELECT (SELECT count(*) FROM h), (SELECT count(*) FROM ok)",
};

const struct pg_area pg_hosts_area = {
	.id = PG_HOSTS,
	.sql = sql,
	.n = ST_N,
};

static PGresult *run(struct store *s, enum stmt which, const struct pg_args *a)
{
	return pg_run(s, &pg_hosts_area, which, a);
}

static int run_do(struct store *s, enum stmt which, const struct pg_args *a)
{
	return pg_do(s, &pg_hosts_area, which, a);
}

static int run_changed(struct store *s, enum stmt which, const struct pg_args *a, uint64_t *n)
{
	return pg_changed(s, &pg_hosts_area, which, a, n);
}

/* An integer column as SQLite's sqlite3_column_int64() reads it: NULL is 0. */
static int64_t col_int0(const PGresult *r, int row, int col)
{
	int64_t v = pg_col_int(r, row, col);

	return v == STORE_NULL ? 0 : v;
}

/*
 * Each host of hr (HOST_ROW), then its states from sr (STATE_ROW, in
 * host id then id order; NULL: none). States of a host sr has and hr
 * has not (added between the two queries) are passed over.
 */
static int host_rows_each(const PGresult *hr, const PGresult *sr, const struct store_host_cb *cb,
			  void *arg)
{
	int nh = PQntuples(hr), ns = sr ? PQntuples(sr) : 0, i, j = 0, c, r = 0;
	struct store_host_state m;
	struct store_host h;

	for (i = 0; r == 0 && i < nh; i++) {
		h = (struct store_host){
			.host_id = pg_col_or_empty(hr, i, 0),
			.hostname = pg_col(hr, i, 1),
			.kernel_release = pg_col(hr, i, 2),
			.build_id = pg_col(hr, i, 3),
			.possible_cpus = pg_col_int(hr, i, 4),
			.online_cpus = pg_col_int(hr, i, 5),
			.mem_total = pg_col_int(hr, i, 6),
			.kasan = pg_col_bool(hr, i, 7),
			.module_version = pg_col(hr, i, 8),
			.labels_json = pg_col_or_empty(hr, i, 9),
			.first_seen_ms = pg_col_int(hr, i, 10),
			.last_seen_ms = pg_col_int(hr, i, 11),
			.last_seq = pg_col_int(hr, i, 12),
			.revoked = pg_col_bool(hr, i, 13),
			.policy = pg_col(hr, i, 14),
			.policy_version = pg_col_int(hr, i, 15),
			.off = (int)(pg_col_int(hr, i, 16) == STORE_NULL ? 0 :
									   pg_col_int(hr, i, 16)),
		};
		r = cb->host(arg, &h);
		for (; r == 0 && j < ns && (c = strcmp(pg_col_or_empty(sr, j, 0), h.host_id)) <= 0;
		     j++) {
			if (c < 0)
				continue;
			m = (struct store_host_state){
				.id = pg_col(sr, j, 1),
				.state = pg_col(sr, j, 2),
				.mode = pg_col(sr, j, 3),
				.source = pg_col(sr, j, 4),
				.reason = pg_col(sr, j, 5),
			};
			r = cb->state(arg, &m);
		}
	}
	return r;
}

/* The hosts of query hq and the states of sq, both with a's parameters. */
static int hosts_with_states(struct store *s, enum stmt hq, enum stmt sq, const struct pg_args *a,
			     bool one, const struct store_host_cb *cb, void *arg)
{
	PGresult *hr = run(s, hq, a), *sr = NULL;
	int r;

	if (!hr)
		return -EIO;
	if (PQntuples(hr) > 0) {
		sr = run(s, sq, a);
		if (!sr) {
			PQclear(hr);
			return -EIO;
		}
	}
	r = one && !PQntuples(hr) ? -ENOENT : host_rows_each(hr, sr, cb, arg);
	PQclear(sr);
	PQclear(hr);
	return r;
}

int pg_host(struct store *s, const char *host_id, const struct store_host_cb *cb, void *arg)
{
	struct pg_args a = { 0 };

	pg_text(&a, host_id);
	return hosts_with_states(s, ST_HOST, ST_HOST_STATES, &a, true, cb, arg);
}

int pg_hosts(struct store *s, const struct store_host_cb *cb, void *arg)
{
	/* two queries, not one of states per host: a fleet is 100,000 hosts */
	return hosts_with_states(s, ST_HOSTS, ST_HOSTS_STATES, NULL, false, cb, arg);
}

int pg_hosts_page(struct store *s, const char *after, const char *match, unsigned limit,
		  const struct store_host_cb *cb, void *arg)
{
	struct pg_args a = { 0 };

	pg_text(&a, after ?: "");
	pg_text(&a, match && *match ? match : NULL);
	pg_int(&a, limit);
	return hosts_with_states(s, ST_HOSTS_PAGE, ST_HOSTS_PAGE_STATES, &a, false, cb, arg);
}

int pg_policy_add(struct store *s, const struct store_policy *p, int64_t now_ms)
{
	struct pg_args a = { 0 };
	uint64_t n;
	int r;

	pg_text(&a, p->name);
	pg_int(&a, (int64_t)p->version);
	pg_text(&a, p->document_json);
	pg_blob(&a, p->bundle, p->bundle ? p->bundle_len : 0);
	pg_text(&a, p->signer);
	pg_text(&a, p->key_id);
	pg_int(&a, now_ms);
	r = run_changed(s, ST_POLICY_ADD, &a, &n);
	return r < 0 ? r : n ? 0 : -EEXIST;
}

int pg_policy_get(struct store *s, const char *name, uint64_t version, struct store_policy *p)
{
	struct pg_args a = { 0 };
	PGresult *res;
	uint8_t *blob = NULL;
	size_t len;
	int r = 0;

	memset(p, 0, sizeof(*p));
	pg_text(&a, name);
	pg_int(&a, (int64_t)version);
	res = run(s, ST_POLICY_GET, &a);
	if (!res)
		return -EIO;
	if (!PQntuples(res)) {
		PQclear(res);
		return -ENOENT;
	}
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->version = version;
	p->document_json = strdup(pg_col_or_empty(res, 0, 0));
	if (!p->document_json)
		r = -ENOMEM;
	if (!PQgetisnull(res, 0, 1)) {
		blob = pg_col_blob(res, 0, 1, &len);
		/* an empty bundle reads as none, as SQLite gives a zero-length blob */
		if (blob && len)
			p->bundle = malloc(len);
		if (p->bundle) {
			memcpy(p->bundle, blob, len);
			p->bundle_len = len;
		} else if (!blob || len) {
			r = -ENOMEM;
		}
	}
	snprintf(p->signer, sizeof(p->signer), "%s", pg_col_or_empty(res, 0, 2));
	snprintf(p->key_id, sizeof(p->key_id), "%s", pg_col_or_empty(res, 0, 3));
	p->created_ms = col_int0(res, 0, 4);
	p->retired_ms = pg_col_int(res, 0, 5);
	PQfreemem(blob);
	PQclear(res);
	if (r < 0)
		store_policy_clear(p);
	return r;
}

int pg_policies(struct store *s, int (*cb)(void *arg, const struct store_policy *p), void *arg)
{
	PGresult *res = run(s, ST_POLICIES, NULL);
	struct store_policy p;
	int i, n, r = 0;

	if (!res)
		return -EIO;
	n = PQntuples(res);
	for (i = 0; r == 0 && i < n; i++) {
		memset(&p, 0, sizeof(p));
		snprintf(p.name, sizeof(p.name), "%s", pg_col_or_empty(res, i, 0));
		p.version = (uint64_t)col_int0(res, i, 1);
		p.document_json = (char *)pg_col_or_empty(res, i, 2);
		/* whether it is signed is what a listing says of the bundle */
		p.bundle = pg_col_bool(res, i, 3) ? (uint8_t *)"" : NULL;
		snprintf(p.signer, sizeof(p.signer), "%s", pg_col_or_empty(res, i, 4));
		snprintf(p.key_id, sizeof(p.key_id), "%s", pg_col_or_empty(res, i, 5));
		p.created_ms = col_int0(res, i, 6);
		p.retired_ms = pg_col_int(res, i, 7);
		r = cb(arg, &p);
	}
	PQclear(res);
	return r;
}

int pg_assign(struct store *s, const struct store_assignment *a, int64_t now_ms, int64_t *id)
{
	struct pg_args args = { 0 };
	PGresult *res;
	int r;

	pg_text(&args, a->policy);
	pg_int(&args, (int64_t)a->version);
	pg_text(&args, a->selector_json);
	pg_int(&args, now_ms);
	res = run(s, ST_ASSIGN, &args);
	if (!res)
		return -EIO;
	r = PQntuples(res) ? 0 : -ENOENT;
	if (r == 0)
		*id = pg_col_int(res, 0, 0);
	PQclear(res);
	return r;
}

int pg_assignments(struct store *s, int (*cb)(void *arg, const struct store_assignment *a),
		   void *arg)
{
	PGresult *res = run(s, ST_ASSIGNMENTS, NULL);
	struct store_assignment a;
	int i, n, r = 0;

	if (!res)
		return -EIO;
	n = PQntuples(res);
	for (i = 0; r == 0 && i < n; i++) {
		a.id = col_int0(res, i, 0);
		snprintf(a.policy, sizeof(a.policy), "%s", pg_col_or_empty(res, i, 1));
		a.version = (uint64_t)col_int0(res, i, 2);
		a.selector_json = (char *)pg_col_or_empty(res, i, 3);
		a.created_ms = col_int0(res, i, 4);
		r = cb(arg, &a);
	}
	PQclear(res);
	return r > 0 ? 0 : r;
}

int pg_revoke(struct store *s, const char *host_id, int64_t now_ms)
{
	struct pg_args a = { 0 };

	pg_text(&a, host_id);
	pg_int(&a, now_ms);
	return run_do(s, ST_REVOKE, &a);
}

int pg_revoked(struct store *s, const char *host_id)
{
	struct pg_args a = { 0 };
	PGresult *res;
	int r;

	pg_text(&a, host_id);
	res = run(s, ST_REVOKED, &a);
	if (!res)
		return -EIO;
	r = PQntuples(res) && col_int0(res, 0, 0) != 0;
	PQclear(res);
	return r;
}

int pg_secret_add(struct store *s, const struct store_secret *sec, int64_t *id)
{
	struct pg_args a = { 0 };
	PGresult *res;

	pg_text(&a, sec->sha256);
	pg_int(&a, sec->created_ms);
	pg_int(&a, sec->expires_ms);
	pg_int(&a, sec->max_uses);
	pg_text(&a, sec->host_pattern[0] ? sec->host_pattern : NULL);
	res = run(s, ST_SECRET_ADD, &a);
	if (!res)
		return -EIO;
	*id = pg_col_int(res, 0, 0);
	PQclear(res);
	return 0;
}

int pg_secret_get(struct store *s, const char *sha256, struct store_secret *sec)
{
	struct pg_args a = { 0 };
	PGresult *res;

	pg_text(&a, sha256);
	res = run(s, ST_SECRET_FIND, &a);
	if (!res)
		return -EIO;
	if (!PQntuples(res)) {
		PQclear(res);
		return -ENOENT;
	}
	*sec = (struct store_secret){
		.id = col_int0(res, 0, 0),
		.expires_ms = col_int0(res, 0, 1),
		.revoked = col_int0(res, 0, 2) != 0,
		.uses = col_int0(res, 0, 3),
		.max_uses = col_int0(res, 0, 4),
	};
	snprintf(sec->sha256, sizeof(sec->sha256), "%s", sha256);
	snprintf(sec->host_pattern, sizeof(sec->host_pattern), "%s", pg_col_or_empty(res, 0, 5));
	PQclear(res);
	return 0;
}

int pg_secret_use(struct store *s, int64_t id)
{
	struct pg_args a = { 0 };
	uint64_t n;
	int r;

	pg_int(&a, id);
	r = run_changed(s, ST_SECRET_USE, &a, &n);
	return r < 0 ? r : n ? 0 : -EDQUOT;
}

struct bucket {
	const char *key;
	uint64_t rate;
};

static int bucket_cmp(const void *a, const void *b)
{
	return strcmp(((const struct bucket *)a)->key, ((const struct bucket *)b)->key);
}

int pg_rate_take(struct store *s, const char *const *keys, const uint64_t *rates, size_t n,
		 int64_t now_ms)
{
	struct bucket *b = calloc(n ?: 1, sizeof(*b));
	struct pg_args a;
	uint64_t changed;
	int r;

	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		b[i] = (struct bucket){ keys[i], rates[i] };
	/* rows locked in one order by every kmemd: two taking the same keys cannot deadlock */
	qsort(b, n, sizeof(*b), bucket_cmp);
	r = pg_write_begin(s);
	if (r < 0) {
		free(b);
		return r;
	}
	for (size_t i = 0; r == 0 && i < n; i++) {
		a = (struct pg_args){ 0 };
		pg_text(&a, b[i].key);
		pg_int(&a, (int64_t)b[i].rate);
		pg_int(&a, now_ms);
		r = run_changed(s, ST_RATE_TAKE, &a, &changed);
		/* one empty: none is taken */
		if (r == 0 && !changed)
			r = -EAGAIN;
	}
	/* after the takes: rows locked after those would break the order above */
	if (r == 0) {
		a = (struct pg_args){ 0 };
		pg_int(&a, now_ms);
		r = run_do(s, ST_RATE_PRUNE, &a);
	}
	free(b);
	r = pg_write_end(s, r);
	return r == -EAGAIN ? 0 : r < 0 ? r : 1;
}

int pg_secret_revoke(struct store *s, int64_t id)
{
	struct pg_args a = { 0 };
	uint64_t n;
	int r;

	pg_int(&a, id);
	r = run_changed(s, ST_SECRET_REVOKE, &a, &n);
	return r < 0 ? r : n ? 0 : -ENOENT;
}

int pg_names(struct store *s, int (*cb)(void *arg, int kind, const char *name, const char *host),
	     void *arg)
{
	PGresult *res = run(s, ST_NAMES, NULL);
	int i, n, r = 0;

	if (!res)
		return -EIO;
	n = PQntuples(res);
	for (i = 0; r == 0 && i < n; i++) {
		const char *kind = pg_col_or_empty(res, i, 0);

		r = cb(arg,
		       !strcmp(kind, "probe")	   ? 0 :
		       !strcmp(kind, "mitigation") ? 1 :
						     -1,
		       pg_col_or_empty(res, i, 1), pg_col_or_empty(res, i, 2));
	}
	PQclear(res);
	return r;
}

int pg_name_add(struct store *s, int kind, const char *name, const char *host, int64_t now_ms)
{
	struct pg_args a = { 0 };

	pg_text(&a, kind == 0 ? "probe" : "mitigation");
	pg_text(&a, name);
	pg_text(&a, host);
	pg_int(&a, now_ms);
	return run_do(s, ST_NAME_ADD, &a);
}

int pg_enrolled(struct store *s, const char *host, bool *taken, bool *reenroll)
{
	struct pg_args a = { 0 };
	PGresult *res;

	pg_text(&a, host);
	res = run(s, ST_ENROLLED, &a);
	if (!res)
		return -EIO;
	*taken = pg_col_bool(res, 0, 0);
	*reenroll = col_int0(res, 0, 1) != 0;
	PQclear(res);
	return 0;
}

int pg_enrollment_add(struct store *s, const char *host, int64_t secret_id, int64_t now_ms)
{
	struct pg_args a = { 0 };

	pg_text(&a, host);
	pg_int(&a, secret_id);
	pg_int(&a, now_ms);
	return run_do(s, ST_ENROLLMENT_ADD, &a);
}

int pg_reenroll(struct store *s, const char *host)
{
	struct pg_args a = { 0 };

	pg_text(&a, host);
	return run_do(s, ST_REENROLL, &a);
}

/* Row i of an ST_HOST_FACTS result to cb, its labels as HostFacts wants them. */
static int facts_row(const PGresult *res, int i, store_facts_cb cb, void *arg)
{
	Kmemctl__V1__HostFacts f = KMEMCTL__V1__HOST_FACTS__INIT;
	json_t *labels = json_loads_lossy(pg_col_or_empty(res, i, 8)), *v;
	size_t n = json_object_size(labels);
	Kmemctl__V1__HostFacts__LabelsEntry *le = calloc(n ?: 1, sizeof(*le));
	Kmemctl__V1__HostFacts__LabelsEntry **lep = calloc(n ?: 1, sizeof(*lep));
	const char *key;
	int r = -ENOMEM;

	if (!le || !lep)
		goto out;
	f.host_id = (char *)pg_col_or_empty(res, i, 0);
	f.hostname = (char *)pg_col_or_empty(res, i, 1);
	f.kernel_release = (char *)pg_col_or_empty(res, i, 2);
	f.kernel_build_id = (char *)pg_col_or_empty(res, i, 3);
	f.possible_cpus = (uint32_t)col_int0(res, i, 4);
	f.online_cpus = (uint32_t)col_int0(res, i, 5);
	f.mem_total_bytes = (uint64_t)col_int0(res, i, 6);
	f.kasan = col_int0(res, i, 7) != 0;
	json_object_foreach(labels, key, v)
	{
		if (!json_is_string(v))
			continue;
		kmemctl__v1__host_facts__labels_entry__init(&le[f.n_labels]);
		le[f.n_labels].key = (char *)key;
		le[f.n_labels].value = (char *)json_string_value(v);
		lep[f.n_labels] = &le[f.n_labels];
		f.n_labels++;
	}
	f.labels = lep;
	r = cb(arg, &f, pg_col(res, i, 9), (uint64_t)col_int0(res, i, 10));
out:
	free(le);
	free(lep);
	json_decref(labels);
	return r;
}

int pg_host_facts(struct store *s, store_facts_cb cb, void *arg)
{
	PGresult *res = run(s, ST_HOST_FACTS, NULL);
	int i, n, r = 0;

	if (!res)
		return -EIO;
	n = PQntuples(res);
	for (i = 0; r == 0 && i < n; i++)
		r = facts_row(res, i, cb, arg);
	PQclear(res);
	return r;
}

int pg_secrets(struct store *s, int (*cb)(void *arg, const struct store_secret *sec), void *arg)
{
	PGresult *res = run(s, ST_SECRETS, NULL);
	struct store_secret sec;
	int i, n, r = 0;

	if (!res)
		return -EIO;
	n = PQntuples(res);
	for (i = 0; r == 0 && i < n; i++) {
		memset(&sec, 0, sizeof(sec));
		sec.id = col_int0(res, i, 0);
		sec.created_ms = col_int0(res, i, 1);
		sec.expires_ms = col_int0(res, i, 2);
		sec.revoked = col_int0(res, i, 3) != 0;
		sec.uses = col_int0(res, i, 4);
		sec.max_uses = col_int0(res, i, 5);
		snprintf(sec.host_pattern, sizeof(sec.host_pattern), "%s",
			 pg_col_or_empty(res, i, 6));
		r = cb(arg, &sec);
	}
	PQclear(res);
	return r > 0 ? 0 : r;
}

int pg_assignment_delete(struct store *s, int64_t id)
{
	struct pg_args a = { 0 };
	uint64_t n;
	int r;

	pg_int(&a, id);
	r = run_changed(s, ST_ASSIGNMENT_DELETE, &a, &n);
	return r < 0 ? r : n ? 0 : -ENOENT;
}

int pg_host_forget(struct store *s, const char *host, int64_t since_ms)
{
	struct pg_args a = { 0 };
	PGresult *res;
	int r;

	pg_text(&a, host);
	pg_int(&a, since_ms);
	res = run(s, ST_FORGET, &a);
	if (!res)
		return -EIO;
	r = col_int0(res, 0, 0) == 0 ? -ENOENT : col_int0(res, 0, 1) == 0 ? -EBUSY : 0;
	PQclear(res);
	return r;
}

int pg_policy_retire(struct store *s, const char *name, uint64_t version, int64_t now_ms, char *why,
		     size_t whylen)
{
	struct pg_args a = { 0 };
	PGresult *res;
	int r = 0;

	pg_text(&a, name);
	pg_int(&a, (int64_t)version);
	pg_int(&a, now_ms);
	res = run(s, ST_POLICY_RETIRE, &a);
	if (!res)
		return -EIO;
	if (!col_int0(res, 0, 4)) {
		r = -ENOENT;
	} else if (col_int0(res, 0, 0)) {
		snprintf(why, whylen, "%lld hosts run it", (long long)col_int0(res, 0, 0));
		r = -EBUSY;
	} else if (pg_col(res, 0, 1)) {
		snprintf(why, whylen, "assignment %lld names it", (long long)col_int0(res, 0, 1));
		r = -EBUSY;
	} else if (pg_col(res, 0, 2)) {
		snprintf(why, whylen, "rollout %s names it", pg_col(res, 0, 2));
		r = -EBUSY;
	}
	PQclear(res);
	return r;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * kmemd's SQLite store, hosts and policies: hosts as their reports left them, policy versions,
 * assignments, host revocation, enrollment secrets and the names hosts
 * brought in.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-text.h"
#include "macro.h"
#include "store-sqlite.h"

enum stmt {
	ST_HOST,
	ST_HOST_STATES,
	ST_HOSTS,
	ST_HOSTS_PAGE,
	ST_HOST_FACTS,
	ST_POLICY_ADD,
	ST_POLICY_GET,
	ST_POLICIES,
	ST_POLICY_USERS,
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
	ST_FORGET_SEEN,
	ST_FORGET_STATES,
	ST_FORGET_ENROLLMENT,
	ST_FORGET_HOST,
	ST_N,
};

#define HOST_ROW                                                                            \
	"SELECT host_id, hostname, kernel_release, build_id, possible_cpus, online_cpus,"   \
	" mem_total, kasan, module_version, labels, first_seen_ms, last_seen_ms, last_seq," \
	" revoked, policy_name, policy_version, off FROM hosts"

static const char *const sql[ST_N] = {
	[ST_HOST] = HOST_ROW " WHERE host_id = ?1",
	[ST_HOST_STATES] = "SELECT id, state, mode, source, reason FROM states WHERE host_id = ?1"
			   " ORDER BY id",
	[ST_HOSTS] = HOST_ROW " ORDER BY host_id",
	[ST_HOSTS_PAGE] = HOST_ROW " WHERE host_id > ?1 AND (?2 IS NULL OR instr(host_id, ?2)"
				   " OR instr(hostname, ?2) OR instr(kernel_release, ?2))"
				   " ORDER BY host_id LIMIT ?3",
	[ST_HOST_FACTS] = "SELECT host_id, hostname, kernel_release, build_id, possible_cpus,"
			  " online_cpus, mem_total, kasan, labels, policy_name, policy_version"
			  " FROM hosts WHERE revoked = 0 AND last_seq > 0 ORDER BY host_id",
	[ST_POLICY_ADD] = "INSERT INTO policies (name, version, document, bundle, signer, key_id,"
			  " created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
	[ST_POLICY_GET] = "SELECT document, bundle, signer, key_id, created_ms, retired_ms"
			  " FROM policies WHERE name = ?1 AND version = ?2",
	[ST_POLICIES] = "SELECT name, version, document, bundle IS NOT NULL, signer, key_id,"
			" created_ms, retired_ms FROM policies ORDER BY name, version",
	/* who uses it: hosts running it, assignments, rollouts that still decide */
	[ST_POLICY_USERS] =
		"SELECT (SELECT count(*) FROM hosts WHERE policy_name = ?1 AND policy_version = ?2"
		" AND revoked = 0),"
		" (SELECT min(id) FROM assignments WHERE policy = ?1 AND version = ?2),"
		" (SELECT min(name) FROM rollouts WHERE state NOT IN ('aborted', 'rolled-back')"
		" AND ((json_extract(spec, '$.policy') = ?1 AND json_extract(spec, '$.version') = ?2)"
		" OR (json_extract(spec, '$.rollback.policy') = ?1"
		" AND json_extract(spec, '$.rollback.version') = ?2)))",
	[ST_POLICY_RETIRE] = "UPDATE policies SET retired_ms = coalesce(retired_ms, ?3)"
			     " WHERE name = ?1 AND version = ?2",
	[ST_ASSIGN] = "INSERT INTO assignments (policy, version, selector, created_ms)"
		      " VALUES (?1, ?2, ?3, ?4)",
	[ST_ASSIGNMENTS] = "SELECT id, policy, version, selector, created_ms FROM assignments"
			   " ORDER BY id DESC",
	[ST_REVOKE] = "INSERT INTO hosts (host_id, first_seen_ms, revoked) VALUES (?1, ?2, 1)"
		      " ON CONFLICT (host_id) DO UPDATE SET revoked = 1",
	[ST_REVOKED] = "SELECT revoked FROM hosts WHERE host_id = ?1",
	[ST_SECRET_ADD] = "INSERT INTO enroll_secrets (sha256, created_ms, expires_ms, max_uses,"
			  " host_pattern) VALUES (?1, ?2, ?3, ?4, ?5)",
	[ST_SECRET_FIND] = "SELECT id, expires_ms, revoked, uses, max_uses, host_pattern"
			   " FROM enroll_secrets WHERE sha256 = ?1",
	/* the limit is checked here too: two kmemd must not both take the last use */
	/* refilled since its last take, up to its rate, then less the one taken */
	[ST_RATE_TAKE] =
		"INSERT INTO rate_buckets VALUES (?1, ?2 - 1, ?3) ON CONFLICT (key) DO UPDATE"
		" SET tokens = min(?2, tokens + max(0, ?3 - last_ms) * ?2 / 60000.0) - 1,"
		" last_ms = ?3"
		" WHERE min(?2, tokens + max(0, ?3 - last_ms) * ?2 / 60000.0) >= 1",
	/* a minute refills any bucket: an older one is as good as none */
	[ST_RATE_PRUNE] = "DELETE FROM rate_buckets WHERE last_ms < ?1 - 60000",
	[ST_SECRET_USE] = "UPDATE enroll_secrets SET uses = uses + 1 WHERE id = ?1"
			  " AND (max_uses = 0 OR uses < max_uses)",
	[ST_SECRET_REVOKE] = "UPDATE enroll_secrets SET revoked = 1 WHERE id = ?1",
	[ST_NAMES] = "SELECT kind, name, host_id FROM names ORDER BY created_ms",
	[ST_NAME_ADD] = "INSERT OR IGNORE INTO names VALUES (?1, ?2, ?3, ?4)",
	/* a host id is taken once it enrolled or reported */
	[ST_ENROLLED] = "SELECT EXISTS (SELECT 1 FROM hosts WHERE host_id = ?1 AND last_seq > 0)"
			" OR EXISTS (SELECT 1 FROM enrollments WHERE host_id = ?1),"
			" coalesce((SELECT reenroll FROM enrollments WHERE host_id = ?1), 0)",
	[ST_ENROLLMENT_ADD] = "INSERT INTO enrollments VALUES (?1, ?2, ?3, 0)"
			      " ON CONFLICT (host_id) DO UPDATE SET secret_id = ?2,"
			      " enrolled_ms = ?3, reenroll = 0",
	[ST_REENROLL] = "INSERT INTO enrollments (host_id, reenroll) VALUES (?1, 1)"
			" ON CONFLICT (host_id) DO UPDATE SET reenroll = 1",
	[ST_SECRETS] = "SELECT id, created_ms, expires_ms, revoked, uses, max_uses, host_pattern"
		       " FROM enroll_secrets ORDER BY id DESC",
	[ST_ASSIGNMENT_DELETE] = "DELETE FROM assignments WHERE id = ?1",
	[ST_FORGET_SEEN] =
		"SELECT coalesce(last_seen_ms, 0), revoked FROM hosts WHERE host_id = ?1",
	[ST_FORGET_STATES] = "DELETE FROM states WHERE host_id = ?1",
	[ST_FORGET_ENROLLMENT] = "DELETE FROM enrollments WHERE host_id = ?1",
	/* a revoked id keeps its row: it stays refused, and listed as revoked */
	[ST_FORGET_HOST] = "DELETE FROM hosts WHERE host_id = ?1 AND revoked = 0",
};

/* stepped for one row and left there: sq_stmt() resets them */
static const bool one_row[ST_N] = {
	[ST_HOST] = true,	  [ST_POLICY_GET] = true, [ST_REVOKED] = true,
	[ST_SECRET_FIND] = true,  [ST_ENROLLED] = true,	  [ST_FORGET_SEEN] = true,
	[ST_POLICY_USERS] = true,
};

const struct sq_area sq_hosts_area = {
	.id = SQ_HOSTS,
	.sql = sql,
	.one_row = one_row,
	.n = ST_N,
};

static sqlite3_stmt *stmt(struct store *s, enum stmt which)
{
	return sq_stmt(s, &sq_hosts_area, which);
}

/* The statement of an op that writes with it alone; end with written(). */
static sqlite3_stmt *write_stmt(struct store *s, enum stmt which)
{
	sq_write_begin(s, false);
	return stmt(s, which);
}

static int written(struct store *s, int r)
{
	return sq_write_end(s, false, r);
}

/* Each row of st (a HOST_ROW query), then its states. */
static int host_rows_each(struct store *s, sqlite3_stmt *st, const struct store_host_cb *cb,
			  void *arg, bool one)
{
	char id[STORE_ID_MAX];
	struct store_host h;
	sqlite3_stmt *ms;
	int r = 0, rc, mrc;
	bool found = false;

	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		found = true;
		h = (struct store_host){
			.host_id = text_or_empty(st, 0),
			.hostname = text_or_null(st, 1),
			.kernel_release = text_or_null(st, 2),
			.build_id = text_or_null(st, 3),
			.possible_cpus = int_or_null(st, 4),
			.online_cpus = int_or_null(st, 5),
			.mem_total = int_or_null(st, 6),
			.kasan = sqlite3_column_int(st, 7) == 1,
			.module_version = text_or_null(st, 8),
			.labels_json = text_or_empty(st, 9),
			.first_seen_ms = int_or_null(st, 10),
			.last_seen_ms = int_or_null(st, 11),
			.last_seq = int_or_null(st, 12),
			.revoked = sqlite3_column_int(st, 13) == 1,
			.policy = text_or_null(st, 14),
			.policy_version = int_or_null(st, 15),
			.off = sqlite3_column_int(st, 16),
		};
		r = cb->host(arg, &h);
		if (r)
			break;
		/* stmt() lets go of a one-row statement's row */
		snprintf(id, sizeof(id), "%s", h.host_id);
		ms = stmt(s, ST_HOST_STATES);
		sqlite3_bind_text(ms, 1, id, -1, SQLITE_STATIC);
		while (r == 0 && (mrc = sqlite3_step(ms)) == SQLITE_ROW) {
			const struct store_host_state m = {
				.id = text_or_null(ms, 0),
				.state = text_or_null(ms, 1),
				.mode = text_or_null(ms, 2),
				.source = text_or_null(ms, 3),
				.reason = text_or_null(ms, 4),
			};
			r = cb->state(arg, &m);
		}
		if (r == 0 && mrc != SQLITE_DONE)
			return -EIO;
		if (one)
			return 0;
	}
	if (r)
		return r;
	if (rc != SQLITE_DONE)
		return -EIO;
	return one && !found ? -ENOENT : 0;
}

int sq_host(struct store *s, const char *host_id, const struct store_host_cb *cb, void *arg)
{
	sqlite3_stmt *st = stmt(s, ST_HOST);

	sqlite3_bind_text(st, 1, host_id, -1, SQLITE_STATIC);
	return host_rows_each(s, st, cb, arg, true);
}

int sq_hosts(struct store *s, const struct store_host_cb *cb, void *arg)
{
	return host_rows_each(s, stmt(s, ST_HOSTS), cb, arg, false);
}

int sq_hosts_page(struct store *s, const char *after, const char *match, unsigned limit,
		  const struct store_host_cb *cb, void *arg)
{
	sqlite3_stmt *st = stmt(s, ST_HOSTS_PAGE);

	sqlite3_bind_text(st, 1, after ?: "", -1, SQLITE_STATIC);
	if (match && *match)
		sqlite3_bind_text(st, 2, match, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 3, (int)limit);
	return host_rows_each(s, st, cb, arg, false);
}

int sq_policy_add(struct store *s, const struct store_policy *p, int64_t now_ms)
{
	sqlite3_stmt *st = write_stmt(s, ST_POLICY_ADD);
	int rc;

	sqlite3_bind_text(st, 1, p->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)p->version);
	sqlite3_bind_text(st, 3, p->document_json, -1, SQLITE_STATIC);
	if (p->bundle)
		sqlite3_bind_blob(st, 4, p->bundle, (int)p->bundle_len, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, p->signer, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, p->key_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 7, now_ms);
	rc = sqlite3_step(st);
	return written(s, rc == SQLITE_CONSTRAINT ? -EEXIST : rc == SQLITE_DONE ? 0 : -EIO);
}

int sq_policy_get(struct store *s, const char *name, uint64_t version, struct store_policy *p)
{
	sqlite3_stmt *st = stmt(s, ST_POLICY_GET);
	const void *blob;
	int rc;

	memset(p, 0, sizeof(*p));
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)version);
	rc = step_row(st);
	if (rc < 0)
		return rc;
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->version = version;
	p->document_json = strdup((const char *)sqlite3_column_text(st, 0));
	blob = sqlite3_column_blob(st, 1);
	p->bundle_len = (size_t)sqlite3_column_bytes(st, 1);
	if (blob) {
		p->bundle = malloc(p->bundle_len);
		if (p->bundle)
			memcpy(p->bundle, blob, p->bundle_len);
	}
	snprintf(p->signer, sizeof(p->signer), "%s", text_or_empty(st, 2));
	snprintf(p->key_id, sizeof(p->key_id), "%s", text_or_empty(st, 3));
	p->created_ms = sqlite3_column_int64(st, 4);
	p->retired_ms = int_or_null(st, 5);
	if (!p->document_json || (blob && !p->bundle)) {
		store_policy_clear(p);
		return -ENOMEM;
	}
	return 0;
}

int sq_policies(struct store *s, int (*cb)(void *arg, const struct store_policy *p), void *arg)
{
	sqlite3_stmt *st = stmt(s, ST_POLICIES);
	struct store_policy p;
	int r = 0, rc;

	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		memset(&p, 0, sizeof(p));
		snprintf(p.name, sizeof(p.name), "%s", text_or_empty(st, 0));
		p.version = (uint64_t)sqlite3_column_int64(st, 1);
		p.document_json = (char *)text_or_empty(st, 2);
		/* whether it is signed is what a listing says of the bundle */
		p.bundle = sqlite3_column_int(st, 3) ? (uint8_t *)"" : NULL;
		snprintf(p.signer, sizeof(p.signer), "%s", text_or_empty(st, 4));
		snprintf(p.key_id, sizeof(p.key_id), "%s", text_or_empty(st, 5));
		p.created_ms = sqlite3_column_int64(st, 6);
		p.retired_ms = int_or_null(st, 7);
		r = cb(arg, &p);
	}
	if (r)
		return r;
	return rc == SQLITE_DONE ? 0 : -EIO;
}

int sq_assign(struct store *s, const struct store_assignment *a, int64_t now_ms, int64_t *id)
{
	sqlite3_stmt *st = write_stmt(s, ST_ASSIGN);
	int rc;

	sqlite3_bind_text(st, 1, a->policy, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)a->version);
	sqlite3_bind_text(st, 3, a->selector_json, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, now_ms);
	rc = sqlite3_step(st);
	*id = sqlite3_last_insert_rowid(DB(s));
	/* a constraint: no such policy version */
	return written(s, rc == SQLITE_CONSTRAINT ? -ENOENT : rc == SQLITE_DONE ? 0 : -EIO);
}

int sq_assignments(struct store *s, int (*cb)(void *arg, const struct store_assignment *a),
		   void *arg)
{
	sqlite3_stmt *st = stmt(s, ST_ASSIGNMENTS);
	struct store_assignment a;
	int rc, r = 0;

	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		a.id = sqlite3_column_int64(st, 0);
		snprintf(a.policy, sizeof(a.policy), "%s", sqlite3_column_text(st, 1));
		a.version = (uint64_t)sqlite3_column_int64(st, 2);
		a.selector_json = (char *)sqlite3_column_text(st, 3);
		a.created_ms = sqlite3_column_int64(st, 4);
		r = cb(arg, &a);
	}
	return r > 0 ? 0 : r;
}

int sq_revoke(struct store *s, const char *host_id, int64_t now_ms)
{
	sqlite3_stmt *st = write_stmt(s, ST_REVOKE);

	sqlite3_bind_text(st, 1, host_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, now_ms);
	return written(s, step_done(st));
}

int sq_revoked(struct store *s, const char *host_id)
{
	sqlite3_stmt *st = stmt(s, ST_REVOKED);
	int rc;

	sqlite3_bind_text(st, 1, host_id, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_DONE)
		return 0;
	return rc == SQLITE_ROW ? sqlite3_column_int(st, 0) != 0 : -EIO;
}

int sq_secret_add(struct store *s, const struct store_secret *sec, int64_t *id)
{
	sqlite3_stmt *st = write_stmt(s, ST_SECRET_ADD);
	int r;

	sqlite3_bind_text(st, 1, sec->sha256, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, sec->created_ms);
	sqlite3_bind_int64(st, 3, sec->expires_ms);
	sqlite3_bind_int64(st, 4, sec->max_uses);
	if (sec->host_pattern[0])
		sqlite3_bind_text(st, 5, sec->host_pattern, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, 5);
	r = step_done(st);
	*id = sqlite3_last_insert_rowid(DB(s));
	return written(s, r);
}

int sq_secret_get(struct store *s, const char *sha256, struct store_secret *sec)
{
	sqlite3_stmt *st = stmt(s, ST_SECRET_FIND);
	int rc;

	sqlite3_bind_text(st, 1, sha256, -1, SQLITE_STATIC);
	rc = step_row(st);
	if (rc < 0)
		return rc;
	*sec = (struct store_secret){
		.id = sqlite3_column_int64(st, 0),
		.expires_ms = sqlite3_column_int64(st, 1),
		.revoked = sqlite3_column_int(st, 2) != 0,
		.uses = sqlite3_column_int64(st, 3),
		.max_uses = sqlite3_column_int64(st, 4),
	};
	snprintf(sec->sha256, sizeof(sec->sha256), "%s", sha256);
	snprintf(sec->host_pattern, sizeof(sec->host_pattern), "%s", text_or_empty(st, 5));
	return 0;
}

int sq_secret_use(struct store *s, int64_t id)
{
	sqlite3_stmt *st = write_stmt(s, ST_SECRET_USE);
	int r;

	sqlite3_bind_int64(st, 1, id);
	r = step_done(st);
	if (r == 0 && !sqlite3_changes(DB(s)))
		r = -EDQUOT;
	return written(s, r);
}

int sq_rate_take(struct store *s, const char *const *keys, const uint64_t *rates, size_t n,
		 int64_t now_ms)
{
	sqlite3_stmt *st;
	int r = sq_write_begin(s, true);

	if (r < 0)
		return r;
	st = stmt(s, ST_RATE_PRUNE);
	sqlite3_bind_int64(st, 1, now_ms);
	r = step_done(st);
	for (size_t i = 0; r == 0 && i < n; i++) {
		st = stmt(s, ST_RATE_TAKE);
		sqlite3_bind_text(st, 1, keys[i], -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, (int64_t)rates[i]);
		sqlite3_bind_int64(st, 3, now_ms);
		r = step_done(st);
		/* one empty: none is taken */
		if (r == 0 && !sqlite3_changes(DB(s)))
			r = -EAGAIN;
	}
	r = sq_write_end(s, true, r);
	return r == -EAGAIN ? 0 : r < 0 ? r : 1;
}

int sq_secret_revoke(struct store *s, int64_t id)
{
	sqlite3_stmt *st = write_stmt(s, ST_SECRET_REVOKE);
	int r;

	sqlite3_bind_int64(st, 1, id);
	r = step_done(st);
	if (r == 0 && !sqlite3_changes(DB(s)))
		r = -ENOENT;
	return written(s, r);
}

int sq_names(struct store *s, int (*cb)(void *arg, int kind, const char *name, const char *host),
	     void *arg)
{
	sqlite3_stmt *st = stmt(s, ST_NAMES);
	int rc, r = 0;

	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *kind = text_or_empty(st, 0);

		r = cb(arg,
		       !strcmp(kind, "probe")	   ? 0 :
		       !strcmp(kind, "mitigation") ? 1 :
						     -1,
		       text_or_empty(st, 1), text_or_empty(st, 2));
	}
	sqlite3_reset(st);
	return r ?: rc == SQLITE_DONE ? 0 : -EIO;
}

int sq_name_add(struct store *s, int kind, const char *name, const char *host, int64_t now_ms)
{
	sqlite3_stmt *st = write_stmt(s, ST_NAME_ADD);

	sqlite3_bind_text(st, 1, kind == 0 ? "probe" : "mitigation", -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, host, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, now_ms);
	return written(s, step_done(st));
}

int sq_enrolled(struct store *s, const char *host, bool *taken, bool *reenroll)
{
	sqlite3_stmt *st = stmt(s, ST_ENROLLED);

	sqlite3_bind_text(st, 1, host, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_ROW)
		return -EIO;
	*taken = sqlite3_column_int(st, 0) != 0;
	*reenroll = sqlite3_column_int(st, 1) != 0;
	return 0;
}

int sq_enrollment_add(struct store *s, const char *host, int64_t secret_id, int64_t now_ms)
{
	sqlite3_stmt *st = write_stmt(s, ST_ENROLLMENT_ADD);

	sqlite3_bind_text(st, 1, host, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, secret_id);
	sqlite3_bind_int64(st, 3, now_ms);
	return written(s, step_done(st));
}

int sq_reenroll(struct store *s, const char *host)
{
	sqlite3_stmt *st = write_stmt(s, ST_REENROLL);

	sqlite3_bind_text(st, 1, host, -1, SQLITE_STATIC);
	return written(s, step_done(st));
}

int sq_host_facts(struct store *s, store_facts_cb cb, void *arg)
{
	sqlite3_stmt *st = stmt(s, ST_HOST_FACTS);
	int rc, r = 0;

	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		Kmemctl__V1__HostFacts f = KMEMCTL__V1__HOST_FACTS__INIT;
		json_t *labels = json_loads_lossy(text_or_empty(st, 8)), *v;
		size_t n = json_object_size(labels);
		Kmemctl__V1__HostFacts__LabelsEntry *le = calloc(n ?: 1, sizeof(*le));
		Kmemctl__V1__HostFacts__LabelsEntry **lep = calloc(n ?: 1, sizeof(*lep));
		const char *key;

		if (!le || !lep) {
			free(le);
			free(lep);
			json_decref(labels);
			return -ENOMEM;
		}

		f.host_id = (char *)text_or_empty(st, 0);
		f.hostname = (char *)text_or_empty(st, 1);
		f.kernel_release = (char *)text_or_empty(st, 2);
		f.kernel_build_id = (char *)text_or_empty(st, 3);
		f.possible_cpus = (uint32_t)sqlite3_column_int64(st, 4);
		f.online_cpus = (uint32_t)sqlite3_column_int64(st, 5);
		f.mem_total_bytes = (uint64_t)sqlite3_column_int64(st, 6);
		f.kasan = sqlite3_column_int(st, 7) != 0;
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
		r = cb(arg, &f, sqlite3_column_text(st, 9) ? text_or_empty(st, 9) : NULL,
		       (uint64_t)sqlite3_column_int64(st, 10));
		free(le);
		free(lep);
		json_decref(labels);
	}
	if (r)
		return r;
	return rc == SQLITE_DONE ? 0 : -EIO;
}

int sq_secrets(struct store *s, int (*cb)(void *arg, const struct store_secret *sec), void *arg)
{
	sqlite3_stmt *st = stmt(s, ST_SECRETS);
	struct store_secret sec;
	int rc, r = 0;

	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		memset(&sec, 0, sizeof(sec));
		sec.id = sqlite3_column_int64(st, 0);
		sec.created_ms = sqlite3_column_int64(st, 1);
		sec.expires_ms = sqlite3_column_int64(st, 2);
		sec.revoked = sqlite3_column_int(st, 3) != 0;
		sec.uses = sqlite3_column_int64(st, 4);
		sec.max_uses = sqlite3_column_int64(st, 5);
		snprintf(sec.host_pattern, sizeof(sec.host_pattern), "%s", text_or_empty(st, 6));
		r = cb(arg, &sec);
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = -EIO;
	return r > 0 ? 0 : r;
}

int sq_assignment_delete(struct store *s, int64_t id)
{
	sqlite3_stmt *st = write_stmt(s, ST_ASSIGNMENT_DELETE);
	int r;

	sqlite3_bind_int64(st, 1, id);
	r = step_done(st);
	if (r == 0 && !sqlite3_changes(DB(s)))
		r = -ENOENT;
	return written(s, r);
}

int sq_host_forget(struct store *s, const char *host, int64_t since_ms)
{
	static const enum stmt drops[] = { ST_FORGET_STATES, ST_FORGET_ENROLLMENT, ST_FORGET_HOST };
	sqlite3_stmt *st;
	int r = sq_write_begin(s, true);

	if (r < 0)
		return r;
	st = stmt(s, ST_FORGET_SEEN);
	sqlite3_bind_text(st, 1, host, -1, SQLITE_STATIC);
	r = step_row(st);
	if (r == 0 && sqlite3_column_int64(st, 0) >= since_ms)
		r = -EBUSY;
	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(drops); i++) {
		st = stmt(s, drops[i]);
		sqlite3_bind_text(st, 1, host, -1, SQLITE_STATIC);
		r = step_done(st);
	}
	return sq_write_end(s, true, r);
}

int sq_policy_retire(struct store *s, const char *name, uint64_t version, int64_t now_ms, char *why,
		     size_t whylen)
{
	sqlite3_stmt *st;
	int r = sq_write_begin(s, true);

	if (r < 0)
		return r;
	st = stmt(s, ST_POLICY_USERS);
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)version);
	r = step_row(st);
	if (r == 0 && sqlite3_column_int64(st, 0)) {
		snprintf(why, whylen, "%lld hosts run it", (long long)sqlite3_column_int64(st, 0));
		r = -EBUSY;
	} else if (r == 0 && sqlite3_column_type(st, 1) != SQLITE_NULL) {
		snprintf(why, whylen, "assignment %lld names it",
			 (long long)sqlite3_column_int64(st, 1));
		r = -EBUSY;
	} else if (r == 0 && sqlite3_column_type(st, 2) != SQLITE_NULL) {
		snprintf(why, whylen, "rollout %s names it", text_or_empty(st, 2));
		r = -EBUSY;
	}
	if (r == 0) {
		st = stmt(s, ST_POLICY_RETIRE);
		sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)version);
		sqlite3_bind_int64(st, 3, now_ms);
		r = step_done(st);
		if (r == 0 && !sqlite3_changes(DB(s)))
			r = -ENOENT;
	}
	return sq_write_end(s, true, r);
}

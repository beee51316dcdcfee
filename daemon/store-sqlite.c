// SPDX-License-Identifier: GPL-2.0
/*
 * The SQLite backend of kmemd's store (store.h): one file, WAL, schema
 * migrations counted in schema_version, every statement prepared once.
 * It gives rows; the admin API's JSON is built by kmemd (admin-json.c).
 * This file is what the areas share: the connection, migrations, batches
 * and the statement cache, and the ops table; the ops themselves are in
 * one file per area (store-sqlite.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "store-sqlite.h"

/* Migrations in order; schema_version counts how many have run. */
static const char *const migrations[] = {
	"CREATE TABLE hosts ("
	" host_id TEXT PRIMARY KEY, hostname TEXT, kernel_release TEXT, build_id TEXT,"
	" possible_cpus INTEGER, online_cpus INTEGER, mem_total INTEGER, kasan INTEGER,"
	" module_version TEXT, labels TEXT NOT NULL DEFAULT '{}',"
	" first_seen_ms INTEGER, last_seen_ms INTEGER, last_seq INTEGER NOT NULL DEFAULT 0,"
	" policy_name TEXT, policy_version INTEGER, revoked INTEGER NOT NULL DEFAULT 0);"
	"CREATE TABLE states ("
	" host_id TEXT NOT NULL, id TEXT NOT NULL, state TEXT, mode TEXT, source TEXT,"
	" reason TEXT, updated_ms INTEGER, PRIMARY KEY (host_id, id)) WITHOUT ROWID;"
	"CREATE TABLE samples ("
	" host_id TEXT NOT NULL, probe TEXT NOT NULL, start_ms INTEGER, end_ms INTEGER,"
	" first_bucket INTEGER, counts BLOB, count INTEGER, sum_ns INTEGER, max_ns INTEGER);"
	"CREATE INDEX samples_by_probe ON samples (probe, end_ms);"
	"CREATE INDEX samples_by_host ON samples (host_id, end_ms);"
	"CREATE TABLE counters ("
	" host_id TEXT NOT NULL, unix_ms INTEGER, seq INTEGER, soft_lockups INTEGER,"
	" hard_lockups INTEGER, rcu_stalls INTEGER, hung_tasks INTEGER, tlb_shootdowns INTEGER,"
	" mitigation_trips INTEGER, events_dropped INTEGER, reports_dropped INTEGER,"
	" uptime_ms INTEGER);"
	"CREATE INDEX counters_by_host ON counters (host_id, unix_ms);"
	"CREATE TABLE events ("
	" host_id TEXT NOT NULL, unix_ms INTEGER, kind TEXT, cpu INTEGER, duration_ns INTEGER,"
	" comm TEXT, pid INTEGER, stack TEXT, mitigation TEXT, probe TEXT, message TEXT);"
	"CREATE INDEX events_by_host ON events (host_id, unix_ms);"
	"CREATE TABLE policies ("
	" name TEXT NOT NULL, version INTEGER NOT NULL, document TEXT NOT NULL, bundle BLOB,"
	" signer TEXT, key_id TEXT, created_ms INTEGER, PRIMARY KEY (name, version));"
	"CREATE TABLE assignments ("
	" id INTEGER PRIMARY KEY, policy TEXT NOT NULL, version INTEGER NOT NULL,"
	" selector TEXT NOT NULL, created_ms INTEGER,"
	" FOREIGN KEY (policy, version) REFERENCES policies (name, version));"
	"CREATE TABLE audit ("
	" id INTEGER PRIMARY KEY, ts_ms INTEGER, actor TEXT, action TEXT, detail TEXT);",
	/* 2: enrollment secrets, kept as SHA-256 only */
	"CREATE TABLE enroll_secrets ("
	" id INTEGER PRIMARY KEY, sha256 TEXT NOT NULL UNIQUE, created_ms INTEGER,"
	" expires_ms INTEGER, revoked INTEGER NOT NULL DEFAULT 0, uses INTEGER DEFAULT 0);",
	/* 3: telemetry past the raw window, one histogram per host, probe and hour */
	"CREATE TABLE rollups ("
	" host_id TEXT NOT NULL, probe TEXT NOT NULL, hour_ms INTEGER NOT NULL,"
	" first_bucket INTEGER, counts BLOB, count INTEGER, sum_ns INTEGER, max_ns INTEGER,"
	" samples INTEGER, PRIMARY KEY (host_id, probe, hour_ms)) WITHOUT ROWID;"
	"CREATE INDEX rollups_by_probe ON rollups (probe, hour_ms);",
	/* 4: rollouts, their member hosts in plan order */
	"CREATE TABLE rollouts ("
	" name TEXT PRIMARY KEY, spec TEXT NOT NULL, state TEXT NOT NULL,"
	" wave INTEGER NOT NULL DEFAULT 0, wave_started_ms INTEGER, reason TEXT,"
	" created_ms INTEGER, updated_ms INTEGER);"
	"CREATE TABLE rollout_hosts ("
	" rollout TEXT NOT NULL REFERENCES rollouts (name), host_id TEXT NOT NULL,"
	" stratum TEXT, position REAL, wave INTEGER, prev_policy TEXT, prev_version INTEGER,"
	" PRIMARY KEY (rollout, host_id)) WITHOUT ROWID;"
	"CREATE INDEX rollout_hosts_by_host ON rollout_hosts (host_id);",
	/* 5: each wave's verdicts with the numbers behind them */
	"CREATE TABLE verdicts ("
	" id INTEGER PRIMARY KEY, rollout TEXT NOT NULL REFERENCES rollouts (name),"
	" wave INTEGER NOT NULL, ts_ms INTEGER, verdict TEXT NOT NULL, gate TEXT, reason TEXT,"
	" detail TEXT);"
	"CREATE INDEX verdicts_by_rollout ON verdicts (rollout, id);",
	/*
	 * 6: the names hosts brought in (daemon/names.h), who enrolled which
	 * host id, and secrets limited in uses and host ids
	 */
	"CREATE TABLE names ("
	" kind TEXT NOT NULL, name TEXT NOT NULL, host_id TEXT, created_ms INTEGER,"
	" PRIMARY KEY (kind, name)) WITHOUT ROWID;"
	"CREATE TABLE enrollments ("
	" host_id TEXT PRIMARY KEY, secret_id INTEGER, enrolled_ms INTEGER,"
	" reenroll INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;"
	"ALTER TABLE enroll_secrets ADD COLUMN max_uses INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE enroll_secrets ADD COLUMN host_pattern TEXT;",
	/*
	 * 7: a report's probe histograms in one row (three b-tree inserts, not
	 * three per probe): probes is a JSON object, probe name to [start_ms,
	 * first_bucket, count, sum_ns, max_ns, offset, length] of its counts
	 * in the row's counts blob; every probe of a row ends at its end_ms.
	 * samples stays, as a view with the old table's columns (and rows one
	 * may insert), for queries and for operators.
	 */
	"CREATE TABLE report_samples ("
	" host_id TEXT NOT NULL, end_ms INTEGER NOT NULL, probes TEXT NOT NULL, counts BLOB);"
	"CREATE INDEX report_samples_by_host ON report_samples (host_id, end_ms);"
	"CREATE INDEX report_samples_by_time ON report_samples (end_ms);"
	"INSERT INTO report_samples SELECT host_id, end_ms, json_object(probe, json_array(start_ms,"
	" first_bucket, count, sum_ns, max_ns, 0, length(counts))), counts FROM samples;"
	"DROP TABLE samples;"
	"CREATE VIEW samples (host_id, probe, start_ms, end_ms, first_bucket, counts, count, sum_ns,"
	" max_ns) AS SELECT s.host_id, j.key, json_extract(j.value, '$[0]'), s.end_ms,"
	" json_extract(j.value, '$[1]'), substr(s.counts, json_extract(j.value, '$[5]') + 1,"
	" json_extract(j.value, '$[6]')), json_extract(j.value, '$[2]'),"
	" json_extract(j.value, '$[3]'), json_extract(j.value, '$[4]')"
	" FROM report_samples s, json_each(s.probes) j;"
	"CREATE TRIGGER samples_add INSTEAD OF INSERT ON samples BEGIN"
	" INSERT INTO report_samples VALUES (NEW.host_id, NEW.end_ms, json_object(NEW.probe,"
	" json_array(NEW.start_ms, NEW.first_bucket, NEW.count, NEW.sum_ns, NEW.max_ns, 0,"
	" length(NEW.counts))), NEW.counts); END;",
	/*
	 * 8: probes in a binary form C reads without a parser (store-rows.h),
	 * converted from schema 7's JSON by rs_migrate_json(), which puts the
	 * new table in the old one's place. The samples view cannot stay: this
	 * SQLite (3.40) has no unhex() or the like to read binary in SQL.
	 */
	"DROP TRIGGER IF EXISTS samples_add; DROP VIEW IF EXISTS samples;"
	"CREATE TABLE report_samples8 ("
	" host_id TEXT NOT NULL, end_ms INTEGER NOT NULL, probes BLOB NOT NULL, counts BLOB);",
	/*
	 * 9: a rollout's members in plan order from an index that holds them,
	 * not sorted on every engine tick (10,000 members: half the cost of
	 * reading them)
	 */
	("CREATE INDEX rollout_hosts_by_plan ON rollout_hosts"
	 " (rollout, wave, position, host_id, stratum, prev_policy, prev_version);"),
	/* 10: a rollout's gates' evidence (daemon/evidence.h), so another kmemd goes on with it */
	"ALTER TABLE rollouts ADD COLUMN evidence TEXT;",
	/* 11: which kmemd runs the rollout engine, and until when (store.h's lease) */
	("CREATE TABLE leases (name TEXT PRIMARY KEY, holder TEXT NOT NULL,"
	 " expires_ms INTEGER NOT NULL) WITHOUT ROWID;"),
	/* 12: token buckets every kmemd on the store shares (store.h's rate_take) */
	("CREATE TABLE rate_buckets (key TEXT PRIMARY KEY, tokens REAL NOT NULL,"
	 " last_ms INTEGER NOT NULL) WITHOUT ROWID;"
	 "CREATE INDEX rate_buckets_by_time ON rate_buckets (last_ms);"),
	/*
	 * 13: the host an audit row is about, for GET /v1/audit's filters, the
	 * operator certificates kmemd saw or revoked, the fleet stop, and why a
	 * host applies nothing (its kill switches, Report.off)
	 */
	("ALTER TABLE audit ADD COLUMN host TEXT;"
	 "CREATE INDEX audit_by_time ON audit (ts_ms);"
	 "CREATE TABLE operators (fingerprint TEXT PRIMARY KEY, name TEXT NOT NULL DEFAULT '',"
	 " role TEXT NOT NULL DEFAULT '', not_after_ms INTEGER, first_seen_ms INTEGER,"
	 " last_seen_ms INTEGER, revoked_ms INTEGER, revoked_by TEXT) WITHOUT ROWID;"
	 "CREATE INDEX operators_by_name ON operators (name);"
	 "ALTER TABLE hosts ADD COLUMN off INTEGER;"
	 "ALTER TABLE rollouts ADD COLUMN archived_ms INTEGER;"
	 "ALTER TABLE policies ADD COLUMN retired_ms INTEGER;"
	 "CREATE TABLE fleet_stop (name TEXT PRIMARY KEY, stopped INTEGER NOT NULL,"
	 " since_ms INTEGER, actor TEXT, reason TEXT) WITHOUT ROWID;"),
	/*
	 * 14: the mitigations a host waits for a build record for (a JSON
	 * array; NULL: none), the builds waiting hosts sent their build files
	 * of, and the signed records operators published for them
	 */
	("ALTER TABLE hosts ADD COLUMN waiting TEXT;"
	 "CREATE TABLE builds (build_id TEXT PRIMARY KEY, release TEXT NOT NULL,"
	 " version TEXT NOT NULL, build_file TEXT NOT NULL, first_seen_ms INTEGER NOT NULL,"
	 " last_seen_ms INTEGER NOT NULL) WITHOUT ROWID;"
	 "CREATE TABLE build_records (sha256 TEXT PRIMARY KEY, build_id TEXT NOT NULL,"
	 " release TEXT NOT NULL, version TEXT NOT NULL, bundle BLOB NOT NULL, signer TEXT,"
	 " key_id TEXT, created_ms INTEGER NOT NULL);"
	 "CREATE INDEX build_records_by_build ON build_records (build_id);"),
};

/* What a migration does in C after its SQL, in the same transaction. */
static int (*const migrate_c[ARRAY_SIZE(migrations)])(sqlite3 *db) = {
	[7] = rs_migrate_json,
};

static const struct sq_area *const areas[SQ_AREAS] = {
	[SQ_INGEST] = &sq_ingest_area, [SQ_HOSTS] = &sq_hosts_area,
	[SQ_ACCESS] = &sq_access_area, [SQ_ROLLOUTS] = &sq_rollouts_area,
	[SQ_UPKEEP] = &sq_upkeep_area, [SQ_BUILDS] = &sq_builds_area,
};

/*
 * Turns at writing among the read-write connections to one file in this
 * process (sq_write_begin()), in the order they asked: a ticket lock.
 */
struct sq_turn {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t next, serving;
	unsigned refs;
};

static struct sq_turn *turn_new(void)
{
	struct sq_turn *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->cond, NULL);
	t->refs = 1;
	return t;
}

static void turn_put(struct sq_turn *t)
{
	unsigned refs;

	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	refs = --t->refs;
	pthread_mutex_unlock(&t->lock);
	if (refs)
		return;
	pthread_cond_destroy(&t->cond);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

static void turn_take(struct sqlite_store *q)
{
	struct sq_turn *t = q->turn;
	uint64_t mine;

	pthread_mutex_lock(&t->lock);
	mine = t->next++;
	while (t->serving != mine)
		pthread_cond_wait(&t->cond, &t->lock);
	pthread_mutex_unlock(&t->lock);
	q->has_turn = true;
}

static void turn_give(struct sqlite_store *q)
{
	struct sq_turn *t = q->turn;

	if (!q->has_turn)
		return;
	q->has_turn = false;
	pthread_mutex_lock(&t->lock);
	t->serving++;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

/* No statement left on a row: none holds a read snapshot. */
static void let_go(struct sqlite_store *q)
{
	sqlite3_stmt *p = NULL;

	while ((p = sqlite3_next_stmt(q->db, p)))
		if (sqlite3_stmt_busy(p))
			sqlite3_reset(p);
	q->held = NULL;
}

int sq_write_begin(struct store *s, bool txn)
{
	struct sqlite_store *q = (struct sqlite_store *)s;

	if (!q->depth++)
		q->own = sqlite3_get_autocommit(q->db);
	if (q->depth > 1 || !q->own) {
		if (txn && exec(q->db, "SAVEPOINT op") < 0) {
			q->depth--;
			return -EIO;
		}
		return 0;
	}
	let_go(q);
	turn_take(q);
	if (txn && exec(q->db, "BEGIN IMMEDIATE") < 0) {
		turn_give(q);
		q->depth--;
		return -EIO;
	}
	return 0;
}

int sq_write_end(struct store *s, bool txn, int r)
{
	struct sqlite_store *q = (struct sqlite_store *)s;

	/* the memo may hold what is undone now */
	if (r < 0)
		host_memo_clear(&q->memo);
	if (--q->depth > 0 || !q->own) {
		if (txn && r < 0)
			exec(q->db, "ROLLBACK TO op");
		if (txn)
			exec(q->db, "RELEASE op");
		return r;
	}
	if (txn && r == 0 && exec(q->db, "COMMIT") < 0) {
		r = -EIO;
		host_memo_clear(&q->memo);
	}
	/* SQLite may have rolled back already: then there is nothing to undo */
	if (txn && r < 0 && !sqlite3_get_autocommit(q->db))
		exec(q->db, "ROLLBACK");
	turn_give(q);
	return r;
}

static void sq_release_held(struct sqlite_store *q)
{
	if (q->held)
		sqlite3_reset(q->held);
	q->held = NULL;
}

sqlite3_stmt *sq_stmt(struct store *s, const struct sq_area *area, unsigned which)
{
	struct sqlite_store *q = (struct sqlite_store *)s;
	sqlite3_stmt *st = q->st[area->id][which];

	sq_release_held(q);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (area->one_row && area->one_row[which])
		q->held = st;
	return st;
}

static int migrate(sqlite3 *db)
{
	sqlite3_stmt *st;
	int version = 0, r;
	size_t i;

	if (exec(db, "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)") < 0)
		return -EIO;
	if (sqlite3_prepare_v2(db, "SELECT max(version) FROM schema_version", -1, &st, NULL))
		return -EIO;
	if (sqlite3_step(st) == SQLITE_ROW)
		version = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	/* a file from a newer kmemd: refuse rather than misread it */
	if (version > (int)ARRAY_SIZE(migrations))
		return -EPROTO;
	for (i = (size_t)version; i < ARRAY_SIZE(migrations); i++) {
		char bump[64];

		snprintf(bump, sizeof(bump), "INSERT INTO schema_version VALUES (%zu)", i + 1);
		r = exec(db, "BEGIN IMMEDIATE");
		if (r == 0)
			r = exec(db, migrations[i]);
		if (r == 0 && migrate_c[i])
			r = migrate_c[i](db);
		if (r == 0)
			r = exec(db, bump);
		if (r == 0)
			r = exec(db, "COMMIT");
		if (r < 0) {
			exec(db, "ROLLBACK");
			return r;
		}
	}
	return 0;
}

static void sq_close(struct store *s)
{
	struct sqlite_store *q = (struct sqlite_store *)s;
	unsigned a, i;

	if (!q)
		return;
	for (a = 0; a < SQ_AREAS; a++) {
		for (i = 0; q->st[a] && i < areas[a]->n; i++)
			sqlite3_finalize(q->st[a][i]);
		free(q->st[a]);
	}
	sqlite3_close(q->db);
	host_memo_clear(&q->memo);
	turn_give(q);
	turn_put(q->turn);
	free(q->probes.p);
	free(q->counts.p);
	free(q);
}

static const char *sq_error(struct store *s)
{
	return sqlite3_errmsg(DB(s));
}

/* A connection to path taking turns at writing with those of turn (NULL: a new set). */
static int open_conn(const char *path, struct sq_turn *turn, struct store **out, char *err,
		     size_t errlen)
{
	struct sqlite_store *q = calloc(1, sizeof(*q));
	unsigned a, i;
	int r;

	if (!q)
		return -ENOMEM;
	q->base.ops = &store_sqlite_ops;
	if (turn) {
		pthread_mutex_lock(&turn->lock);
		turn->refs++;
		pthread_mutex_unlock(&turn->lock);
		q->turn = turn;
	} else {
		q->turn = turn_new();
	}
	if (!q->turn) {
		free(q);
		return -ENOMEM;
	}
	/*
	 * NOMUTEX: a connection is only ever used by the thread that opened it
	 * (kmemd's loop; the series worker has its own), so SQLite's lock
	 * around every call, a tenth of a gate window's instructions, buys
	 * nothing.
	 */
	if (sqlite3_open_v2(path, &q->db,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
			    NULL)) {
		r = -EIO;
		goto err;
	}
	/*
	 * WAL: readers (admin queries) never wait for the writer (ingest);
	 * synchronous=NORMAL keeps every committed report across a crash of
	 * kmemd, and loses at most the last ones on a power cut.
	 */
	sqlite3_busy_timeout(q->db, 5000);
	r = exec(q->db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"
			"PRAGMA wal_autocheckpoint = 8192; PRAGMA cache_size = -32768;"
			"PRAGMA foreign_keys = ON;");
	if (r == 0)
		r = migrate(q->db);
	for (a = 0; r == 0 && a < SQ_AREAS; a++) {
		q->st[a] = calloc(areas[a]->n, sizeof(*q->st[a]));
		if (!q->st[a])
			r = -ENOMEM;
		for (i = 0; r == 0 && i < areas[a]->n; i++)
			if (sqlite3_prepare_v3(q->db, areas[a]->sql[i], -1,
					       SQLITE_PREPARE_PERSISTENT, &q->st[a][i], NULL))
				r = -EIO;
	}
	if (r < 0)
		goto err;
	*out = &q->base;
	return 0;
err:
	snprintf(err, errlen, "%s",
		 r == -EPROTO ? "written by a newer kmemd (schema version)" :
		 q->db	      ? sqlite3_errmsg(q->db) :
				strerror(-r));
	sq_close(&q->base);
	return r;
}

static int sq_open(const char *path, struct store **out, char *err, size_t errlen)
{
	return open_conn(path, NULL, out, err, errlen);
}

/* The same connection, refusing writes: SQLite then never takes the write lock. */
static int sq_open_reader(const char *path, struct store **out, char *err, size_t errlen)
{
	int r = sq_open(path, out, err, errlen);

	if (r == 0 && exec(DB(*out), "PRAGMA query_only = ON;") < 0) {
		snprintf(err, errlen, "%s", sqlite3_errmsg(DB(*out)));
		sq_close(*out);
		r = -EIO;
	}
	return r;
}

static int sq_open_beside(struct store *s, struct store **out, char *err, size_t errlen)
{
	struct sqlite_store *q = (struct sqlite_store *)s;
	const char *path = sqlite3_db_filename(q->db, "main");

	return open_conn(path ?: "", q->turn, out, err, errlen);
}

/* A batch is a write op whose statements are the caller's: its ingests. */
static int sq_begin(struct store *s)
{
	/* the batch reads from its own start, not from a query before it */
	return sq_write_begin(s, true);
}

static int sq_commit(struct store *s)
{
	return sq_write_end(s, true, 0);
}

static void sq_rollback(struct store *s)
{
	sq_write_end(s, true, -EIO);
}

void column_hist(sqlite3_stmt *st, int col, struct hist *h)
{
	unsigned first = (unsigned)sqlite3_column_int(st, col);
	size_t n = (size_t)sqlite3_column_bytes(st, col + 1) / 8;
	const uint8_t *blob = sqlite3_column_blob(st, col + 1);
	size_t i;

	memset(h, 0, sizeof(*h));
	/* the blob need not be aligned for u64 reads: copy each */
	for (i = 0; i < n && first + i < HIST_BUCKETS; i++)
		memcpy(&h->buckets[first + i], blob + i * 8, 8);
	h->count = (uint64_t)sqlite3_column_int64(st, col + 2);
	h->sum_ns = (uint64_t)sqlite3_column_int64(st, col + 3);
	h->max_ns = (uint64_t)sqlite3_column_int64(st, col + 4);
}

void bind_hist(sqlite3_stmt *st, int col, const struct hist *h)
{
	unsigned first = 0, last = HIST_BUCKETS;

	while (first < HIST_BUCKETS && !h->buckets[first])
		first++;
	while (last > first && !h->buckets[last - 1])
		last--;
	sqlite3_bind_int(st, col, first < last ? (int)first : 0);
	/* native-endian u64s: one host architecture per kmemd file */
	sqlite3_bind_blob(st, col + 1, h->buckets + first, (int)(last - first) * 8,
			  SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, col + 2, (sqlite3_int64)h->count);
	sqlite3_bind_int64(st, col + 3, (sqlite3_int64)h->sum_ns);
	sqlite3_bind_int64(st, col + 4, (sqlite3_int64)h->max_ns);
}

static void sq_idle(struct store *s)
{
	let_go((struct sqlite_store *)s);
}

const struct store_ops store_sqlite_ops = {
	.name = "sqlite",
	.open = sq_open,
	.open_reader = sq_open_reader,
	.open_beside = sq_open_beside,
	.close = sq_close,
	.error = sq_error,
	.ingest = sq_ingest,
	.host_ends = sq_host_ends,
	.begin = sq_begin,
	.commit = sq_commit,
	.rollback = sq_rollback,
	.host = sq_host,
	.hosts = sq_hosts,
	.hosts_page = sq_hosts_page,
	.policy_add = sq_policy_add,
	.policy_get = sq_policy_get,
	.policies = sq_policies,
	.policy_retire = sq_policy_retire,
	.assign = sq_assign,
	.assignments = sq_assignments,
	.audit = sq_audit,
	.audit_rows = sq_audit_rows,
	.operator_seen = sq_operator_seen,
	.operator_revoke = sq_operator_revoke,
	.operator_revoke_name = sq_operator_revoke_name,
	.operator_revoked = sq_operator_revoked,
	.revocations = sq_revocations,
	.operators = sq_operators,
	.fleet_stop_get = sq_fleet_stop_get,
	.fleet_stop_set = sq_fleet_stop_set,
	.revoke = sq_revoke,
	.revoked = sq_revoked,
	.samples = sq_samples,
	.tally = sq_tally,
	.idle = sq_idle,
	.secret_add = sq_secret_add,
	.secret_get = sq_secret_get,
	.secret_use = sq_secret_use,
	.rate_take = sq_rate_take,
	.names = sq_names,
	.name_add = sq_name_add,
	.enrolled = sq_enrolled,
	.enrollment_add = sq_enrollment_add,
	.reenroll = sq_reenroll,
	.secret_revoke = sq_secret_revoke,
	.secrets = sq_secrets,
	.assignment_delete = sq_assignment_delete,
	.host_forget = sq_host_forget,
	.expire = sq_expire,
	.rollup = sq_rollup,
	.host_facts = sq_host_facts,
	.rollout_add = sq_rollout_add,
	.rollout_get = sq_rollout_get,
	.rollout_archive = sq_rollout_archive,
	.rollouts = sq_rollouts,
	.rollout_update = sq_rollout_update,
	.rollout_start = sq_rollout_start,
	.members = sq_members,
	.rollouts_started = sq_rollouts_started,
	.changes = sq_changes,
	.rollouts_active = sq_rollouts_active,
	.lease = sq_lease,
	.rollout_gauges = sq_rollout_gauges,
	.verdict_last = sq_verdict_last,
	.verdicts = sq_verdicts,
	.window = sq_window,
	.host_rows = sq_host_rows,
	.build_seen = sq_build_seen,
	.builds = sq_builds,
	.build_file = sq_build_file,
	.build_record_add = sq_build_record_add,
	.build_records = sq_build_records,
	.build_record_count = sq_build_record_count,
};

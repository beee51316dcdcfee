// SPDX-License-Identifier: GPL-2.0
/*
 * The SQLite backend of kmemd's store (store.h): one file, WAL, schema
 * migrations counted in schema_version, every statement prepared once.
 * It gives rows; the admin API's JSON is built by kmemd (admin-json.c).
 */
#include <errno.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-text.h"
#include "macro.h"
#include "store.h"

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
};

enum stmt {
	ST_SEEN,
	ST_HOST_UPSERT,
	ST_STATES_READ,
	ST_STATES_CLEAR,
	ST_STATE_ADD,
	ST_SAMPLE_ADD,
	ST_COUNTERS_ADD,
	ST_EVENT_ADD,
	ST_HOST,
	ST_HOST_STATES,
	ST_HOSTS,
	ST_POLICY_ADD,
	ST_POLICY_GET,
	ST_POLICIES,
	ST_ASSIGN,
	ST_ASSIGNMENTS,
	ST_AUDIT,
	ST_REVOKE,
	ST_REVOKED,
	ST_SAMPLES,
	ST_SECRET_ADD,
	ST_SECRET_FIND,
	ST_SECRET_USE,
	ST_SECRET_REVOKE,
	ST_NAMES,
	ST_NAME_ADD,
	ST_ENROLLED,
	ST_ENROLLMENT_ADD,
	ST_REENROLL,
	ST_EXPIRE_SAMPLES,
	ST_EXPIRE_COUNTERS,
	ST_EXPIRE_EVENTS,
	ST_EXPIRE_ROLLUPS,
	ST_ROLLUP_HOSTS,
	ST_ROLLUP_READ,
	ST_ROLLUP_GET,
	ST_ROLLUP_PUT,
	ST_ROLLUP_DROP,
	ST_ROLLUP_COUNTERS,
	ST_HOST_FACTS,
	ST_ROLLOUT_ADD,
	ST_ROLLOUT_GET,
	ST_ROLLOUTS,
	ST_ROLLOUT_UPDATE,
	ST_MEMBER_ADD,
	ST_MEMBERS,
	ST_ROLLOUTS_STARTED,
	ST_CHANGES,
	ST_ROLLOUTS_ACTIVE,
	ST_ROLLOUT_GAUGES,
	ST_VERDICT_ADD,
	ST_VERDICT_LAST,
	ST_WAVE_COUNTS,
	ST_VERDICTS,
	ST_WINDOW_REPORTS,
	ST_WINDOW_EVENTS,
	ST_WINDOW_TRIPPED,
	ST_WINDOW_SAMPLES,
	ST_TALLY_HOSTS,
	ST_TALLY_STATES,
	ST_TALLY_EVENTS,
	ST_TALLY_KERNELS,
	ST_TALLY_POLICIES,
	ST_TALLY_SILENT,
	ST_HOSTS_PAGE,
	ST_HOST_REPORTS,
	ST_HOST_EVENTS,
	ST_HOST_SAMPLES,
	ST_N,
};

#define HOST_ROW                                                                            \
	"SELECT host_id, hostname, kernel_release, build_id, possible_cpus, online_cpus,"   \
	" mem_total, kasan, module_version, labels, first_seen_ms, last_seen_ms, last_seq," \
	" revoked, policy_name, policy_version FROM hosts"

static const char *const sql[ST_N] = {
	[ST_SEEN] = "SELECT 1 FROM counters WHERE host_id = ?1 AND unix_ms = ?2 AND seq = ?3",
	[ST_HOST_UPSERT] =
		"INSERT INTO hosts (host_id, hostname, kernel_release, build_id, possible_cpus,"
		" online_cpus, mem_total, kasan, module_version, labels, first_seen_ms,"
		" last_seen_ms, last_seq, policy_name, policy_version)"
		" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11, ?12, ?13, ?14)"
		" ON CONFLICT (host_id) DO UPDATE SET hostname = ?2, kernel_release = ?3,"
		" build_id = ?4, possible_cpus = ?5, online_cpus = ?6, mem_total = ?7, kasan = ?8,"
		" module_version = ?9, labels = ?10, last_seen_ms = ?11, last_seq = ?12,"
		" policy_name = ?13, policy_version = ?14"
		/*
		 * most reports change nothing here: the row is rewritten when
		 * something did, or to keep last_seen within a minute
		 */
		" WHERE hostname IS NOT ?2 OR kernel_release IS NOT ?3 OR build_id IS NOT ?4"
		" OR possible_cpus IS NOT ?5 OR online_cpus IS NOT ?6 OR mem_total IS NOT ?7"
		" OR kasan IS NOT ?8 OR module_version IS NOT ?9 OR labels IS NOT ?10"
		" OR policy_name IS NOT ?13 OR policy_version IS NOT ?14 OR last_seq = 0"
		" OR last_seen_ms < ?11 - 60000",
	[ST_STATES_READ] = "SELECT id, state, mode, source, reason FROM states WHERE host_id = ?1",
	[ST_STATES_CLEAR] = "DELETE FROM states WHERE host_id = ?1",
	/* a row that did not change is not written: most reports change none */
	[ST_STATE_ADD] =
		"INSERT INTO states VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
		" ON CONFLICT (host_id, id) DO UPDATE SET state = excluded.state,"
		" mode = excluded.mode, source = excluded.source, reason = excluded.reason,"
		" updated_ms = excluded.updated_ms WHERE state IS NOT excluded.state"
		" OR mode IS NOT excluded.mode OR source IS NOT excluded.source"
		" OR reason IS NOT excluded.reason",
	[ST_SAMPLE_ADD] = "INSERT INTO report_samples VALUES (?1, ?2, ?3, ?4)",
	[ST_COUNTERS_ADD] =
		"INSERT INTO counters VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
	[ST_EVENT_ADD] = "INSERT INTO events VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
	[ST_HOST] = HOST_ROW " WHERE host_id = ?1",
	[ST_HOST_STATES] = "SELECT id, state, mode, source, reason FROM states WHERE host_id = ?1"
			   " ORDER BY id",
	[ST_HOSTS] = HOST_ROW " ORDER BY host_id",
	[ST_POLICY_ADD] = "INSERT INTO policies VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
	[ST_POLICY_GET] = "SELECT document, bundle, signer, key_id, created_ms FROM policies"
			  " WHERE name = ?1 AND version = ?2",
	[ST_POLICIES] = "SELECT name, version, document, bundle IS NOT NULL, signer, key_id,"
			" created_ms FROM policies ORDER BY name, version",
	[ST_ASSIGN] = "INSERT INTO assignments (policy, version, selector, created_ms)"
		      " VALUES (?1, ?2, ?3, ?4)",
	[ST_ASSIGNMENTS] = "SELECT id, policy, version, selector, created_ms FROM assignments"
			   " ORDER BY id DESC",
	[ST_AUDIT] = "INSERT INTO audit (ts_ms, actor, action, detail) VALUES (?1, ?2, ?3, ?4)",
	[ST_REVOKE] = "INSERT INTO hosts (host_id, first_seen_ms, revoked) VALUES (?1, ?2, 1)"
		      " ON CONFLICT (host_id) DO UPDATE SET revoked = 1",
	[ST_REVOKED] = "SELECT revoked FROM hosts WHERE host_id = ?1",
	/* raw samples and hourly rollups never overlap: a sample rolled up is gone */
	[ST_SAMPLES] = "SELECT s.host_id, s.probe, s.first_bucket, s.counts, s.count, s.sum_ns,"
		       " s.max_ns, s.end_ms, s.n FROM (SELECT host_id, probe, first_bucket, counts,"
		       " count, sum_ns, max_ns, end_ms, 1 AS n FROM samples UNION ALL"
		       " SELECT host_id, probe, first_bucket, counts, count, sum_ns, max_ns,"
		       " hour_ms + 3600000, samples FROM rollups) s"
		       " JOIN hosts h ON h.host_id = s.host_id"
		       " WHERE (?1 IS NULL OR s.probe = ?1) AND (?2 = 0 OR s.end_ms >= ?2)"
		       " AND (?3 = 0 OR s.end_ms <= ?3) AND (?4 IS NULL OR s.host_id = ?4)"
		       " AND (?5 IS NULL OR json_extract(h.labels, '$.\"' || ?5 || '\"') = ?6)",
	[ST_SECRET_ADD] = "INSERT INTO enroll_secrets (sha256, created_ms, expires_ms, max_uses,"
			  " host_pattern) VALUES (?1, ?2, ?3, ?4, ?5)",
	[ST_SECRET_FIND] = "SELECT id, expires_ms, revoked, uses, max_uses, host_pattern"
			   " FROM enroll_secrets WHERE sha256 = ?1",
	/* the limit is checked here too: two kmemd must not both take the last use */
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
	[ST_EXPIRE_SAMPLES] = "DELETE FROM report_samples WHERE end_ms < ?1",
	[ST_EXPIRE_COUNTERS] = "DELETE FROM counters WHERE unix_ms < ?1",
	[ST_EXPIRE_EVENTS] = "DELETE FROM events WHERE unix_ms < ?1",
	[ST_EXPIRE_ROLLUPS] = "DELETE FROM rollups WHERE hour_ms + 3600000 <= ?1",
	[ST_ROLLUP_HOSTS] =
		"SELECT host_id FROM hosts WHERE host_id > ?1 ORDER BY host_id LIMIT ?2",
	[ST_ROLLUP_READ] = "SELECT probe, end_ms / 3600000 * 3600000, first_bucket, counts, count,"
			   " sum_ns, max_ns FROM samples WHERE host_id = ?1 AND end_ms < ?2"
			   " ORDER BY probe, end_ms",
	[ST_ROLLUP_GET] = "SELECT first_bucket, counts, count, sum_ns, max_ns, samples FROM rollups"
			  " WHERE host_id = ?1 AND probe = ?2 AND hour_ms = ?3",
	[ST_ROLLUP_PUT] =
		"INSERT OR REPLACE INTO rollups VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
	[ST_ROLLUP_DROP] = "DELETE FROM report_samples WHERE host_id = ?1 AND end_ms < ?2",
	/* counters are cumulative: an hour keeps its last report */
	[ST_ROLLUP_COUNTERS] =
		"DELETE FROM counters WHERE host_id = ?1 AND unix_ms < ?2 AND rowid"
		" NOT IN (SELECT rowid FROM (SELECT rowid, max(unix_ms) FROM counters"
		" WHERE host_id = ?1 AND unix_ms < ?2 GROUP BY unix_ms / 3600000))",
	[ST_HOST_FACTS] = "SELECT host_id, hostname, kernel_release, build_id, possible_cpus,"
			  " online_cpus, mem_total, kasan, labels, policy_name, policy_version"
			  " FROM hosts WHERE revoked = 0 AND last_seq > 0 ORDER BY host_id",
	[ST_ROLLOUT_ADD] = "INSERT INTO rollouts (name, spec, state, created_ms, updated_ms)"
			   " VALUES (?1, ?2, ?4, ?3, ?3)",
	[ST_ROLLOUT_GET] = "SELECT spec, state, wave, wave_started_ms, reason, created_ms,"
			   " updated_ms FROM rollouts WHERE name = ?1",
	[ST_ROLLOUTS] = "SELECT name, spec, state, wave, wave_started_ms, reason, created_ms,"
			" updated_ms FROM rollouts ORDER BY created_ms DESC, name",
	[ST_WAVE_COUNTS] = "SELECT count(*) FROM rollout_hosts WHERE rollout = ?1"
			   " GROUP BY wave ORDER BY wave",
	[ST_ROLLOUT_UPDATE] = "UPDATE rollouts SET state = ?2, wave = ?3, wave_started_ms = ?4,"
			      " reason = ?5, updated_ms = ?6 WHERE name = ?1",
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
	[ST_ROLLOUTS_ACTIVE] = "SELECT name FROM rollouts WHERE state IN"
			       " (?1, ?2, ?3, ?4)"
			       " ORDER BY created_ms, name",
	[ST_ROLLOUT_GAUGES] =
		"SELECT r.name, json_extract(r.spec, '$.policy') || '@' ||"
		" json_extract(r.spec, '$.version'), r.state, r.wave,"
		" json_array_length(json_extract(r.spec, '$.waves')),"
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
		" AND x.verdict = 'inconclusive')"
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
	[ST_WINDOW_REPORTS] = "SELECT min(unix_ms), max(unix_ms) FROM counters"
			      " WHERE host_id = ?1 AND unix_ms >= ?2 AND unix_ms < ?3",
	/*
	 * Lockups counted, and the first sign of an unhealthy mitigation: the
	 * module tripped it, the agent's guard reverted or quarantined it, a
	 * livepatch transition stalled, the policy was refused.
	 */
	[ST_WINDOW_EVENTS] =
		"SELECT kind, count(*), min(CASE WHEN coalesce(mitigation, '') = '' THEN"
		" coalesce(message, '') ELSE mitigation || ': ' || coalesce(message, '') END)"
		" FROM events WHERE host_id = ?1 AND unix_ms >= ?2 AND unix_ms < ?3"
		" AND kind IN ('soft-lockup', 'hard-lockup', 'rcu-stall', 'trip', 'guard-revert',"
		" 'quarantine', 'transition-stall', 'policy-refused') GROUP BY kind",
	[ST_WINDOW_TRIPPED] = "SELECT id, reason FROM states WHERE host_id = ?1"
			      " AND state = 'tripped' ORDER BY id LIMIT 1",
	/* one host's probe: by report_samples_by_host and the rollups' key, not a scan */
	[ST_WINDOW_SAMPLES] = "SELECT first_bucket, counts, count, sum_ns, max_ns FROM samples"
			      " WHERE host_id = ?1 AND end_ms >= ?3 AND end_ms < ?4 AND probe = ?2"
			      " UNION ALL SELECT first_bucket, counts, count, sum_ns, max_ns"
			      " FROM rollups WHERE host_id = ?1 AND probe = ?2"
			      " AND hour_ms >= ?3 - 3600000 AND hour_ms + 3600000 >= ?3"
			      " AND hour_ms + 3600000 < ?4",
	[ST_TALLY_HOSTS] = "SELECT '', '', count(*) FROM hosts WHERE last_seq > 0",
	[ST_TALLY_STATES] = "SELECT id, state, count(*) FROM states GROUP BY id, state"
			    " ORDER BY id, state",
	[ST_TALLY_EVENTS] = "SELECT kind, '', count(*) FROM events GROUP BY kind ORDER BY kind",
	[ST_TALLY_KERNELS] = "SELECT kernel_release, '', count(*) FROM hosts WHERE last_seq > 0"
			     " AND revoked = 0 GROUP BY 1 ORDER BY 3 DESC, 1",
	[ST_TALLY_POLICIES] = "SELECT coalesce(policy_name, ''), coalesce(policy_version, ''),"
			      " count(*) FROM hosts WHERE last_seq > 0 AND revoked = 0"
			      " GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2",
	/* last_seen_ms is the wall clock when kmemd stored the report, as is SQLite's 'now' */
	[ST_TALLY_SILENT] =
		"WITH t(name, ms) AS (VALUES ('5m', 300000), ('15m', 900000),"
		" ('1h', 3600000), ('1d', 86400000))"
		" SELECT t.name, '', (SELECT count(*) FROM hosts WHERE last_seq > 0"
		" AND revoked = 0 AND last_seen_ms < CAST(strftime('%s', 'now') AS INTEGER)"
		" * 1000 - t.ms) FROM t ORDER BY t.ms",
	[ST_HOSTS_PAGE] = HOST_ROW " WHERE host_id > ?1 AND (?2 IS NULL OR instr(host_id, ?2)"
				   " OR instr(hostname, ?2) OR instr(kernel_release, ?2))"
				   " ORDER BY host_id LIMIT ?3",
	/* one host's rows over a window, by the host indexes and the rollups' key */
	[ST_HOST_REPORTS] = "SELECT unix_ms FROM counters WHERE host_id = ?1"
			    " AND unix_ms >= ?2 AND unix_ms < ?3 ORDER BY unix_ms",
	[ST_HOST_EVENTS] = "SELECT unix_ms, kind, cpu, duration_ns, comm, pid, stack, mitigation,"
			   " probe, message FROM events WHERE host_id = ?1"
			   " AND unix_ms >= ?2 AND unix_ms < ?3 ORDER BY unix_ms",
	[ST_HOST_SAMPLES] = "SELECT probe, first_bucket, counts, count, sum_ns, max_ns, end_ms, 1"
			    " FROM samples WHERE host_id = ?1 AND end_ms >= ?2 AND end_ms < ?3"
			    " UNION ALL SELECT probe, first_bucket, counts, count, sum_ns, max_ns,"
			    " hour_ms + 3600000, samples FROM rollups WHERE host_id = ?1"
			    " AND hour_ms >= ?2 - 3600000 AND hour_ms + 3600000 >= ?2"
			    " AND hour_ms + 3600000 < ?3",
};

/* A buffer reused from report to report. */
struct buf {
	uint8_t *p;
	size_t len, cap;
};

struct sqlite_store {
	struct store base;
	sqlite3 *db;
	sqlite3_stmt *st[ST_N];
	sqlite3_stmt *held; /* a one-row query read and left on its row */
	struct buf probes, counts; /* a report_samples row being made */
};

#define DB(s) (((struct sqlite_store *)(s))->db)

/*
 * Queries stepped for their one row and left there. Until reset, each
 * holds the connection's read snapshot: a batch begun after it would run
 * on that snapshot, and a snapshot older than a checkpoint keeps the WAL
 * from starting over, so under steady ingest it grew without bound. The
 * next stmt() or begin resets the one held; their rows are copied out by
 * then.
 */
static const bool one_row[ST_N] = {
	[ST_SEEN] = true,	[ST_HOST] = true,	    [ST_POLICY_GET] = true,
	[ST_REVOKED] = true,	[ST_SECRET_FIND] = true,    [ST_ENROLLED] = true,
	[ST_ROLLUP_GET] = true, [ST_ROLLOUT_GET] = true,    [ST_VERDICT_LAST] = true,
	[ST_CHANGES] = true,	[ST_WINDOW_REPORTS] = true, [ST_WINDOW_TRIPPED] = true,
};

static void release_held(struct sqlite_store *q)
{
	if (q->held)
		sqlite3_reset(q->held);
	q->held = NULL;
}

static sqlite3_stmt *stmt(struct store *s, enum stmt which)
{
	struct sqlite_store *q = (struct sqlite_store *)s;
	sqlite3_stmt *st = q->st[which];

	release_held(q);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (one_row[which])
		q->held = st;
	return st;
}

static int exec(sqlite3 *db, const char *q)
{
	return sqlite3_exec(db, q, NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
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
	int i;

	if (!q)
		return;
	for (i = 0; i < ST_N; i++)
		sqlite3_finalize(q->st[i]);
	sqlite3_close(q->db);
	free(q->probes.p);
	free(q->counts.p);
	free(q);
}

static const char *sq_error(struct store *s)
{
	return sqlite3_errmsg(DB(s));
}

static const struct store_ops sqlite_ops;

static int sq_open(const char *path, struct store **out, char *err, size_t errlen)
{
	struct sqlite_store *q = calloc(1, sizeof(*q));
	int i, r;

	if (!q)
		return -ENOMEM;
	q->base.ops = &sqlite_ops;
	if (sqlite3_open_v2(path, &q->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL)) {
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
	for (i = 0; r == 0 && i < ST_N; i++)
		if (sqlite3_prepare_v3(q->db, sql[i], -1, SQLITE_PREPARE_PERSISTENT, &q->st[i],
				       NULL))
			r = -EIO;
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

/* "MITIGATION_STATE_ON" -> "on", as the module's sysfs says it */
void store_enum_name(const ProtobufCEnumDescriptor *d, int value, const char *prefix, char *out,
		     size_t len)
{
	const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(d, value);
	size_t n = strlen(prefix), i;
	const char *name = v ? v->name : "UNSPECIFIED";

	if (!strncmp(name, prefix, n))
		name += n;
	snprintf(out, len, "%s", name);
	for (i = 0; out[i]; i++)
		out[i] = out[i] == '_' ? '-' : (char)(out[i] | 0x20);
}

static int sq_commit(struct store *s);

static int step_done(sqlite3_stmt *st)
{
	return sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
}

static char *labels_json(const Kmemctl__V1__HostFacts *f)
{
	json_t *o = json_object();
	char *text;
	size_t i;

	for (i = 0; o && i < f->n_labels; i++)
		json_object_set_new(o, f->labels[i]->key, json_string(f->labels[i]->value));
	text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return text;
}

/*
 * What a report stores that kmemd makes rather than copies: made before
 * the first write, so that nothing but the database can fail in between.
 */
struct ingest_text {
	char *labels;
	char **stacks; /* each event's stack as a JSON array */
	size_t nstacks;
};

static void ingest_text_free(struct ingest_text *t)
{
	size_t i;

	free(t->labels);
	for (i = 0; i < t->nstacks; i++)
		free(t->stacks[i]);
	free(t->stacks);
}

static int buf_reserve(struct buf *b, size_t n)
{
	uint8_t *p;

	if (n <= b->cap)
		return 0;
	p = realloc(b->p, n);
	if (!p)
		return -ENOMEM;
	b->p = p;
	b->cap = n;
	return 0;
}

/* Room enough for the largest report_samples row of rep: writing one cannot fail. */
static int samples_reserve(struct sqlite_store *q, const Kmemctl__V1__Report *rep)
{
	size_t probes = 3, counts = 0, i;

	for (i = 0; i < rep->n_probes; i++) {
		const Kmemctl__V1__ProbeSample *p = rep->probes[i];

		if (!p->hist)
			continue;
		/* "\u00XX" per byte of the name at worst, and 7 numbers of 20 digits */
		probes += (p->probe ? strlen(p->probe) * 6 : 0) + 4 + 7 * 21 + 2;
		counts += p->hist->n_counts * 8;
	}
	return buf_reserve(&q->probes, probes) ?: buf_reserve(&q->counts, counts ?: 1);
}

static int ingest_text_make(struct ingest_text *t, struct store *s, const Kmemctl__V1__Report *rep)
{
	size_t i, j;

	*t = (struct ingest_text){ .labels = labels_json(rep->facts) };
	if (!t->labels || samples_reserve((struct sqlite_store *)s, rep) < 0)
		return -ENOMEM;
	if (!rep->n_events)
		return 0;
	t->stacks = calloc(rep->n_events, sizeof(*t->stacks));
	if (!t->stacks)
		return -ENOMEM;
	for (i = 0; i < rep->n_events; i++) {
		const Kmemctl__V1__KernelEvent *e = rep->events[i];
		json_t *stack = json_array();

		for (j = 0; stack && j < e->n_stack_top; j++)
			json_array_append_new(stack, json_string(e->stack_top[j]));
		t->stacks[i] = stack ? json_dumps(stack, JSON_COMPACT) : NULL;
		json_decref(stack);
		if (!t->stacks[i])
			return -ENOMEM;
		t->nstacks++;
	}
	return 0;
}

static int ingest_host(struct store *s, const Kmemctl__V1__Report *rep, const char *labels,
		       int64_t now_ms)
{
	const Kmemctl__V1__HostFacts *f = rep->facts;
	sqlite3_stmt *st = stmt(s, ST_HOST_UPSERT);

	sqlite3_bind_text(st, 1, f->host_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, f->hostname, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, f->kernel_release, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, f->kernel_build_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, f->possible_cpus);
	sqlite3_bind_int64(st, 6, f->online_cpus);
	sqlite3_bind_int64(st, 7, (sqlite3_int64)f->mem_total_bytes);
	sqlite3_bind_int(st, 8, f->kasan);
	sqlite3_bind_text(st, 9, f->module_version, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 10, labels, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 11, now_ms);
	sqlite3_bind_int64(st, 12, (sqlite3_int64)rep->seq);
	sqlite3_bind_text(st, 13, rep->policy_name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 14, (sqlite3_int64)rep->policy_version);
	return step_done(st);
}

struct state_text {
	char state[32], mode[32], source[32];
};

static void state_text(const Kmemctl__V1__MitigationState *m, struct state_text *t)
{
	store_enum_name(&kmemctl__v1__mitigation_state_kind__descriptor, m->state,
			"MITIGATION_STATE_", t->state, sizeof(t->state));
	store_enum_name(&kmemctl__v1__mitigation_mode__descriptor, m->mode, "MITIGATION_MODE_",
			t->mode, sizeof(t->mode));
	store_enum_name(&kmemctl__v1__mode_source__descriptor, m->source, "MODE_SOURCE_", t->source,
			sizeof(t->source));
}

static bool text_is(sqlite3_stmt *st, int col, const char *s)
{
	const char *v = (const char *)sqlite3_column_text(st, col);

	return v ? s && !strcmp(v, s) : !s;
}

/*
 * The host's rows are read once and only the mitigations whose state,
 * mode, source or reason changed are written: most reports change none,
 * and a statement per mitigation was most of a report's store work.
 */
static int ingest_states(struct store *s, const Kmemctl__V1__Report *rep, int64_t now_ms)
{
	const char *host = rep->facts->host_id;
	uint64_t same = 0; /* bit i: mitigation i is stored as reported (the first 64) */
	struct state_text t;
	uint64_t stored = 0;
	sqlite3_stmt *st;
	size_t i;
	int r = 0, rc;

	st = stmt(s, ST_STATES_READ);
	sqlite3_bind_text(st, 1, host, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *id = (const char *)sqlite3_column_text(st, 0);

		stored++;
		for (i = 0; id && i < rep->n_mitigations && i < 64; i++) {
			const Kmemctl__V1__MitigationState *m = rep->mitigations[i];

			if (!m->id || strcmp(m->id, id))
				continue;
			state_text(m, &t);
			if (text_is(st, 1, t.state) && text_is(st, 2, t.mode) &&
			    text_is(st, 3, t.source) && text_is(st, 4, m->reason))
				same |= 1ULL << i;
			break;
		}
	}
	if (rc != SQLITE_DONE)
		return -EIO;
	/* more rows than mitigations reported: the module lost some; start over */
	if (stored > rep->n_mitigations) {
		st = stmt(s, ST_STATES_CLEAR);
		sqlite3_bind_text(st, 1, host, -1, SQLITE_STATIC);
		r = step_done(st);
		same = 0;
	}
	for (i = 0; r == 0 && i < rep->n_mitigations; i++) {
		const Kmemctl__V1__MitigationState *m = rep->mitigations[i];

		if (i < 64 && (same & (1ULL << i)))
			continue;
		state_text(m, &t);
		st = stmt(s, ST_STATE_ADD);
		sqlite3_bind_text(st, 1, host, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, m->id, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, t.state, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, t.mode, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 5, t.source, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 6, m->reason, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 7, now_ms);
		r = step_done(st);
	}
	return r;
}

static void buf_add(struct buf *b, const void *p, size_t n)
{
	if (!n)
		return;
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

/* name as a JSON string: its quotes and backslashes escaped, control bytes as \u00XX */
static void buf_json_string(struct buf *b, const char *name)
{
	const unsigned char *c;
	char esc[8];

	buf_add(b, "\"", 1);
	for (c = (const unsigned char *)(name ?: ""); *c; c++) {
		if (*c == '"' || *c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)*c;
			buf_add(b, esc, 2);
		} else if (*c < 0x20) {
			snprintf(esc, sizeof(esc), "\\u%04x", *c);
			buf_add(b, esc, 6);
		} else {
			buf_add(b, c, 1);
		}
	}
	buf_add(b, "\"", 1);
}

/*
 * The report's histograms in one report_samples row (migration 7), or
 * one per end time when its probes do not all end at the same time (an
 * agent's all do). Room was reserved by samples_reserve().
 */
static int ingest_samples(struct store *s, const Kmemctl__V1__Report *rep)
{
	struct sqlite_store *q = (struct sqlite_store *)s;
	sqlite3_stmt *st;
	size_t i, j;
	int r = 0;

	for (i = 0; r == 0 && i < rep->n_probes; i++) {
		int64_t end = rep->probes[i]->end_unix_ms;

		if (!rep->probes[i]->hist)
			continue;
		for (j = 0; j < i; j++)
			if (rep->probes[j]->hist && rep->probes[j]->end_unix_ms == end)
				break;
		if (j < i) /* in the row of an earlier probe */
			continue;
		q->probes.len = q->counts.len = 0;
		buf_add(&q->probes, "{", 1);
		for (j = i; j < rep->n_probes; j++) {
			const Kmemctl__V1__ProbeSample *p = rep->probes[j];
			char num[7 * 21 + 8];
			int n;

			if (!p->hist || p->end_unix_ms != end)
				continue;
			if (q->probes.len > 1)
				buf_add(&q->probes, ",", 1);
			buf_json_string(&q->probes, p->probe);
			/* native-endian u64s: one host architecture per kmemd file */
			n = snprintf(num, sizeof(num), ":[%lld,%lld,%lld,%lld,%lld,%zu,%zu]",
				     (long long)p->start_unix_ms, (long long)p->hist->first_bucket,
				     (long long)p->hist->count, (long long)p->hist->sum_ns,
				     (long long)p->hist->max_ns, q->counts.len,
				     p->hist->n_counts * 8);
			buf_add(&q->probes, num, (size_t)n);
			buf_add(&q->counts, p->hist->counts, p->hist->n_counts * 8);
		}
		buf_add(&q->probes, "}", 1);
		st = stmt(s, ST_SAMPLE_ADD);
		sqlite3_bind_text(st, 1, rep->facts->host_id, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, end);
		sqlite3_bind_text(st, 3, (const char *)q->probes.p, (int)q->probes.len,
				  SQLITE_STATIC);
		sqlite3_bind_blob(st, 4, q->counts.p, (int)q->counts.len, SQLITE_STATIC);
		r = step_done(st);
	}
	return r;
}

/* One row per report, counters or not: it also tells resent reports apart. */
static int ingest_counters(struct store *s, const Kmemctl__V1__Report *rep)
{
	static const Kmemctl__V1__Counters none = KMEMCTL__V1__COUNTERS__INIT;
	const Kmemctl__V1__Counters *c = rep->counters ?: &none;
	sqlite3_stmt *st;

	st = stmt(s, ST_COUNTERS_ADD);
	sqlite3_bind_text(st, 1, rep->facts->host_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, rep->unix_ms);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)rep->seq);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)c->soft_lockups);
	sqlite3_bind_int64(st, 5, (sqlite3_int64)c->hard_lockups);
	sqlite3_bind_int64(st, 6, (sqlite3_int64)c->rcu_stalls);
	sqlite3_bind_int64(st, 7, (sqlite3_int64)c->hung_tasks);
	sqlite3_bind_int64(st, 8, (sqlite3_int64)c->tlb_shootdowns);
	sqlite3_bind_int64(st, 9, (sqlite3_int64)c->mitigation_trips);
	sqlite3_bind_int64(st, 10, (sqlite3_int64)c->events_dropped);
	sqlite3_bind_int64(st, 11, (sqlite3_int64)c->reports_dropped);
	sqlite3_bind_int64(st, 12, (sqlite3_int64)c->uptime_ms);
	return step_done(st);
}

static int ingest_events(struct store *s, const Kmemctl__V1__Report *rep,
			 const struct ingest_text *t)
{
	char kind[48];
	sqlite3_stmt *st;
	size_t i;
	int r = 0;

	for (i = 0; r == 0 && i < rep->n_events; i++) {
		const Kmemctl__V1__KernelEvent *e = rep->events[i];

		store_enum_name(&kmemctl__v1__event_kind__descriptor, e->kind, "EVENT_KIND_", kind,
				sizeof(kind));
		st = stmt(s, ST_EVENT_ADD);
		sqlite3_bind_text(st, 1, rep->facts->host_id, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, e->unix_ms);
		sqlite3_bind_text(st, 3, kind, -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 4, e->cpu);
		sqlite3_bind_int64(st, 5, (sqlite3_int64)e->duration_ns);
		sqlite3_bind_text(st, 6, e->comm, -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 7, e->pid);
		sqlite3_bind_text(st, 8, t->stacks[i], -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 9, e->mitigation, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 10, e->probe, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 11, e->message, -1, SQLITE_STATIC);
		r = step_done(st);
	}
	return r;
}

/*
 * No savepoint: everything that can fail short of the database is made
 * before the first write, and a database error (a full disk, I/O, no
 * memory) may roll SQLite's transaction back whole anyway. So inside a
 * batch a failed report fails the batch (store.h: the caller rolls it
 * back); outside one, the report is its own transaction. A savepoint per
 * report cost a statement journal (spilled to temporary files) and two
 * statements compiled per report.
 */
static int sq_ingest(struct store *s, const Kmemctl__V1__Report *rep, int64_t now_ms)
{
	struct ingest_text t;
	sqlite3_stmt *st;
	bool own;
	int r;

	/*
	 * A report sent again after its acknowledgement was lost has the same
	 * seq and time. Not "seq at most the last one": an agent whose state
	 * was wiped counts from 1 again, and its reports are new.
	 */
	st = stmt(s, ST_SEEN);
	sqlite3_bind_text(st, 1, rep->facts->host_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, rep->unix_ms);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)rep->seq);
	r = sqlite3_step(st);
	sqlite3_reset(st);
	if (r == SQLITE_ROW)
		return 1;
	if (r != SQLITE_DONE)
		return -EIO;
	r = ingest_text_make(&t, s, rep);
	if (r < 0)
		goto out;
	own = sqlite3_get_autocommit(DB(s));
	if (own) {
		release_held((struct sqlite_store *)s);
		r = exec(DB(s), "BEGIN IMMEDIATE");
		if (r < 0)
			goto out;
	}
	r = ingest_host(s, rep, t.labels, now_ms);
	if (r == 0)
		r = ingest_states(s, rep, now_ms);
	if (r == 0)
		r = ingest_samples(s, rep);
	if (r == 0)
		r = ingest_counters(s, rep);
	if (r == 0)
		r = ingest_events(s, rep, &t);
	if (own && r == 0)
		r = sq_commit(s);
	else if (own)
		exec(DB(s), "ROLLBACK");
out:
	ingest_text_free(&t);
	return r;
}

static int sq_begin(struct store *s)
{
	/* the batch reads from its own start, not from a query before it */
	release_held((struct sqlite_store *)s);
	return exec(DB(s), "BEGIN IMMEDIATE");
}

static int sq_commit(struct store *s)
{
	if (exec(DB(s), "COMMIT") == 0)
		return 0;
	exec(DB(s), "ROLLBACK");
	return -EIO;
}

static void sq_rollback(struct store *s)
{
	/* SQLite may have rolled back already: then there is nothing to undo */
	if (!sqlite3_get_autocommit(DB(s)))
		exec(DB(s), "ROLLBACK");
}

static const char *text_or_empty(sqlite3_stmt *st, int col)
{
	const unsigned char *t = sqlite3_column_text(st, col);

	return t ? (const char *)t : "";
}

static const char *text_or_null(sqlite3_stmt *st, int col)
{
	return (const char *)sqlite3_column_text(st, col);
}

static int64_t int_or_null(sqlite3_stmt *st, int col)
{
	return sqlite3_column_type(st, col) == SQLITE_NULL ? STORE_NULL :
							     sqlite3_column_int64(st, col);
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

static int sq_host(struct store *s, const char *host_id, const struct store_host_cb *cb, void *arg)
{
	sqlite3_stmt *st = stmt(s, ST_HOST);

	sqlite3_bind_text(st, 1, host_id, -1, SQLITE_STATIC);
	return host_rows_each(s, st, cb, arg, true);
}

static int sq_hosts(struct store *s, const struct store_host_cb *cb, void *arg)
{
	return host_rows_each(s, stmt(s, ST_HOSTS), cb, arg, false);
}

static int sq_hosts_page(struct store *s, const char *after, const char *match, unsigned limit,
			 const struct store_host_cb *cb, void *arg)
{
	sqlite3_stmt *st = stmt(s, ST_HOSTS_PAGE);

	sqlite3_bind_text(st, 1, after ?: "", -1, SQLITE_STATIC);
	if (match && *match)
		sqlite3_bind_text(st, 2, match, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 3, (int)limit);
	return host_rows_each(s, st, cb, arg, false);
}

static int sq_policy_add(struct store *s, const struct store_policy *p, int64_t now_ms)
{
	sqlite3_stmt *st = stmt(s, ST_POLICY_ADD);
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
	if (rc == SQLITE_CONSTRAINT)
		return -EEXIST;
	return rc == SQLITE_DONE ? 0 : -EIO;
}

static int sq_policy_get(struct store *s, const char *name, uint64_t version,
			 struct store_policy *p)
{
	sqlite3_stmt *st = stmt(s, ST_POLICY_GET);
	const void *blob;
	int rc;

	memset(p, 0, sizeof(*p));
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)version);
	rc = sqlite3_step(st);
	if (rc == SQLITE_DONE)
		return -ENOENT;
	if (rc != SQLITE_ROW)
		return -EIO;
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
	if (!p->document_json || (blob && !p->bundle)) {
		store_policy_clear(p);
		return -ENOMEM;
	}
	return 0;
}

static int sq_policies(struct store *s, int (*cb)(void *arg, const struct store_policy *p),
		       void *arg)
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
		r = cb(arg, &p);
	}
	if (r)
		return r;
	return rc == SQLITE_DONE ? 0 : -EIO;
}

static int sq_assign(struct store *s, const struct store_assignment *a, int64_t now_ms, int64_t *id)
{
	sqlite3_stmt *st = stmt(s, ST_ASSIGN);
	int rc;

	sqlite3_bind_text(st, 1, a->policy, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)a->version);
	sqlite3_bind_text(st, 3, a->selector_json, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, now_ms);
	rc = sqlite3_step(st);
	if (rc == SQLITE_CONSTRAINT)
		return -ENOENT; /* no such policy version */
	if (rc != SQLITE_DONE)
		return -EIO;
	*id = sqlite3_last_insert_rowid(DB(s));
	return 0;
}

static int sq_assignments(struct store *s, int (*cb)(void *arg, const struct store_assignment *a),
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

static int sq_audit(struct store *s, int64_t now_ms, const char *actor, const char *action,
		    const char *detail)
{
	sqlite3_stmt *st = stmt(s, ST_AUDIT);

	sqlite3_bind_int64(st, 1, now_ms);
	sqlite3_bind_text(st, 2, actor, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, action, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, detail, -1, SQLITE_STATIC);
	return step_done(st);
}

static int sq_revoke(struct store *s, const char *host_id, int64_t now_ms)
{
	sqlite3_stmt *st = stmt(s, ST_REVOKE);

	sqlite3_bind_text(st, 1, host_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, now_ms);
	return step_done(st);
}

static int sq_revoked(struct store *s, const char *host_id)
{
	sqlite3_stmt *st = stmt(s, ST_REVOKED);
	int rc;

	sqlite3_bind_text(st, 1, host_id, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_DONE)
		return 0;
	return rc == SQLITE_ROW ? sqlite3_column_int(st, 0) != 0 : -EIO;
}

/* Columns col.. col+4: first_bucket, counts, count, sum_ns, max_ns. */
static void column_hist(sqlite3_stmt *st, int col, struct hist *h)
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

/* Binds h from parameter col on, as column_hist() reads it: empty buckets trimmed. */
static void bind_hist(sqlite3_stmt *st, int col, const struct hist *h)
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

static int sq_samples(struct store *s, const struct store_filter *f, store_sample_cb cb, void *arg)
{
	sqlite3_stmt *st = stmt(s, ST_SAMPLES);
	struct store_sample x;
	int rc, r = 0;

	if (f->probe)
		sqlite3_bind_text(st, 1, f->probe, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, f->from_ms);
	sqlite3_bind_int64(st, 3, f->to_ms);
	if (f->host)
		sqlite3_bind_text(st, 4, f->host, -1, SQLITE_STATIC);
	if (f->label_key) {
		sqlite3_bind_text(st, 5, f->label_key, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 6, f->label_value, -1, SQLITE_STATIC);
	}
	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		x.host_id = (const char *)sqlite3_column_text(st, 0);
		x.probe = (const char *)sqlite3_column_text(st, 1);
		column_hist(st, 2, &x.h);
		x.end_ms = sqlite3_column_int64(st, 7);
		x.samples = (uint64_t)sqlite3_column_int64(st, 8);
		r = cb(arg, &x);
	}
	if (r)
		return r;
	return rc == SQLITE_DONE ? 0 : -EIO;
}

static int sq_tally(struct store *s, enum store_tally which, store_tally_cb cb, void *arg)
{
	static const enum stmt q[] = {
		[STORE_TALLY_HOSTS] = ST_TALLY_HOSTS,
		[STORE_TALLY_STATES] = ST_TALLY_STATES,
		[STORE_TALLY_EVENTS] = ST_TALLY_EVENTS,
		[STORE_TALLY_KERNELS] = ST_TALLY_KERNELS,
		[STORE_TALLY_POLICIES] = ST_TALLY_POLICIES,
		[STORE_TALLY_SILENT] = ST_TALLY_SILENT,
	};
	sqlite3_stmt *st = stmt(s, q[which]);
	int rc, r = 0;

	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
		r = cb(arg, text_or_empty(st, 0), text_or_empty(st, 1),
		       (uint64_t)sqlite3_column_int64(st, 2));
	if (r)
		return r;
	return rc == SQLITE_DONE ? 0 : -EIO;
}

static void sq_idle(struct store *s)
{
	sqlite3_stmt *p = NULL;

	while ((p = sqlite3_next_stmt(DB(s), p)))
		if (sqlite3_stmt_busy(p))
			sqlite3_reset(p);
}

static int sq_secret_add(struct store *s, const struct store_secret *sec, int64_t *id)
{
	sqlite3_stmt *st = stmt(s, ST_SECRET_ADD);

	sqlite3_bind_text(st, 1, sec->sha256, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, sec->created_ms);
	sqlite3_bind_int64(st, 3, sec->expires_ms);
	sqlite3_bind_int64(st, 4, sec->max_uses);
	if (sec->host_pattern[0])
		sqlite3_bind_text(st, 5, sec->host_pattern, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, 5);
	if (sqlite3_step(st) != SQLITE_DONE)
		return -EIO;
	*id = sqlite3_last_insert_rowid(DB(s));
	return 0;
}

static int sq_secret_get(struct store *s, const char *sha256, struct store_secret *sec)
{
	sqlite3_stmt *st = stmt(s, ST_SECRET_FIND);
	int rc;

	sqlite3_bind_text(st, 1, sha256, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_DONE)
		return -ENOENT;
	if (rc != SQLITE_ROW)
		return -EIO;
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

static int sq_secret_use(struct store *s, int64_t id)
{
	sqlite3_stmt *st = stmt(s, ST_SECRET_USE);

	sqlite3_bind_int64(st, 1, id);
	if (step_done(st) < 0)
		return -EIO;
	return sqlite3_changes(DB(s)) ? 0 : -EDQUOT;
}

static int sq_secret_revoke(struct store *s, int64_t id)
{
	sqlite3_stmt *st = stmt(s, ST_SECRET_REVOKE);

	sqlite3_bind_int64(st, 1, id);
	if (step_done(st) < 0)
		return -EIO;
	return sqlite3_changes(DB(s)) ? 0 : -ENOENT;
}

static int sq_names(struct store *s,
		    int (*cb)(void *arg, int kind, const char *name, const char *host), void *arg)
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

static int sq_name_add(struct store *s, int kind, const char *name, const char *host,
		       int64_t now_ms)
{
	sqlite3_stmt *st = stmt(s, ST_NAME_ADD);

	sqlite3_bind_text(st, 1, kind == 0 ? "probe" : "mitigation", -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, host, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, now_ms);
	return step_done(st);
}

static int sq_enrolled(struct store *s, const char *host, bool *taken, bool *reenroll)
{
	sqlite3_stmt *st = stmt(s, ST_ENROLLED);

	sqlite3_bind_text(st, 1, host, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_ROW)
		return -EIO;
	*taken = sqlite3_column_int(st, 0) != 0;
	*reenroll = sqlite3_column_int(st, 1) != 0;
	return 0;
}

static int sq_enrollment_add(struct store *s, const char *host, int64_t secret_id, int64_t now_ms)
{
	sqlite3_stmt *st = stmt(s, ST_ENROLLMENT_ADD);

	sqlite3_bind_text(st, 1, host, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, secret_id);
	sqlite3_bind_int64(st, 3, now_ms);
	return step_done(st);
}

static int sq_reenroll(struct store *s, const char *host)
{
	sqlite3_stmt *st = stmt(s, ST_REENROLL);

	sqlite3_bind_text(st, 1, host, -1, SQLITE_STATIC);
	return step_done(st);
}

static int sq_expire(struct store *s, int64_t before_ms, uint64_t *rows)
{
	static const enum stmt q[] = { ST_EXPIRE_SAMPLES, ST_EXPIRE_COUNTERS, ST_EXPIRE_EVENTS,
				       ST_EXPIRE_ROLLUPS };
	sqlite3_stmt *st;
	size_t i;
	int r;

	*rows = 0;
	r = exec(DB(s), "SAVEPOINT expire");
	for (i = 0; r == 0 && i < ARRAY_SIZE(q); i++) {
		st = stmt(s, q[i]);
		sqlite3_bind_int64(st, 1, before_ms);
		r = step_done(st);
		*rows += (uint64_t)sqlite3_changes(DB(s));
	}
	if (r < 0)
		exec(DB(s), "ROLLBACK TO expire");
	exec(DB(s), "RELEASE expire");
	return r;
}

/* Adds h (n intervals) to the host's rollup of probe and hour. */
static int rollup_add(struct store *s, const char *host, const char *probe, int64_t hour,
		      const struct hist *h, uint64_t n)
{
	sqlite3_stmt *st = stmt(s, ST_ROLLUP_GET);
	struct hist sum = *h;
	int rc;

	sqlite3_bind_text(st, 1, host, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, probe, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, hour);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		struct hist old;

		column_hist(st, 0, &old);
		hist_merge(&sum, &old);
		n += (uint64_t)sqlite3_column_int64(st, 5);
	} else if (rc != SQLITE_DONE) {
		return -EIO;
	}
	st = stmt(s, ST_ROLLUP_PUT);
	sqlite3_bind_text(st, 1, host, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, probe, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, hour);
	bind_hist(st, 4, &sum);
	sqlite3_bind_int64(st, 9, (sqlite3_int64)n);
	return step_done(st);
}

/* One host's samples before before_ms into hourly rows; its counters thinned to one per hour. */
static int rollup_host(struct store *s, const char *host, int64_t before_ms, uint64_t *rows)
{
	sqlite3_stmt *st = stmt(s, ST_ROLLUP_READ);
	char probe[STORE_ID_MAX] = "";
	struct hist acc = { 0 }, h;
	int64_t hour = -1;
	uint64_t n = 0;
	int rc, r = 0;

	/* samples for one host arrive in probe and time order: merge runs of one hour */
	sqlite3_bind_text(st, 1, host, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 2, before_ms);
	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *p = (const char *)sqlite3_column_text(st, 0);
		int64_t hr = sqlite3_column_int64(st, 1);

		if (n && (hr != hour || strcmp(p ?: "", probe) != 0)) {
			r = rollup_add(s, host, probe, hour, &acc, n);
			memset(&acc, 0, sizeof(acc));
			n = 0;
		}
		snprintf(probe, sizeof(probe), "%s", p ?: "");
		hour = hr;
		column_hist(st, 2, &h);
		hist_merge(&acc, &h);
		n++;
		(*rows)++;
	}
	sqlite3_reset(((struct sqlite_store *)s)->st[ST_ROLLUP_READ]);
	if (r == 0 && rc != SQLITE_DONE)
		r = -EIO;
	if (r == 0 && n)
		r = rollup_add(s, host, probe, hour, &acc, n);
	if (r == 0) {
		st = stmt(s, ST_ROLLUP_DROP);
		sqlite3_bind_text(st, 1, host, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, before_ms);
		r = step_done(st);
	}
	if (r == 0) {
		st = stmt(s, ST_ROLLUP_COUNTERS);
		sqlite3_bind_text(st, 1, host, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, before_ms);
		r = step_done(st);
		*rows += (uint64_t)sqlite3_changes(DB(s));
	}
	return r;
}

static int sq_rollup(struct store *s, int64_t before_ms, char cursor[STORE_ID_MAX],
		     unsigned max_hosts, uint64_t *rows)
{
	char hosts[16][STORE_ID_MAX];
	unsigned n = 0, i;
	sqlite3_stmt *st = stmt(s, ST_ROLLUP_HOSTS);
	int rc, r;

	*rows = 0;
	if (max_hosts > ARRAY_SIZE(hosts))
		max_hosts = ARRAY_SIZE(hosts);
	sqlite3_bind_text(st, 1, cursor, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, (int)max_hosts);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		snprintf(hosts[n++], STORE_ID_MAX, "%s", sqlite3_column_text(st, 0));
	if (rc != SQLITE_DONE)
		return -EIO;
	r = exec(DB(s), "SAVEPOINT rollup");
	for (i = 0; r == 0 && i < n; i++)
		r = rollup_host(s, hosts[i], before_ms, rows);
	if (r < 0) {
		exec(DB(s), "ROLLBACK TO rollup");
		*rows = 0;
	}
	exec(DB(s), "RELEASE rollup");
	if (r < 0)
		return r;
	if (n)
		snprintf(cursor, STORE_ID_MAX, "%s", hosts[n - 1]);
	return n == max_hosts;
}

static int sq_host_facts(struct store *s, store_facts_cb cb, void *arg)
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

static int sq_rollout_add(struct store *s, const char *name, const char *spec_json, int64_t now_ms)
{
	sqlite3_stmt *st = stmt(s, ST_ROLLOUT_ADD);
	int rc;

	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, spec_json, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, now_ms);
	sqlite3_bind_text(st, 4, rollout_state_name(ROLLOUT_PENDING), -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_CONSTRAINT)
		return -EEXIST;
	return rc == SQLITE_DONE ? 0 : -EIO;
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

static int sq_rollout_get(struct store *s, const char *name, struct store_rollout *r)
{
	sqlite3_stmt *st = stmt(s, ST_ROLLOUT_GET);
	int rc;

	memset(r, 0, sizeof(*r));
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_DONE)
		return -ENOENT;
	if (rc != SQLITE_ROW)
		return -EIO;
	snprintf(r->name, sizeof(r->name), "%s", name);
	if (column_rollout(st, 1, r) < 0)
		return -EIO;
	r->spec_json = strdup(text_or_empty(st, 0));
	return r->spec_json ? 0 : -ENOMEM;
}

static int sq_rollouts_started(struct store *s, int (*cb)(void *arg, const struct store_rollout *r),
			       void *arg)
{
	sqlite3_stmt *st = stmt(s, ST_ROLLOUTS_STARTED);
	struct store_rollout r;
	int rc, ret = 0;

	sqlite3_bind_text(st, 1, rollout_state_name(ROLLOUT_PENDING), -1, SQLITE_STATIC);
	while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		memset(&r, 0, sizeof(r));
		snprintf(r.name, sizeof(r.name), "%s", text_or_empty(st, 0));
		r.spec_json = (char *)text_or_empty(st, 1);
		if (column_rollout(st, 2, &r) < 0)
			return -EIO;
		ret = cb(arg, &r);
	}
	if (ret)
		return ret;
	return rc == SQLITE_DONE ? 0 : -EIO;
}

static int sq_changes(struct store *s, struct store_changes *c)
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

static int sq_rollouts(struct store *s,
		       int (*cb)(void *arg, const struct store_rollout *r, const uint64_t *members,
				 size_t n),
		       void *arg)
{
	sqlite3_stmt *st = stmt(s, ST_ROLLOUTS), *wc;
	uint64_t members[ROLLOUT_MAX_WAVES];
	struct store_rollout r;
	size_t n;
	int rc, wrc, ret = 0;

	while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		memset(&r, 0, sizeof(r));
		snprintf(r.name, sizeof(r.name), "%s", text_or_empty(st, 0));
		r.spec_json = (char *)text_or_empty(st, 1);
		if (column_rollout(st, 2, &r) < 0)
			return -EIO;
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

static int sq_rollouts_active(struct store *s, store_name_cb cb, void *arg)
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

static int sq_rollout_gauges(struct store *s, int64_t since_ms,
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
			.nwaves = (unsigned)sqlite3_column_int(st, 4),
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
		};
		r = cb(arg, &g);
	}
	if (r)
		return r;
	return rc == SQLITE_DONE ? 0 : -EIO;
}

static int update(struct store *s, const struct store_rollout *r, int64_t now_ms)
{
	sqlite3_stmt *st = stmt(s, ST_ROLLOUT_UPDATE);

	sqlite3_bind_text(st, 1, r->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, rollout_state_name(r->state), -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 3, (int)r->wave);
	sqlite3_bind_int64(st, 4, r->wave_started_ms);
	sqlite3_bind_text(st, 5, r->reason, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 6, now_ms);
	if (step_done(st) < 0)
		return -EIO;
	return sqlite3_changes(DB(s)) ? 0 : -ENOENT;
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

static int sq_rollout_update(struct store *s, const struct store_rollout *r,
			     const struct store_verdict *v, int64_t now_ms)
{
	int ret = exec(DB(s), "SAVEPOINT update_rollout");

	if (ret == 0)
		ret = update(s, r, now_ms);
	if (ret == 0 && v)
		ret = verdict_add(s, r->name, v);
	if (ret < 0)
		exec(DB(s), "ROLLBACK TO update_rollout");
	exec(DB(s), "RELEASE update_rollout");
	return ret;
}

static int sq_verdict_last(struct store *s, const char *rollout, unsigned *wave, char verdict[16],
			   char gate[32])
{
	sqlite3_stmt *st = stmt(s, ST_VERDICT_LAST);
	int rc;

	sqlite3_bind_text(st, 1, rollout, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_DONE)
		return -ENOENT;
	if (rc != SQLITE_ROW)
		return -EIO;
	*wave = (unsigned)sqlite3_column_int(st, 0);
	snprintf(verdict, 16, "%s", text_or_empty(st, 1));
	snprintf(gate, 32, "%s", text_or_empty(st, 2));
	return 0;
}

static int sq_verdicts(struct store *s, const char *rollout,
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

static int sq_rollout_start(struct store *s, const struct store_rollout *ro,
			    const struct store_member *m, size_t n, int64_t now_ms)
{
	sqlite3_stmt *st;
	size_t i;
	int r = exec(DB(s), "SAVEPOINT start");

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
		r = update(s, ro, now_ms);
	if (r < 0)
		exec(DB(s), "ROLLBACK TO start");
	exec(DB(s), "RELEASE start");
	return r;
}

static int sq_members(struct store *s, const char *rollout,
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

static int sq_window(struct store *s, const char *host, int64_t from_ms, int64_t to_ms,
		     const char *const *probes, size_t nprobes, struct store_window *w)
{
	sqlite3_stmt *st = stmt(s, ST_WINDOW_REPORTS);
	size_t i;
	int rc;

	memset(w, 0, sizeof(*w));
	sqlite3_bind_text(st, 1, host, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, from_ms);
	sqlite3_bind_int64(st, 3, to_ms);
	if (sqlite3_step(st) != SQLITE_ROW)
		return -EIO;
	w->hours = (double)(sqlite3_column_int64(st, 1) - sqlite3_column_int64(st, 0)) / 3600000;
	st = stmt(s, ST_WINDOW_EVENTS);
	sqlite3_bind_text(st, 1, host, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, from_ms);
	sqlite3_bind_int64(st, 3, to_ms);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *kind = text_or_empty(st, 0);
		uint64_t n = (uint64_t)sqlite3_column_int64(st, 1);

		if (!strcmp(kind, "soft-lockup"))
			w->soft_lockups = n;
		else if (!strcmp(kind, "hard-lockup"))
			w->hard_lockups = n;
		else if (!strcmp(kind, "rcu-stall"))
			w->rcu_stalls = n;
		else if (!w->unhealthy[0])
			snprintf(w->unhealthy, sizeof(w->unhealthy), "%s: %s", kind,
				 text_or_empty(st, 2));
	}
	if (rc != SQLITE_DONE)
		return -EIO;
	st = stmt(s, ST_WINDOW_TRIPPED);
	sqlite3_bind_text(st, 1, host, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		snprintf(w->unhealthy, sizeof(w->unhealthy), "mitigation %s tripped: %s",
			 text_or_empty(st, 0), text_or_empty(st, 1));
	else if (rc != SQLITE_DONE)
		return -EIO;
	for (i = 0; i < nprobes && i < 4; i++) {
		struct hist h = { 0 }, x;

		st = stmt(s, ST_WINDOW_SAMPLES);
		sqlite3_bind_text(st, 1, host, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, probes[i], -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, from_ms);
		sqlite3_bind_int64(st, 4, to_ms);
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			column_hist(st, 0, &x);
			hist_merge(&h, &x);
		}
		if (rc != SQLITE_DONE)
			return -EIO;
		w->p99_ns[i] = h.count ? (double)hist_quantile(&h, 0.99) : -1;
		w->max_ns[i] = h.count ? (double)h.max_ns : -1;
	}
	return 0;
}

static int sq_host_rows(struct store *s, const char *host, int64_t from_ms, int64_t to_ms,
			const struct store_host_rows *cb, void *arg)
{
	struct store_event e;
	struct store_sample x = { .host_id = host };
	sqlite3_stmt *st = stmt(s, ST_HOST_REPORTS);
	int rc, r = 0;

	sqlite3_bind_text(st, 1, host, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, from_ms);
	sqlite3_bind_int64(st, 3, to_ms);
	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
		r = cb->report(arg, sqlite3_column_int64(st, 0));
	if (r || rc != SQLITE_DONE)
		return r ?: -EIO;
	st = stmt(s, ST_HOST_EVENTS);
	sqlite3_bind_text(st, 1, host, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, from_ms);
	sqlite3_bind_int64(st, 3, to_ms);
	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		e = (struct store_event){
			.unix_ms = sqlite3_column_int64(st, 0),
			.kind = text_or_empty(st, 1),
			.cpu = sqlite3_column_int(st, 2),
			.duration_ns = (uint64_t)sqlite3_column_int64(st, 3),
			.comm = text_or_empty(st, 4),
			.pid = sqlite3_column_int(st, 5),
			.stack = text_or_empty(st, 6),
			.mitigation = text_or_empty(st, 7),
			.probe = text_or_empty(st, 8),
			.message = text_or_empty(st, 9),
		};
		r = cb->event(arg, &e);
	}
	if (r || rc != SQLITE_DONE)
		return r ?: -EIO;
	st = stmt(s, ST_HOST_SAMPLES);
	sqlite3_bind_text(st, 1, host, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, from_ms);
	sqlite3_bind_int64(st, 3, to_ms);
	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		x.probe = text_or_empty(st, 0);
		column_hist(st, 1, &x.h);
		x.end_ms = sqlite3_column_int64(st, 6);
		x.samples = (uint64_t)sqlite3_column_int64(st, 7);
		r = cb->sample(arg, &x);
	}
	if (r || rc != SQLITE_DONE)
		return r ?: -EIO;
	return 0;
}

static const struct store_ops sqlite_ops = {
	.name = "sqlite",
	.open = sq_open,
	.close = sq_close,
	.error = sq_error,
	.ingest = sq_ingest,
	.begin = sq_begin,
	.commit = sq_commit,
	.rollback = sq_rollback,
	.host = sq_host,
	.hosts = sq_hosts,
	.hosts_page = sq_hosts_page,
	.policy_add = sq_policy_add,
	.policy_get = sq_policy_get,
	.policies = sq_policies,
	.assign = sq_assign,
	.assignments = sq_assignments,
	.audit = sq_audit,
	.revoke = sq_revoke,
	.revoked = sq_revoked,
	.samples = sq_samples,
	.tally = sq_tally,
	.idle = sq_idle,
	.secret_add = sq_secret_add,
	.secret_get = sq_secret_get,
	.secret_use = sq_secret_use,
	.names = sq_names,
	.name_add = sq_name_add,
	.enrolled = sq_enrolled,
	.enrollment_add = sq_enrollment_add,
	.reenroll = sq_reenroll,
	.secret_revoke = sq_secret_revoke,
	.expire = sq_expire,
	.rollup = sq_rollup,
	.host_facts = sq_host_facts,
	.rollout_add = sq_rollout_add,
	.rollout_get = sq_rollout_get,
	.rollouts = sq_rollouts,
	.rollout_update = sq_rollout_update,
	.rollout_start = sq_rollout_start,
	.members = sq_members,
	.rollouts_started = sq_rollouts_started,
	.changes = sq_changes,
	.rollouts_active = sq_rollouts_active,
	.rollout_gauges = sq_rollout_gauges,
	.verdict_last = sq_verdict_last,
	.verdicts = sq_verdicts,
	.window = sq_window,
	.host_rows = sq_host_rows,
};

int store_open(const char *path, struct store **out, char *err, size_t errlen)
{
	return sqlite_ops.open(path, out, err, errlen);
}

int store_open_reader(const char *path, struct store **out, char *err, size_t errlen)
{
	int r = sqlite_ops.open(path, out, err, errlen);

	if (r == 0 && exec(DB(*out), "PRAGMA query_only = ON;") < 0) {
		snprintf(err, errlen, "%s", sqlite3_errmsg(DB(*out)));
		sq_close(*out);
		r = -EIO;
	}
	return r;
}

void store_rollout_clear(struct store_rollout *r)
{
	free(r->spec_json);
	r->spec_json = NULL;
}

void store_policy_clear(struct store_policy *p)
{
	free(p->document_json);
	free(p->bundle);
	p->document_json = NULL;
	p->bundle = NULL;
}

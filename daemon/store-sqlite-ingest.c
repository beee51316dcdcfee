// SPDX-License-Identifier: GPL-2.0
/*
 * kmemd's SQLite store, reports in (one transaction each, or many in a batch), and the telemetry
 * they left read back: samples, tallies, a gate's window, a host's rows.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "report-check.h"
#include "store-sqlite.h"

enum stmt {
	ST_SEEN,
	ST_LAST_TIME,
	ST_HOST_ENDS,
	ST_HOST_UPSERT,
	ST_STATES_READ,
	ST_STATES_CLEAR,
	ST_STATE_ADD,
	ST_SAMPLE_ADD,
	ST_COUNTERS_ADD,
	ST_EVENT_ADD,
	ST_SAMPLES,
	ST_SAMPLES_ROLLUPS,
	ST_WINDOW_REPORTS,
	ST_WINDOW_EVENTS,
	ST_WINDOW_TRIPPED,
	ST_WINDOW_HOST,
	ST_WINDOW_SAMPLES,
	ST_TALLY_HOSTS,
	ST_TALLY_STATES,
	ST_TALLY_EVENTS,
	ST_TALLY_KERNELS,
	ST_TALLY_POLICIES,
	ST_TALLY_SILENT,
	ST_TALLY_WAITING,
	ST_HOST_REPORTS,
	ST_HOST_EVENTS,
	ST_HOST_SAMPLES,
	ST_N,
};

/* One probe's rollups over a window, by their key (an IN list costs a temporary table). */
#define WINDOW_ROLLUPS(probe)                                                                     \
	" UNION ALL SELECT hour_ms + 3600000, probe, first_bucket, counts, count, sum_ns, max_ns" \
	" FROM rollups WHERE host_id = ?1 AND probe = " probe " AND hour_ms >= ?2 - 3600000"      \
	" AND hour_ms + 3600000 >= ?2 AND hour_ms + 3600000 < ?3"

/* A host's last_seen_ms is rewritten once it is this old, not on every report. */
#define SEEN_EVERY_MS 60000

static const char *const sql[ST_N] = {
	[ST_SEEN] = "SELECT 1 FROM counters WHERE host_id = ?1 AND unix_ms = ?2 AND seq = ?3",
	[ST_LAST_TIME] = "SELECT max(unix_ms) FROM counters WHERE host_id = ?1",
	[ST_HOST_ENDS] = "SELECT (SELECT max(end_ms) FROM report_samples WHERE host_id = ?1),"
			 " (SELECT max(unix_ms) FROM counters WHERE host_id = ?1)",
	[ST_HOST_UPSERT] =
		"INSERT INTO hosts (host_id, hostname, kernel_release, build_id, possible_cpus,"
		" online_cpus, mem_total, kasan, module_version, labels, first_seen_ms,"
		" last_seen_ms, last_seq, policy_name, policy_version, off, waiting)"
		" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11, ?12, ?13, ?14, ?16,"
		" ?17)"
		" ON CONFLICT (host_id) DO UPDATE SET hostname = ?2, kernel_release = ?3,"
		" build_id = ?4, possible_cpus = ?5, online_cpus = ?6, mem_total = ?7, kasan = ?8,"
		" module_version = ?9, labels = ?10, last_seen_ms = ?11, last_seq = ?12,"
		" policy_name = ?13, policy_version = ?14, off = ?16, waiting = ?17"
		/*
		 * most reports change nothing here: the row is rewritten when
		 * something did, or when last_seen is SEEN_EVERY_MS old
		 */
		" WHERE hostname IS NOT ?2 OR kernel_release IS NOT ?3 OR build_id IS NOT ?4"
		" OR possible_cpus IS NOT ?5 OR online_cpus IS NOT ?6 OR mem_total IS NOT ?7"
		" OR kasan IS NOT ?8 OR module_version IS NOT ?9 OR labels IS NOT ?10"
		" OR policy_name IS NOT ?13 OR policy_version IS NOT ?14 OR off IS NOT ?16"
		" OR waiting IS NOT ?17"
		" OR last_seq = 0"
		" OR last_seen_ms < ?11 - ?15",
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
	/*
	 * Raw samples, then hourly rollups: they never overlap, a sample rolled
	 * up is gone. A raw row's probes are picked in C (store-rows.h).
	 */
	[ST_SAMPLES] = "SELECT s.host_id, s.end_ms, s.probes, s.counts FROM report_samples s"
		       " JOIN hosts h ON h.host_id = s.host_id"
		       " WHERE (?2 = 0 OR s.end_ms >= ?2) AND (?3 = 0 OR s.end_ms <= ?3)"
		       " AND (?4 IS NULL OR s.host_id = ?4)"
		       " AND (?5 IS NULL OR json_extract(h.labels, '$.\"' || ?5 || '\"') = ?6)",
	[ST_SAMPLES_ROLLUPS] =
		"SELECT s.host_id, s.probe, s.first_bucket, s.counts, s.count, s.sum_ns, s.max_ns,"
		" s.hour_ms + 3600000, s.samples FROM rollups s JOIN hosts h ON h.host_id = s.host_id"
		" WHERE (?1 IS NULL OR s.probe = ?1) AND (?2 = 0 OR s.hour_ms + 3600000 >= ?2)"
		" AND (?3 = 0 OR s.hour_ms + 3600000 <= ?3) AND (?4 IS NULL OR s.host_id = ?4)"
		" AND (?5 IS NULL OR json_extract(h.labels, '$.\"' || ?5 || '\"') = ?6)",
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
	/* what its last report waits for */
	[ST_WINDOW_HOST] = "SELECT waiting, kernel_release FROM hosts WHERE host_id = ?1",
	/*
	 * A host's samples, raw and rolled up, in one statement (a statement
	 * each cost a read transaction each), as sample_row() reads them: raw
	 * rows by report_samples_by_host, whose probes C picks; rollups of the
	 * probes ?4 to ?7 by their key. No scan.
	 */
	[ST_WINDOW_SAMPLES] = "SELECT end_ms, NULL, probes, counts, NULL, NULL, NULL"
			      " FROM report_samples WHERE host_id = ?1 AND end_ms >= ?2"
			      " AND end_ms < ?3" WINDOW_ROLLUPS("?4") WINDOW_ROLLUPS("?5")
				      WINDOW_ROLLUPS("?6") WINDOW_ROLLUPS("?7"),
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
	[ST_TALLY_WAITING] = "SELECT j.value, '', count(*) FROM hosts h, json_each(h.waiting) j"
			     " WHERE h.waiting IS NOT NULL AND h.last_seq > 0 AND h.revoked = 0"
			     " GROUP BY 1 ORDER BY 1",
	/* one host's rows over a window, by the host indexes and the rollups' key */
	[ST_HOST_REPORTS] = "SELECT unix_ms FROM counters WHERE host_id = ?1"
			    " AND unix_ms >= ?2 AND unix_ms < ?3 ORDER BY unix_ms",
	[ST_HOST_EVENTS] = "SELECT unix_ms, kind, cpu, duration_ns, comm, pid, stack, mitigation,"
			   " probe, message FROM events WHERE host_id = ?1"
			   " AND unix_ms >= ?2 AND unix_ms < ?3 ORDER BY unix_ms",
	[ST_HOST_SAMPLES] = "SELECT end_ms, NULL, probes, counts, NULL, NULL, NULL, 1"
			    " FROM report_samples WHERE host_id = ?1 AND end_ms >= ?2"
			    " AND end_ms < ?3 UNION ALL SELECT hour_ms + 3600000, probe,"
			    " first_bucket, counts, count, sum_ns, max_ns, samples FROM rollups"
			    " WHERE host_id = ?1 AND hour_ms >= ?2 - 3600000"
			    " AND hour_ms + 3600000 >= ?2 AND hour_ms + 3600000 < ?3",
};

/* stepped for one row and left there: sq_stmt() resets them */
static const bool one_row[ST_N] = {
	[ST_SEEN] = true,	    [ST_LAST_TIME] = true,	[ST_HOST_ENDS] = true,
	[ST_WINDOW_REPORTS] = true, [ST_WINDOW_TRIPPED] = true,
};

const struct sq_area sq_ingest_area = {
	.id = SQ_INGEST,
	.sql = sql,
	.one_row = one_row,
	.n = ST_N,
};

static sqlite3_stmt *stmt(struct store *s, enum stmt which)
{
	return sq_stmt(s, &sq_ingest_area, which);
}

/*
 * What a report stores that kmemd makes rather than copies: made before
 * the first write, so that nothing but the database can fail in between.
 */
struct ingest_text {
	char *labels;
	char *waiting; /* hosts.waiting; NULL: none */
	char **stacks; /* each event's stack as a JSON array */
	size_t nstacks;
};

static void ingest_text_free(struct ingest_text *t)
{
	size_t i;

	free(t->labels);
	free(t->waiting);
	for (i = 0; i < t->nstacks; i++)
		free(t->stacks[i]);
	free(t->stacks);
}

/* labels: the host's row is written, with its labels as JSON */
static int ingest_text_make(struct ingest_text *t, struct store *s, const Kmemctl__V1__Report *rep,
			    bool labels)
{
	size_t i, j;
	int r;

	*t = (struct ingest_text){ .labels = labels ? store_labels_json(rep->facts) : NULL };
	if (labels && !t->labels)
		return -ENOMEM;
	r = labels ? store_waiting_json(rep, &t->waiting) : 0;
	if (r < 0)
		return r;
	r = rs_reserve_report(&((struct sqlite_store *)s)->probes,
			      &((struct sqlite_store *)s)->counts, rep);
	if (r < 0)
		return r;
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

static int ingest_host(struct store *s, const Kmemctl__V1__Report *rep, const struct ingest_text *t,
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
	sqlite3_bind_text(st, 10, t->labels, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 11, now_ms);
	sqlite3_bind_int64(st, 12, (sqlite3_int64)rep->seq);
	sqlite3_bind_text(st, 13, rep->policy_name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 14, (sqlite3_int64)rep->policy_version);
	sqlite3_bind_int64(st, 15, SEEN_EVERY_MS);
	sqlite3_bind_int(st, 16, rep->off);
	sqlite3_bind_text(st, 17, t->waiting, -1, SQLITE_STATIC);
	return step_done(st);
}

struct state_text {
	char state[32], mode[32], source[32];
};

static void state_text(const Kmemctl__V1__MitigationState *m, struct state_text *t)
{
	report_enum_name(&kmemctl__v1__mitigation_state_kind__descriptor, m->state,
			 "MITIGATION_STATE_", t->state, sizeof(t->state));
	report_enum_name(&kmemctl__v1__mitigation_mode__descriptor, m->mode, "MITIGATION_MODE_",
			 t->mode, sizeof(t->mode));
	report_enum_name(&kmemctl__v1__mode_source__descriptor, m->source, "MODE_SOURCE_",
			 t->source, sizeof(t->source));
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

/*
 * The report's histograms in one report_samples row (migration 8), or
 * one per end time when its probes do not all end at the same time (an
 * agent's all do). Room was reserved by rs_reserve_report().
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
		rs_begin(&q->probes, &q->counts);
		for (j = i; j < rep->n_probes; j++) {
			const Kmemctl__V1__ProbeSample *p = rep->probes[j];

			if (!p->hist || p->end_unix_ms != end)
				continue;
			rs_add_sample(&q->probes, &q->counts, p);
		}
		st = stmt(s, ST_SAMPLE_ADD);
		sqlite3_bind_text(st, 1, rep->facts->host_id, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, end);
		sqlite3_bind_blob(st, 3, q->probes.p, (int)q->probes.len, SQLITE_STATIC);
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

		report_enum_name(&kmemctl__v1__event_kind__descriptor, e->kind, "EVENT_KIND_", kind,
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

/* A column's integer; INT64_MIN for NULL (max() over no rows) */
static int64_t int64_or_min(sqlite3_stmt *st, int col)
{
	return sqlite3_column_type(st, col) == SQLITE_NULL ? INT64_MIN :
							     sqlite3_column_int64(st, col);
}

/*
 * Whether rep was stored before. A report sent again after its
 * acknowledgement was lost has the same seq and time. Not "seq at most the
 * last one": an agent whose state was wiped counts from 1 again, and its
 * reports are new. One later than any stored is new without a lookup.
 */
static int seen(struct store *s, struct host_memo_entry *e, const Kmemctl__V1__Report *rep)
{
	sqlite3_stmt *st;
	int rc;

	if (e && !e->time_known) {
		st = stmt(s, ST_LAST_TIME);
		sqlite3_bind_text(st, 1, rep->facts->host_id, -1, SQLITE_STATIC);
		if (sqlite3_step(st) != SQLITE_ROW)
			return -EIO;
		e->max_unix_ms = int64_or_min(st, 0);
		e->time_known = true;
	}
	if (e && rep->unix_ms > e->max_unix_ms)
		return 0;
	st = stmt(s, ST_SEEN);
	sqlite3_bind_text(st, 1, rep->facts->host_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, rep->unix_ms);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)rep->seq);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc == SQLITE_ROW)
		return 1;
	return rc == SQLITE_DONE ? 0 : -EIO;
}

/*
 * No savepoint: everything that can fail short of the database is made
 * before the first write, and a database error (a full disk, I/O, no
 * memory) may roll SQLite's transaction back whole anyway. So inside a
 * batch a failed report fails the batch (store.h: the caller rolls it
 * back); outside one, the report is its own transaction. A savepoint per
 * report cost a statement journal (spilled to temporary files) and two
 * statements compiled per report. What the host memo says is unchanged is
 * not written (a failed write clears the memo: sq_write_end()).
 */
int sq_ingest(struct store *s, const Kmemctl__V1__Report *rep, int64_t now_ms)
{
	struct sqlite_store *q = (struct sqlite_store *)s;
	/* NULL (out of memory): every row is written, as if nothing were known */
	struct host_memo_entry *e = host_memo_get(&q->memo, rep->facts->host_id);
	uint64_t facts = host_memo_facts(rep), states = host_memo_states(rep);
	bool host = !e || e->facts != facts || now_ms - e->seen_ms > SEEN_EVERY_MS;
	struct ingest_text t = { 0 };
	bool own;
	int r;

	r = seen(s, e, rep);
	if (r != 0)
		return r;
	r = ingest_text_make(&t, s, rep, host);
	if (r < 0)
		goto out;
	/* in a batch, no savepoint: the caller rolls the batch back instead */
	own = sqlite3_get_autocommit(DB(s));
	if (own) {
		r = sq_write_begin(s, true);
		if (r < 0)
			goto out;
	}
	if (host)
		r = ingest_host(s, rep, &t, now_ms);
	if (host && r == 0 && e) {
		e->facts = facts;
		/* unwritten (its WHERE): the row was seen within the minute, when is not known */
		e->seen_ms = sqlite3_changes(DB(s)) ? now_ms : now_ms - SEEN_EVERY_MS;
	}
	if (r == 0 && (!e || e->states != states))
		r = ingest_states(s, rep, now_ms);
	if (r == 0 && e)
		e->states = states;
	if (r == 0)
		r = ingest_samples(s, rep);
	for (size_t i = 0; r == 0 && e && e->end_known && i < rep->n_probes; i++)
		if (rep->probes[i]->hist && rep->probes[i]->end_unix_ms > e->samples_end_ms)
			e->samples_end_ms = rep->probes[i]->end_unix_ms;
	if (r == 0)
		r = ingest_counters(s, rep);
	if (r == 0 && e && rep->unix_ms > e->max_unix_ms)
		e->max_unix_ms = rep->unix_ms;
	if (r == 0)
		r = ingest_events(s, rep, &t);
	if (own)
		r = sq_write_end(s, true, r);
out:
	ingest_text_free(&t);
	return r;
}

/*
 * The memo's, once read: only this writer adds reports, and a rollup
 * leaves it right (the samples and counters it took ended earlier).
 */
static int host_end(struct store *s, const char *host, struct store_host_ends *out)
{
	struct host_memo_entry *e = host_memo_get(&((struct sqlite_store *)s)->memo, host);
	sqlite3_stmt *st;

	if (e && e->end_known && e->time_known) {
		out->samples_ms = e->samples_end_ms;
		out->report_ms = e->max_unix_ms;
		return 0;
	}
	st = stmt(s, ST_HOST_ENDS);
	sqlite3_bind_text(st, 1, host, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_ROW)
		return -EIO;
	out->samples_ms = int64_or_min(st, 0);
	out->report_ms = int64_or_min(st, 1);
	if (e) {
		e->samples_end_ms = out->samples_ms;
		e->end_known = true;
		e->max_unix_ms = out->report_ms;
		e->time_known = true;
	}
	return 0;
}

int sq_host_ends(struct store *s, const char *const *hosts, size_t n, struct store_host_ends *out)
{
	int r = 0;

	for (size_t i = 0; r == 0 && i < n; i++)
		r = host_end(s, hosts[i], &out[i]);
	return r;
}

static sqlite3_stmt *samples_stmt(struct store *s, enum stmt which, const struct store_filter *f)
{
	sqlite3_stmt *st = stmt(s, which);

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
	return st;
}

/* x's probe, a string, out of the row; x->h from it. */
static void sample_of(struct store_sample *x, char name[RS_NAME_MAX + 1], const struct rs_probe *p)
{
	memcpy(name, p->name, p->name_len);
	name[p->name_len] = '\0';
	x->probe = name;
	rs_hist(p, &x->h);
}

int sq_samples(struct store *s, const struct store_filter *f, store_sample_cb cb, void *arg)
{
	struct sqlite_store *q = (struct sqlite_store *)s;
	sqlite3_stmt *st = samples_stmt(s, ST_SAMPLES, f);
	struct store_sample x = { .samples = 1 };
	char name[RS_NAME_MAX + 1];
	struct rs_probe p;
	struct rs_row row;
	int rc, r = 0;

	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		x.host_id = (const char *)sqlite3_column_text(st, 0);
		x.end_ms = sqlite3_column_int64(st, 1);
		if (!sq_row_open(q, st, 2, x.host_id, x.end_ms, &row))
			continue;
		while (r == 0 && rs_next(&row, &p)) {
			if (f->probe && !rs_is(&p, f->probe))
				continue;
			sample_of(&x, name, &p);
			r = cb(arg, &x);
		}
	}
	if (r || rc != SQLITE_DONE)
		return r ?: -EIO;
	st = samples_stmt(s, ST_SAMPLES_ROLLUPS, f);
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

int sq_tally(struct store *s, enum store_tally which, store_tally_cb cb, void *arg)
{
	static const enum stmt q[] = {
		[STORE_TALLY_HOSTS] = ST_TALLY_HOSTS,
		[STORE_TALLY_STATES] = ST_TALLY_STATES,
		[STORE_TALLY_EVENTS] = ST_TALLY_EVENTS,
		[STORE_TALLY_KERNELS] = ST_TALLY_KERNELS,
		[STORE_TALLY_POLICIES] = ST_TALLY_POLICIES,
		[STORE_TALLY_SILENT] = ST_TALLY_SILENT,
		[STORE_TALLY_WAITING] = ST_TALLY_WAITING,
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

/*
 * A row of ST_WINDOW_SAMPLES or ST_HOST_SAMPLES: end_ms, probe, then a
 * raw row's probes and counts (probe NULL), or a rollup's first_bucket,
 * counts, count, sum_ns and max_ns. false: a raw row, opened into row
 * (unless it cannot be read: then row is empty); true: the rollup, in x.
 */
static bool sample_row(struct sqlite_store *q, sqlite3_stmt *st, const char *host,
		       struct rs_row *row, struct store_sample *x)
{
	x->end_ms = sqlite3_column_int64(st, 0);
	x->probe = (const char *)sqlite3_column_text(st, 1);
	if (x->probe) {
		column_hist(st, 2, &x->h);
		return true;
	}
	if (!sq_row_open(q, st, 2, host, x->end_ms, row))
		row->p = row->end = NULL;
	return false;
}

/* The p99 and max of n probes over the window, from its raw rows and rollups. */
static int window_probes(struct store *s, const char *host, int64_t from_ms, int64_t to_ms,
			 const char *const *probes, size_t n, struct store_window *w)
{
	struct sqlite_store *q = (struct sqlite_store *)s;
	sqlite3_stmt *st = stmt(s, ST_WINDOW_SAMPLES);
	struct hist h[4] = { 0 };
	struct store_sample x;
	struct rs_probe p;
	struct rs_row row;
	size_t i;
	int rc;

	sqlite3_bind_text(st, 1, host, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, from_ms);
	sqlite3_bind_int64(st, 3, to_ms);
	for (i = 0; i < n; i++)
		sqlite3_bind_text(st, 4 + (int)i, probes[i], -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (sample_row(q, st, host, &row, &x)) {
			for (i = 0; i < n; i++)
				if (!strcmp(x.probe, probes[i]))
					hist_merge(&h[i], &x.h);
			continue;
		}
		while (rs_next(&row, &p))
			for (i = 0; i < n; i++)
				if (rs_is(&p, probes[i]))
					rs_merge(&h[i], &p);
	}
	if (rc != SQLITE_DONE)
		return -EIO;
	for (i = 0; i < n; i++) {
		w->p99_ns[i] = h[i].count ? (double)hist_quantile(&h[i], 0.99) : -1;
		w->max_ns[i] = h[i].count ? (double)h[i].max_ns : -1;
	}
	return 0;
}

static int window_one(struct store *s, const char *host, int64_t from_ms, int64_t to_ms,
		      const char *const *probes, size_t nprobes, struct store_window *w)
{
	sqlite3_stmt *st = stmt(s, ST_WINDOW_REPORTS);
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
	st = stmt(s, ST_WINDOW_HOST);
	sqlite3_bind_text(st, 1, host, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		snprintf(w->waiting, sizeof(w->waiting), "%s", text_or_empty(st, 0));
		snprintf(w->release, sizeof(w->release), "%s", text_or_empty(st, 1));
	}
	/* copied out: its read snapshot let go at once */
	sqlite3_reset(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return -EIO;
	return window_probes(s, host, from_ms, to_ms, probes, nprobes < 4 ? nprobes : 4, w);
}

/* One host at a time: a statement here costs no round trip. */
int sq_window(struct store *s, const char *const *hosts, size_t nhosts, int64_t from_ms,
	      int64_t to_ms, const char *const *probes, size_t nprobes, struct store_window *w)
{
	int r = 0;

	for (size_t i = 0; r == 0 && i < nhosts; i++)
		r = window_one(s, hosts[i], from_ms, to_ms, probes, nprobes, &w[i]);
	return r;
}

int sq_host_rows(struct store *s, const char *host, int64_t from_ms, int64_t to_ms,
		 const struct store_host_rows *cb, void *arg)
{
	struct sqlite_store *q = (struct sqlite_store *)s;
	struct store_sample x = { .host_id = host, .samples = 1 };
	char name[RS_NAME_MAX + 1];
	struct store_event e;
	sqlite3_stmt *st = stmt(s, ST_HOST_REPORTS);
	struct rs_probe p;
	struct rs_row row;
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
		x.samples = (uint64_t)sqlite3_column_int64(st, 7);
		if (sample_row(q, st, host, &row, &x)) {
			r = cb->sample(arg, &x);
			continue;
		}
		while (r == 0 && rs_next(&row, &p)) {
			sample_of(&x, name, &p);
			r = cb->sample(arg, &x);
		}
	}
	if (r || rc != SQLITE_DONE)
		return r ?: -EIO;
	return 0;
}

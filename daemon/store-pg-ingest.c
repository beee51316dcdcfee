// SPDX-License-Identifier: GPL-2.0
/*
 * kmemd's PostgreSQL store, reports in (one statement each) and the
 * telemetry they left read back: samples, tallies, a gate's window, a
 * host's rows. The SQL is SQLite's (store-sqlite-ingest.c) in PostgreSQL's
 * dialect; what differs is said where it does.
 *
 * Text is ordered and compared as SQLite does, byte by byte (COLLATE "C"),
 * whatever the database's collation.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report-check.h"
#include "store-pg.h"

enum stmt {
	ST_INGEST,
	ST_HOST_ENDS,
	ST_SAMPLES,
	ST_SAMPLES_ROLLUPS,
	ST_WINDOW,
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

/* A host's last_seen_ms is rewritten once it is this old, not on every report. */
#define SEEN_EVERY_MS "60000"

/* Columns of a raw row where a rollup has its histogram, and the other way round. */
#define NO_ROLLUP "NULL::integer, NULL::bytea, NULL::bigint, NULL::bigint, NULL::bigint"
#define NO_RAW "NULL::bytea, NULL::bytea"

static const char *const sql[ST_N] = {
	/*
	 * A report in one statement, one round trip. Several kmemd may store
	 * reports of one host, so nothing is remembered of it between reports:
	 * the counters row goes first, and a report stored before (its host,
	 * time and seq, counters' key) inserts none. Every other write is
	 * gated on that row, so a resent report writes nothing; the statement
	 * gives how many counters rows it inserted. $4 is the counters, in
	 * their columns' order; $17, $20 and $21 the states, sample rows and
	 * events as JSON arrays; $18 and $19 every sample row's probes and
	 * counts, one after the other, each row's place in them in $20; $23
	 * what the host waits for (hosts.waiting).
	 */
	[ST_INGEST] =
		"WITH c AS (INSERT INTO counters VALUES ($1::text, $2::bigint, $3::bigint,"
		" ($4::bigint[])[1], ($4::bigint[])[2], ($4::bigint[])[3], ($4::bigint[])[4],"
		" ($4::bigint[])[5], ($4::bigint[])[6], ($4::bigint[])[7], ($4::bigint[])[8],"
		" ($4::bigint[])[9]) ON CONFLICT (host_id, unix_ms, seq) DO NOTHING RETURNING 1),"
		/*
		 * Most reports change nothing of the host's row: it is written
		 * when something did, or when last_seen is SEEN_EVERY_MS old,
		 * as the statement's snapshot has it. Not left to ON CONFLICT's
		 * WHERE: that locks the row even when it writes nothing, and a
		 * batch would hold every host row it met until it commits,
		 * another kmemd's batches waiting on it.
		 */
		" h AS (INSERT INTO hosts (host_id, hostname, kernel_release, build_id,"
		" possible_cpus, online_cpus, mem_total, kasan, module_version, labels,"
		" first_seen_ms, last_seen_ms, last_seq, policy_name, policy_version, off, waiting)"
		" SELECT $1, $5::text, $6::text, $7::text, $8::bigint, $9::bigint, $10::bigint,"
		" $11::integer, $12::text, $13::text, $14::bigint, $14, $3, $15::text, $16::bigint,"
		" $22::integer, $23::text"
		" WHERE EXISTS (SELECT FROM c) AND NOT EXISTS (SELECT FROM hosts WHERE host_id = $1"
		" AND ((hostname, kernel_release, build_id, possible_cpus, online_cpus, mem_total,"
		" kasan, module_version, labels, policy_name, policy_version, off, waiting)"
		" IS DISTINCT FROM ($5, $6, $7, $8, $9, $10, $11, $12, $13, $15, $16, $22, $23)"
		" OR last_seq = 0"
		" OR last_seen_ms < $14 - " SEEN_EVERY_MS ") IS NOT TRUE)"
		" ON CONFLICT (host_id) DO UPDATE SET hostname = excluded.hostname,"
		" kernel_release = excluded.kernel_release, build_id = excluded.build_id,"
		" possible_cpus = excluded.possible_cpus, online_cpus = excluded.online_cpus,"
		" mem_total = excluded.mem_total, kasan = excluded.kasan,"
		" module_version = excluded.module_version, labels = excluded.labels,"
		" last_seen_ms = excluded.last_seen_ms, last_seq = excluded.last_seq,"
		" policy_name = excluded.policy_name, policy_version = excluded.policy_version,"
		" off = excluded.off, waiting = excluded.waiting),"
		" m AS (SELECT * FROM json_to_recordset($17::json)"
		" AS x(id text, state text, mode text, source text, reason text)),"
		/*
		 * more rows than mitigations reported: the module lost some,
		 * and the host's states start over, as SQLite's: those not
		 * reported go, and those reported are all written
		 */
		" clear AS (SELECT count(*) > (SELECT count(*) FROM m) AS yes FROM states"
		" WHERE host_id = $1),"
		" sd AS (DELETE FROM states t WHERE t.host_id = $1 AND EXISTS (SELECT FROM c)"
		" AND (SELECT yes FROM clear) AND NOT EXISTS (SELECT FROM m WHERE m.id = t.id)),"
		/*
		 * else only the rows that changed are written (and locked): most
		 * reports change none
		 */
		" su AS (INSERT INTO states SELECT $1, id, state, mode, source, reason, $14 FROM m"
		" WHERE EXISTS (SELECT FROM c) AND ((SELECT yes FROM clear) OR NOT EXISTS"
		" (SELECT FROM states t WHERE t.host_id = $1 AND t.id = m.id"
		" AND (t.state, t.mode, t.source, t.reason) IS NOT DISTINCT FROM"
		" (m.state, m.mode, m.source, m.reason)))"
		" ON CONFLICT (host_id, id) DO UPDATE SET state = excluded.state,"
		" mode = excluded.mode, source = excluded.source, reason = excluded.reason,"
		" updated_ms = excluded.updated_ms),"
		" rs AS (INSERT INTO report_samples SELECT $1, x.end_ms,"
		" substring($18::bytea FROM x.po + 1 FOR x.pl),"
		" substring($19::bytea FROM x.co + 1 FOR x.cl)"
		" FROM json_to_recordset($20::json)"
		" AS x(end_ms bigint, po integer, pl integer, co integer, cl integer)"
		" WHERE EXISTS (SELECT FROM c)),"
		" ev AS (INSERT INTO events SELECT $1, x.unix_ms, x.kind, x.cpu, x.duration_ns,"
		" x.comm, x.pid, x.stack, x.mitigation, x.probe, x.message"
		" FROM ROWS FROM (json_to_recordset($21::json) AS (unix_ms bigint, kind text,"
		" cpu integer, duration_ns bigint, comm text, pid integer, stack text,"
		" mitigation text, probe text, message text)) WITH ORDINALITY AS x"
		" WHERE EXISTS (SELECT FROM c) ORDER BY x.ordinality)"
		" SELECT count(*) FROM c",
	/* asked for each batch: another kmemd may have stored its hosts' last reports */
	[ST_HOST_ENDS] = "SELECT (SELECT max(end_ms) FROM report_samples WHERE host_id = u.h),"
			 " (SELECT max(unix_ms) FROM counters WHERE host_id = u.h)"
			 " FROM unnest($1::text[]) WITH ORDINALITY u(h, i) ORDER BY u.i",
	/*
	 * Raw samples, then hourly rollups: they never overlap, a sample rolled
	 * up is gone. A raw row's probes are picked in C (store-rows.h). The
	 * filter is $1 to $5, the rollups' probe $6. Rows come in no order
	 * (SQLite's in its tables'): the reader merges them, and a sort of a
	 * fleet's rows would cost more than the rest of the query.
	 */
	[ST_SAMPLES] = "SELECT s.host_id, s.end_ms, s.probes, s.counts FROM report_samples s"
		       " JOIN hosts h ON h.host_id = s.host_id"
		       " WHERE ($1::bigint = 0 OR s.end_ms >= $1) AND ($2::bigint = 0"
		       " OR s.end_ms <= $2) AND ($3::text IS NULL OR s.host_id = $3)"
		       " AND ($4::text IS NULL OR h.labels::json ->> $4 = $5::text)",
	[ST_SAMPLES_ROLLUPS] =
		"SELECT s.host_id, s.probe, s.first_bucket, s.counts, s.count, s.sum_ns, s.max_ns,"
		" s.hour_ms + 3600000, s.samples FROM rollups s JOIN hosts h"
		" ON h.host_id = s.host_id WHERE ($1::bigint = 0 OR s.hour_ms + 3600000 >= $1)"
		" AND ($2::bigint = 0 OR s.hour_ms + 3600000 <= $2)"
		" AND ($3::text IS NULL OR s.host_id = $3)"
		" AND ($4::text IS NULL OR h.labels::json ->> $4 = $5::text)"
		" AND ($6::text IS NULL OR s.probe = $6)",
	/*
	 * What a gate judges of each host of $1 but its samples, in one
	 * statement, each row's host (its place in $1) last:
	 * part 0 the time from its first report to its last; part 1 lockups
	 * counted by kind, and the first sign of an unhealthy mitigation: the
	 * module tripped it, the agent's guard reverted or quarantined it, a
	 * livepatch transition stalled, the policy was refused; part 2 a
	 * mitigation tripped now; part 3 its kernel release and what its last
	 * report waits for.
	 */
	[ST_WINDOW] =
		"SELECT part, name, n, detail, u.i FROM unnest($1::text[]) WITH ORDINALITY u(h, i)"
		" CROSS JOIN LATERAL (SELECT 0 AS part, NULL::text AS name,"
		" coalesce(max(unix_ms) - min(unix_ms), 0) AS n, NULL::text AS detail"
		" FROM counters WHERE host_id = u.h AND unix_ms >= $2::bigint"
		" AND unix_ms < $3::bigint"
		" UNION ALL SELECT 1, kind, count(*), min(CASE WHEN coalesce(mitigation, '') = ''"
		" THEN coalesce(message, '') ELSE mitigation || ': ' || coalesce(message, '') END"
		" COLLATE \"C\") FROM events WHERE host_id = u.h AND unix_ms >= $2 AND unix_ms < $3"
		" AND kind IN ('soft-lockup', 'hard-lockup', 'rcu-stall', 'trip', 'guard-revert',"
		" 'quarantine', 'transition-stall', 'policy-refused') GROUP BY kind"
		" UNION ALL (SELECT 2, id, NULL, reason FROM states WHERE host_id = u.h"
		" AND state = 'tripped' ORDER BY id COLLATE \"C\" LIMIT 1)"
		" UNION ALL SELECT 3, kernel_release, NULL, waiting FROM hosts WHERE host_id = u.h) w"
		" ORDER BY u.i, part, name COLLATE \"C\"",
	/*
	 * Those hosts' samples, raw and rolled up, as sample_row() reads them,
	 * each row's host last: raw rows by report_samples_by_host, whose
	 * probes C picks; rollups of the probes $4 to $7 by their key.
	 */
	[ST_WINDOW_SAMPLES] =
		"SELECT w.*, u.i FROM unnest($1::text[]) WITH ORDINALITY u(h, i)"
		" CROSS JOIN LATERAL (SELECT end_ms, NULL::text, probes, counts, " NO_ROLLUP
		" FROM report_samples WHERE host_id = u.h"
		" AND end_ms >= $2::bigint AND end_ms < $3::bigint"
		" UNION ALL SELECT hour_ms + 3600000, probe, " NO_RAW
		", first_bucket, counts, count, sum_ns, max_ns FROM rollups"
		" WHERE host_id = u.h"
		" AND probe IN ($4::text, $5::text, $6::text, $7::text)"
		" AND hour_ms >= $2 - 3600000 AND hour_ms + 3600000 >= $2"
		" AND hour_ms + 3600000 < $3) w",
	[ST_TALLY_HOSTS] = "SELECT '', '', count(*) FROM hosts WHERE last_seq > 0",
	[ST_TALLY_STATES] = "SELECT id, state, count(*) FROM states GROUP BY id, state"
			    " ORDER BY id COLLATE \"C\", state COLLATE \"C\" NULLS FIRST",
	[ST_TALLY_EVENTS] = "SELECT kind, '', count(*) FROM events GROUP BY kind"
			    " ORDER BY kind COLLATE \"C\" NULLS FIRST",
	[ST_TALLY_KERNELS] = "SELECT kernel_release, '', count(*) FROM hosts WHERE last_seq > 0"
			     " AND revoked = 0 GROUP BY kernel_release"
			     " ORDER BY count(*) DESC, kernel_release COLLATE \"C\" NULLS FIRST",
	/* versions in order of their numbers, no version last, as SQLite orders them */
	[ST_TALLY_POLICIES] =
		"SELECT coalesce(policy_name, ''), coalesce(policy_version::text, ''),"
		" count(*) FROM hosts WHERE last_seq > 0 AND revoked = 0"
		" GROUP BY coalesce(policy_name, ''), policy_version"
		" ORDER BY count(*) DESC, coalesce(policy_name, '') COLLATE \"C\","
		" policy_version NULLS LAST",
	/* last_seen_ms is the wall clock when kmemd stored the report, as is the statement's */
	[ST_TALLY_SILENT] = "WITH t(name, ms) AS (VALUES ('5m', 300000), ('15m', 900000),"
			    " ('1h', 3600000), ('1d', 86400000))"
			    " SELECT t.name, '', (SELECT count(*) FROM hosts WHERE last_seq > 0"
			    " AND revoked = 0 AND last_seen_ms < floor(extract(epoch FROM"
			    " statement_timestamp()))::bigint * 1000 - t.ms) FROM t ORDER BY t.ms",
	[ST_TALLY_WAITING] = "SELECT j.value, '', count(*) FROM hosts h,"
			     " json_array_elements_text(h.waiting::json) j(value)"
			     " WHERE h.waiting IS NOT NULL AND h.last_seq > 0 AND h.revoked = 0"
			     " GROUP BY 1 ORDER BY j.value COLLATE \"C\"",
	/*
	 * one host's rows over a window, by the host indexes and the rollups'
	 * key; events of one time in the order stored, as near as a table
	 * without a key of its own says
	 */
	[ST_HOST_REPORTS] = "SELECT unix_ms FROM counters WHERE host_id = $1::text"
			    " AND unix_ms >= $2::bigint AND unix_ms < $3::bigint"
			    " ORDER BY unix_ms, seq",
	[ST_HOST_EVENTS] = "SELECT unix_ms, kind, cpu, duration_ns, comm, pid, stack, mitigation,"
			   " probe, message FROM events WHERE host_id = $1::text"
			   " AND unix_ms >= $2::bigint AND unix_ms < $3::bigint"
			   " ORDER BY unix_ms, id",
	/* raw rows oldest first, then rollups by probe and hour, as SQLite's indexes give them */
	[ST_HOST_SAMPLES] =
		"SELECT * FROM (SELECT end_ms, NULL::text AS probe, probes, counts, " NO_ROLLUP
		", 1::bigint FROM report_samples WHERE host_id = $1::text"
		" AND end_ms >= $2::bigint AND end_ms < $3::bigint"
		" UNION ALL SELECT hour_ms + 3600000, probe, " NO_RAW ", first_bucket,"
		" counts, count, sum_ns, max_ns, samples FROM rollups"
		" WHERE host_id = $1 AND hour_ms >= $2 - 3600000"
		" AND hour_ms + 3600000 >= $2 AND hour_ms + 3600000 < $3) x"
		" ORDER BY probe COLLATE \"C\" NULLS FIRST, end_ms",
};

const struct pg_area pg_ingest_area = {
	.id = PG_INGEST,
	.sql = sql,
	.n = ST_N,
};

static PGresult *run(struct store *s, enum stmt which, const struct pg_args *a)
{
	return pg_run(s, &pg_ingest_area, which, a);
}

/* An integer column, 0 for NULL, as SQLite's readers take it. */
static int64_t col_int0(const PGresult *r, int row, int col)
{
	return PQgetisnull(r, row, col) ? 0 : pg_col_int(r, row, col);
}

/* a as text, and a let go; NULL when a is NULL or out of memory */
static char *dump(json_t *a)
{
	char *text = a ? json_dumps(a, JSON_COMPACT) : NULL;

	json_decref(a);
	return text;
}

/*
 * What a report's statement is given besides its fields, made before it
 * runs. report_check() let only UTF-8 through: a NULL is out of memory.
 */
struct ingest_json {
	char *labels, *states, *samples, *events;
	char *waiting; /* NULL: none */
};

static void ingest_json_free(struct ingest_json *t)
{
	free(t->labels);
	free(t->waiting);
	free(t->states);
	free(t->samples);
	free(t->events);
}

static char *states_json(const Kmemctl__V1__Report *rep)
{
	json_t *a = json_array();
	char state[32], mode[32], source[32];
	size_t i;

	for (i = 0; a && i < rep->n_mitigations; i++) {
		const Kmemctl__V1__MitigationState *m = rep->mitigations[i];

		report_enum_name(&kmemctl__v1__mitigation_state_kind__descriptor, m->state,
				 "MITIGATION_STATE_", state, sizeof(state));
		report_enum_name(&kmemctl__v1__mitigation_mode__descriptor, m->mode,
				 "MITIGATION_MODE_", mode, sizeof(mode));
		report_enum_name(&kmemctl__v1__mode_source__descriptor, m->source, "MODE_SOURCE_",
				 source, sizeof(source));
		if (json_array_append_new(a, json_pack("{s:s?, s:s, s:s, s:s, s:s?}", "id", m->id,
						       "state", state, "mode", mode, "source",
						       source, "reason", m->reason)) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return dump(a);
}

/* Each event's stack is stored as the text of a JSON array, as SQLite's. */
static char *events_json(const Kmemctl__V1__Report *rep)
{
	json_t *a = json_array();
	char kind[48], *stack;
	size_t i, j;

	for (i = 0; a && i < rep->n_events; i++) {
		const Kmemctl__V1__KernelEvent *e = rep->events[i];
		json_t *frames = json_array(), *o;

		for (j = 0; frames && j < e->n_stack_top; j++)
			json_array_append_new(frames, json_string(e->stack_top[j]));
		stack = dump(frames);
		report_enum_name(&kmemctl__v1__event_kind__descriptor, e->kind, "EVENT_KIND_", kind,
				 sizeof(kind));
		o = stack ? json_pack("{s:I, s:s, s:i, s:I, s:s?, s:i, s:s, s:s?, s:s?, s:s?}",
				      "unix_ms", (json_int_t)e->unix_ms, "kind", kind, "cpu",
				      e->cpu, "duration_ns", (json_int_t)e->duration_ns, "comm",
				      e->comm, "pid", e->pid, "stack", stack, "mitigation",
				      e->mitigation, "probe", e->probe, "message", e->message) :
			    NULL;
		free(stack);
		if (json_array_append_new(a, o) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return dump(a);
}

/*
 * The report's histograms in one report_samples row, or one per end time
 * when its probes do not all end at the same time (an agent's all do):
 * the rows one after the other in q->probes and q->counts, each row's
 * end and place in them in the JSON returned.
 */
static char *samples_json(struct pg_store *q, const Kmemctl__V1__Report *rep)
{
	json_t *a = json_array();
	struct buf p, c;
	size_t i, j;

	q->probes.len = q->counts.len = 0;
	for (i = 0; a && i < rep->n_probes; i++) {
		int64_t end = rep->probes[i]->end_unix_ms;

		if (!rep->probes[i]->hist)
			continue;
		for (j = 0; j < i; j++)
			if (rep->probes[j]->hist && rep->probes[j]->end_unix_ms == end)
				break;
		if (j < i) /* in the row of an earlier probe */
			continue;
		/* the row made where the last one ended */
		p = (struct buf){ .p = q->probes.p + q->probes.len,
				  .cap = q->probes.cap - q->probes.len };
		c = (struct buf){ .p = q->counts.p + q->counts.len,
				  .cap = q->counts.cap - q->counts.len };
		rs_begin(&p, &c);
		for (j = i; j < rep->n_probes; j++) {
			const Kmemctl__V1__ProbeSample *x = rep->probes[j];

			if (!x->hist || x->end_unix_ms != end)
				continue;
			rs_add_sample(&p, &c, x);
		}
		if (json_array_append_new(
			    a,
			    json_pack("{s:I, s:I, s:I, s:I, s:I}", "end_ms", (json_int_t)end, "po",
				      (json_int_t)q->probes.len, "pl", (json_int_t)p.len, "co",
				      (json_int_t)q->counts.len, "cl", (json_int_t)c.len)) < 0) {
			json_decref(a);
			return NULL;
		}
		q->probes.len += p.len;
		q->counts.len += c.len;
	}
	return dump(a);
}

static int ingest_json_make(struct ingest_json *t, struct store *s, const Kmemctl__V1__Report *rep)
{
	int r = rs_reserve_report(&PG(s)->probes, &PG(s)->counts, rep);

	if (r == 0)
		r = store_waiting_json(rep, &t->waiting);
	if (r < 0)
		return r;
	t->labels = store_labels_json(rep->facts);
	t->states = states_json(rep);
	t->samples = samples_json(PG(s), rep);
	t->events = events_json(rep);
	return t->labels && t->states && t->samples && t->events ? 0 : -ENOMEM;
}

/*
 * One statement: atomic on its own outside a batch; inside one, a failure
 * aborts the batch's transaction, which the caller rolls back (store.h).
 * A report stored before (by this kmemd or another) writes nothing.
 */
int pg_ingest(struct store *s, const Kmemctl__V1__Report *rep, int64_t now_ms)
{
	static const Kmemctl__V1__Counters none = KMEMCTL__V1__COUNTERS__INIT;
	const Kmemctl__V1__Counters *c = rep->counters ?: &none;
	const Kmemctl__V1__HostFacts *f = rep->facts;
	struct ingest_json t = { 0 };
	struct pg_args a = { 0 };
	char counters[9 * 21 + 3];
	PGresult *res;
	int r;

	r = ingest_json_make(&t, s, rep);
	if (r < 0)
		goto out;
	/* in the columns' order; unsigned as SQLite stores them, as 64-bit signed */
	snprintf(counters, sizeof(counters), "{%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld}",
		 (long long)c->soft_lockups, (long long)c->hard_lockups, (long long)c->rcu_stalls,
		 (long long)c->hung_tasks, (long long)c->tlb_shootdowns,
		 (long long)c->mitigation_trips, (long long)c->events_dropped,
		 (long long)c->reports_dropped, (long long)c->uptime_ms);
	pg_text(&a, f->host_id);
	pg_int(&a, rep->unix_ms);
	pg_int(&a, (int64_t)rep->seq);
	pg_text(&a, counters);
	pg_text(&a, f->hostname);
	pg_text(&a, f->kernel_release);
	pg_text(&a, f->kernel_build_id);
	pg_int(&a, f->possible_cpus);
	pg_int(&a, f->online_cpus);
	pg_int(&a, (int64_t)f->mem_total_bytes);
	pg_int(&a, f->kasan);
	pg_text(&a, f->module_version);
	pg_text(&a, t.labels);
	pg_int(&a, now_ms);
	pg_text(&a, rep->policy_name);
	pg_int(&a, (int64_t)rep->policy_version);
	pg_text(&a, t.states);
	pg_blob(&a, PG(s)->probes.p, PG(s)->probes.len);
	pg_blob(&a, PG(s)->counts.p, PG(s)->counts.len);
	pg_text(&a, t.samples);
	pg_text(&a, t.events);
	pg_int(&a, rep->off);
	pg_text(&a, t.waiting);
	res = run(s, ST_INGEST, &a);
	if (!res) {
		r = -EIO;
		goto out;
	}
	r = pg_col_int(res, 0, 0) == 0;
	PQclear(res);
out:
	ingest_json_free(&t);
	return r;
}

int pg_host_ends(struct store *s, const char *const *hosts, size_t n, struct store_host_ends *out)
{
	struct pg_args a = { 0 };
	struct buf arr = { 0 };
	PGresult *res = NULL;
	int r = 0;

	for (size_t i = 0; r == 0 && i < n; i++)
		r = pg_arr_text(&arr, hosts[i]);
	if (r == 0)
		r = pg_arr_end(&arr);
	if (r == 0) {
		pg_text(&a, (const char *)arr.p);
		res = run(s, ST_HOST_ENDS, &a);
		r = res && (size_t)PQntuples(res) == n ? 0 : -EIO;
	}
	for (size_t i = 0; r == 0 && i < n; i++) {
		out[i].samples_ms = PQgetisnull(res, (int)i, 0) ? INT64_MIN :
								  pg_col_int(res, (int)i, 0);
		out[i].report_ms = PQgetisnull(res, (int)i, 1) ? INT64_MIN :
								 pg_col_int(res, (int)i, 1);
	}
	PQclear(res);
	free(arr.p);
	return r;
}

/* $1 to $5 of ST_SAMPLES and ST_SAMPLES_ROLLUPS. */
static void filter_args(struct pg_args *a, const struct store_filter *f)
{
	pg_int(a, f->from_ms);
	pg_int(a, f->to_ms);
	pg_text(a, f->host);
	pg_text(a, f->label_key);
	pg_text(a, f->label_value);
}

/* x's probe, a string, out of the row; x->h from it. */
static void sample_of(struct store_sample *x, char name[RS_NAME_MAX + 1], const struct rs_probe *p)
{
	memcpy(name, p->name, p->name_len);
	name[p->name_len] = '\0';
	x->probe = name;
	rs_hist(p, &x->h);
}

/* Rows are in memory whole: cb may call the store again. */
int pg_samples(struct store *s, const struct store_filter *f, store_sample_cb cb, void *arg)
{
	struct store_sample x = { .samples = 1 };
	char name[RS_NAME_MAX + 1];
	struct pg_args a = { 0 };
	struct rs_probe p;
	struct rs_row row;
	uint8_t *mem[2];
	PGresult *res;
	int i, r = 0;

	filter_args(&a, f);
	res = run(s, ST_SAMPLES, &a);
	if (!res)
		return -EIO;
	for (i = 0; r == 0 && i < PQntuples(res); i++) {
		x.host_id = pg_col(res, i, 0);
		x.end_ms = pg_col_int(res, i, 1);
		if (!pg_row_open(PG(s), res, i, 2, x.host_id, x.end_ms, &row, mem))
			continue;
		while (r == 0 && rs_next(&row, &p)) {
			if (f->probe && !rs_is(&p, f->probe))
				continue;
			sample_of(&x, name, &p);
			r = cb(arg, &x);
		}
		PQfreemem(mem[0]);
		PQfreemem(mem[1]);
	}
	PQclear(res);
	if (r)
		return r;
	pg_text(&a, f->probe);
	res = run(s, ST_SAMPLES_ROLLUPS, &a);
	if (!res)
		return -EIO;
	for (i = 0; r == 0 && i < PQntuples(res); i++) {
		x.host_id = pg_col(res, i, 0);
		x.probe = pg_col(res, i, 1);
		pg_col_hist(res, i, 2, &x.h);
		x.end_ms = pg_col_int(res, i, 7);
		x.samples = (uint64_t)pg_col_int(res, i, 8);
		r = cb(arg, &x);
	}
	PQclear(res);
	return r;
}

int pg_tally(struct store *s, enum store_tally which, store_tally_cb cb, void *arg)
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
	PGresult *res = run(s, q[which], NULL);
	int i, r = 0;

	if (!res)
		return -EIO;
	for (i = 0; r == 0 && i < PQntuples(res); i++)
		r = cb(arg, pg_col_or_empty(res, i, 0), pg_col_or_empty(res, i, 1),
		       (uint64_t)pg_col_int(res, i, 2));
	PQclear(res);
	return r;
}

/*
 * A row of ST_WINDOW_SAMPLES or ST_HOST_SAMPLES: end_ms, probe, a raw
 * row's probes and counts, then a rollup's first_bucket, counts, count,
 * sum_ns and max_ns. false: a raw row (probe NULL), opened into row
 * (unless it cannot be read: then row is empty) with mem to PQfreemem();
 * true: the rollup, in x.
 */
static bool sample_row(struct pg_store *q, const PGresult *res, int i, const char *host,
		       struct rs_row *row, uint8_t *mem[2], struct store_sample *x)
{
	x->end_ms = pg_col_int(res, i, 0);
	x->probe = pg_col(res, i, 1);
	mem[0] = mem[1] = NULL;
	if (x->probe) {
		pg_col_hist(res, i, 4, &x->h);
		return true;
	}
	if (!pg_row_open(q, res, i, 2, host, x->end_ms, row, mem))
		row->p = row->end = NULL;
	return false;
}

/* The hosts of one statement: at most this many, so that no reply holds a whole fleet's rows. */
#define WINDOW_CHUNK 1000

/* A row's host: its place among the hosts asked for, from its last column. */
static size_t row_host(const PGresult *res, int i)
{
	return (size_t)pg_col_int(res, i, PQnfields(res) - 1) - 1;
}

/* The p99 and max of n probes over the window, from its raw rows and rollups, for each host. */
static int window_probes(struct store *s, const char *hosts_array, const char *const *hosts,
			 size_t nhosts, int64_t from_ms, int64_t to_ms, const char *const *probes,
			 size_t n, struct store_window *w)
{
	struct pg_args a = { 0 };
	struct store_sample x;
	struct rs_probe p;
	struct rs_row row;
	struct hist(*h)[4];
	uint8_t *mem[2];
	PGresult *res;
	size_t i, k;
	int j;

	/* no probe asked for: nothing to read */
	if (!n)
		return 0;
	pg_text(&a, hosts_array);
	pg_int(&a, from_ms);
	pg_int(&a, to_ms);
	for (i = 0; i < 4; i++)
		pg_text(&a, i < n ? probes[i] : NULL);
	h = calloc(nhosts, sizeof(*h));
	if (!h)
		return -ENOMEM;
	res = run(s, ST_WINDOW_SAMPLES, &a);
	if (!res) {
		free(h);
		return -EIO;
	}
	for (j = 0; j < PQntuples(res); j++) {
		k = row_host(res, j);
		if (k >= nhosts)
			continue;
		if (sample_row(PG(s), res, j, hosts[k], &row, mem, &x)) {
			for (i = 0; i < n; i++)
				if (!strcmp(x.probe, probes[i]))
					hist_merge(&h[k][i], &x.h);
			continue;
		}
		while (rs_next(&row, &p))
			for (i = 0; i < n; i++)
				if (rs_is(&p, probes[i]))
					rs_merge(&h[k][i], &p);
		PQfreemem(mem[0]);
		PQfreemem(mem[1]);
	}
	PQclear(res);
	for (k = 0; k < nhosts; k++)
		for (i = 0; i < n; i++) {
			w[k].p99_ns[i] = h[k][i].count ? (double)hist_quantile(&h[k][i], 0.99) : -1;
			w[k].max_ns[i] = h[k][i].count ? (double)h[k][i].max_ns : -1;
		}
	free(h);
	return 0;
}

/* Up to WINDOW_CHUNK hosts, given also as one array literal: two statements. */
static int window_chunk(struct store *s, const char *hosts_array, const char *const *hosts,
			size_t nhosts, int64_t from_ms, int64_t to_ms, const char *const *probes,
			size_t nprobes, struct store_window *w)
{
	struct pg_args a = { 0 };
	struct store_window *x;
	PGresult *res;
	int i;

	memset(w, 0, nhosts * sizeof(*w));
	pg_text(&a, hosts_array);
	pg_int(&a, from_ms);
	pg_int(&a, to_ms);
	res = run(s, ST_WINDOW, &a);
	if (!res)
		return -EIO;
	for (i = 0; i < PQntuples(res); i++) {
		int64_t part = pg_col_int(res, i, 0), n = col_int0(res, i, 2);
		const char *name = pg_col_or_empty(res, i, 1), *detail = pg_col_or_empty(res, i, 3);
		size_t k = row_host(res, i);

		if (k >= nhosts)
			continue;
		x = &w[k];
		if (part == 0)
			x->hours = (double)n / 3600000;
		else if (part == 2)
			snprintf(x->unhealthy, sizeof(x->unhealthy), "mitigation %s tripped: %s",
				 name, detail);
		else if (part == 3) {
			snprintf(x->waiting, sizeof(x->waiting), "%s", detail);
			snprintf(x->release, sizeof(x->release), "%s", name);
		} else if (!strcmp(name, "soft-lockup"))
			x->soft_lockups = (uint64_t)n;
		else if (!strcmp(name, "hard-lockup"))
			x->hard_lockups = (uint64_t)n;
		else if (!strcmp(name, "rcu-stall"))
			x->rcu_stalls = (uint64_t)n;
		else if (!x->unhealthy[0])
			snprintf(x->unhealthy, sizeof(x->unhealthy), "%s: %s", name, detail);
	}
	PQclear(res);
	return window_probes(s, hosts_array, hosts, nhosts, from_ms, to_ms, probes,
			     nprobes < 4 ? nprobes : 4, w);
}

int pg_window(struct store *s, const char *const *hosts, size_t nhosts, int64_t from_ms,
	      int64_t to_ms, const char *const *probes, size_t nprobes, struct store_window *w)
{
	struct buf arr = { 0 };
	size_t i, k, n;
	int r = 0;

	for (i = 0; r == 0 && i < nhosts; i += n) {
		n = nhosts - i < WINDOW_CHUNK ? nhosts - i : WINDOW_CHUNK;
		arr.len = 0;
		for (k = 0; r == 0 && k < n; k++)
			r = pg_arr_text(&arr, hosts[i + k]);
		if (r == 0)
			r = pg_arr_end(&arr);
		if (r == 0)
			r = window_chunk(s, (const char *)arr.p, hosts + i, n, from_ms, to_ms,
					 probes, nprobes, w + i);
	}
	free(arr.p);
	return r;
}

int pg_host_rows(struct store *s, const char *host, int64_t from_ms, int64_t to_ms,
		 const struct store_host_rows *cb, void *arg)
{
	struct store_sample x = { .host_id = host };
	char name[RS_NAME_MAX + 1];
	struct pg_args a = { 0 };
	struct store_event e;
	struct rs_probe p;
	struct rs_row row;
	uint8_t *mem[2];
	PGresult *res;
	int i, r = 0;

	pg_text(&a, host);
	pg_int(&a, from_ms);
	pg_int(&a, to_ms);
	res = run(s, ST_HOST_REPORTS, &a);
	if (!res)
		return -EIO;
	for (i = 0; r == 0 && i < PQntuples(res); i++)
		r = cb->report(arg, pg_col_int(res, i, 0));
	PQclear(res);
	if (r)
		return r;
	res = run(s, ST_HOST_EVENTS, &a);
	if (!res)
		return -EIO;
	for (i = 0; r == 0 && i < PQntuples(res); i++) {
		e = (struct store_event){
			.unix_ms = col_int0(res, i, 0),
			.kind = pg_col_or_empty(res, i, 1),
			.cpu = (int)col_int0(res, i, 2),
			.duration_ns = (uint64_t)col_int0(res, i, 3),
			.comm = pg_col_or_empty(res, i, 4),
			.pid = (int)col_int0(res, i, 5),
			.stack = pg_col_or_empty(res, i, 6),
			.mitigation = pg_col_or_empty(res, i, 7),
			.probe = pg_col_or_empty(res, i, 8),
			.message = pg_col_or_empty(res, i, 9),
		};
		r = cb->event(arg, &e);
	}
	PQclear(res);
	if (r)
		return r;
	res = run(s, ST_HOST_SAMPLES, &a);
	if (!res)
		return -EIO;
	for (i = 0; r == 0 && i < PQntuples(res); i++) {
		x.samples = (uint64_t)pg_col_int(res, i, 9);
		if (sample_row(PG(s), res, i, host, &row, mem, &x)) {
			r = cb->sample(arg, &x);
			continue;
		}
		while (r == 0 && rs_next(&row, &p)) {
			sample_of(&x, name, &p);
			r = cb->sample(arg, &x);
		}
		PQfreemem(mem[0]);
		PQfreemem(mem[1]);
	}
	PQclear(res);
	return r;
}

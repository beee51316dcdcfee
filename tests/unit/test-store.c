// SPDX-License-Identifier: GPL-2.0
/*
 * kmemd's store on a real database: reports in and out as JSON, resent
 * reports, immutable policy versions, assignments, migrations. On a SQLite
 * file, or with KMEM_STORE_URL on PostgreSQL (tests/pg/with-cluster): the
 * same suite for both backends, and what only one of them has.
 */
#include <errno.h>
#include <setjmp.h>
#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "admin-json.h"
#include "store-fixture.h"
#include "store-pg.h"
#include "store-sqlite.h"
#include "store.h"

/* The admin API's JSON of the store's rows (admin-json.h), as text. */
static int json_text_of(int r, json_t *o, char **text)
{
	*text = NULL;
	if (r == 0) {
		*text = json_dumps(o, JSON_COMPACT);
		json_decref(o);
	}
	return r;
}

static int host_text(struct store *s, const char *host, char **text)
{
	json_t *o = NULL;
	int r = admin_json_host(s, host, &o);

	return json_text_of(r, o, text);
}

static int status_text(struct store *s, const char *name, char **text)
{
	json_t *o = NULL;
	int r = admin_json_rollout_status(s, name, SIZE_MAX, &o);

	return json_text_of(r, o, text);
}

/* The last rollout's JSON, in 1024 bytes. */
static int rollouts_text(struct store *s, char *json)
{
	json_t *o = NULL;
	char *text = NULL;
	int r = admin_json_rollouts(s, &o);

	r = json_text_of(r, o, &text);

	if (r == 0)
		snprintf(json, 1024, "%s", text);
	free(text);
	return r;
}

struct member_find {
	const char *host;
	char *out;
};

static int member_find(void *arg, const struct store_member *m)
{
	struct member_find *f = arg;

	if (strcmp(m->host_id, f->host) == 0)
		snprintf(f->out, STORE_ID_MAX + 24, "%s@%lld", m->policy ?: "",
			 (long long)m->version);
	return 0;
}

/* What host, a member of rollout, runs now: "name@version". */
static const char *member_policy(struct store *s, const char *rollout, const char *host, char *out)
{
	struct member_find f = { .host = host, .out = out };

	out[0] = 0;
	assert_int_equal(s->ops->members(s, rollout, member_find, &f), 0);
	return out;
}

static char path[4096];
/* PostgreSQL's database, or NULL: the SQLite file at path. */
static const char *url;

static int setup(void **state)
{
	(void)state;
	snprintf(path, sizeof(path), "%s/test-store.sqlite", getenv("KMEM_TEST_TMP"));
	url = test_store_url();
	test_store_wipe(path);
	return 0;
}

static struct store *open_store(void)
{
	struct store *s = NULL;
	char err[256];

	if (store_open(url ?: path, &s, err, sizeof(err)) < 0)
		fail_msg("store_open: %s", err);
	return s;
}

/* A store on a new file, for a test that counts rows. */
static struct store *fresh_store(void)
{
	test_store_wipe(path);
	return open_store();
}

/* Rows the store's readers skipped (store-rows.h), counted by its backend. */
static uint64_t skipped(struct store *s)
{
	return url ? ((struct pg_store *)s)->skipped : ((struct sqlite_store *)s)->skipped;
}

static void test_reports(void **state)
{
	Kmemctl__V1__Report rep = KMEMCTL__V1__REPORT__INIT;
	Kmemctl__V1__HostFacts f = KMEMCTL__V1__HOST_FACTS__INIT;
	Kmemctl__V1__MitigationState m = KMEMCTL__V1__MITIGATION_STATE__INIT, *mp[] = { &m };
	Kmemctl__V1__KernelEvent e = KMEMCTL__V1__KERNEL_EVENT__INIT, *ep[] = { &e };
	Kmemctl__V1__Histogram h = KMEMCTL__V1__HISTOGRAM__INIT;
	Kmemctl__V1__ProbeSample p = KMEMCTL__V1__PROBE_SAMPLE__INIT, *pp[] = { &p };
	uint64_t counts[] = { 1, 2 };
	char *stack[] = { "kmt_spin+0x24/0x50" };
	struct store *s = open_store();
	char *json;

	(void)state;
	f.host_id = "web-1";
	f.kernel_release = "6.1.0-57-amd64";
	rep.seq = 1;
	rep.unix_ms = 1000;
	rep.facts = &f;
	m.id = "rstat-yield";
	m.state = KMEMCTL__V1__MITIGATION_STATE_KIND__MITIGATION_STATE_ON;
	m.mode = KMEMCTL__V1__MITIGATION_MODE__MITIGATION_MODE_ON;
	m.source = KMEMCTL__V1__MODE_SOURCE__MODE_SOURCE_POLICY;
	m.reason = "on: enacted";
	rep.n_mitigations = 1;
	rep.mitigations = mp;
	h.first_bucket = 20;
	h.n_counts = 2;
	h.counts = counts;
	h.count = 3;
	p.probe = "vmap-purge";
	p.hist = &h;
	rep.n_probes = 1;
	rep.probes = pp;
	e.kind = KMEMCTL__V1__EVENT_KIND__EVENT_KIND_SOFT_LOCKUP;
	e.n_stack_top = 1;
	e.stack_top = stack;
	e.message = "watchdog: BUG: soft lockup - CPU#1 stuck for 3s!";
	rep.n_events = 1;
	rep.events = ep;
	p.end_unix_ms = e.unix_ms = 1000;
	assert_int_equal(s->ops->ingest(s, &rep, 5000), 0);
	/* the same report again, its acknowledgement lost: not stored twice */
	assert_int_equal(s->ops->ingest(s, &rep, 6000), 1);
	/* an agent whose state was wiped counts from 1 again: a new report */
	rep.unix_ms = p.end_unix_ms = e.unix_ms = 2000;
	m.state = KMEMCTL__V1__MITIGATION_STATE_KIND__MITIGATION_STATE_TRIPPED;
	assert_int_equal(s->ops->ingest(s, &rep, 7000), 0);
	assert_int_equal(host_text(s, "web-1", &json), 0);
	assert_non_null(strstr(json, "\"host_id\":\"web-1\""));
	/* nothing but the time changed, within a minute: the row was not rewritten */
	assert_non_null(strstr(json, "\"last_seen_ms\":5000"));
	assert_non_null(strstr(json,
			       "{\"id\":\"rstat-yield\",\"state\":\"tripped\",\"mode\":\"on\","
			       "\"source\":\"policy\",\"reason\":\"on: enacted\"}"));
	free(json);
	assert_int_equal(host_text(s, "web-2", &json), -ENOENT);
	/* a minute on, last_seen moves */
	rep.seq = 3;
	assert_int_equal(s->ops->ingest(s, &rep, 65001), 0);
	assert_int_equal(host_text(s, "web-1", &json), 0);
	assert_non_null(strstr(json, "\"last_seen_ms\":65001"));
	assert_non_null(strstr(json, "\"last_seq\":3"));
	free(json);

	/* a module without that mitigation any more: its row goes */
	rep.seq = 2;
	rep.n_mitigations = 0;
	assert_int_equal(s->ops->ingest(s, &rep, 7500), 0);
	assert_int_equal(host_text(s, "web-1", &json), 0);
	assert_non_null(strstr(json, "\"mitigations\":[]"));
	free(json);
	rep.seq = 1;
	rep.n_mitigations = 1;

	/* retention: reports at 1000 and 2000 ms, expire what is before 1500 */
	{
		uint64_t rows;

		assert_int_equal(s->ops->expire(s, 1500, &rows), 0);
		/* one report's counters row, probe sample and event */
		assert_int_equal(rows, 3);
		assert_int_equal(s->ops->expire(s, 1500, &rows), 0);
		assert_int_equal(rows, 0);
		/* the resend check forgets what retention dropped, not what it kept */
		rep.unix_ms = 2000;
		assert_int_equal(s->ops->ingest(s, &rep, 8000), 1);
	}
	s->ops->close(s);
}

static void test_policies(void **state)
{
	struct store_policy p = { .name = "base", .version = 3 }, back;
	struct store_assignment a = { .policy = "base", .version = 3 };
	uint8_t bundle[] = { 1, 2, 3 };
	struct store *s = open_store();
	int64_t id1, id2;

	(void)state;
	p.document_json = "{}";
	p.bundle = bundle;
	p.bundle_len = sizeof(bundle);
	strcpy(p.signer, "ops");
	assert_int_equal(s->ops->policy_add(s, &p, 1), 0);
	assert_int_equal(s->ops->policy_add(s, &p, 2), -EEXIST);
	assert_int_equal(s->ops->policy_get(s, "base", 3, &back), 0);
	assert_string_equal(back.document_json, "{}");
	assert_int_equal(back.bundle_len, 3);
	assert_memory_equal(back.bundle, bundle, 3);
	assert_string_equal(back.signer, "ops");
	store_policy_clear(&back);
	assert_int_equal(s->ops->policy_get(s, "base", 4, &back), -ENOENT);

	a.selector_json = "{\"all\":true}";
	assert_int_equal(s->ops->assign(s, &a, 1, &id1), 0);
	a.selector_json = "{\"host\":\"web-1\"}";
	assert_int_equal(s->ops->assign(s, &a, 2, &id2), 0);
	assert_true(id2 > id1);
	/* an assignment of a policy version that does not exist */
	a.version = 9;
	assert_int_equal(s->ops->assign(s, &a, 3, &id2), -ENOENT);
	s->ops->close(s);
}

static int64_t count_rows(const char *q);
static void report_at(struct store *s, const char *host, uint64_t seq, int64_t t, uint64_t count);

static int audit_cb(void *arg, const struct store_audit_row *a)
{
	char *out = arg;
	size_t n = strlen(out);

	snprintf(out + n, 512 - n, "%s%lld:%s:%s:%s:%s", n ? " " : "", (long long)a->ts_ms,
		 a->actor, a->action, a->host ?: "-", a->detail);
	return 0;
}

/* The rows q selects, newest first, as "ts:actor:action:host:detail ..." */
static const char *audit_of(struct store *s, const struct store_audit_query *q)
{
	static char out[512];

	out[0] = '\0';
	assert_int_equal(s->ops->audit_rows(s, q, audit_cb, out), 0);
	return out;
}

static void test_audit(void **state)
{
	struct store_audit_query q = { .from_ms = STORE_NULL, .to_ms = STORE_NULL, .limit = 10 };
	struct store *s = open_store();
	int64_t id = 0;

	(void)state;
	assert_int_equal(s->ops->audit(s, 10, "ops", "policy.add", NULL, "base/3"), 0);
	assert_int_equal(s->ops->audit(s, 20, "ops", "host.revoke", "web-1", "web-1"), 0);
	assert_int_equal(s->ops->audit(s, 30, "bob", "host.revoke", "web-2", "web-2"), 0);
	assert_int_equal(s->ops->audit(s, 40, "web-3", "host.enroll", "web-3", "web-3 with 1"), 0);
	assert_string_equal(
		audit_of(s, &q),
		"40:web-3:host.enroll:web-3:web-3 with 1 30:bob:host.revoke:web-2:web-2 "
		"20:ops:host.revoke:web-1:web-1 10:ops:policy.add:-:base/3");
	q.actor = "ops";
	assert_string_equal(audit_of(s, &q),
			    "20:ops:host.revoke:web-1:web-1 10:ops:policy.add:-:base/3");
	q.actor = NULL;
	q.action = "host.revoke";
	q.host = "web-2";
	assert_string_equal(audit_of(s, &q), "30:bob:host.revoke:web-2:web-2");
	q.action = q.host = NULL;
	q.from_ms = 20;
	q.to_ms = 40;
	assert_string_equal(audit_of(s, &q),
			    "30:bob:host.revoke:web-2:web-2 20:ops:host.revoke:web-1:web-1");
	q.host = "nowhere";
	assert_string_equal(audit_of(s, &q), "");
	/* pages: two rows, then the rows below the last one's id */
	q = (struct store_audit_query){ .from_ms = STORE_NULL, .to_ms = STORE_NULL, .limit = 2 };
	assert_string_equal(
		audit_of(s, &q),
		"40:web-3:host.enroll:web-3:web-3 with 1 30:bob:host.revoke:web-2:web-2");
	assert_int_equal(count_rows("SELECT count(*) FROM audit"), 4);
	id = count_rows("SELECT id FROM audit WHERE ts_ms = 30");
	q.before_id = id;
	assert_string_equal(audit_of(s, &q),
			    "20:ops:host.revoke:web-1:web-1 10:ops:policy.add:-:base/3");
	s->ops->close(s);
}

static int operator_cb(void *arg, const struct store_operator *o)
{
	char *out = arg;
	size_t n = strlen(out);

	snprintf(out + n, 512 - n, "%s%.4s:%s:%s:%lld:%lld:%lld:%lld:%s", n ? " " : "",
		 o->fingerprint, o->name, o->role, (long long)o->not_after_ms,
		 (long long)o->first_seen_ms, (long long)o->last_seen_ms,
		 o->revoked_ms == STORE_NULL ? -1LL : (long long)o->revoked_ms, o->revoked_by);
	return 0;
}

static const char *operators_of(struct store *s)
{
	static char out[512];

	out[0] = '\0';
	assert_int_equal(s->ops->operators(s, operator_cb, out), 0);
	return out;
}

static int revocation_cb(void *arg, char kind, const char *key)
{
	char *out = arg;
	size_t n = strlen(out);

	snprintf(out + n, 512 - n, "%s%c:%s", n ? " " : "", kind, key);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every revocation, sorted: the store gives them in no order. */
static const char *revocations_of(struct store *s)
{
	static char out[512];
	char *words[16], *w, *save = NULL, sorted[512] = "";
	size_t n = 0;

	out[0] = '\0';
	assert_int_equal(s->ops->revocations(s, revocation_cb, out), 0);
	for (w = strtok_r(out, " ", &save); w && n < 16; w = strtok_r(NULL, " ", &save))
		words[n++] = w;
	qsort(words, n, sizeof(*words), cmp_str);
	for (size_t i = 0; i < n; i++)
		snprintf(sorted + strlen(sorted), sizeof(sorted) - strlen(sorted), "%s%s",
			 i ? " " : "", words[i]);
	snprintf(out, sizeof(out), "%s", sorted);
	return out;
}

static void test_operators(void **state)
{
	struct store_operator a1 = { .fingerprint = "a1a1",
				     .name = "alice",
				     .role = "operator",
				     .not_after_ms = 9000 },
			      a2 = { .fingerprint = "a2a2",
				     .name = "alice",
				     .role = "observer",
				     .not_after_ms = 9500 },
			      p = { .fingerprint = "b0b0",
				    .name = "prom",
				    .role = "observer",
				    .not_after_ms = 8000 },
			      unseen = { .fingerprint = "c0c0", .not_after_ms = STORE_NULL };
	struct store *s = open_store();
	uint64_t n;

	(void)state;
	assert_int_equal(s->ops->operator_seen(s, &a1, 100), 0);
	assert_int_equal(s->ops->operator_seen(s, &a1, 150), 0);
	assert_int_equal(s->ops->operator_seen(s, &a2, 200), 0);
	assert_int_equal(s->ops->operator_seen(s, &p, 120), 0);
	assert_string_equal(operators_of(s), "a1a1:alice:operator:9000:100:150:-1: "
					     "a2a2:alice:observer:9500:200:200:-1: "
					     "b0b0:prom:observer:8000:120:120:-1:");
	assert_int_equal(s->ops->operator_revoked(s, "a1a1"), 0);
	assert_int_equal(s->ops->operator_revoked(s, "ffff"), 0);
	/* by name: every certificate of it seen, once */
	assert_int_equal(s->ops->operator_revoke_name(s, "alice", "ops", 300, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(s->ops->operator_revoke_name(s, "alice", "ops", 310, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(s->ops->operator_revoke_name(s, "nobody", "ops", 310, &n), -ENOENT);
	assert_int_equal(s->ops->operator_revoked(s, "a1a1"), 1);
	assert_int_equal(s->ops->operator_revoked(s, "a2a2"), 1);
	assert_int_equal(s->ops->operator_revoked(s, "b0b0"), 0);
	/* by fingerprint, seen or not; again is no change */
	assert_int_equal(s->ops->operator_revoke(s, &unseen, "ops", 400), 1);
	assert_int_equal(s->ops->operator_revoke(s, &unseen, "ops", 410), 0);
	assert_int_equal(s->ops->operator_revoke(s, &p, "bob", 420), 1);
	assert_int_equal(s->ops->operator_revoked(s, "c0c0"), 1);
	/* seen again after it was revoked: still revoked */
	assert_int_equal(s->ops->operator_seen(s, &p, 500), 0);
	assert_int_equal(s->ops->operator_revoked(s, "b0b0"), 1);
	assert_string_equal(operators_of(s), "c0c0:::-9223372036854775808:-9223372036854775808:"
					     "-9223372036854775808:400:ops "
					     "a1a1:alice:operator:9000:100:150:300:ops "
					     "a2a2:alice:observer:9500:200:200:300:ops "
					     "b0b0:prom:observer:8000:120:500:420:bob");
	/* what kmemd keeps in memory to class connections: hosts' and operators' */
	assert_int_equal(s->ops->revoke(s, "zz-gone", 600), 0);
	{
		const char *all = revocations_of(s), *ops = "o:a1a1 o:a2a2 o:b0b0 o:c0c0";

		assert_non_null(strstr(all, "h:zz-gone "));
		assert_string_equal(all + strlen(all) - strlen(ops), ops);
	}
	s->ops->close(s);
}

static void test_fleet_stop(void **state)
{
	struct store_fleet_stop f = { .stopped = true,
				      .since_ms = 100,
				      .actor = "ops",
				      .reason = "lockups after the 6.1.0-58 update" },
				got;
	struct store *s = open_store();

	(void)state;
	assert_int_equal(s->ops->fleet_stop_get(s, &got), 0);
	assert_false(got.stopped);
	assert_true(got.since_ms == STORE_NULL);
	assert_int_equal(s->ops->fleet_stop_set(s, &f), 1);
	/* stopped again: no change, the first stop's time and reason stay */
	f.since_ms = 200;
	snprintf(f.actor, sizeof(f.actor), "bob");
	assert_int_equal(s->ops->fleet_stop_set(s, &f), 0);
	assert_int_equal(s->ops->fleet_stop_get(s, &got), 0);
	assert_true(got.stopped);
	assert_int_equal(got.since_ms, 100);
	assert_string_equal(got.actor, "ops");
	assert_string_equal(got.reason, "lockups after the 6.1.0-58 update");
	f = (struct store_fleet_stop){ .stopped = false, .since_ms = 300, .actor = "bob" };
	assert_int_equal(s->ops->fleet_stop_set(s, &f), 1);
	assert_int_equal(s->ops->fleet_stop_get(s, &got), 0);
	assert_false(got.stopped);
	assert_int_equal(got.since_ms, 300);
	assert_string_equal(got.reason, "");
	s->ops->close(s);
}

static int secret_cb(void *arg, const struct store_secret *sec)
{
	char *out = arg;
	size_t n = strlen(out);

	snprintf(out + n, 256 - n, "%s%lld:%lld:%d:%lld/%lld:%s", n ? " " : "", (long long)sec->id,
		 (long long)sec->expires_ms, sec->revoked, (long long)sec->uses,
		 (long long)sec->max_uses, sec->host_pattern);
	return 0;
}

static int host_id_cb(void *arg, const struct store_host *h)
{
	char *out = arg;
	size_t n = strlen(out);

	snprintf(out + n, 256 - n, "%s%s%s", n ? " " : "", h->host_id,
		 h->revoked ? "(revoked)" : "");
	return 0;
}

/* Lists and deletions: secrets listed, an assignment deleted, hosts forgotten. */
static void test_forget(void **state)
{
	struct store_secret a = { .sha256 = "f1",
				  .created_ms = 10,
				  .expires_ms = 5000,
				  .max_uses = 3,
				  .host_pattern = "web-*" },
			    b = { .sha256 = "f2", .created_ms = 20 };
	struct store_policy p = { .name = "base", .version = 1, .document_json = "{}" };
	struct store_assignment as = { .policy = "base", .version = 1, .selector_json = "{}" };
	const struct store_host_cb cb = { .host = host_id_cb };
	struct store *s = open_store();
	char out[256] = "";
	int64_t id1, id2;

	(void)state;
	assert_int_equal(s->ops->secret_add(s, &a, &id1), 0);
	assert_int_equal(s->ops->secret_add(s, &b, &id2), 0);
	assert_int_equal(s->ops->secret_use(s, id1), 0);
	assert_int_equal(s->ops->secret_revoke(s, id2), 0);
	assert_int_equal(s->ops->secrets(s, secret_cb, out), 0);
	{
		char want[256];

		/* newest first: these two, then any an earlier test made */
		snprintf(want, sizeof(want), "%lld:0:1:0/0: %lld:5000:0:1/3:web-*", (long long)id2,
			 (long long)id1);
		assert_memory_equal(out, want, strlen(want));
	}
	assert_int_equal(s->ops->policy_add(s, &p, 1), 0);
	assert_int_equal(s->ops->assign(s, &as, 2, &id1), 0);
	assert_int_equal(s->ops->assignment_delete(s, id1), 0);
	assert_int_equal(s->ops->assignment_delete(s, id1), -ENOENT);
	/* hosts: old-1 last reported at 1000, new-1 at 9000, gone-1 revoked */
	report_at(s, "old-1", 1, 1000, 1);
	report_at(s, "new-1", 1, 9000, 1);
	report_at(s, "gone-1", 1, 1000, 1);
	assert_int_equal(s->ops->revoke(s, "gone-1", 1500), 0);
	assert_int_equal(s->ops->host_forget(s, "nobody", 5000), -ENOENT);
	assert_int_equal(s->ops->host_forget(s, "new-1", 5000), -EBUSY);
	assert_int_equal(s->ops->host_forget(s, "old-1", 5000), 0);
	assert_int_equal(s->ops->host_forget(s, "gone-1", 5000), 0);
	out[0] = '\0';
	assert_int_equal(s->ops->hosts(s, &cb, out), 0);
	assert_non_null(strstr(out, "gone-1(revoked) new-1"));
	assert_null(strstr(out, "old-1"));
	assert_int_equal(s->ops->revoked(s, "gone-1"), 1);
	assert_int_equal(count_rows("SELECT count(*) FROM states WHERE host_id = 'old-1'"), 0);
	s->ops->close(s);
}

static int archived_cb(void *arg, const struct store_rollout *r, const uint64_t *members, size_t n)
{
	char *out = arg;
	size_t len = strlen(out);

	(void)members;
	(void)n;
	snprintf(out + len, 256 - len, "%s%s:%lld", len ? " " : "", r->name,
		 r->archived_ms == STORE_NULL ? -1LL : (long long)r->archived_ms);
	return 0;
}

/* A finished rollout archived: listed with its time, once; not finished: refused. */
static void test_archive(void **state)
{
	static const char spec[] = "{\"name\":\"a1\",\"policy\":\"web\",\"version\":6}";
	struct store_rollout r;
	struct store *s = open_store();
	char out[256] = "";

	(void)state;
	assert_int_equal(s->ops->rollout_add(s, "a1", spec, 100), 0);
	assert_int_equal(s->ops->rollout_archive(s, "a1", 200), -EBUSY);
	assert_int_equal(s->ops->rollout_get(s, "a1", &r), 0);
	r.state = ROLLOUT_ABORTED;
	assert_int_equal(s->ops->rollout_update(s, &r, NULL, 150, NULL), 0);
	store_rollout_clear(&r);
	assert_int_equal(s->ops->rollout_archive(s, "a1", 200), 0);
	assert_int_equal(s->ops->rollout_archive(s, "a1", 300), 0);
	assert_int_equal(s->ops->rollouts(s, archived_cb, out), 0);
	assert_non_null(strstr(out, "a1:200"));
	s->ops->close(s);
}

static int policy_cb(void *arg, const struct store_policy *p)
{
	char *out = arg;
	size_t n = strlen(out);

	snprintf(out + n, 256 - n, "%s%s/%llu:%lld", n ? " " : "", p->name,
		 (unsigned long long)p->version,
		 p->retired_ms == STORE_NULL ? -1LL : (long long)p->retired_ms);
	return 0;
}

/* A version is retired once nothing uses it: not a host, an assignment or a live rollout. */
static void test_retire(void **state)
{
	static const char spec[] = "{\"name\":\"rt\",\"policy\":\"ret\",\"version\":3}";
	struct store_policy p = { .name = "ret", .document_json = "{}" }, got;
	struct store_assignment a = { .policy = "ret", .version = 2, .selector_json = "{}" };
	struct store *s = open_store();
	struct store_rollout r;
	char out[256] = "", why[128];
	int64_t id;

	(void)state;
	/* the hosts running a version are the other refusal: tests/cli has it */
	for (p.version = 1; p.version <= 4; p.version++)
		assert_int_equal(s->ops->policy_add(s, &p, 10), 0);
	assert_int_equal(s->ops->assign(s, &a, 20, &id), 0);
	assert_int_equal(s->ops->rollout_add(s, "rt", spec, 30), 0);
	assert_int_equal(s->ops->policy_retire(s, "ret", 9, 40, why, sizeof(why)), -ENOENT);
	assert_int_equal(s->ops->policy_retire(s, "ret", 2, 40, why, sizeof(why)), -EBUSY);
	{
		char want[64];

		snprintf(want, sizeof(want), "assignment %lld names it", (long long)id);
		assert_string_equal(why, want);
	}
	assert_int_equal(s->ops->policy_retire(s, "ret", 3, 40, why, sizeof(why)), -EBUSY);
	assert_string_equal(why, "rollout rt names it");
	assert_int_equal(s->ops->policy_retire(s, "ret", 4, 40, why, sizeof(why)), 0);
	assert_int_equal(s->ops->policy_retire(s, "ret", 4, 50, why, sizeof(why)), 0);
	/* the rollout aborted no longer decides: its version goes too */
	assert_int_equal(s->ops->rollout_get(s, "rt", &r), 0);
	r.state = ROLLOUT_ABORTED;
	assert_int_equal(s->ops->rollout_update(s, &r, NULL, 60, NULL), 0);
	store_rollout_clear(&r);
	assert_int_equal(s->ops->policy_retire(s, "ret", 3, 70, why, sizeof(why)), 0);
	assert_int_equal(s->ops->policy_get(s, "ret", 4, &got), 0);
	assert_int_equal(got.retired_ms, 40);
	store_policy_clear(&got);
	assert_int_equal(s->ops->policy_get(s, "ret", 1, &got), 0);
	assert_true(got.retired_ms == STORE_NULL);
	store_policy_clear(&got);
	assert_int_equal(s->ops->policies(s, policy_cb, out), 0);
	assert_non_null(strstr(out, "ret/1:-1 ret/2:-1 ret/3:70 ret/4:40"));
	s->ops->close(s);
}

static void test_secrets(void **state)
{
	struct store_secret a = { .sha256 = "aa", .created_ms = 1000 },
			    b = { .sha256 = "bb",
				  .created_ms = 1000,
				  .expires_ms = 5000,
				  .max_uses = 2,
				  .host_pattern = "web-*" },
			    got;
	struct store *s = open_store();
	int64_t id, id2;

	(void)state;
	assert_int_equal(s->ops->secret_add(s, &a, &id), 0);
	assert_int_equal(s->ops->secret_add(s, &b, &id2), 0);
	assert_int_equal(s->ops->secret_get(s, "bb", &got), 0);
	assert_int_equal(got.id, id2);
	assert_int_equal(got.expires_ms, 5000);
	assert_int_equal(got.max_uses, 2);
	assert_string_equal(got.host_pattern, "web-*");
	assert_false(got.revoked);
	assert_int_equal(s->ops->secret_get(s, "cc", &got), -ENOENT);
	/* uses are counted, and the limit holds in the store itself */
	assert_int_equal(s->ops->secret_use(s, id2), 0);
	assert_int_equal(s->ops->secret_use(s, id2), 0);
	assert_int_equal(s->ops->secret_use(s, id2), -EDQUOT);
	assert_int_equal(s->ops->secret_get(s, "bb", &got), 0);
	assert_int_equal(got.uses, 2);
	/* no limit: any number */
	for (int i = 0; i < 5; i++)
		assert_int_equal(s->ops->secret_use(s, id), 0);
	assert_int_equal(s->ops->secret_get(s, "aa", &got), 0);
	assert_string_equal(got.host_pattern, "");
	assert_int_equal(s->ops->secret_revoke(s, id), 0);
	assert_int_equal(s->ops->secret_get(s, "aa", &got), 0);
	assert_true(got.revoked);
	assert_int_equal(s->ops->secret_revoke(s, 4242), -ENOENT);
	/* revoked hosts */
	assert_int_equal(s->ops->revoked(s, "web-9"), 0);
	assert_int_equal(s->ops->revoke(s, "web-9", 1), 0);
	assert_int_equal(s->ops->revoked(s, "web-9"), 1);
	s->ops->close(s);
}

static void test_enrollments(void **state)
{
	struct store *s = fresh_store();
	bool taken, again;

	(void)state;
	assert_int_equal(s->ops->enrolled(s, "web-1", &taken, &again), 0);
	assert_false(taken);
	assert_int_equal(s->ops->enrollment_add(s, "web-1", 3, 1000), 0);
	assert_int_equal(s->ops->enrolled(s, "web-1", &taken, &again), 0);
	assert_true(taken);
	assert_false(again);
	assert_int_equal(s->ops->reenroll(s, "web-1"), 0);
	assert_int_equal(s->ops->enrolled(s, "web-1", &taken, &again), 0);
	assert_true(taken);
	assert_true(again);
	/* the mark is spent by the next enrollment */
	assert_int_equal(s->ops->enrollment_add(s, "web-1", 4, 2000), 0);
	assert_int_equal(s->ops->enrolled(s, "web-1", &taken, &again), 0);
	assert_false(again);
	s->ops->close(s);
}

static int name_seen(void *arg, int kind, const char *name, const char *host)
{
	char *out = arg;

	sprintf(out + strlen(out), "%d:%s:%s;", kind, name, host);
	return 0;
}

static void test_names(void **state)
{
	struct store *s = fresh_store();
	char seen[256] = "";

	(void)state;
	assert_int_equal(s->ops->name_add(s, 0, "my-probe", "web-1", 10), 0);
	assert_int_equal(s->ops->name_add(s, 1, "my-fix", "web-2", 20), 0);
	/* a name is kept once, with the host that brought it in */
	assert_int_equal(s->ops->name_add(s, 0, "my-probe", "web-3", 30), 0);
	assert_int_equal(s->ops->names(s, name_seen, seen), 0);
	assert_string_equal(seen, "0:my-probe:web-1;1:my-fix:web-2;");
	s->ops->close(s);
}

/* A report from host with one vmap-purge sample ending at t: count values in bucket 20. */
static void report_at(struct store *s, const char *host, uint64_t seq, int64_t t, uint64_t count)
{
	Kmemctl__V1__Report rep = KMEMCTL__V1__REPORT__INIT;
	Kmemctl__V1__HostFacts f = KMEMCTL__V1__HOST_FACTS__INIT;
	Kmemctl__V1__Histogram h = KMEMCTL__V1__HISTOGRAM__INIT;
	Kmemctl__V1__ProbeSample p = KMEMCTL__V1__PROBE_SAMPLE__INIT, *pp[] = { &p };
	Kmemctl__V1__Counters c = KMEMCTL__V1__COUNTERS__INIT;

	f.host_id = (char *)host;
	rep.facts = &f;
	rep.seq = seq;
	rep.unix_ms = t;
	h.first_bucket = 20;
	h.n_counts = 1;
	h.counts = &count;
	h.count = count;
	h.sum_ns = count * 1000000;
	h.max_ns = 1000000 + seq;
	p.probe = "vmap-purge";
	p.end_unix_ms = t;
	p.hist = &h;
	rep.n_probes = 1;
	rep.probes = pp;
	c.soft_lockups = seq; /* cumulative, as agents count */
	rep.counters = &c;
	assert_int_equal(s->ops->ingest(s, &rep, t), 0);
}

struct seen {
	uint64_t rows, samples, count, max_ns, bucket20;
};

static int see(void *arg, const struct store_sample *x)
{
	struct seen *v = arg;

	v->rows++;
	v->samples += x->samples;
	v->count += x->h.count;
	v->bucket20 += x->h.buckets[20];
	if (x->h.max_ns > v->max_ns)
		v->max_ns = x->h.max_ns;
	return 0;
}

/* The first column of q's row, an integer (a boolean as 0 or 1). */
static int64_t count_rows(const char *q)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	int64_t n;

	if (url) {
		PGconn *c = PQconnectdb(url);
		PGresult *r = PQexec(c, q);
		const char *v;

		if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
			fail_msg("%s: %s", q, PQresultErrorMessage(r));
		v = PQgetvalue(r, 0, 0);
		n = v[0] == 't' ? 1 : v[0] == 'f' ? 0 : strtoll(v, NULL, 10);
		PQclear(r);
		PQfinish(c);
		return n;
	}
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, q, -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return n;
}

/* Each sample as "host probe end_ms bucket:n... nCOUNT maxMAX; " into the 512 bytes at arg. */
static int sample_list(void *arg, const struct store_sample *x)
{
	char *out = arg;
	size_t n = strlen(out);

	n += (size_t)snprintf(out + n, 512 - n, "%s %s %lld", x->host_id, x->probe,
			      (long long)x->end_ms);
	for (unsigned b = 0; b < HIST_BUCKETS; b++)
		if (x->h.buckets[b])
			n += (size_t)snprintf(out + n, 512 - n, " %u:%llu", b,
					      (unsigned long long)x->h.buckets[b]);
	snprintf(out + n, 512 - n, " n%llu max%llu; ", (unsigned long long)x->h.count,
		 (unsigned long long)x->h.max_ns);
	return 0;
}

static int host_sample(void *arg, const struct store_sample *x)
{
	return sample_list(arg, x);
}

static int host_report(void *arg, int64_t unix_ms)
{
	(void)arg;
	(void)unix_ms;
	return 0;
}

static int host_event(void *arg, const struct store_event *e)
{
	(void)arg;
	(void)e;
	return 0;
}

#define HOUR 3600000

/*
 * Downsampling: past the raw window a host's samples become one histogram
 * per probe and hour (nothing lost from the merged histogram), counters
 * one row per hour, and queries read both.
 */
static void test_rollup(void **state)
{
	static const struct store_host_rows list_rows = { .report = host_report,
							  .event = host_event,
							  .sample = host_sample };
	struct store_filter all = { .probe = "vmap-purge" }, old = all;
	const char *two[] = { "rstat-flush", "vmap-purge" };
	char cursor[STORE_ID_MAX] = "", got[512] = "";
	struct store_window w;
	struct seen v = { 0 };
	struct store *s;
	uint64_t rows;

	(void)state;
	s = fresh_store();
	/* web-1: three reports in hour 0, one in hour 1, one in hour 2 (kept raw) */
	report_at(s, "web-1", 1, 1000, 1);
	report_at(s, "web-1", 2, 2000, 2);
	report_at(s, "web-1", 3, 3000, 4);
	report_at(s, "web-1", 4, HOUR + 500, 8);
	report_at(s, "web-1", 5, 2 * HOUR + 1000, 16);
	report_at(s, "web-2", 1, 1500, 32);
	assert_int_equal(s->ops->samples(s, &all, see, &v), 0);
	assert_int_equal(v.rows, 6);

	/* one host per step: web-1, web-2, then nothing left */
	assert_int_equal(s->ops->rollup(s, 2 * HOUR, cursor, 1, &rows), 1);
	assert_string_equal(cursor, "web-1");
	/* 4 samples merged; 2 of hour 0's 3 counters rows thinned */
	assert_int_equal(rows, 6);
	assert_int_equal(s->ops->rollup(s, 2 * HOUR, cursor, 1, &rows), 1);
	assert_string_equal(cursor, "web-2");
	assert_int_equal(rows, 1);
	assert_int_equal(s->ops->rollup(s, 2 * HOUR, cursor, 1, &rows), 0);
	assert_int_equal(rows, 0);

	assert_int_equal(count_rows("SELECT count(*) FROM report_samples"), 1);
	assert_int_equal(count_rows("SELECT count(*) FROM rollups"), 3);
	assert_int_equal(count_rows("SELECT samples FROM rollups WHERE host_id = 'web-1'"
				    " AND hour_ms = 0"),
			 3);
	/* the hour's last report, whose counters are the hour's totals */
	assert_int_equal(count_rows("SELECT count(*) FROM counters WHERE host_id = 'web-1'"
				    " AND unix_ms < 3600000"),
			 1);
	assert_int_equal(count_rows("SELECT seq FROM counters WHERE host_id = 'web-1'"
				    " AND unix_ms < 3600000"),
			 3);
	assert_int_equal(count_rows("SELECT count(*) FROM counters WHERE host_id = 'web-1'"), 3);

	/* the same totals as before, from 3 rollups and 1 raw sample */
	memset(&v, 0, sizeof(v));
	assert_int_equal(s->ops->samples(s, &all, see, &v), 0);
	assert_int_equal(v.rows, 4);
	assert_int_equal(v.samples, 6);
	assert_int_equal(v.count, 63);
	assert_int_equal(v.bucket20, 63);
	assert_int_equal(v.max_ns, 1000005);
	/* a gate's window and a host's rows read the rollups with the raw rows */
	assert_int_equal(
		s->ops->window(s, (const char *[]){ "web-1" }, 1, 0, 2 * HOUR + 1, two, 2, &w), 0);
	assert_true(w.max_ns[0] == -1 && w.max_ns[1] == 1000004);
	assert_int_equal(s->ops->window(s, (const char *[]){ "web-1" }, 1, 0, 3 * HOUR, two, 2, &w),
			 0);
	assert_true(w.max_ns[1] == 1000005);
	assert_int_equal(s->ops->host_rows(s, "web-1", 0, 3 * HOUR, &list_rows, got), 0);
	assert_string_equal(got, "web-1 vmap-purge 7201000 20:16 n16 max1000005; "
				 "web-1 vmap-purge 3600000 20:7 n7 max1000003; "
				 "web-1 vmap-purge 7200000 20:8 n8 max1000004; ");
	/* a range in hour 1 finds hour 1's rollup */
	old.from_ms = HOUR + 100;
	old.to_ms = 2 * HOUR;
	memset(&v, 0, sizeof(v));
	assert_int_equal(s->ops->samples(s, &old, see, &v), 0);
	assert_int_equal(v.count, 8);

	/* a late report (from an agent's spool) joins its hour's rollup */
	report_at(s, "web-1", 6, 2500, 64);
	cursor[0] = '\0';
	assert_int_equal(s->ops->rollup(s, 2 * HOUR, cursor, 8, &rows), 0);
	assert_int_equal(count_rows("SELECT samples FROM rollups WHERE host_id = 'web-1'"
				    " AND hour_ms = 0"),
			 4);
	assert_int_equal(count_rows("SELECT count FROM rollups WHERE host_id = 'web-1'"
				    " AND hour_ms = 0"),
			 71);

	/* retention: hour 0's rollups end at HOUR and go; hour 1's stays */
	assert_int_equal(s->ops->expire(s, HOUR, &rows), 0);
	assert_int_equal(count_rows("SELECT count(*) FROM rollups"), 1);
	s->ops->close(s);
}

static int count_facts(void *arg, const Kmemctl__V1__HostFacts *f, const char *policy,
		       uint64_t version)
{
	unsigned *n = arg;

	(*n)++;
	if (!strcmp(f->host_id, "web-2")) {
		assert_int_equal(f->n_labels, 1);
		assert_string_equal(f->labels[0]->key, "role");
		assert_string_equal(f->labels[0]->value, "web");
		assert_string_equal(policy, "base");
		assert_int_equal(version, 4);
	}
	return 0;
}

static int collect_members(void *arg, const struct store_member *m)
{
	char *out = arg;

	strcat(out, m->host_id);
	strcat(out, m->prev_policy ? "+ " : "- ");
	return 0;
}

/* A report of host st-1 at seq's second, named hostname, with rstat-yield on with reason. */
static int report_named(struct store *s, uint64_t seq, int64_t t, const char *hostname,
			const char *reason, int64_t now)
{
	Kmemctl__V1__Report rep = KMEMCTL__V1__REPORT__INIT;
	Kmemctl__V1__HostFacts f = KMEMCTL__V1__HOST_FACTS__INIT;
	Kmemctl__V1__MitigationState m = KMEMCTL__V1__MITIGATION_STATE__INIT, *mp[] = { &m };

	f.host_id = "st-1";
	f.hostname = (char *)hostname;
	rep.facts = &f;
	rep.seq = seq;
	rep.unix_ms = t;
	m.id = "rstat-yield";
	m.state = KMEMCTL__V1__MITIGATION_STATE_KIND__MITIGATION_STATE_ON;
	m.mode = KMEMCTL__V1__MITIGATION_MODE__MITIGATION_MODE_ON;
	m.source = KMEMCTL__V1__MODE_SOURCE__MODE_SOURCE_POLICY;
	m.reason = (char *)reason;
	rep.n_mitigations = 1;
	rep.mitigations = mp;
	return s->ops->ingest(s, &rep, now);
}

static int report_state(struct store *s, uint64_t seq, const char *reason, int64_t now)
{
	return report_named(s, seq, (int64_t)seq * 1000, NULL, reason, now);
}

/*
 * The host memo (daemon/host-memo.h) skips writes and lookups, never
 * what they would have found: resends are known, new facts and states
 * are written within the minute, a rolled-back batch is forgotten, and a
 * new connection knows what the file holds.
 */
static void test_memo(void **state)
{
	struct store *s = fresh_store();

	(void)state;
	assert_int_equal(report_named(s, 1, 1000, "a", "on: enacted", 5000), 0);
	assert_int_equal(report_named(s, 1, 1000, "a", "on: enacted", 5100), 1);
	/* a wiped agent counts from 1 again, later: new */
	assert_int_equal(report_named(s, 1, 2000, "a", "on: enacted", 5200), 0);
	assert_int_equal(report_named(s, 2, 3000, "b", "on: enacted", 5300), 0);
	assert_int_equal(count_rows("SELECT hostname = 'b' FROM hosts WHERE host_id = 'st-1'"), 1);
	/* undone: the next report writes what the batch would have */
	assert_int_equal(s->ops->begin(s), 0);
	assert_int_equal(report_named(s, 3, 4000, "c", "on: guard", 5400), 0);
	s->ops->rollback(s);
	assert_int_equal(report_named(s, 4, 5000, "c", "on: guard", 5500), 0);
	assert_int_equal(count_rows("SELECT hostname = 'c' FROM hosts WHERE host_id = 'st-1'"), 1);
	assert_int_equal(count_rows("SELECT reason = 'on: guard' FROM states"), 1);
	assert_int_equal(count_rows("SELECT count(*) FROM counters"), 4);
	/* last_seen_ms moves once it is over a minute old, when nothing else changes */
	assert_int_equal(report_named(s, 5, 6000, "c", "on: guard", 30000), 0);
	assert_int_equal(count_rows("SELECT last_seen_ms FROM hosts"), 5500);
	assert_int_equal(report_named(s, 6, 7000, "c", "on: guard", 65501), 0);
	assert_int_equal(count_rows("SELECT last_seen_ms FROM hosts"), 65501);
	s->ops->close(s);
	/* a new connection: the resend of the last report and of an older one are known */
	s = open_store();
	assert_int_equal(report_named(s, 6, 7000, "c", "on: guard", 70000), 1);
	assert_int_equal(report_named(s, 2, 3000, "b", "on: enacted", 70000), 1);
	assert_int_equal(report_named(s, 7, 8000, "c", "on: guard", 70000), 0);
	assert_int_equal(count_rows("SELECT count(*) FROM counters"), 7);
	s->ops->close(s);
}

/* A mitigation's row is written when it changed, not on every report. */
static void test_states_unchanged(void **state)
{
	struct store *s = fresh_store();

	(void)state;
	assert_int_equal(report_state(s, 1, "on: enacted", 5000), 0);
	assert_int_equal(report_state(s, 2, "on: enacted", 6000), 0);
	assert_int_equal(count_rows("SELECT updated_ms FROM states WHERE host_id = 'st-1'"), 5000);
	assert_int_equal(report_state(s, 3, "on: guard", 7000), 0);
	assert_int_equal(count_rows("SELECT updated_ms FROM states WHERE host_id = 'st-1'"), 7000);
	assert_int_equal(count_rows("SELECT count(*) FROM states"), 1);
	s->ops->close(s);
}

/* A batch rolled back (a report in it failed) keeps none of its reports. */
static void test_batch_rollback(void **state)
{
	struct store *s = fresh_store();

	(void)state;
	assert_int_equal(s->ops->begin(s), 0);
	report_at(s, "rb-1", 1, 1000, 1);
	report_at(s, "rb-2", 1, 1000, 1);
	s->ops->rollback(s);
	assert_int_equal(count_rows("SELECT count(*) FROM counters"), 0);
	assert_int_equal(count_rows("SELECT count(*) FROM report_samples"), 0);
	/* then the next batch, and a report outside any, are stored */
	assert_int_equal(s->ops->begin(s), 0);
	report_at(s, "rb-1", 1, 1000, 1);
	assert_int_equal(s->ops->commit(s), 0);
	report_at(s, "rb-2", 1, 1000, 1);
	assert_int_equal(count_rows("SELECT count(*) FROM counters"), 2);
	assert_int_equal(count_rows("SELECT count(*) FROM report_samples"), 2);
	s->ops->close(s);
}

static int first_only(void *arg, const struct store_assignment *a)
{
	(void)arg;
	(void)a;
	return 1;
}

/* One report stored by w in a batch of its own, as kmemd's ingest writer does. */
static void batch_of_one(struct store *w, const char *host, uint64_t seq)
{
	assert_int_equal(w->ops->begin(w), 0);
	report_at(w, host, seq, (int64_t)seq * 1000, 1);
	assert_int_equal(w->ops->commit(w), 0);
}

/*
 * Two connections to one file, as kmemd's loop and ingest writer: a write
 * on the loop's after the writer committed succeeds even when the loop's
 * last read left a statement on its row. A write must not run on the
 * snapshot of that read: SQLite would fail it (SQLITE_BUSY_SNAPSHOT)
 * rather than wait.
 */
static void test_two_writers(void **state)
{
	struct store_policy p = { .name = "p", .version = 1, .document_json = "{}" };
	struct store_assignment a = { .policy = "p", .version = 1, .selector_json = "{}" };
	struct store_rollout r;
	struct store *s = fresh_store(), *w = NULL;
	char err[256];
	unsigned wave;
	char verdict[16], gate[32];
	uint64_t rows;
	int64_t id;

	(void)state;
	assert_int_equal(s->ops->open_beside(s, &w, err, sizeof(err)), 0);
	assert_int_equal(s->ops->policy_add(s, &p, 1000), 0);
	assert_int_equal(s->ops->assign(s, &a, 1000, &id), 0);
	assert_int_equal(s->ops->rollout_add(s, "r1", "{}", 1000), 0);

	/* a one-row query left on its row (the engine's), then a rollout moved */
	assert_int_equal(s->ops->rollout_get(s, "r1", &r), 0);
	batch_of_one(w, "tw-1", 1);
	r.state = ROLLOUT_RUNNING;
	assert_int_equal(s->ops->rollout_update(s, &r, NULL, 2000, NULL), 0);
	store_rollout_clear(&r);
	assert_int_equal(s->ops->verdict_last(s, "r1", &wave, verdict, gate), -ENOENT);
	assert_int_equal(s->ops->rollout_get(s, "r1", &r), 0);
	batch_of_one(w, "tw-1", 2);
	r.state = ROLLOUT_PAUSED;
	assert_int_equal(s->ops->rollout_update(s, &r,
						&(struct store_verdict){ .verdict = "pass",
									 .gate = "",
									 .reason = "" },
						3000, NULL),
			 0);
	store_rollout_clear(&r);
	assert_int_equal(s->ops->verdict_last(s, "r1", &wave, verdict, gate), 0);
	assert_string_equal(verdict, "pass");

	/* a listing its callback stopped, left on a row, then an assignment */
	assert_int_equal(s->ops->assignments(s, first_only, NULL), 0);
	batch_of_one(w, "tw-1", 3);
	assert_int_equal(s->ops->assign(s, &a, 4000, &id), 0);

	/* a host looked up, then upkeep's transaction of several statements */
	assert_int_equal(s->ops->revoked(s, "tw-1"), 0);
	batch_of_one(w, "tw-1", 4);
	assert_int_equal(s->ops->expire(s, 2500, &rows), 0);
	assert_int_equal(rows, 4); /* seq 1 and 2's sample and counter rows */
	assert_int_equal(s->ops->revoked(s, "tw-1"), 0);
	batch_of_one(w, "tw-1", 5);
	assert_int_equal(s->ops->revoke(s, "tw-1", 5000), 0);
	assert_int_equal(s->ops->revoked(s, "tw-1"), 1);

	/* what either committed, the other reads */
	assert_int_equal(count_rows("SELECT count(*) FROM counters"), 3);
	assert_int_equal(count_rows("SELECT count(*) FROM assignments"), 2);
	w->ops->close(w);
	s->ops->close(s);
}

/* A report's histograms are one row; probes ending at other times get their own. */
static void test_samples_packed(void **state)
{
	Kmemctl__V1__Report rep = KMEMCTL__V1__REPORT__INIT;
	Kmemctl__V1__HostFacts f = KMEMCTL__V1__HOST_FACTS__INIT;
	Kmemctl__V1__Histogram h = KMEMCTL__V1__HISTOGRAM__INIT, g = KMEMCTL__V1__HISTOGRAM__INIT;
	Kmemctl__V1__ProbeSample p[3], *pp[] = { &p[0], &p[1], &p[2] };
	struct store_filter odd = { .probe = "we\"ird\n" }, all = { 0 };
	uint64_t hc[] = { 1, 2 }, gc[] = { 4 };
	struct seen v = { 0 };
	char got[512] = "";
	struct store *s = fresh_store();
	int i;

	(void)state;
	f.host_id = "pk-1";
	rep.facts = &f;
	rep.seq = 1;
	rep.unix_ms = 1000;
	h.first_bucket = 20;
	h.n_counts = 2;
	h.counts = hc;
	h.count = 3;
	h.max_ns = 77;
	g.first_bucket = 20;
	g.n_counts = 1;
	g.counts = gc;
	g.count = 4;
	for (i = 0; i < 3; i++) {
		kmemctl__v1__probe_sample__init(&p[i]);
		p[i].end_unix_ms = 1000;
		p[i].hist = i == 1 ? &g : &h;
	}
	p[0].probe = "vmap-purge";
	p[1].probe = "we\"ird\n"; /* a name JSON must escape */
	p[2].probe = "rstat-flush";
	p[2].end_unix_ms = 900;
	rep.n_probes = 3;
	rep.probes = pp;
	assert_int_equal(s->ops->ingest(s, &rep, 1000), 0);
	assert_int_equal(count_rows("SELECT count(*) FROM report_samples"), 2);
	assert_int_equal(s->ops->samples(s, &all, sample_list, got), 0);
	assert_string_equal(
		got, "pk-1 vmap-purge 1000 20:1 21:2 n3 max77; "
		     "pk-1 we\"ird\n 1000 20:4 n4 max0; pk-1 rstat-flush 900 20:1 21:2 n3 max77; ");
	/* each probe's counts are its own, out of the row's blob */
	assert_int_equal(s->ops->samples(s, &odd, see, &v), 0);
	assert_int_equal(v.rows, 1);
	assert_int_equal(v.count, 4);
	assert_int_equal(v.bucket20, 4);
	s->ops->close(s);
}

/* Migration 7: a store's probe samples from before it read as they were. */
static void test_migrate_samples(void **state)
{
	struct store_filter all = { .probe = "vmap-purge" };
	struct seen v = { 0 };
	struct store *s = fresh_store();
	sqlite3 *db;

	(void)state;
	s->ops->close(s);
	/* the file as kmemd wrote it before: samples a table, schema version 6 */
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(
		sqlite3_exec(
			db,
			"DROP TABLE report_samples; DROP INDEX rollout_hosts_by_plan;"
			"ALTER TABLE rollouts DROP COLUMN evidence; DROP TABLE leases; DROP TABLE rate_buckets;"
			"DROP INDEX audit_by_time; ALTER TABLE audit DROP COLUMN host; DROP TABLE operators;"
			"DROP TABLE fleet_stop; ALTER TABLE hosts DROP COLUMN off;"
			"DROP TABLE builds; DROP TABLE build_records; ALTER TABLE hosts DROP COLUMN waiting;"
			"ALTER TABLE rollouts DROP COLUMN archived_ms;"
			"ALTER TABLE policies DROP COLUMN retired_ms;"
			"DELETE FROM schema_version WHERE version >= 7;"
			"CREATE TABLE samples (host_id TEXT NOT NULL, probe TEXT NOT NULL,"
			" start_ms INTEGER, end_ms INTEGER, first_bucket INTEGER, counts BLOB,"
			" count INTEGER, sum_ns INTEGER, max_ns INTEGER);"
			"INSERT INTO hosts (host_id, last_seq) VALUES ('old-1', 2);"
			"INSERT INTO samples VALUES ('old-1', 'vmap-purge', 0, 1000, 20,"
			" x'0300000000000000', 3, 300, 200),"
			" ('old-1', 'vmap-purge', 1000, 2000, 20, x'0500000000000000', 5, 500,"
			" 900), ('old-1', 'rstat-flush', 0, 1000, 20, x'0100000000000000', 1,"
			" 1, 1);",
			NULL, NULL, NULL),
		SQLITE_OK);
	sqlite3_close(db);
	s = open_store();
	/* through migration 7's JSON and migration 8 */
	assert_int_equal(count_rows("SELECT max(version) FROM schema_version"), 14);
	assert_int_equal(count_rows("SELECT count(*) FROM report_samples"), 3);
	assert_int_equal(s->ops->samples(s, &all, see, &v), 0);
	assert_int_equal(v.rows, 2);
	assert_int_equal(v.count, 8);
	assert_int_equal(v.bucket20, 8);
	assert_int_equal(v.max_ns, 900);
	s->ops->close(s);
}

/*
 * Migration 8: schema 7's rows (probes in JSON, each probe's counts
 * anywhere in the row's blob) read as they were; rows it cannot read are
 * left out, not the migration failed.
 */
static void test_migrate_json(void **state)
{
	struct store_filter all = { .host = "j-1" };
	const char *probes[] = { "vmap-purge" };
	struct store_window w;
	char got[512] = "";
	struct store *s = fresh_store();
	sqlite3 *db;

	(void)state;
	s->ops->close(s);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(
		sqlite3_exec(
			db,
			"DROP TABLE report_samples; DROP INDEX rollout_hosts_by_plan;"
			"ALTER TABLE rollouts DROP COLUMN evidence; DROP TABLE leases; DROP TABLE rate_buckets;"
			"DROP INDEX audit_by_time; ALTER TABLE audit DROP COLUMN host; DROP TABLE operators;"
			"DROP TABLE fleet_stop; ALTER TABLE hosts DROP COLUMN off;"
			"DROP TABLE builds; DROP TABLE build_records; ALTER TABLE hosts DROP COLUMN waiting;"
			"ALTER TABLE rollouts DROP COLUMN archived_ms;"
			"ALTER TABLE policies DROP COLUMN retired_ms;"
			"DELETE FROM schema_version WHERE version >= 8;"
			"CREATE TABLE report_samples (host_id TEXT NOT NULL, end_ms INTEGER NOT NULL,"
			" probes TEXT NOT NULL, counts BLOB);"
			"CREATE INDEX report_samples_by_host ON report_samples (host_id, end_ms);"
			"CREATE INDEX report_samples_by_time ON report_samples (end_ms);"
			"INSERT INTO hosts (host_id, last_seq) VALUES ('j-1', 4);"
			/* rstat-flush's counts come first in the blob, vmap-purge's after */
			"INSERT INTO report_samples VALUES ('j-1', 1000, '{\"vmap-purge\":"
			" [0,20,3,300,200,8,8], \"rstat-flush\": [10,21,1,5,5,0,8]}',"
			" x'01000000000000000300000000000000'),"
			" ('j-1', 2000, '{\"we\\\"ird\": [1000,19,5,500,900,0,16]}',"
			" x'02000000000000000300000000000000'),"
			/* counts past the blob's end; not JSON; not an object of arrays */
			" ('j-1', 3000, '{\"vmap-purge\": [0,20,1,1,1,8,8]}', x'0100000000000000'),"
			" ('j-1', 4000, 'not json', NULL),"
			" ('j-1', 5000, '{\"vmap-purge\": 7}', NULL);",
			NULL, NULL, NULL),
		SQLITE_OK);
	sqlite3_close(db);
	s = open_store();
	assert_int_equal(count_rows("SELECT max(version) FROM schema_version"), 14);
	assert_int_equal(count_rows("SELECT count(*) FROM report_samples"), 2);
	assert_int_equal(count_rows("SELECT count(*) FROM report_samples"
				    " WHERE typeof(probes) = 'blob'"),
			 2);
	assert_int_equal(count_rows("SELECT count(*) FROM sqlite_master WHERE name IN"
				    " ('samples', 'samples_add', 'report_samples_by_host',"
				    " 'report_samples_by_time')"),
			 2);
	assert_int_equal(s->ops->samples(s, &all, sample_list, got), 0);
	assert_string_equal(got, "j-1 vmap-purge 1000 20:3 n3 max200; "
				 "j-1 rstat-flush 1000 21:1 n1 max5; "
				 "j-1 we\"ird 2000 19:2 20:3 n5 max900; ");
	assert_int_equal(s->ops->window(s, (const char *[]){ "j-1" }, 1, 0, 10000, probes, 1, &w),
			 0);
	assert_true(w.max_ns[0] == 200);
	s->ops->close(s);
}

/* The samples of host bad-1 that readers give, as sample_list() writes them. */
static void bad_host_samples(struct store *s, char got[512])
{
	struct store_filter all = { .host = "bad-1" };

	got[0] = '\0';
	assert_int_equal(s->ops->samples(s, &all, sample_list, got), 0);
}

/*
 * A report_samples row whose bytes are truncated or do not agree with
 * each other is skipped by every reader, and counted; the rows around it
 * are read.
 */
static void test_bad_rows(void **state)
{
	static const struct store_host_rows rows_cb = { .report = host_report,
							.event = host_event,
							.sample = host_sample };
	static const char *const corrupt[] = {
		/* truncated: in a probe's fixed fields, in its name */
		"UPDATE report_samples SET probes = substr(probes, 1, length(probes) - 3)",
		"UPDATE report_samples SET probes = substr(probes, 1, 5)",
		/* counts longer, then shorter, than the probes say */
		"UPDATE report_samples SET counts = counts || x'00'",
		"UPDATE report_samples SET counts = substr(counts, 1, 4)",
		/* a format this kmemd does not know; nothing at all */
		"UPDATE report_samples SET probes = x'02' || substr(probes, 2)",
		"UPDATE report_samples SET probes = x''",
		/* buckets past the last (name "vmap-purge": the first bucket's byte is at 12) */
		("UPDATE report_samples SET probes = substr(probes, 1, 12) || x'40' ||"
		 " substr(probes, 14)"),
		/* schema 7's JSON where binary belongs */
		"UPDATE report_samples SET probes = '{\"vmap-purge\": [0,20,1,1,1,0,8]}'",
	};
	/* the same damage in PostgreSQL's BYTEA */
	static const char *const corrupt_pg[] = {
		"UPDATE report_samples SET probes = substr(probes, 1, length(probes) - 3)",
		"UPDATE report_samples SET probes = substr(probes, 1, 5)",
		"UPDATE report_samples SET counts = counts || '\\x00'::bytea",
		"UPDATE report_samples SET counts = substr(counts, 1, 4)",
		"UPDATE report_samples SET probes = '\\x02'::bytea || substr(probes, 2)",
		"UPDATE report_samples SET probes = ''::bytea",
		("UPDATE report_samples SET probes = substr(probes, 1, 12) || '\\x40'::bytea ||"
		 " substr(probes, 14)"),
		("UPDATE report_samples SET probes ="
		 " convert_to('{\"vmap-purge\": [0,20,1,1,1,0,8]}', 'UTF8')"),
	};
	const char *probes[] = { "vmap-purge" };
	const char *want = "bad-1 vmap-purge 2000 20:2 n2 max1000002; ";
	struct store_window w;
	char got[512], sql[256], cursor[STORE_ID_MAX] = "";
	uint64_t rows;
	struct store *s;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(corrupt); i++) {
		s = fresh_store();
		report_at(s, "bad-1", 1, 1000, 1);
		report_at(s, "bad-1", 2, 2000, 2);
		snprintf(sql, sizeof(sql), "%s WHERE end_ms = 1000",
			 url ? corrupt_pg[i] : corrupt[i]);
		if (url)
			test_store_sql(sql);
		else
			assert_int_equal(sqlite3_exec(DB(s), sql, NULL, NULL, NULL), SQLITE_OK);

		bad_host_samples(s, got);
		assert_string_equal(got, want);
		assert_int_equal(skipped(s), 1);
		got[0] = '\0';
		assert_int_equal(s->ops->host_rows(s, "bad-1", 0, 10000, &rows_cb, got), 0);
		assert_string_equal(got, want);
		assert_int_equal(s->ops->window(s, (const char *[]){ "bad-1" }, 1, 0, 10000, probes,
						1, &w),
				 0);
		assert_true(w.max_ns[0] == 1000002);
		assert_int_equal(skipped(s), 3);
		/* rolled up: the good row's sample only, and the bad row gone with it */
		assert_int_equal(s->ops->rollup(s, 2 * HOUR, cursor, 8, &rows), 0);
		cursor[0] = '\0';
		assert_int_equal(skipped(s), 4);
		assert_int_equal(count_rows("SELECT count(*) FROM report_samples"), 0);
		assert_int_equal(count_rows("SELECT samples FROM rollups WHERE host_id = 'bad-1'"),
				 1);
		assert_int_equal(count_rows("SELECT count FROM rollups WHERE host_id = 'bad-1'"),
				 2);
		s->ops->close(s);
	}
}

static uint32_t rng_next(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

/*
 * The decoder on one input, in buffers of exactly its lengths (so that
 * the sanitizer build sees any read past them): when it accepts a row,
 * each probe lies inside it and the probes use its counts exactly.
 */
static unsigned decode_one(const uint8_t *probes, size_t len, const uint8_t *counts,
			   size_t counts_len)
{
	uint8_t *p = malloc(len ?: 1), *c = malloc(counts_len ?: 1);
	const char *why = NULL;
	struct rs_probe x;
	struct rs_row row;
	struct hist h;
	size_t used = 0;
	unsigned n = 0;

	assert_non_null(p);
	assert_non_null(c);
	memcpy(p, probes, len);
	memcpy(c, counts, counts_len);
	if (rs_open(&row, p, len, c, counts_len, &why) < 0) {
		assert_non_null(why);
		free(p);
		free(c);
		return 0;
	}
	while (rs_next(&row, &x)) {
		assert_true((const uint8_t *)x.name > p && (const uint8_t *)x.name <= p + len);
		assert_true((const uint8_t *)x.name + x.name_len <= p + len);
		assert_true(x.first_bucket + x.nbuckets <= HIST_BUCKETS);
		assert_true(!x.nbuckets || x.buckets == c + used);
		used += x.nbuckets * 8;
		assert_true(used <= counts_len);
		rs_hist(&x, &h);
		n++;
	}
	assert_int_equal(used, counts_len);
	free(p);
	free(c);
	return n + 1;
}

/* The decoder fuzzed: every truncation and byte of a good row changed, and random rows. */
static void test_rows_fuzz(void **state)
{
	struct buf probes = { 0 }, counts = { 0 };
	uint64_t b[3] = { 1, 2, 3 };
	uint8_t p[256], c[64];
	uint32_t seed = 2463534242u;
	unsigned ok = 0;

	(void)state;
	assert_int_equal(buf_reserve(&probes, sizeof(p)), 0);
	assert_int_equal(buf_reserve(&counts, sizeof(c)), 0);
	rs_begin(&probes, &counts);
	rs_add(&probes, &counts,
	       &(struct rs_probe){ .name = "vmap-purge",
				   .name_len = 10,
				   .first_bucket = 20,
				   .nbuckets = 2,
				   .buckets = (const uint8_t *)b,
				   .count = 3 });
	rs_add(&probes, &counts, &(struct rs_probe){ .name = "", .first_bucket = 64 });
	rs_add(&probes, &counts,
	       &(struct rs_probe){ .name = "rstat-flush",
				   .name_len = 11,
				   .first_bucket = 63,
				   .nbuckets = 1,
				   .buckets = (const uint8_t *)&b[2] });
	assert_int_equal(decode_one(probes.p, probes.len, counts.p, counts.len), 4);
	for (size_t l = 0; l < probes.len; l++)
		ok += decode_one(probes.p, l, counts.p, counts.len) != 0;
	for (size_t l = 0; l < counts.len; l++)
		ok += decode_one(probes.p, probes.len, counts.p, l) != 0;
	/* no truncation of either is a row */
	assert_int_equal(ok, 0);
	for (size_t i = 0; i < probes.len; i++)
		for (unsigned v = 0; v < 256; v++) {
			memcpy(p, probes.p, probes.len);
			p[i] = (uint8_t)v;
			decode_one(p, probes.len, counts.p, counts.len);
		}
	/* random rows of up to 4 probes, half of them with a byte changed or cut short */
	for (unsigned k = 0; k < 20000; k++) {
		unsigned n = rng_next(&seed) % 5, cut = rng_next(&seed) % 4;

		rs_begin(&probes, &counts);
		for (unsigned i = 0; i < n; i++) {
			struct rs_probe x = { .name = "abcdefghijklmnopqrst",
					      .name_len = rng_next(&seed) % 21,
					      .first_bucket = rng_next(&seed) % 65,
					      .buckets = c };

			x.nbuckets = rng_next(&seed) % 3;
			if (x.first_bucket + x.nbuckets > HIST_BUCKETS)
				x.nbuckets = 0;
			x.start_ms = (int64_t)rng_next(&seed) << 20;
			rs_add(&probes, &counts, &x);
		}
		memcpy(p, probes.p, probes.len);
		memcpy(c, counts.p, counts.len);
		if (cut == 1)
			p[rng_next(&seed) % probes.len] = (uint8_t)rng_next(&seed);
		if (cut == 2 && counts.len)
			c[rng_next(&seed) % counts.len] = (uint8_t)rng_next(&seed);
		if (cut == 3) {
			ok += decode_one(p, rng_next(&seed) % probes.len, c, counts.len) != 0;
			continue;
		}
		if (cut == 0)
			assert_int_equal(decode_one(p, probes.len, c, counts.len), n + 1);
		else
			ok += decode_one(p, probes.len, c, counts.len) != 0;
	}
	/* some changed bytes (a name's, a count's) leave a row that reads */
	assert_true(ok > 0);
	free(probes.p);
	free(counts.p);
}

static int collect_started(void *arg, const struct store_rollout *r)
{
	char *out = arg;

	assert_non_null(strstr(r->spec_json, r->name));
	sprintf(out + strlen(out), "%s:%s:%u ", r->name, rollout_state_name(r->state), r->wave);
	return 0;
}

/* The started rollouts, newest first, as "name:state:wave ". */
static const char *started(struct store *s)
{
	static char list[256];

	list[0] = 0;
	assert_int_equal(s->ops->rollouts_started(s, collect_started, list), 0);
	return list;
}

/* Whether changes() says something changed since *c, which it updates. */
static bool changed(struct store *s, struct store_changes *c)
{
	struct store_changes now;

	assert_int_equal(s->ops->changes(s, &now), 0);
	if (!memcmp(&now, c, sizeof(now)))
		return false;
	*c = now;
	return true;
}

/* Rollouts kept, their members, the started ones and when they changed. */
static void test_rollouts(void **state)
{
	static const char spec[] = "{\"name\":\"r1\",\"policy\":\"web\",\"version\":6}";
	static const char spec_rb[] = "{\"name\":\"r2\",\"policy\":\"web\",\"version\":6,"
				      "\"rollback\":{\"policy\":\"web\",\"version\":7}}";
	Kmemctl__V1__Report rep = KMEMCTL__V1__REPORT__INIT;
	Kmemctl__V1__HostFacts f = KMEMCTL__V1__HOST_FACTS__INIT;
	Kmemctl__V1__HostFacts__LabelsEntry le = KMEMCTL__V1__HOST_FACTS__LABELS_ENTRY__INIT,
					    *lep[] = { &le };
	struct store_member m[3];
	struct store_rollout r;
	struct store_changes seen = { 0 };
	char list[256] = "", json[1024];
	const char *hosts[] = { "web-1", "web-2", "web-3" };
	unsigned n = 0;
	struct store *s;

	(void)state;
	s = fresh_store();
	le.key = "role";
	le.value = "web";
	f.n_labels = 1;
	f.labels = lep;
	rep.facts = &f;
	rep.policy_name = "base";
	rep.policy_version = 4;
	for (size_t i = 0; i < 3; i++) {
		f.host_id = (char *)hosts[i];
		rep.seq = 1;
		rep.unix_ms = 1000;
		assert_int_equal(s->ops->ingest(s, &rep, 1000), 0);
	}
	assert_int_equal(s->ops->host_facts(s, count_facts, &n), 0);
	assert_int_equal(n, 3);

	assert_int_equal(s->ops->rollout_add(s, "r1", spec, 2000), 0);
	assert_int_equal(s->ops->rollout_add(s, "r1", spec, 2001), -EEXIST);
	assert_int_equal(s->ops->rollout_get(s, "r9", &r), -ENOENT);
	assert_int_equal(s->ops->rollout_get(s, "r1", &r), 0);
	assert_int_equal(r.state, ROLLOUT_PENDING);
	assert_string_equal(r.spec_json, spec);
	store_rollout_clear(&r);
	/* only a finished rollout is archived */
	assert_int_equal(s->ops->rollout_archive(s, "r1", 2002), -EBUSY);
	assert_int_equal(s->ops->rollout_archive(s, "r9", 2002), -ENOENT);
	/* web-1 in wave 0; web-2 (ran base/4) and web-3 (ran nothing) in wave 1 */
	for (size_t i = 0; i < 3; i++) {
		m[i] = (struct store_member){ .host_id = hosts[i],
					      .stratum = "b/cpus<=4/web",
					      .wave = i ? 1 : 0,
					      .position = (double)i,
					      .prev_policy = i == 2 ? NULL : "base",
					      .prev_version = 4 };
	}
	assert_true(changed(s, &seen));
	r = (struct store_rollout){ .name = "r1", .state = ROLLOUT_PENDING };
	assert_int_equal(s->ops->rollout_start(s, &r, m, 3, 2500), 0);
	assert_int_equal(s->ops->members(s, "r1", collect_members, list), 0);
	assert_string_equal(list, "web-1+ web-2+ web-3- ");
	/* all or nothing: a host listed twice undoes the whole start */
	{
		struct store_member twice[] = { m[0], m[0] };
		char none[64] = "";

		assert_int_equal(s->ops->rollout_add(s, "r0", spec, 2550), 0);
		r = (struct store_rollout){ .name = "r0", .state = ROLLOUT_RUNNING };
		assert_int_equal(s->ops->rollout_start(s, &r, twice, 2, 2600), -EIO);
		assert_int_equal(s->ops->members(s, "r0", collect_members, none), 0);
		assert_string_equal(none, "");
		assert_int_equal(s->ops->rollout_get(s, "r0", &r), 0);
		assert_int_equal(r.state, ROLLOUT_PENDING);
		store_rollout_clear(&r);
	}

	/* pending ones are not started; a start or an update is a change */
	assert_true(changed(s, &seen));
	assert_string_equal(started(s), "");
	r = (struct store_rollout){ .name = "r1", .state = ROLLOUT_RUNNING, .wave = 0 };
	assert_int_equal(s->ops->rollout_update(s, &r, NULL, 3000, NULL), 0);
	assert_true(changed(s, &seen));
	assert_false(changed(s, &seen));
	assert_string_equal(started(s), "r1:running:0 ");
	r.wave = 1;
	assert_int_equal(s->ops->rollout_update(s, &r, NULL, 4000, NULL), 0);
	assert_true(changed(s, &seen));
	assert_string_equal(started(s), "r1:running:1 ");
	r.state = ROLLOUT_ROLLED_BACK;
	{
		struct store_verdict v = { .wave = 1,
					   .ts_ms = 5000,
					   .verdict = "fail",
					   .gate = "lockups",
					   .reason = "lockups: 9 in 3 canary host-hours",
					   .detail_json = "{\"lockup_p\":0.001}" };
		char verdict[16], gate[32], *status;
		unsigned wave;

		assert_int_equal(s->ops->verdict_last(s, "r1", &wave, verdict, gate), -ENOENT);
		assert_int_equal(s->ops->rollout_update(s, &r, &v, 5000, NULL), 0);
		assert_int_equal(s->ops->verdict_last(s, "r1", &wave, verdict, gate), 0);
		assert_int_equal(wave, 1);
		assert_string_equal(verdict, "fail");
		assert_string_equal(gate, "lockups");
		assert_int_equal(status_text(s, "r1", &status), 0);
		assert_non_null(strstr(status, "\"verdicts\":[{\"wave\":1,\"ts_ms\":5000,"
					       "\"verdict\":\"fail\",\"gate\":\"lockups\""));
		assert_non_null(strstr(status, "\"detail\":{\"lockup_p\":0.001}}]"));
		assert_non_null(strstr(status,
				       "{\"host_id\":\"web-2\",\"stratum\":\"b/cpus<=4/web\","
				       "\"wave\":1,\"previous\":{\"name\":\"base\",\"version\":4},"
				       "\"policy\":{\"name\":\"base\",\"version\":4}"));
		assert_non_null(strstr(status,
				       "\"host_id\":\"web-3\",\"stratum\":\"b/cpus<=4/web\","
				       "\"wave\":1,\"previous\":null"));
		free(status);
		assert_int_equal(status_text(s, "r9", &status), -ENOENT);
		/* the verdict and the state go together: no rollout, no verdict */
		r = (struct store_rollout){ .name = "r9", .state = ROLLOUT_ROLLING_BACK };
		assert_int_equal(s->ops->rollout_update(s, &r, &v, 5000, NULL), -ENOENT);
		assert_int_equal(s->ops->verdict_last(s, "r9", &wave, verdict, gate), -ENOENT);
		r = (struct store_rollout){ .name = "r1", .state = ROLLOUT_ROLLED_BACK, .wave = 1 };
	}
	/* members say what their hosts run now, for the engine to see a rollback through */
	{
		char policy[STORE_ID_MAX + 24];

		assert_string_equal(member_policy(s, "r1", "web-2", policy), "base@4");
		f.host_id = "web-2";
		rep.seq = 2;
		rep.unix_ms = 5100;
		rep.policy_name = "web";
		rep.policy_version = 6;
		assert_int_equal(s->ops->ingest(s, &rep, 5100), 0);
		assert_string_equal(member_policy(s, "r1", "web-2", policy), "web@6");
		rep.seq = 3;
		rep.unix_ms = 5200;
		rep.policy_name = "base";
		rep.policy_version = 4;
		assert_int_equal(s->ops->ingest(s, &rep, 5200), 0);
		assert_string_equal(member_policy(s, "r1", "web-2", policy), "base@4");
	}
	assert_int_equal(rollouts_text(s, json), 0);
	assert_non_null(strstr(json, "\"state\":\"rolled-back\""));
	assert_non_null(strstr(json, "\"members\":[1,2]"));

	/* a newer rollout with a signed rollback version has the say */
	assert_int_equal(s->ops->rollout_add(s, "r2", spec_rb, 6000), 0);
	m[2].wave = 0;
	r = (struct store_rollout){ .name = "r2", .state = ROLLOUT_RUNNING };
	assert_int_equal(s->ops->rollout_start(s, &r, &m[2], 1, 6500), 0);
	r = (struct store_rollout){ .name = "r2", .state = ROLLOUT_ABORTED, .wave = 0 };
	assert_int_equal(s->ops->rollout_update(s, &r, NULL, 7000, NULL), 0);
	assert_string_equal(started(s), "r2:aborted:0 r1:rolled-back:1 ");
	assert_true(changed(s, &seen));
	r = (struct store_rollout){ .name = "r9", .state = ROLLOUT_RUNNING };
	assert_int_equal(s->ops->rollout_update(s, &r, NULL, 8000, NULL), -ENOENT);
	s->ops->close(s);
}

/* What a rollout gate judges of one host over a window. */
static void test_window(void **state)
{
	Kmemctl__V1__Report rep = KMEMCTL__V1__REPORT__INIT;
	Kmemctl__V1__HostFacts f = KMEMCTL__V1__HOST_FACTS__INIT;
	Kmemctl__V1__KernelEvent e = KMEMCTL__V1__KERNEL_EVENT__INIT, *ep[] = { &e };
	Kmemctl__V1__MitigationState m = KMEMCTL__V1__MITIGATION_STATE__INIT, *mp[] = { &m };
	const char *probes[] = { "vmap-purge", "rstat-flush" };
	struct store_window w, many[4];
	struct store *s;
	size_t i;

	(void)state;
	s = fresh_store();
	/* reports at 0, 30 and 60 minutes; 2 and 4 values in bucket 20 (~1 ms) */
	report_at(s, "w1", 1, 0, 2);
	report_at(s, "w1", 2, 1800000, 4);
	report_at(s, "w1", 3, 3600000, 4);
	/* a soft lockup and a refused policy at 40 minutes */
	f.host_id = "w1";
	rep.facts = &f;
	rep.seq = 4;
	rep.unix_ms = 2400000;
	rep.n_events = 1;
	rep.events = ep;
	e.kind = KMEMCTL__V1__EVENT_KIND__EVENT_KIND_SOFT_LOCKUP;
	e.unix_ms = 2400000;
	e.message = "watchdog: BUG: soft lockup - CPU#1 stuck for 23s!";
	assert_int_equal(s->ops->ingest(s, &rep, 2400000), 0);

	assert_int_equal(s->ops->window(s, (const char *[]){ "w1" }, 1, 0, 3600001, probes, 2, &w),
			 0);
	assert_true(w.hours == 1);
	assert_int_equal(w.soft_lockups, 1);
	assert_int_equal(w.hard_lockups, 0);
	assert_true(w.p99_ns[0] > 524288 && w.p99_ns[0] <= 1048576);
	assert_true(w.p99_ns[1] == -1);
	assert_true(w.max_ns[0] == 1000003);
	assert_true(w.max_ns[1] == -1);
	assert_string_equal(w.unhealthy, "");
	/* the window is half-open: the last report and its sample are out */
	assert_int_equal(s->ops->window(s, (const char *[]){ "w1" }, 1, 0, 3600000, probes, 1, &w),
			 0);
	assert_true(w.hours == 2400000.0 / 3600000);
	/* a host not heard from: no exposure, no data */
	assert_int_equal(s->ops->window(s, (const char *[]){ "w9" }, 1, 0, 3600001, probes, 1, &w),
			 0);
	assert_true(w.hours == 0);
	assert_true(w.p99_ns[0] == -1);

	e.kind = KMEMCTL__V1__EVENT_KIND__EVENT_KIND_POLICY_REFUSED;
	e.message = "rstat version 1 is older than version 2, which runs here";
	rep.seq = 5;
	rep.unix_ms = e.unix_ms = 2500000;
	assert_int_equal(s->ops->ingest(s, &rep, 2500000), 0);
	assert_int_equal(s->ops->window(s, (const char *[]){ "w1" }, 1, 0, 3600001, probes, 1, &w),
			 0);
	assert_string_equal(w.unhealthy,
			    "policy-refused: rstat version 1 is older than version 2, which runs "
			    "here");
	/* a mitigation that tripped says more than a refusal */
	rep.seq = 6;
	rep.unix_ms = 2600000;
	rep.n_events = 0;
	rep.n_mitigations = 1;
	rep.mitigations = mp;
	m.id = "rstat-yield";
	m.state = KMEMCTL__V1__MITIGATION_STATE_KIND__MITIGATION_STATE_TRIPPED;
	m.reason = "tripped: flush took 2 s";
	assert_int_equal(s->ops->ingest(s, &rep, 2600000), 0);
	assert_int_equal(s->ops->window(s, (const char *[]){ "w1" }, 1, 0, 3600001, probes, 1, &w),
			 0);
	assert_string_equal(w.unhealthy, "mitigation rstat-yield tripped: tripped: flush took 2 s");

	/* a trip event alone (the state reset since) is unhealthy too */
	report_at(s, "w2", 1, 0, 2);
	f.host_id = "w2";
	rep.seq = 2;
	rep.unix_ms = e.unix_ms = 1000000;
	rep.n_mitigations = 0;
	rep.n_events = 1;
	e.kind = KMEMCTL__V1__EVENT_KIND__EVENT_KIND_TRIP;
	e.mitigation = "usercopy-fastpath";
	e.message = "usercopy-fastpath tripped: hung task";
	assert_int_equal(s->ops->ingest(s, &rep, 1000000), 0);
	assert_int_equal(s->ops->window(s, (const char *[]){ "w2" }, 1, 0, 3600001, probes, 1, &w),
			 0);
	assert_string_equal(w.unhealthy,
			    "trip: usercopy-fastpath: usercopy-fastpath tripped: hung task");

	/* many hosts at once (a wave's): each its own, as read alone; one asked twice */
	assert_int_equal(s->ops->window(s, (const char *[]){ "w1", "w9", "w2", "w1" }, 4, 0,
					3600001, probes, 2, many),
			 0);
	for (i = 0; i < 4; i++) {
		assert_int_equal(s->ops->window(s,
						(const char *[]){ i == 1 ? "w9" :
								  i == 2 ? "w2" :
									   "w1" },
						1, 0, 3600001, probes, 2, &w),
				 0);
		assert_memory_equal(&many[i], &w, sizeof(w));
	}
	assert_string_equal(many[3].unhealthy,
			    "mitigation rstat-yield tripped: tripped: flush took 2 s");
	assert_true(many[3].p99_ns[0] > 524288 && many[1].p99_ns[0] == -1);
	assert_int_equal(s->ops->window(s, NULL, 0, 0, 3600001, probes, 2, many), 0);
	s->ops->close(s);
}

/* A file from a newer kmemd is refused, not misread. */
static void test_newer_schema(void **state)
{
	struct store *s = NULL;
	char err[256];
	sqlite3 *db;

	(void)state;
	s = fresh_store();
	s->ops->close(s);
	s = NULL;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "INSERT INTO schema_version VALUES (99)", NULL, NULL,
				      NULL),
			 SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(store_open(path, &s, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "newer kmemd"));
	unlink(path);
	/* and a file that is not a database at all */
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_close(db);
	{
		FILE *f = fopen(path, "w");

		assert_non_null(f);
		fputs("this is not a database, just text long enough to fill a header page\n", f);
		fclose(f);
	}
	assert_int_equal(store_open(path, &s, err, sizeof(err)), -EIO);
	unlink(path);
}

/*
 * The engine's lease: one holder at a time, renewed by it, taken by
 * another only once it expired; each kmemd on its own connection. The
 * engine's writes are its holder's only: one whose lease went to another
 * writes nothing, verdict and all.
 */
static void test_lease(void **state)
{
	struct store *a = fresh_store(), *b = open_store();
	const struct store_verdict v = {
		.wave = 0, .verdict = "inconclusive", .gate = "", .reason = ""
	};
	struct store_rollout r;

	(void)state;
	assert_int_equal(a->ops->rollout_add(a, "r1", "{}", 900), 0);
	assert_int_equal(a->ops->rollout_get(a, "r1", &r), 0);
	r.state = ROLLOUT_HOLDING;
	/* no lease yet: no engine write */
	assert_int_equal(a->ops->rollout_update(a, &r, &v, 950, "a:1:00"), -ENOLCK);
	assert_int_equal(a->ops->lease(a, "engine", "a:1:00", 1000, 750), 1);
	assert_int_equal(a->ops->rollout_update(a, &r, &v, 1100, "a:1:00"), 0);
	/* held until 1750: b waits, a renews */
	assert_int_equal(b->ops->lease(b, "engine", "b:2:00", 1500, 750), 0);
	assert_int_equal(a->ops->lease(a, "engine", "a:1:00", 1600, 750), 1);
	assert_int_equal(b->ops->lease(b, "engine", "b:2:00", 2349, 750), 0);
	/* a stopped renewing: expired at 2350, b takes it, and a may not take it back */
	assert_int_equal(b->ops->lease(b, "engine", "b:2:00", 2350, 750), 1);
	assert_int_equal(a->ops->lease(a, "engine", "a:1:00", 2400, 750), 0);
	assert_int_equal(count_rows("SELECT count(*) FROM leases WHERE name = 'engine'"
				    " AND holder = 'b:2:00' AND expires_ms = 3100"),
			 1);
	/* a's pass that outlived its lease: its write and verdict are not made; b's are */
	assert_int_equal(a->ops->rollout_update(a, &r, &v, 2400, "a:1:00"), -ENOLCK);
	assert_int_equal(count_rows("SELECT count(*) FROM verdicts WHERE rollout = 'r1'"), 1);
	assert_int_equal(b->ops->rollout_update(b, &r, &v, 2450, "b:2:00"), 0);
	assert_int_equal(count_rows("SELECT count(*) FROM verdicts WHERE rollout = 'r1'"), 2);
	/* an operator's write needs no lease */
	assert_int_equal(a->ops->rollout_update(a, &r, NULL, 2460, NULL), 0);
	store_rollout_clear(&r);
	/* another lease is another row */
	assert_int_equal(a->ops->lease(a, "other", "a:1:00", 2400, 750), 1);
	/* given up (a clean stop): the next takes it at once; only its holder can give it up */
	assert_int_equal(a->ops->lease(a, "engine", "a:1:00", 2500, -1), 0);
	assert_int_equal(b->ops->lease(b, "engine", "b:2:00", 2500, -1), 1);
	assert_int_equal(a->ops->lease(a, "engine", "a:1:00", 2501, 750), 1);
	a->ops->close(a);
	b->ops->close(b);
}

/*
 * Shared token buckets: what one connection (one kmemd) takes another
 * cannot; a refusal takes from no bucket; buckets refill at their rate
 * and are forgotten once full.
 */
static void test_rate(void **state)
{
	struct store *a = fresh_store(), *b = open_store();
	const char *k1[] = { "net 10.0.0.1", "all" }, *k2[] = { "net 10.0.0.2", "all" };
	const uint64_t rates[] = { 2, 3 };

	(void)state;
	assert_int_equal(a->ops->rate_take(a, k1, rates, 2, 1000), 1);
	assert_int_equal(b->ops->rate_take(b, k1, rates, 2, 1001), 1);
	/* the network's 2 a minute are taken, whichever kmemd is asked */
	assert_int_equal(b->ops->rate_take(b, k1, rates, 2, 1002), 0);
	assert_int_equal(a->ops->rate_take(a, k1, rates, 2, 1003), 0);
	/* another network takes the last of all's 3; then all's are spent */
	assert_int_equal(a->ops->rate_take(a, k2, rates, 2, 1004), 1);
	assert_int_equal(b->ops->rate_take(b, k2, rates, 2, 1005), 0);
	assert_int_equal(count_rows("SELECT count(*) FROM rate_buckets WHERE key = 'net 10.0.0.2'"
				    " AND tokens = 1.0"),
			 1);
	/* 30 s refill one of the network's, 20 s one of all's */
	assert_int_equal(a->ops->rate_take(a, k1, rates, 2, 31004), 1);
	assert_int_equal(a->ops->rate_take(a, k1, rates, 2, 31005), 0);
	/* a minute later every bucket is full: their rows are gone */
	assert_int_equal(b->ops->rate_take(b, k2, rates, 2, 100000), 1);
	assert_int_equal(count_rows("SELECT count(*) FROM rate_buckets"), 2);
	assert_int_equal(count_rows("SELECT count(*) FROM rate_buckets WHERE key = 'net 10.0.0.1'"),
			 0);
	a->ops->close(a);
	b->ops->close(b);
}

static int wave_counts(void *arg, const struct store_rollout *r, const uint64_t *members, size_t n)
{
	char *out = arg;

	(void)r;
	for (size_t i = 0; i < n; i++)
		snprintf(out + strlen(out), 128 - strlen(out), "%llu,",
			 (unsigned long long)members[i]);
	return 0;
}

/*
 * The most waves a plan has, a member in each: the rollout's 16 and the
 * release of its holdback. The listing counts all 17.
 */
static void test_rollout_waves(void **state)
{
	struct store *s = fresh_store();
	struct store_member m[ROLLOUT_MAX_WAVES + 1];
	struct store_rollout r = { .name = "w17", .state = ROLLOUT_PENDING };
	char ids[ROLLOUT_MAX_WAVES + 1][16], counts[128] = "";

	(void)state;
	assert_int_equal(s->ops->rollout_add(s, "w17", "{}", 1000), 0);
	for (size_t i = 0; i < ARRAY_SIZE(m); i++) {
		snprintf(ids[i], sizeof(ids[i]), "w-%zu", i);
		m[i] = (struct store_member){ .host_id = ids[i],
					      .stratum = "s",
					      .wave = (unsigned)i,
					      .position = (double)i };
	}
	assert_int_equal(s->ops->rollout_start(s, &r, m, ARRAY_SIZE(m), 2000), 0);
	assert_int_equal(s->ops->rollouts(s, wave_counts, counts), 0);
	assert_string_equal(counts, "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,");
	s->ops->close(s);
}

/* A database of a newer kmemd is refused, not misread; a server not there is an error. */
static void test_pg_newer_schema(void **state)
{
	struct store *s = fresh_store();
	char err[256], bad[4200];

	(void)state;
	s->ops->close(s);
	test_store_sql("INSERT INTO schema_version VALUES (99)");
	s = NULL;
	assert_int_equal(store_open(url, &s, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "newer kmemd"));
	test_store_wipe(path);
	snprintf(bad, sizeof(bad), "postgresql:///kmemd?host=%s/no-such-dir", path);
	assert_int_equal(store_open(bad, &s, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "no-such-dir"));
}

/*
 * Two kmemd on one database, each with its own connection: a report one
 * stored is known to the other when its agent resends it there, and what
 * one wrote of a host is not taken by the other for what it wrote itself
 * (no memo: a host that moved from one to the other and back is written).
 */
static void test_pg_two_kmemd(void **state)
{
	struct store *a = fresh_store(), *b = open_store();

	(void)state;
	assert_int_equal(report_named(a, 1, 1000, "one", "on: enacted", 5000), 0);
	assert_int_equal(report_named(b, 1, 1000, "one", "on: enacted", 5100), 1);
	assert_int_equal(report_named(b, 2, 2000, "two", "on: guard", 5200), 0);
	assert_int_equal(report_named(a, 3, 3000, "one", "on: enacted", 5300), 0);
	assert_int_equal(count_rows("SELECT hostname = 'one' FROM hosts WHERE host_id = 'st-1'"),
			 1);
	assert_int_equal(count_rows("SELECT reason = 'on: enacted' FROM states"), 1);
	assert_int_equal(count_rows("SELECT count(*) FROM counters"), 3);
	/* a batch of a's with b's report resent in it: known, and the batch goes on */
	assert_int_equal(a->ops->begin(a), 0);
	assert_int_equal(report_named(a, 2, 2000, "two", "on: guard", 5400), 1);
	assert_int_equal(report_named(a, 4, 4000, "two", "on: guard", 5400), 0);
	assert_int_equal(a->ops->commit(a), 0);
	assert_int_equal(count_rows("SELECT count(*) FROM counters"), 4);
	a->ops->close(a);
	b->ops->close(b);
}

/*
 * The server ends kmemd's connection (a restart, a failover): the op that
 * met it fails, and the next one connects again and works, with its
 * statements prepared anew.
 */
static void test_pg_reconnect(void **state)
{
	struct store *s = fresh_store();
	char sql[128];
	int r;

	(void)state;
	assert_int_equal(s->ops->revoke(s, "rc-1", 1000), 0);
	snprintf(sql, sizeof(sql), "SELECT pg_terminate_backend(%d)",
		 PQbackendPID(((struct pg_store *)s)->conn));
	test_store_sql(sql);
	r = s->ops->revoked(s, "rc-1");
	assert_true(r == -EIO || r == 1);
	assert_int_equal(s->ops->revoked(s, "rc-1"), 1);
	report_at(s, "rc-2", 1, 1000, 1);
	assert_int_equal(count_rows("SELECT count(*) FROM counters"), 1);
	s->ops->close(s);
}

/* host's host_ends() of store s, as "samples_ms report_ms" */
static const char *host_ends(struct store *s, const char *host)
{
	static char out[64];
	struct store_host_ends e = { 0, 0 };

	assert_int_equal(s->ops->host_ends(s, &host, 1, &e), 0);
	snprintf(out, sizeof(out), "%lld %lld",
		 e.samples_ms == INT64_MIN ? -1 : (long long)e.samples_ms,
		 e.report_ms == INT64_MIN ? -1 : (long long)e.report_ms);
	return out;
}

/*
 * Where a host's last sample ended and its latest report's time: read
 * once, kept as reports are stored, undone with them.
 */
static void test_host_ends(void **state)
{
	Kmemctl__V1__Report rep = KMEMCTL__V1__REPORT__INIT;
	Kmemctl__V1__HostFacts f = KMEMCTL__V1__HOST_FACTS__INIT;
	Kmemctl__V1__Histogram h = KMEMCTL__V1__HISTOGRAM__INIT;
	Kmemctl__V1__ProbeSample p[2] = { KMEMCTL__V1__PROBE_SAMPLE__INIT,
					  KMEMCTL__V1__PROBE_SAMPLE__INIT },
				 *pp[] = { &p[0], &p[1] };
	uint64_t counts[] = { 1 };
	struct store *s = fresh_store(), *other;

	(void)state;
	f.host_id = "end-1";
	rep.facts = &f;
	h.first_bucket = 10;
	h.n_counts = 1;
	h.counts = counts;
	h.count = 1;
	p[0].probe = "vmap-purge";
	p[1].probe = "rstat-flush";
	p[0].hist = p[1].hist = &h;
	rep.probes = pp;
	assert_string_equal(host_ends(s, "end-1"), "-1 -1");
	rep.seq = 1;
	p[0].end_unix_ms = 1000;
	rep.unix_ms = 1100;
	rep.n_probes = 1;
	assert_int_equal(s->ops->ingest(s, &rep, 5000), 0);
	assert_string_equal(host_ends(s, "end-1"), "1000 1100");
	/* the latest of a report's ends; a report without samples moves the report's time only */
	rep.seq = 2;
	p[0].end_unix_ms = 3000;
	rep.unix_ms = 3100;
	p[1].end_unix_ms = 2000;
	rep.n_probes = 2;
	assert_int_equal(s->ops->ingest(s, &rep, 6000), 0);
	assert_string_equal(host_ends(s, "end-1"), "3000 3100");
	rep.seq = 3;
	rep.unix_ms = 4100;
	rep.n_probes = 0;
	assert_int_equal(s->ops->ingest(s, &rep, 6000), 0);
	assert_string_equal(host_ends(s, "end-1"), "3000 4100");
	/* another host's are its own */
	assert_string_equal(host_ends(s, "end-2"), "-1 -1");
	/* a batch rolled back takes its reports with it */
	assert_int_equal(s->ops->begin(s), 0);
	rep.seq = 4;
	p[0].end_unix_ms = p[1].end_unix_ms = 9000;
	rep.unix_ms = 9100;
	rep.n_probes = 2;
	assert_int_equal(s->ops->ingest(s, &rep, 7000), 0);
	assert_string_equal(host_ends(s, "end-1"), "9000 9100");
	s->ops->rollback(s);
	assert_string_equal(host_ends(s, "end-1"), "3000 4100");
	/* a store opened anew (another kmemd, a restart) reads what is stored */
	other = open_store();
	assert_string_equal(host_ends(other, "end-1"), "3000 4100");
	/* several at once, each its own, in order */
	{
		const char *hosts[] = { "end-2", "end-1", "end-2", "end-1" };
		struct store_host_ends e[4];

		assert_int_equal(other->ops->host_ends(other, hosts, 4, e), 0);
		assert_true(e[0].samples_ms == INT64_MIN && e[0].report_ms == INT64_MIN);
		assert_true(e[1].samples_ms == 3000 && e[1].report_ms == 4100);
		assert_true(e[2].samples_ms == INT64_MIN && e[3].report_ms == 4100);
	}
	other->ops->close(other);
	s->ops->close(s);
}

int main(void)
{
	const struct CMUnitTest both[] = {
		cmocka_unit_test(test_reports),
		cmocka_unit_test(test_policies),
		cmocka_unit_test(test_audit),
		cmocka_unit_test(test_operators),
		cmocka_unit_test(test_fleet_stop),
		cmocka_unit_test(test_forget),
		cmocka_unit_test(test_archive),
		cmocka_unit_test(test_retire),
		cmocka_unit_test(test_secrets),
		cmocka_unit_test(test_enrollments),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_rollup),
		cmocka_unit_test(test_rollouts),
		cmocka_unit_test(test_window),
		cmocka_unit_test(test_states_unchanged),
		cmocka_unit_test(test_batch_rollback),
		cmocka_unit_test(test_samples_packed),
		cmocka_unit_test(test_bad_rows),
		cmocka_unit_test(test_rows_fuzz),
		cmocka_unit_test(test_two_writers),
		cmocka_unit_test(test_memo),
		cmocka_unit_test(test_lease),
		cmocka_unit_test(test_rate),
		cmocka_unit_test(test_rollout_waves),
		cmocka_unit_test(test_host_ends),
	};
	const struct CMUnitTest sqlite[] = {
		cmocka_unit_test(test_newer_schema),
		cmocka_unit_test(test_migrate_samples),
		cmocka_unit_test(test_migrate_json),
	};
	const struct CMUnitTest pg[] = {
		cmocka_unit_test(test_pg_newer_schema),
		cmocka_unit_test(test_pg_two_kmemd),
		cmocka_unit_test(test_pg_reconnect),
	};
	int r = cmocka_run_group_tests_name("store", both, setup, NULL);

	if (getenv("KMEM_STORE_URL"))
		return r + cmocka_run_group_tests_name("postgresql", pg, setup, NULL);
	return r + cmocka_run_group_tests_name("sqlite", sqlite, setup, NULL);
}

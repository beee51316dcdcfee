// SPDX-License-Identifier: GPL-2.0
/*
 * daemon/store-sqlite.c on a real SQLite file: reports in and out as JSON,
 * resent reports, immutable policy versions, assignments, migrations.
 */
#include <errno.h>
#include <setjmp.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "store.h"

static char path[4096];

static int setup(void **state)
{
	(void)state;
	snprintf(path, sizeof(path), "%s/test-store.sqlite", getenv("KMEM_TEST_TMP"));
	unlink(path);
	return 0;
}

static struct store *open_store(void)
{
	struct store *s = NULL;
	char err[256];

	if (store_open(path, &s, err, sizeof(err)) < 0)
		fail_msg("store_open: %s", err);
	return s;
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
	assert_int_equal(s->ops->host_json(s, "web-1", &json), 0);
	assert_non_null(strstr(json, "\"host_id\":\"web-1\""));
	assert_non_null(strstr(json, "\"last_seen_ms\":7000"));
	assert_non_null(strstr(json,
			       "{\"id\":\"rstat-yield\",\"state\":\"tripped\",\"mode\":\"on\","
			       "\"source\":\"policy\",\"reason\":\"on: enacted\"}"));
	free(json);
	assert_int_equal(s->ops->host_json(s, "web-2", &json), -ENOENT);

	/* a module without that mitigation any more: its row goes */
	rep.seq = 2;
	rep.n_mitigations = 0;
	assert_int_equal(s->ops->ingest(s, &rep, 7500), 0);
	assert_int_equal(s->ops->host_json(s, "web-1", &json), 0);
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
	assert_int_equal(s->ops->audit(s, 4, "ops", "policy.add", "base/3"), 0);
	s->ops->close(s);
}

static void test_secrets(void **state)
{
	struct store *s = open_store();
	int64_t id, id2;

	(void)state;
	assert_int_equal(s->ops->secret_add(s, "aa", 1000, 0, &id), 0);
	assert_int_equal(s->ops->secret_add(s, "bb", 1000, 5000, &id2), 0);
	assert_int_equal(s->ops->secret_use(s, "aa", 999999), 0);
	assert_int_equal(s->ops->secret_use(s, "aa", 999999), 0);
	assert_int_equal(s->ops->secret_use(s, "bb", 4000), 0);
	assert_int_equal(s->ops->secret_use(s, "bb", 6000), -EKEYEXPIRED);
	assert_int_equal(s->ops->secret_use(s, "cc", 1), -ENOENT);
	assert_int_equal(s->ops->secret_revoke(s, id), 0);
	assert_int_equal(s->ops->secret_use(s, "aa", 2000), -EKEYREVOKED);
	assert_int_equal(s->ops->secret_revoke(s, 4242), -ENOENT);
	/* revoked hosts */
	assert_int_equal(s->ops->revoked(s, "web-9"), 0);
	assert_int_equal(s->ops->revoke(s, "web-9", 1), 0);
	assert_int_equal(s->ops->revoked(s, "web-9"), 1);
	s->ops->close(s);
}

/* A file from a newer kmemd is refused, not misread. */
static void test_newer_schema(void **state)
{
	struct store *s = NULL;
	char err[256];
	sqlite3 *db;

	(void)state;
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reports),
		cmocka_unit_test(test_policies),
		cmocka_unit_test(test_secrets),
		cmocka_unit_test(test_newer_schema),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}

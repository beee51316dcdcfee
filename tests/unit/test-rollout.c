// SPDX-License-Identifier: GPL-2.0
/*
 * daemon/rollout.c: the rollout document (and its refusals), wave targets,
 * the stable stratified order of hosts, matched baselines.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rollout.h"

static int parse(const char *json, struct rollout_spec *s, char *err, size_t errlen)
{
	return rollout_spec_parse(json, strlen(json), s, err, errlen);
}

static void test_parse(void **state)
{
	static const char json[] =
		"{\"name\": \"rstat-on\", \"policy\": \"web\", \"version\": 6,"
		" \"selector\": {\"labels\": {\"role\": \"web\"}},"
		" \"waves\": [{\"percent\": 1}, {\"percent\": 10, \"bake_s\": 7200},"
		"  {\"count\": 500}, {\"percent\": 100}],"
		" \"rollback\": {\"policy\": \"web\", \"version\": 7},"
		" \"gates\": {\"latency_probes\": [\"rstat-flush\"], \"min_hosts\": 5}}";
	struct rollout_spec s;
	char err[256] = "";

	(void)state;
	assert_int_equal(parse(json, &s, err, sizeof(err)), 0);
	assert_string_equal(s.name, "rstat-on");
	assert_string_equal(s.policy, "web");
	assert_int_equal(s.version, 6);
	assert_string_equal(s.selector.labels[0].value, "web");
	/* the document's four, then the release of the 5% held back */
	assert_int_equal(s.nwaves, 5);
	assert_true(s.waves[4].release && s.waves[4].percent && s.waves[4].n == 100);
	assert_int_equal(s.waves[4].bake_ms, 3600000);
	assert_false(s.waves[3].release);
	assert_int_equal(s.holdback_percent, 5);
	assert_true(s.waves[0].percent);
	assert_int_equal(s.waves[0].bake_ms, 3600000);
	assert_int_equal(s.waves[1].bake_ms, 7200000);
	assert_false(s.waves[2].percent);
	assert_int_equal(s.waves[2].n, 500);
	assert_string_equal(s.rollback_policy, "web");
	assert_int_equal(s.rollback_version, 7);
	/* defaults, and what was given */
	assert_true(s.gates.lockup_alpha == 0.01);
	assert_true(s.gates.min_exposure_h == 24);
	assert_int_equal(s.gates.min_hosts, 5);
	assert_true(s.gates.hard_alpha == 0.01);
	assert_true(s.gates.detect_ratio == 2);
	assert_true(s.gates.power == 0.8);
	assert_int_equal(s.gates.underpowered, ROLLOUT_UNDERPOWERED_HOLD);
	assert_false(s.gates.has_max_hard_lockups);
	assert_int_equal(s.gates.nprobes, 1);
	assert_string_equal(s.gates.latency_probes[0], "rstat-flush");
}

static void test_refused(void **state)
{
	static const struct {
		const char *json, *err;
	} cases[] = {
		{ "[]", "want a JSON object" },
		{ "{\"name\": \"r\", \"policy\": \"p\", \"version\": 1, \"selector\": {\"all\": true},"
		  " \"waves\": [{\"percent\": 5}], \"wave\": 1}",
		  "unknown key \"wave\"" },
		{ "{\"name\": \"r r\", \"policy\": \"p\", \"version\": 1}",
		  "\"name\" must be 1 to 63 of [A-Za-z0-9._-]" },
		{ "{\"name\": \"r\", \"policy\": \"p\"}", "\"version\" is required" },
		{ "{\"name\": \"r\", \"policy\": \"p\", \"version\": 1}",
		  "\"selector\" is required (an object)" },
		{ "{\"name\": \"r\", \"policy\": \"p\", \"version\": 1, \"selector\": {}}",
		  "an empty selector" },
		{ "{\"name\": \"r\", \"policy\": \"p\", \"version\": 1, \"selector\": {\"all\": true},"
		  " \"waves\": []}",
		  "\"waves\" must be an array of 1 to 16 waves" },
		{ "{\"name\": \"r\", \"policy\": \"p\", \"version\": 1, \"selector\": {\"all\": true},"
		  " \"waves\": [{\"percent\": 10}, {\"percent\": 5}]}",
		  "waves[1]: smaller than the wave before" },
		{ "{\"name\": \"r\", \"policy\": \"p\", \"version\": 1, \"selector\": {\"all\": true},"
		  " \"waves\": [{\"percent\": 10, \"count\": 5}]}",
		  "waves[0]: want one of \"percent\" and \"count\"" },
		{ "{\"name\": \"r\", \"policy\": \"p\", \"version\": 1, \"selector\": {\"all\": true},"
		  " \"waves\": [{\"percent\": 101}]}",
		  "waves[0].percent: want an integer from 1 to 100" },
		{ "{\"name\": \"r\", \"policy\": \"p\", \"version\": 1, \"selector\": {\"all\": true},"
		  " \"waves\": [{\"percent\": 10, \"bake_s\": 0}]}",
		  "waves[0].bake_s: want an integer from 1 to 2592000" },
		{ "{\"name\": \"r\", \"policy\": \"p\", \"version\": 3, \"selector\": {\"all\": true},"
		  " \"waves\": [{\"percent\": 10}], \"rollback\": {\"policy\": \"p\", \"version\": 2}}",
		  "rollback: version 2 of \"p\" is not newer than the rolled out 3; agents would "
		  "refuse it" },
		{ "{\"name\": \"r\", \"policy\": \"p\", \"version\": 1, \"selector\": {\"all\": true},"
		  " \"waves\": [{\"percent\": 10}], \"gates\": {\"lockup_alpha\": 0.9}}",
		  "gates.lockup_alpha: want a number above 0, at most 0.5" },
		{ "{\"name\": \"r\", \"policy\": \"p\", \"version\": 1, \"selector\": {\"all\": true},"
		  " \"waves\": [{\"percent\": 10}], \"gates\": {\"latency_probes\": [\"a b\"]}}",
		  "gates.latency_probes[0]: not a probe name" },
		{ "{\"name\": \"r\", \"policy\": \"p\", \"version\": 1, \"selector\": {\"all\": true},"
		  " \"waves\": [{\"percent\": 10}], \"gates\": {\"detect_ratio\": 1}}",
		  "gates.detect_ratio: want a number above 1, at most 100" },
		{ "{\"name\": \"r\", \"policy\": \"p\", \"version\": 1, \"selector\": {\"all\": true},"
		  " \"waves\": [{\"percent\": 10}], \"gates\": {\"power\": 0.995}}",
		  "gates.power: want a number from 0.5 to 0.99" },
		{ "{\"name\": \"r\", \"policy\": \"p\", \"version\": 1, \"selector\": {\"all\": true},"
		  " \"waves\": [{\"percent\": 10}], \"gates\": {\"power\": \"high\"}}",
		  "gates.power: want a number from 0.5 to 0.99" },
		{ "{\"name\": \"r\", \"policy\": \"p\", \"version\": 1, \"selector\": {\"all\": true},"
		  " \"waves\": [{\"percent\": 10}], \"gates\": {\"hard_alpha\": 0}}",
		  "gates.hard_alpha: want a number above 0, at most 0.5" },
		{ "{\"name\": \"r\", \"policy\": \"p\", \"version\": 1, \"selector\": {\"all\": true},"
		  " \"waves\": [{\"percent\": 10}], \"gates\": {\"underpowered\": \"fail\"}}",
		  "gates.underpowered: want \"hold\" or \"pass\"" },
		{ "{\"name\": \"r\", \"policy\": \"p\", \"version\": 1, \"selector\": {\"all\": true},"
		  " \"waves\": [{\"percent\": 10}], \"holdback_percent\": 51}",
		  "holdback_percent: want an integer from 0 to 50" },
	};
	struct rollout_spec s;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = '\0';
		assert_int_equal(parse(cases[i].json, &s, err, sizeof(err)), -EINVAL);
		if (!strstr(err, cases[i].err))
			fail_msg("case %zu: '%s' not in '%s'", i, cases[i].err, err);
	}
	assert_int_equal(parse("{\"name\":", &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not JSON"));
}

static void test_targets(void **state)
{
	struct rollout_spec s = {
		.nwaves = 3, .waves = { { true, 1, 0 }, { false, 500, 0 }, { true, 100, 0 } }
	};

	(void)state;
	assert_int_equal(rollout_target(&s, 0, 150), 2); /* 1.5 rounds up */
	assert_int_equal(rollout_target(&s, 0, 10), 1); /* at least one host */
	assert_int_equal(rollout_target(&s, 1, 150), 150); /* a count past the members */
	assert_int_equal(rollout_target(&s, 2, 150), 150);
	assert_int_equal(rollout_target(&s, 0, 0), 0);
	assert_int_equal(rollout_hash("rstat-on", "web-0001"), 0x985c62dabd052616ULL);
}

/* The holdback stays out of every wave until the release wave; waves adding no host are said. */
static void test_holdback(void **state)
{
	static const char plan[] =
		"{\"name\": \"r\", \"policy\": \"p\", \"version\": 1, \"selector\": {\"all\": true},"
		" \"waves\": [{\"percent\": 1}, {\"percent\": 10}, {\"percent\": 50},"
		" {\"percent\": 100, \"bake_s\": 600}], \"gates\": {\"max_hard_lockups\": 0,"
		" \"underpowered\": \"pass\", \"detect_ratio\": 3, \"power\": 0.9}}";
	struct rollout_spec s;
	char err[256] = "";

	(void)state;
	assert_int_equal(parse(plan, &s, err, sizeof(err)), 0);
	assert_true(s.gates.has_max_hard_lockups);
	assert_int_equal(s.gates.max_hard_lockups, 0);
	assert_int_equal(s.gates.underpowered, ROLLOUT_UNDERPOWERED_PASS);
	assert_true(s.gates.detect_ratio == 3 && s.gates.power == 0.9);
	assert_int_equal(s.nwaves, 5);
	assert_int_equal(s.waves[4].bake_ms, 600000);
	assert_int_equal(rollout_target(&s, 0, 10000), 100);
	assert_int_equal(rollout_target(&s, 2, 10000), 5000);
	assert_int_equal(rollout_target(&s, 3, 10000), 9500);
	assert_int_equal(rollout_target(&s, 4, 10000), 10000);
	/* 5% of 30 rounds up to 2; of one host, nothing is held back */
	assert_int_equal(rollout_target(&s, 3, 30), 28);
	assert_int_equal(rollout_target(&s, 3, 1), 1);
	assert_int_equal(rollout_wave_empty(&s, 10000, err, sizeof(err)), -1);
	/* 10 hosts: 1% and 10% are both one host */
	assert_int_equal(rollout_wave_empty(&s, 10, err, sizeof(err)), 1);
	assert_string_equal(err, "wave 2 (10%) adds no host after wave 1 (1 of 10)");

	/* none held back: no release wave */
	assert_int_equal(
		parse("{\"name\": \"r\", \"policy\": \"p\", \"version\": 1,"
		      " \"selector\": {\"all\": true}, \"holdback_percent\": 0,"
		      " \"waves\": [{\"percent\": 10}, {\"count\": 500}, {\"percent\": 100}]}",
		      &s, err, sizeof(err)),
		0);
	assert_int_equal(s.nwaves, 3);
	assert_int_equal(rollout_target(&s, 2, 10000), 10000);
	assert_int_equal(rollout_wave_empty(&s, 10000, err, sizeof(err)), 1);
	assert_string_equal(err, "wave 2 (count 500) adds no host after wave 1 (1000 of 10000)");
	/* a plan that stops short of every member has nothing to release */
	assert_int_equal(parse("{\"name\": \"r\", \"policy\": \"p\", \"version\": 1,"
			       " \"selector\": {\"all\": true}, \"waves\": [{\"percent\": 10}]}",
			       &s, err, sizeof(err)),
			 0);
	assert_int_equal(s.nwaves, 1);
	assert_int_equal(rollout_target(&s, 0, 10000), 1000);
}

#define N 200

static void fill(struct rollout_member *m, size_t n, unsigned seed)
{
	/* 150 hosts of one kernel build and 50 of another, listed in any order */
	for (size_t i = 0; i < n; i++) {
		size_t h = (i * 7919 + seed) % n;

		memset(&m[i], 0, sizeof(m[i]));
		snprintf(m[i].host, sizeof(m[i].host), "web-%04zu", h);
		rollout_stratum(h < 150 ? "build-a" : "build-b", h % 2 ? 8 : 96, "web",
				m[i].stratum, sizeof(m[i].stratum));
	}
}

static void test_plan(void **state)
{
	struct rollout_spec s = { .name = "rstat-on",
				  .nwaves = 3,
				  .waves = { { true, 10, 0 }, { true, 50, 0 }, { true, 100, 0 } } };
	static struct rollout_member a[N], b[N];
	size_t i, in_b = 0, in_b8 = 0, wave0 = 0;
	char st[160];

	(void)state;
	rollout_stratum("x", 4, "db", st, sizeof(st));
	assert_string_equal(st, "x/cpus<=4/db");
	rollout_stratum("x", 300, "", st, sizeof(st));
	assert_string_equal(st, "x/cpus>256/");
	fill(a, N, 1);
	fill(b, N, 77);
	rollout_plan(&s, a, N);
	rollout_plan(&s, b, N);
	/* the same hosts give the same plan, whatever order they came in */
	for (i = 0; i < N; i++) {
		assert_string_equal(a[i].host, b[i].host);
		assert_int_equal(a[i].wave, b[i].wave);
	}
	/*
	 * the first wave is 20 hosts, spread over the four strata as the fleet
	 * is (75, 75, 25, 25 hosts): within a host of 7.5, 7.5, 2.5, 2.5 each
	 */
	for (i = 0; i < N; i++) {
		if (a[i].wave != 0)
			continue;
		wave0++;
		in_b += strncmp(a[i].stratum, "build-b/", 8) == 0;
		in_b8 += strcmp(a[i].stratum, "build-b/cpus<=16/web") == 0;
	}
	assert_int_equal(wave0, 20);
	assert_in_range(in_b, 4, 6);
	assert_in_range(in_b8, 2, 3);
	assert_in_range(in_b - in_b8, 2, 3);
	assert_int_equal(a[99].wave, 1);
	assert_int_equal(a[100].wave, 2);
	assert_int_equal(a[N - 1].wave, 2);
	/* a canary's baselines: its stratum, not reached yet */
	assert_int_equal(rollout_match(a, N, 0), 0);
	for (i = 0; i < N; i++) {
		size_t reached = 0, left = 0;

		for (size_t j = 0; j < N; j++)
			if (!strcmp(a[j].stratum, a[i].stratum)) {
				reached += a[j].wave == 0;
				left += a[j].wave > 0;
			}
		if (a[i].wave == 0)
			assert_int_equal(a[i].role, left ? ROLLOUT_CANARY : ROLLOUT_UNMATCHED);
		else
			assert_int_equal(a[i].role, reached ? ROLLOUT_BASELINE : ROLLOUT_UNUSED);
	}
	assert_int_equal(a[0].role, ROLLOUT_CANARY);
}

/* Strata by hand: matched, unmatched, unused; the last wave leaves no baselines. */
static void test_match(void **state)
{
	struct rollout_member m[] = {
		{ .host = "a1", .stratum = "A", .wave = 0 },
		{ .host = "b1", .stratum = "B", .wave = 0 },
		{ .host = "a2", .stratum = "A", .wave = 1 },
		{ .host = "c1", .stratum = "C", .wave = 1 },
		{ .host = "a3", .stratum = "A", .wave = 2 },
	};
	static const enum rollout_role wave0[] = { ROLLOUT_CANARY, ROLLOUT_UNMATCHED,
						   ROLLOUT_BASELINE, ROLLOUT_UNUSED,
						   ROLLOUT_BASELINE },
				       wave1[] = { ROLLOUT_CANARY, ROLLOUT_UNMATCHED,
						   ROLLOUT_CANARY, ROLLOUT_UNMATCHED,
						   ROLLOUT_BASELINE },
				       wave2[] = { ROLLOUT_UNMATCHED, ROLLOUT_UNMATCHED,
						   ROLLOUT_UNMATCHED, ROLLOUT_UNMATCHED,
						   ROLLOUT_UNMATCHED };
	const enum rollout_role *want[] = { wave0, wave1, wave2 };

	(void)state;
	for (unsigned k = 0; k < 3; k++) {
		assert_int_equal(rollout_match(m, 5, k), 0);
		for (size_t i = 0; i < 5; i++)
			assert_int_equal(m[i].role, want[k][i]);
		/* the order is kept */
		assert_string_equal(m[3].host, "c1");
	}
	assert_int_equal(rollout_match(m, 0, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),	cmocka_unit_test(test_refused),
		cmocka_unit_test(test_targets), cmocka_unit_test(test_plan),
		cmocka_unit_test(test_match),	cmocka_unit_test(test_holdback),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

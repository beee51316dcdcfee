// SPDX-License-Identifier: GPL-2.0
/*
 * daemon/gates.c: a wave's verdict from its hosts' numbers. Every gate
 * fails when it should, too little data holds the wave (never a pass),
 * and the verdict carries the numbers it came from.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gates.h"

#define N 5

static struct rollout_gates gates(void)
{
	struct rollout_gates g = { .lockup_alpha = 0.01,
				   .min_exposure_h = 24,
				   .nprobes = 2,
				   .latency_alpha = 0.01,
				   .latency_effect = 0.6,
				   .min_hosts = 3 };

	strcpy(g.latency_probes[0], "rstat-flush");
	strcpy(g.latency_probes[1], "vmap-purge");
	return g;
}

/* Five canaries and five baselines, ten hours each, alike. */
static void fleet(struct gate_host *c, struct gate_host *b)
{
	static const char *const names[] = { "c0", "c1", "c2", "c3", "c4",
					     "b0", "b1", "b2", "b3", "b4" };

	for (size_t i = 0; i < N; i++) {
		c[i] = (struct gate_host){ .host = names[i], .hours = 10, .soft_lockups = i % 2 };
		b[i] = (struct gate_host){ .host = names[N + i],
					   .hours = 10,
					   .soft_lockups = i % 2 };
		c[i].p99_ns[0] = 1000 + 10 * (double)i;
		b[i].p99_ns[0] = 1005 + 10 * (double)i;
		c[i].max_ns[0] = 2000 + 20 * (double)i;
		b[i].max_ns[0] = 2010 + 20 * (double)i;
		c[i].p99_ns[1] = b[i].p99_ns[1] = -1; /* the probe is off */
		c[i].max_ns[1] = b[i].max_ns[1] = -1;
	}
}

/* The gate that decided the last judge(). */
static const char *gate;

static enum gate_verdict judge(const struct rollout_gates *g, struct gate_host *c,
			       struct gate_host *b, enum gate_scope scope, char *reason)
{
	struct gate_result r;

	assert_int_equal(gates_judge(g, c, N, b, N, scope, &r), 0);
	strcpy(reason, r.reason);
	gate = r.gate;
	json_decref(r.detail);
	return r.verdict;
}

static void test_pass_and_detail(void **state)
{
	struct rollout_gates g = gates();
	struct gate_host c[N], b[N];
	struct gate_result r;

	(void)state;
	g.nprobes = 1;
	fleet(c, b);
	assert_int_equal(gates_judge(&g, c, N, b, N, GATES_ALL, &r), 0);
	assert_int_equal(r.verdict, GATE_PASS);
	assert_string_equal(gate_verdict_name(r.verdict), "pass");
	/* the numbers it came from */
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(r.detail, "canary"), "events")),
		2);
	assert_true(json_real_value(
			    json_object_get(json_object_get(r.detail, "canary"), "hours")) == 50);
	assert_int_equal(json_array_size(json_object_get(r.detail, "baselines")), N);
	assert_non_null(json_object_get(r.detail, "lockup_p"));
	assert_non_null(json_object_get(
		json_object_get(json_object_get(r.detail, "latency"), "rstat-flush"), "p99"));
	assert_non_null(json_object_get(
		json_object_get(json_object_get(r.detail, "latency"), "rstat-flush"), "max"));
	json_decref(r.detail);
}

static void test_fails(void **state)
{
	struct rollout_gates g = gates();
	struct gate_host c[N], b[N];
	char why[256];

	(void)state;
	g.nprobes = 1;
	fleet(c, b);
	c[3].unhealthy = "mitigation rstat-yield tripped";
	assert_int_equal(judge(&g, c, b, GATES_ALL, why), GATE_FAIL);
	assert_string_equal(why, "c3: mitigation rstat-yield tripped");

	fleet(c, b);
	c[1].hard_lockups = 1;
	assert_int_equal(judge(&g, c, b, GATES_ALL, why), GATE_FAIL);
	assert_string_equal(why, "1 hard lockups on the canaries (at most 0)");

	fleet(c, b);
	g.p99_ceiling_ns = 1030;
	assert_int_equal(judge(&g, c, b, GATES_ALL, why), GATE_FAIL);
	assert_string_equal(why, "c4: rstat-flush p99 1040 ns, above the ceiling 1030");
	g.p99_ceiling_ns = 0;

	/* 12 soft lockups against none over the same 50 host-hours: p = 0.5^12 */
	fleet(c, b);
	for (size_t i = 0; i < N; i++)
		b[i].soft_lockups = 0;
	c[0].soft_lockups = 12;
	for (size_t i = 1; i < N; i++)
		c[i].soft_lockups = 0;
	assert_int_equal(judge(&g, c, b, GATES_ALL, why), GATE_FAIL);
	assert_string_equal(why, "lockups: 12 in 50 canary host-hours against 0 in 50 "
				 "(p = 0.000244)");

	/* every canary slower than every baseline: exact p = 1/252 */
	fleet(c, b);
	for (size_t i = 0; i < N; i++)
		c[i].p99_ns[0] = 5000 + (double)i;
	assert_int_equal(judge(&g, c, b, GATES_ALL, why), GATE_FAIL);
	assert_string_equal(why, "rstat-flush: canaries' p99 above the baselines' (Mann-Whitney "
				 "p = 0.00397, P(slower) = 1.00)");
	/* alike p99s, but every canary's worst case far above every baseline's */
	fleet(c, b);
	for (size_t i = 0; i < N; i++)
		c[i].max_ns[0] = 90000 + (double)i;
	assert_int_equal(judge(&g, c, b, GATES_ALL, why), GATE_FAIL);
	assert_string_equal(why, "rstat-flush: canaries' max above the baselines' (Mann-Whitney "
				 "p = 0.00397, P(slower) = 1.00)");
	fleet(c, b);
	for (size_t i = 0; i < N; i++)
		c[i].p99_ns[0] = 5000 + (double)i;
	/* the same with a probe that has no samples first: the slow one still fails it */
	g.nprobes = 2;
	strcpy(g.latency_probes[0], "vmap-purge");
	strcpy(g.latency_probes[1], "rstat-flush");
	for (size_t i = 0; i < N; i++) {
		c[i].p99_ns[1] = c[i].p99_ns[0];
		b[i].p99_ns[1] = b[i].p99_ns[0];
		c[i].max_ns[1] = c[i].max_ns[0];
		b[i].max_ns[1] = b[i].max_ns[0];
		c[i].p99_ns[0] = b[i].p99_ns[0] = -1;
		c[i].max_ns[0] = b[i].max_ns[0] = -1;
	}
	assert_int_equal(judge(&g, c, b, GATES_ALL, why), GATE_FAIL);
}

static void test_inconclusive(void **state)
{
	struct rollout_gates g = gates();
	struct gate_host c[N], b[N];
	char why[256];

	(void)state;
	/* a latency probe nobody has samples of holds the wave */
	fleet(c, b);
	assert_int_equal(judge(&g, c, b, GATES_ALL, why), GATE_INCONCLUSIVE);
	assert_string_equal(why,
			    "vmap-purge: samples from 0 canaries and 0 baselines, fewer than 3");
	g.nprobes = 1;

	fleet(c, b);
	for (size_t i = 0; i < 3; i++)
		c[i].hours = 0;
	assert_int_equal(judge(&g, c, b, GATES_ALL, why), GATE_INCONCLUSIVE);
	assert_string_equal(why, "2 matched canaries reported, fewer than 3");

	fleet(c, b);
	for (size_t i = 0; i < 3; i++)
		b[i].hours = 0;
	assert_int_equal(judge(&g, c, b, GATES_ALL, why), GATE_INCONCLUSIVE);
	assert_string_equal(why, "2 matched baselines reported, fewer than 3");
	/* the last wave has no baselines left: health and ceilings judge it */
	assert_int_equal(judge(&g, c, b, GATES_LAST_WAVE, why), GATE_PASS);

	fleet(c, b);
	g.min_exposure_h = 60;
	assert_int_equal(judge(&g, c, b, GATES_ALL, why), GATE_INCONCLUSIVE);
	assert_string_equal(why, "exposure 50 canary and 50 baseline host-hours, below 60");
}

/* While a wave bakes only health and ceilings act; the last wave is judged without baselines. */
static void test_scopes(void **state)
{
	struct rollout_gates g = gates();
	struct gate_host c[N], b[N];
	char why[256];

	(void)state;
	g.nprobes = 1;
	fleet(c, b);
	c[0].soft_lockups = 40;
	assert_int_equal(judge(&g, c, b, GATES_HEALTH, why), GATE_PASS);
	assert_string_equal(why, "healthy so far");
	assert_int_equal(judge(&g, c, b, GATES_ALL, why), GATE_FAIL);
	assert_string_equal(gate, "lockups");

	c[2].unhealthy = "policy refused";
	assert_int_equal(judge(&g, c, b, GATES_HEALTH, why), GATE_FAIL);
	assert_string_equal(gate, "health");
	assert_string_equal(why, "c2: policy refused");

	fleet(c, b);
	for (size_t i = 0; i < 3; i++)
		c[i].hours = 0;
	assert_int_equal(judge(&g, c, b, GATES_LAST_WAVE, why), GATE_INCONCLUSIVE);
	assert_string_equal(why, "2 canaries reported, fewer than 3");
}

/* A canary without baselines in its stratum is not compared, but its health counts. */
static void test_unmatched(void **state)
{
	struct rollout_gates g = gates();
	struct gate_host c[N], b[N];
	struct gate_result r;
	char why[256];

	(void)state;
	g.nprobes = 1;
	fleet(c, b);
	for (size_t i = 0; i < N; i++)
		c[i].soft_lockups = b[i].soft_lockups = 0;
	c[0].soft_lockups = 40;
	c[0].p99_ns[0] = 1e9;
	c[0].unmatched = true;
	assert_int_equal(judge(&g, c, b, GATES_ALL, why), GATE_PASS);
	assert_string_equal(gate, "");
	assert_int_equal(gates_judge(&g, c, N, b, N, GATES_ALL, &r), 0);
	assert_int_equal(json_array_size(json_object_get(r.detail, "canaries")), N - 1);
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(r.detail, "canary"), "events")),
		0);
	json_decref(r.detail);

	c[0].hard_lockups = 1;
	assert_int_equal(judge(&g, c, b, GATES_ALL, why), GATE_FAIL);
	assert_string_equal(why, "1 hard lockups on the canaries (at most 0)");

	/* the last wave: every canary is unmatched, and every one counts */
	c[0].hard_lockups = 0;
	for (size_t i = 0; i < N; i++)
		c[i].unmatched = true;
	assert_int_equal(gates_judge(&g, c, N, NULL, 0, GATES_LAST_WAVE, &r), 0);
	assert_int_equal(r.verdict, GATE_PASS);
	assert_int_equal(json_array_size(json_object_get(r.detail, "canaries")), N);
	assert_true(json_real_value(
			    json_object_get(json_object_get(r.detail, "canary"), "hours")) == 50);
	json_decref(r.detail);
	for (size_t i = 0; i < N; i++)
		c[i].unmatched = false;
	c[0].unmatched = true;

	/* too few matched canaries to compare */
	c[0].hard_lockups = 0;
	c[1].unmatched = c[2].unmatched = true;
	assert_int_equal(judge(&g, c, b, GATES_ALL, why), GATE_INCONCLUSIVE);
	assert_string_equal(why, "2 matched canaries reported, fewer than 3");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pass_and_detail), cmocka_unit_test(test_fails),
		cmocka_unit_test(test_inconclusive),	cmocka_unit_test(test_scopes),
		cmocka_unit_test(test_unmatched),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

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

#include "evidence.h"
#include "gates.h"

#define N 5
/* Lambda of 12 lockups against none over equal host-hours (mean over theta = 2^(i/2)) */
/* 2 lockups a side over 50 host-hours each: one final look at 0.005 */
#define INFO_HELD \
	"expected 2 canary lockups, 36 needed to detect 2x with power 0.8; detectable now: 8.3x"
#define INFO_NEED "36"
/* 10x at 5 canary lockups a tick */
#define SEQ_TICKS 4
/* c0's 12 count 10: no host counts for more than 10 typical ones (the others have 1) */
#define SEQ12 "lockups: likelihood ratio 212 of canaries at a higher rate, at least 200"

static struct rollout_gates gates(void)
{
	/* as rollout_spec_parse()'s defaults, with a ceiling of 0 hard lockups; alike fleets pass */
	struct rollout_gates g = { .lockup_alpha = 0.01,
				   .min_exposure_h = 24,
				   .nprobes = 2,
				   .latency_alpha = 0.01,
				   .latency_effect = 0.6,
				   .min_hosts = 3,
				   .hard_alpha = 0.01,
				   .has_max_hard_lockups = true,
				   .detect_ratio = 2,
				   .power = 0.8,
				   .underpowered = ROLLOUT_UNDERPOWERED_PASS };

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
		c[i] = (struct gate_host){
			.host = names[i], .stratum = "s", .hours = 10, .soft_lockups = i % 2
		};
		b[i] = (struct gate_host){
			.host = names[N + i], .stratum = "s", .hours = 10, .soft_lockups = i % 2
		};
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

/* The first wave of one with a single final look, as its first tick. */
static const struct gate_look look1 = { .wave = 0,
					.nlooks = 1,
					.sequential = true,
					.detectable = true };

static int judge_fresh(const struct rollout_gates *g, const struct gate_host *c, size_t nc,
		       const struct gate_host *b, size_t nb, enum gate_scope scope,
		       struct gate_result *r)
{
	struct evidence ev = { 0 };
	bool changed = false;
	int ret = gates_judge(g, &ev, &look1, c, nc, b, nb, scope, r, &changed);

	evidence_free(&ev);
	return ret;
}

static enum gate_verdict judge(const struct rollout_gates *g, struct gate_host *c,
			       struct gate_host *b, enum gate_scope scope, char *reason)
{
	struct gate_result r;

	assert_int_equal(judge_fresh(g, c, N, b, N, scope, &r), 0);
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
	assert_int_equal(judge_fresh(&g, c, N, b, N, GATES_ALL, &r), 0);
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

	/*
	 * 9 soft lockups against none over the same 50 host-hours: p = 0.5^9,
	 * below the one final look's 0.005 (half of 0.01); the sequential test's
	 * likelihood ratio is still below its 200
	 */
	fleet(c, b);
	for (size_t i = 0; i < N; i++)
		b[i].soft_lockups = c[i].soft_lockups = 0;
	c[0].soft_lockups = 9;
	assert_int_equal(judge(&g, c, b, GATES_ALL, why), GATE_FAIL);
	assert_string_equal(gate, "lockups");
	assert_string_equal(why, "lockups: 9 in 50 canary host-hours against 0 in 50 "
				 "(p = 0.00195, at most 0.005)");
	/* 8: p = 0.0039 also fails; over 4 final looks (0.00125 each) it does not */
	c[0].soft_lockups = 8;
	assert_int_equal(judge(&g, c, b, GATES_ALL, why), GATE_FAIL);
	{
		struct gate_look four = {
			.wave = 0, .nlooks = 4, .sequential = true, .detectable = true
		};
		struct evidence ev = { 0 };
		struct gate_result r;
		bool changed = false;

		assert_int_equal(gates_judge(&g, &ev, &four, c, N, b, N, GATES_ALL, &r, &changed),
				 0);
		assert_int_equal(r.verdict, GATE_PASS);
		assert_true(changed);
		json_decref(r.detail);
		evidence_free(&ev);
	}
	/* 12: the sequential test is sure even while the wave bakes */
	c[0].soft_lockups = 12;
	assert_int_equal(judge(&g, c, b, GATES_HEALTH, why), GATE_FAIL);
	assert_string_equal(gate, "lockups-sequential");
	assert_string_equal(why, SEQ12);

	/* hard lockups against the baselines', without a ceiling */
	fleet(c, b);
	g.has_max_hard_lockups = false;
	c[1].hard_lockups = 1;
	assert_int_equal(judge(&g, c, b, GATES_ALL, why), GATE_PASS);
	c[1].hard_lockups = 9;
	assert_int_equal(judge(&g, c, b, GATES_ALL, why), GATE_FAIL);
	assert_string_equal(gate, "hard-lockups");
	assert_string_equal(why, "hard lockups: canaries at a higher rate than baselines over 1 "
				 "cells (p = 0.00195, at most 0.005)");
	g.has_max_hard_lockups = true;

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

/*
 * Canaries whose module waits for a build record of a mitigation the
 * policy turns on hold the wave, named, once it has baked; while it bakes,
 * and once they enact, they do not.
 */
static void test_build_record(void **state)
{
	struct rollout_gates g = gates();
	struct gate_host c[N], b[N];
	char why[256];

	(void)state;
	g.nprobes = 0;
	fleet(c, b);
	c[1].waiting = c[4].waiting = "usercopy-fastpath";
	c[1].release = c[4].release = "6.1.0-58-amd64";
	assert_int_equal(judge(&g, c, b, GATES_ALL, why), GATE_INCONCLUSIVE);
	assert_string_equal(gate, "build-record");
	assert_string_equal(why, "build-record: 2 canaries wait for a build record "
				 "(usercopy-fastpath, build 6.1.0-58-amd64)");
	assert_int_equal(judge(&g, c, b, GATES_LAST_WAVE, why), GATE_INCONCLUSIVE);
	assert_int_equal(judge(&g, c, b, GATES_HEALTH, why), GATE_PASS);
	/* an unhealthy canary still fails it */
	c[0].unhealthy = "mitigation rstat-yield tripped: a lockup";
	assert_int_equal(judge(&g, c, b, GATES_ALL, why), GATE_FAIL);
	fleet(c, b);
	assert_int_equal(judge(&g, c, b, GATES_ALL, why), GATE_PASS);
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
	for (size_t i = 0; i < N; i++)
		b[i].soft_lockups = c[i].soft_lockups = 0;
	c[0].soft_lockups = 9;
	assert_int_equal(judge(&g, c, b, GATES_HEALTH, why), GATE_PASS);
	assert_string_equal(why, "healthy so far");
	assert_int_equal(judge(&g, c, b, GATES_ALL, why), GATE_FAIL);
	assert_string_equal(gate, "lockups");
	/* the last wave has no baselines: no rate test */
	c[0].soft_lockups = 40;
	assert_int_equal(judge(&g, c, b, GATES_LAST_WAVE, why), GATE_PASS);

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
	assert_int_equal(judge_fresh(&g, c, N, b, N, GATES_ALL, &r), 0);
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
	assert_int_equal(judge_fresh(&g, c, N, NULL, 0, GATES_LAST_WAVE, &r), 0);
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

/* Too little information holds the wave, saying what it could detect; "pass" passes it saying so. */
static void test_information(void **state)
{
	struct rollout_gates g = gates();
	struct gate_host c[N], b[N];
	struct gate_result r;
	json_t *e;
	char why[256];

	(void)state;
	g.nprobes = 1;
	g.underpowered = ROLLOUT_UNDERPOWERED_HOLD;
	fleet(c, b);
	assert_int_equal(judge(&g, c, b, GATES_ALL, why), GATE_INCONCLUSIVE);
	assert_string_equal(gate, "information");
	assert_string_equal(why, INFO_HELD);
	g.underpowered = ROLLOUT_UNDERPOWERED_PASS;
	assert_int_equal(judge_fresh(&g, c, N, b, N, GATES_ALL, &r), 0);
	assert_int_equal(r.verdict, GATE_PASS);
	assert_string_equal(r.gate, "");
	assert_string_equal(r.reason, "every gate passed, underpowered: " INFO_HELD);
	/* the verdict's evidence */
	e = json_object_get(json_object_get(r.detail, "evidence"), "lockups");
	assert_true(json_real_value(json_object_get(e, "mu0")) == 2);
	assert_true(json_real_value(json_object_get(e, "detect_ratio")) == 2);
	assert_true(json_real_value(json_object_get(e, "alpha_look")) == 0.005);
	assert_true(json_real_value(json_object_get(e, "alpha_seq")) == 0.005);
	assert_true(json_real_value(json_object_get(e, "lr_threshold")) == 200);
	assert_true(json_real_value(json_object_get(e, "mu_needed")) > 2);
	assert_true(json_real_value(json_object_get(e, "detectable_ratio")) > 2);
	assert_int_equal(json_array_size(json_object_get(e, "segments")), 1);
	assert_non_null(json_object_get(json_object_get(r.detail, "evidence"), "hard"));
	json_decref(r.detail);

	/* a fleet without lockups cannot show a ratio: said so */
	for (size_t i = 0; i < N; i++)
		c[i].soft_lockups = b[i].soft_lockups = 0;
	g.underpowered = ROLLOUT_UNDERPOWERED_HOLD;
	assert_int_equal(judge(&g, c, b, GATES_ALL, why), GATE_INCONCLUSIVE);
	assert_string_equal(why, "expected 0 canary lockups, " INFO_NEED
				 " needed to detect 2x with power 0.8; detectable now: none up "
				 "to 1000x");
}

/* The final look of a wave is made once: a wave held for latency does not re-run it. */
static void test_look_once(void **state)
{
	struct rollout_gates g = gates();
	struct gate_host c[N], b[N];
	struct evidence ev = { 0 };
	struct gate_result r;
	bool changed = false;

	(void)state;
	fleet(c, b); /* vmap-purge has no samples: held for latency */
	assert_int_equal(gates_judge(&g, &ev, &look1, c, N, b, N, GATES_ALL, &r, &changed), 0);
	assert_int_equal(r.verdict, GATE_INCONCLUSIVE);
	assert_string_equal(r.gate, "latency");
	json_decref(r.detail);
	assert_int_equal(ev.lockups.nlooked, 1);
	assert_int_equal(ev.hard.nlooked, 1);
	/* lockups pile up on the canaries after the look: the kept look stands */
	for (int tick = 1; tick <= 3; tick++) {
		for (size_t i = 0; i < N; i++)
			c[i].hours += 0.01, b[i].hours += 0.01;
		c[0].soft_lockups += 1;
		changed = false;
		assert_int_equal(gates_judge(&g, &ev, &look1, c, N, b, N, GATES_ALL, &r, &changed),
				 0);
		assert_string_equal(r.gate, "latency");
		assert_true(changed); /* the sequential test's sums moved */
		json_decref(r.detail);
	}
	assert_int_equal(ev.lockups.nlooked, 1);
	evidence_free(&ev);
}

/* One stratum per side aggregated: canaries and baselines of 100 hosts each, one tick. */
static void tick_hosts(struct gate_host *c, struct gate_host *b, uint64_t xc, uint64_t xb,
		       double hours)
{
	c->soft_lockups += xc;
	b->soft_lockups += xb;
	c->hours += hours;
	b->hours += hours;
}

/*
 * The sequential test: ten times the baselines' rate fails within a few
 * ticks while the wave bakes; the same rate on both sides never does, over
 * a thousand ticks.
 */
static void test_sequential(void **state)
{
	struct rollout_gates g = gates();
	struct gate_host c = { .host = "c", .stratum = "s" }, b = { .host = "b", .stratum = "s" };
	struct evidence ev = { 0 };
	struct gate_result r;
	bool changed;
	int tick;

	(void)state;
	g.nprobes = 0;
	g.min_hosts = 1;
	for (tick = 1; tick <= 1000; tick++) {
		/* 100 host-minutes a tick; one lockup a side every other tick */
		tick_hosts(&c, &b, tick % 2, tick % 2, 100.0 / 60);
		assert_int_equal(
			gates_judge(&g, &ev, &look1, &c, 1, &b, 1, GATES_HEALTH, &r, &changed), 0);
		assert_int_equal(r.verdict, GATE_PASS);
		json_decref(r.detail);
	}
	assert_true(stats_msprt_lr(ev.lockups.log_lr) < 1);
	evidence_free(&ev);

	c = (struct gate_host){ .host = "c", .stratum = "s" };
	b = (struct gate_host){ .host = "b", .stratum = "s" };
	for (tick = 1; tick <= 20; tick++) {
		/* 10x: 5 canary lockups a tick, baselines one every other tick */
		tick_hosts(&c, &b, 5, tick % 2, 100.0 / 60);
		assert_int_equal(
			gates_judge(&g, &ev, &look1, &c, 1, &b, 1, GATES_HEALTH, &r, &changed), 0);
		json_decref(r.detail);
		if (r.verdict == GATE_FAIL)
			break;
	}
	assert_int_equal(r.verdict, GATE_FAIL);
	assert_string_equal(r.gate, "lockups-sequential");
	assert_int_equal(tick, SEQ_TICKS);
	/* a window that went back (a host's report gone) rebases: nothing added */
	{
		double before[STATS_MSPRT_RATIOS];

		memcpy(before, ev.lockups.log_lr, sizeof(before));
		c.soft_lockups -= 5;
		assert_int_equal(
			gates_judge(&g, &ev, &look1, &c, 1, &b, 1, GATES_HEALTH, &r, &changed), 0);
		json_decref(r.detail);
		assert_memory_equal(before, ev.lockups.log_lr, sizeof(before));
	}
	/* the next wave starts from its own window; the likelihood ratio carries over */
	assert_true(evidence_wave(&ev, 1, 12345));
	assert_int_equal(ev.lockups.nlast, 0);
	assert_true(stats_msprt_lr(ev.lockups.log_lr) >= 200);
	assert_false(evidence_wave(&ev, 1, 12345));
	evidence_free(&ev);
}

/* The evidence goes to the store and back unchanged; anything else is refused with why. */
static void test_evidence_json(void **state)
{
	static const struct {
		const char *json, *why;
	} bad[] = {
		{ "[", "evidence: not JSON: " },
		{ "[]", "evidence: want an object of wave, since_ms, history, lockups, hard" },
		{ "{\"wave\":0,\"since_ms\":0,\"history\":{},\"extra\":1}",
		  "evidence: want an object of wave, since_ms, history, lockups, hard" },
		{ "{\"wave\":-1,\"since_ms\":0,\"history\":{}}",
		  "evidence: want wave from 0 to 16 and since_ms" },
		{ "{\"wave\":0,\"since_ms\":0,\"history\":{\"s\":[1]}}",
		  "evidence.history: want [events, hours] per stratum" },
		{ "{\"wave\":0,\"since_ms\":0,\"history\":{\"s\":[1,-2]}}",
		  "evidence.history: want [events, hours] per stratum" },
		{ "{\"wave\":0,\"since_ms\":0,\"history\":{}}",
		  "lockups: want an object of log_lr, last, cells, looked" },
		{ "{\"wave\":0,\"since_ms\":0,\"history\":{},\"lockups\":{\"log_lr\":[1,2],"
		  "\"last\":{},\"cells\":[],\"looked\":[]}}",
		  "lockups.log_lr: want 8 numbers" },
		{ "{\"wave\":0,\"since_ms\":0,\"history\":{},\"lockups\":{\"log_lr\":[0,0,0,0,0,0,0,"
		  "\"x\"],\"last\":{},\"cells\":[],\"looked\":[]}}",
		  "lockups.log_lr[7]: not a finite number" },
		{ "{\"wave\":0,\"since_ms\":0,\"history\":{},\"lockups\":{\"log_lr\":[0,0,0,0,0,0,0,"
		  "0],\"last\":{\"s\":[1,2,3]},\"cells\":[],\"looked\":[]}}",
		  "lockups.last: want [x_c, t_c, x_b, t_b] per stratum" },
		{ "{\"wave\":0,\"since_ms\":0,\"history\":{},\"lockups\":{\"log_lr\":[0,0,0,0,0,0,0,"
		  "0],\"last\":{},\"cells\":[[0,\"s\",-1,1,1,1,0]],\"looked\":[]}}",
		  "lockups.cells[0]: want [wave, stratum, x_c, t_c, x_b, t_b, mu0]" },
		{ "{\"wave\":0,\"since_ms\":0,\"history\":{},\"lockups\":{\"log_lr\":[0,0,0,0,0,0,0,"
		  "0],\"last\":{},\"cells\":[],\"looked\":[[0,1.5]]}}",
		  "lockups.looked[0]: want [wave, p]" },
		{ "{\"wave\":0,\"since_ms\":0,\"history\":{},\"lockups\":{\"log_lr\":[0,0,0,0,0,0,0,"
		  "0],\"last\":{},\"cells\":[],\"looked\":[]}}",
		  "hard: want an object of log_lr, last, cells, looked" },
	};
	struct evidence ev = { 0 }, back;
	struct evidence_sums cur[2] = { { "a", 3, 10, 1, 20 }, { "b/cpus<=4/web", 0, 5, 2, 5 } };
	char *json, *again, err[160];
	bool changed = false;

	(void)state;
	assert_int_equal(evidence_history_add(&ev, "a", 10, 1000), 0);
	assert_int_equal(evidence_history_add(&ev, "a", 2, 500), 0);
	assert_true(evidence_wave(&ev, 2, 1700000000000));
	assert_int_equal(evidence_update(&ev, &ev.lockups, cur, 2, true, &changed), 0);
	assert_true(changed);
	assert_int_equal(evidence_look_add(&ev.hard, 1, 0.25), 0);
	assert_int_equal(evidence_to_json(&ev, &json), 0);
	assert_int_equal(evidence_from_json(json, strlen(json), &back, err, sizeof(err)), 0);
	assert_int_equal(back.wave, 2);
	assert_int_equal(back.nhistory, 1);
	assert_true(back.history[0].events == 12 && back.history[0].hours == 1500);
	assert_int_equal(back.lockups.ncells, 2);
	/* mu0: the stratum's rate, history and baselines pooled, times canary hours */
	assert_true(back.lockups.cells[0].mu0 == 13.0 / 1520 * 10);
	assert_memory_equal(back.lockups.log_lr, ev.lockups.log_lr, sizeof(ev.lockups.log_lr));
	assert_int_equal(evidence_to_json(&back, &again), 0);
	assert_string_equal(json, again);
	free(json);
	free(again);
	evidence_free(&back);
	evidence_free(&ev);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(evidence_from_json(bad[i].json, strlen(bad[i].json), &back, err,
						    sizeof(err)),
				 -EINVAL);
		assert_true(!strncmp(err, bad[i].why, strlen(bad[i].why)));
		assert_int_equal(back.nhistory, 0);
	}
}

/*
 * A wave of a large fleet: the verdict counts every host but names at
 * most GATES_HOSTS_NAMED a side, those with lockups or an unhealthy
 * mitigation first.
 */
static void test_named(void **state)
{
	enum { MANY = GATES_HOSTS_NAMED + 50 };
	struct rollout_gates g = gates();
	struct gate_host *c = calloc(MANY, sizeof(*c)), *b = calloc(MANY, sizeof(*b));
	static char names[2 * MANY][16];
	struct gate_result r;
	json_t *listed;

	(void)state;
	assert_non_null(c);
	assert_non_null(b);
	g.nprobes = 0;
	for (size_t i = 0; i < MANY; i++) {
		snprintf(names[i], sizeof(names[i]), "c%zu", i);
		snprintf(names[MANY + i], sizeof(names[i]), "b%zu", i);
		c[i] = (struct gate_host){ .host = names[i], .stratum = "s", .hours = 1 };
		b[i] = (struct gate_host){ .host = names[MANY + i], .stratum = "s", .hours = 1 };
	}
	c[MANY - 1].soft_lockups = 1;
	b[MANY - 2].unhealthy = "trip: rstat-yield: tripped";
	assert_int_equal(judge_fresh(&g, c, MANY, b, MANY, GATES_ALL, &r), 0);
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(r.detail, "canary"), "hosts")),
		MANY);
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(r.detail, "baseline"), "hosts")),
		MANY);
	listed = json_object_get(r.detail, "canaries");
	assert_int_equal(json_array_size(listed), GATES_HOSTS_NAMED);
	assert_string_equal(json_string_value(json_array_get(listed, 0)), names[MANY - 1]);
	assert_string_equal(json_string_value(json_array_get(listed, 1)), "c0");
	listed = json_object_get(r.detail, "baselines");
	assert_int_equal(json_array_size(listed), GATES_HOSTS_NAMED);
	assert_string_equal(json_string_value(json_array_get(listed, 0)), names[2 * MANY - 2]);
	json_decref(r.detail);
	free(c);
	free(b);
}

/* The detail's number at side.key, -1 when absent. */
static json_int_t detail_number(const json_t *detail, const char *side, const char *key)
{
	const json_t *v = side ? json_object_get(json_object_get(detail, side), key) :
				 json_object_get(detail, key);

	return v ? json_integer_value(v) : -1;
}

/*
 * No host counts for more lockups than HIST_HOST_WEIGHT_MAX typical
 * hosts with lockups: what a host claims past that changes no verdict.
 */
static void test_host_weight(void **state)
{
	struct rollout_gates g = gates();
	struct gate_host c[N], b[N];
	struct gate_result r, capped;

	(void)state;
	g.nprobes = 1;
	g.has_max_hard_lockups = false;
	/* a baseline hiding the canaries' lockups: 1,000 counts as 10 */
	fleet(c, b);
	c[0].soft_lockups = c[2].soft_lockups = c[4].soft_lockups = 10;
	b[0].soft_lockups = 10;
	assert_int_equal(judge_fresh(&g, c, N, b, N, GATES_ALL, &capped), 0);
	assert_int_equal(capped.verdict, GATE_FAIL);
	b[0].soft_lockups = 1000;
	assert_int_equal(judge_fresh(&g, c, N, b, N, GATES_ALL, &r), 0);
	assert_int_equal(r.verdict, GATE_FAIL);
	assert_string_equal(r.reason, capped.reason);
	assert_int_equal(detail_number(r.detail, NULL, "host_lockups_max"), 10);
	assert_int_equal(detail_number(r.detail, "baseline", "events"), 12);
	assert_int_equal(detail_number(r.detail, "baseline", "hosts_capped"), 1);
	assert_int_equal(detail_number(r.detail, "canary", "hosts_capped"), 0);
	json_decref(r.detail);
	json_decref(capped.detail);
	/* a lone canary with lockups counts for 10 at most, hard ones too */
	fleet(c, b);
	for (size_t i = 0; i < N; i++)
		c[i].soft_lockups = b[i].soft_lockups = 0;
	c[3].hard_lockups = 1000000;
	assert_int_equal(judge_fresh(&g, c, N, b, N, GATES_ALL, &r), 0);
	assert_int_equal(detail_number(r.detail, NULL, "host_lockups_max"), 10);
	assert_int_equal(detail_number(r.detail, "canary", "events"), 10);
	c[3].hard_lockups = 10;
	assert_int_equal(judge_fresh(&g, c, N, b, N, GATES_ALL, &capped), 0);
	assert_int_equal(r.verdict, capped.verdict);
	assert_string_equal(r.reason, capped.reason);
	json_decref(r.detail);
	json_decref(capped.detail);
	/* with more hosts with lockups, 10 times the lower median of all but the most */
	fleet(c, b);
	c[0].soft_lockups = b[0].soft_lockups = b[2].soft_lockups = 3;
	c[2].soft_lockups = 500;
	assert_int_equal(judge_fresh(&g, c, N, b, N, GATES_ALL, &r), 0);
	assert_int_equal(detail_number(r.detail, NULL, "host_lockups_max"), 10);
	json_decref(r.detail);
	c[1].soft_lockups = c[3].soft_lockups = b[1].soft_lockups = b[3].soft_lockups = 4;
	assert_int_equal(judge_fresh(&g, c, N, b, N, GATES_ALL, &r), 0);
	assert_int_equal(detail_number(r.detail, NULL, "host_lockups_max"), 40);
	assert_int_equal(detail_number(r.detail, "canary", "events"), 3 + 4 + 40 + 4);
	json_decref(r.detail);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pass_and_detail), cmocka_unit_test(test_fails),
		cmocka_unit_test(test_inconclusive),	cmocka_unit_test(test_build_record),
		cmocka_unit_test(test_scopes),		cmocka_unit_test(test_unmatched),
		cmocka_unit_test(test_information),	cmocka_unit_test(test_look_once),
		cmocka_unit_test(test_sequential),	cmocka_unit_test(test_evidence_json),
		cmocka_unit_test(test_named),		cmocka_unit_test(test_host_weight),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * daemon/evidence.c: what each wave of a plan can detect (evidence_plan(),
 * evidence_nlooks()) against the design's sums, and evidence from the
 * store that is not what evidence_to_json() writes, refused with why.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "evidence.h"

#define N 10000
#define NSTRATA 3

/* Lockups per host-hour before the rollout; C had none. */
static const struct {
	const char *name;
	size_t hosts;
	double events, hours;
} strata[NSTRATA] = {
	{ "6.1.0-57/cpus<=4/web", 5000, 50, 5000 },
	{ "6.1.0-57/cpus<=64/db", 3000, 6, 3000 },
	{ "6.12.9/cpus<=16/", 2000, 0, 2000 },
};

static double rate_of(const char *stratum)
{
	for (size_t i = 0; i < NSTRATA; i++)
		if (!strcmp(strata[i].name, stratum))
			return strata[i].events / strata[i].hours;
	fail();
	return 0;
}

static void spec(const char *json, struct rollout_spec *s)
{
	char err[256] = "";

	if (rollout_spec_parse(json, strlen(json), s, err, sizeof(err)) < 0)
		fail_msg("%s", err);
}

/* 10,000 members over the strata, planned by s. */
static struct rollout_member *fleet(const struct rollout_spec *s)
{
	struct rollout_member *m = calloc(N, sizeof(*m));
	size_t k = 0;

	assert_non_null(m);
	for (size_t i = 0; i < NSTRATA; i++)
		for (size_t j = 0; j < strata[i].hosts; j++, k++) {
			snprintf(m[k].host, sizeof(m[k].host), "h%05zu", k);
			snprintf(m[k].stratum, sizeof(m[k].stratum), "%s", strata[i].name);
		}
	assert_int_equal(k, N);
	rollout_plan(s, m, N);
	return m;
}

static void history(struct evidence *e)
{
	for (size_t i = 0; i < NSTRATA; i++)
		assert_int_equal(evidence_history_add(e, strata[i].name, strata[i].events,
						      strata[i].hours),
				 0);
}

static bool close_to(double a, double b)
{
	return fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b));
}

static const char plan_doc[] =
	"{\"name\": \"ev\", \"policy\": \"p\", \"version\": 1, \"selector\": {\"all\": true},"
	" \"waves\": [{\"percent\": 1}, {\"percent\": 10, \"bake_s\": 7200}, {\"percent\": 50},"
	"  {\"percent\": 100}], \"holdback_percent\": 5}";

/*
 * 1/10/50/100% of 10,000 with 5% held back: each wave's canaries and
 * baselines, mu0 at its bake's end as the rate of each stratum times its
 * canaries times the bake, summed over the waves so far, mu_needed and the
 * detectable ratio at the wave's rho and alpha_look, and no final look for
 * the release, which leaves no baseline.
 */
static void test_plan(void **state)
{
	static const size_t canaries[] = { 100, 1000, 5000, 9500, 0 },
			    baselines[] = { 9900, 9000, 5000, 500, 0 };
	struct evidence_plan_wave w[ROLLOUT_MAX_WAVES + 1];
	double mu0 = 0, tc = 0, tb = 0, alpha;
	struct rollout_member *m;
	struct evidence e = { 0 };
	struct rollout_spec s;

	(void)state;
	spec(plan_doc, &s);
	assert_int_equal(s.nwaves, 5);
	m = fleet(&s);
	history(&e);
	/* every wave but the release leaves baselines: four looks share alpha/2 */
	assert_int_equal(evidence_nlooks(&s, N), 4);
	alpha = 0.01 / 2 / 4;
	assert_int_equal(evidence_plan(&s, m, N, &e, w), 0);
	for (size_t k = 0; k < s.nwaves; k++) {
		double hours = (double)s.waves[k].bake_ms / 3600e3, rate = 0, rho;
		size_t c = 0;

		for (size_t i = 0; i < N; i++)
			if (m[i].wave <= k) {
				rate += rate_of(m[i].stratum);
				c++;
			}
		assert_int_equal(w[k].canaries, canaries[k]);
		assert_int_equal(w[k].baselines, baselines[k]);
		assert_true(w[k].bake_s == hours * 3600);
		assert_int_equal(w[k].looked, k < 4);
		if (k == 4) {
			/* every member reached: nothing compared, nothing added */
			assert_int_equal(c, N);
			assert_true(w[k].mu0 == w[k - 1].mu0);
			continue;
		}
		assert_int_equal(c, canaries[k]);
		mu0 += rate * hours;
		tc += (double)canaries[k] * hours;
		tb += (double)baselines[k] * hours;
		rho = tb / tc;
		assert_true(close_to(w[k].mu0, mu0));
		assert_true(w[k].mu_needed == stats_rate_mu_needed(2, rho, alpha, 0.8));
		assert_true(w[k].detectable == stats_rate_detectable(w[k].mu0, rho, alpha, 0.8));
	}
	/* the first wave: 50 and 30 canaries of the strata with lockups, for an hour */
	assert_true(close_to(w[0].mu0, 50 * 0.01 + 30 * 0.002));
	/* the first waves cannot see 2x in their bake, the last can; a ratio above 1 at most */
	assert_true(w[0].mu0 < w[0].mu_needed && w[0].detectable > 2);
	assert_true(w[3].mu0 > w[3].mu_needed && w[3].detectable < 2 && w[3].detectable > 1);
	free(m);
	evidence_free(&e);
}

/*
 * bake_needed_s is the bake of that wave at which its mu0 meets the
 * mu_needed the plan said (rho held): with it the wave has it, a second
 * less does not; 0 when the waves before have it alone.
 */
static void test_bake_needed(void **state)
{
	struct evidence_plan_wave w[ROLLOUT_MAX_WAVES + 1], again[ROLLOUT_MAX_WAVES + 1];
	struct rollout_spec s, t;
	struct rollout_member *m;
	struct evidence e = { 0 };
	bool shorter = false;

	(void)state;
	spec(plan_doc, &s);
	m = fleet(&s);
	history(&e);
	assert_int_equal(evidence_plan(&s, m, N, &e, w), 0);
	for (size_t k = 0; k < 4; k++) {
		assert_true(isfinite(w[k].bake_needed_s));
		t = s;
		t.waves[k].bake_ms = (uint64_t)ceil(w[k].bake_needed_s * 1000);
		assert_int_equal(evidence_plan(&t, m, N, &e, again), 0);
		assert_true(again[k].mu0 >= w[k].mu_needed * (1 - 1e-12));
		if (w[k].bake_needed_s >= 1) {
			t.waves[k].bake_ms = (uint64_t)floor(w[k].bake_needed_s * 1000) - 1000;
			assert_int_equal(evidence_plan(&t, m, N, &e, again), 0);
			assert_true(again[k].mu0 < w[k].mu_needed);
		} else {
			/* only when the waves before had enough */
			assert_true(w[k].bake_needed_s == 0);
			assert_true(k && w[k - 1].mu0 >= w[k].mu_needed);
		}
		shorter |= w[k].bake_needed_s > 0 && w[k].bake_needed_s < w[k].bake_s;
	}
	assert_true(w[0].bake_needed_s > w[0].bake_s);
	/* a wave with more than enough needs less than its bake, not nothing */
	assert_true(shorter);
	free(m);
	evidence_free(&e);
}

/*
 * A fleet with no lockups cannot show a ratio: mu0 0, nothing detectable,
 * no bake enough; the same with no history at all.
 */
static void test_no_lockups(void **state)
{
	struct evidence_plan_wave w[ROLLOUT_MAX_WAVES + 1];
	struct rollout_member m[1000] = { 0 };
	struct evidence e = { 0 };
	struct rollout_spec s;

	(void)state;
	spec("{\"name\": \"z\", \"policy\": \"p\", \"version\": 1, \"selector\": {\"all\": true},"
	     " \"waves\": [{\"percent\": 10}, {\"percent\": 100}]}",
	     &s);
	for (size_t i = 0; i < 1000; i++) {
		snprintf(m[i].host, sizeof(m[i].host), "z%zu", i);
		strcpy(m[i].stratum, "6.12.9/cpus<=16/");
	}
	rollout_plan(&s, m, 1000);
	assert_int_equal(evidence_nlooks(&s, 1000), 2);
	for (int pass = 0; pass < 2; pass++) {
		if (pass)
			assert_int_equal(evidence_history_add(&e, m[0].stratum, 0, 50000), 0);
		assert_int_equal(evidence_plan(&s, m, 1000, &e, w), 0);
		for (size_t k = 0; k < 2; k++) {
			assert_int_equal(w[k].canaries, k ? 950 : 100);
			assert_true(w[k].looked);
			assert_true(w[k].mu0 == 0);
			assert_true(isfinite(w[k].mu_needed) && w[k].mu_needed > 0);
			assert_true(isinf(w[k].detectable));
			assert_true(isinf(w[k].bake_needed_s));
		}
		assert_false(w[2].looked);
	}
	evidence_free(&e);
}

/* Without a holdback the last wave reaches everyone: no look for it. */
static void test_nlooks(void **state)
{
	struct rollout_spec s;

	(void)state;
	spec("{\"name\": \"n\", \"policy\": \"p\", \"version\": 1, \"selector\": {\"all\": true},"
	     " \"waves\": [{\"percent\": 10}, {\"percent\": 50}, {\"percent\": 100}],"
	     " \"holdback_percent\": 0}",
	     &s);
	assert_int_equal(evidence_nlooks(&s, N), 2);
	/* one member: 10% and 50% reach it all already */
	assert_int_equal(evidence_nlooks(&s, 1), 0);
}

#define LR "[0,0,0,0,0,0,0,0]"
#define EMPTY "{\"log_lr\":" LR ",\"last\":{},\"cells\":[],\"looked\":[]}"
#define HEAD "\"wave\":0,\"since_ms\":0,\"history\":{}"
/* lockups with what is given in place of the empty one's parts */
#define LOCKUPS(lr, last, cells, looked)                                              \
	"{" HEAD ",\"lockups\":{\"log_lr\":" lr ",\"last\":" last ",\"cells\":" cells \
	",\"looked\":" looked "},\"hard\":" EMPTY "}"
#define CELL_BAD "lockups.cells[0]: want [wave, stratum, x_c, t_c, x_b, t_b, mu0]"
#define S159                                                                               \
	"ssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssss" \
	"sssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssss"

/*
 * What the store may hold after an edit, beyond test-gates' cases: each
 * refused with its reason on one line, the evidence left empty.
 */
static void test_bad_json(void **state)
{
	static const struct {
		const char *json, *why;
	} bad[] = {
		/* huge numbers */
		{ "{\"wave\":0,\"since_ms\":99999999999999999999,\"history\":{}}",
		  "evidence: not JSON: too big integer near '99999999999999999999'" },
		{ LOCKUPS("[1e400,0,0,0,0,0,0,0]", "{}", "[]", "[]"),
		  "evidence: not JSON: real number overflow near '1e400'" },
		{ "{\"wave\":4294967296,\"since_ms\":0,\"history\":{}}",
		  "evidence: want wave from 0 to 16 and since_ms" },
		{ LOCKUPS(LR, "{}",
			  "[[0,\"s\",9223372036854775807,1,9223372036854775807,1,0],[1,\"s\",3,1,0,1,0]]",
			  "[]"),
		  "lockups.cells: more than 2^53 events in all" },
		{ LOCKUPS(LR, "{}",
			  "[[0,\"s\",4503599627370496,1,4503599627370496,1,0],[1,\"s\",0,1,1,1,0]]",
			  "[]"),
		  "lockups.cells: more than 2^53 events in all" },
		/* NaN-like text */
		{ LOCKUPS("[NaN,0,0,0,0,0,0,0]", "{}", "[]", "[]"),
		  "evidence: not JSON: invalid token near 'NaN'" },
		{ "{\"wave\":0,\"since_ms\":0,\"history\":{\"s\":[Infinity,1]}}",
		  "evidence: not JSON: invalid token near 'Infinity'" },
		{ LOCKUPS(LR, "{}", "[]", "[[0,\"nan\"]]"), "lockups.looked[0]: want [wave, p]" },
		/* duplicate keys, and what would count twice */
		{ "{\"wave\":0,\"wave\":1,\"since_ms\":0,\"history\":{}}",
		  "evidence: not JSON: duplicate object key near '\"wave\"'" },
		{ "{\"wave\":0,\"since_ms\":0,\"history\":{\"s\":[1,2],\"s\":[1,2]}}",
		  "evidence: not JSON: duplicate object key near '\"s\"'" },
		{ LOCKUPS(LR, "{\"s\":[1,2,3,4],\"s\":[1,2,3,4]}", "[]", "[]"),
		  "evidence: not JSON: duplicate object key near '\"s\"'" },
		{ LOCKUPS(LR, "{}", "[[0,\"s\",1,2,3,4,0],[1,\"s\",1,2,3,4,0],[0,\"s\",0,1,0,1,0]]",
			  "[]"),
		  "lockups.cells: a wave and stratum twice" },
		{ LOCKUPS(LR, "{}", "[]", "[[2,0.5],[1,0.5],[2,1]]"),
		  "lockups.looked: a wave twice" },
		/* wrong types */
		{ "{\"wave\":\"0\",\"since_ms\":0,\"history\":{}}",
		  "evidence: want wave from 0 to 16 and since_ms" },
		{ "{\"wave\":0,\"since_ms\":1.5,\"history\":{}}",
		  "evidence: want wave from 0 to 16 and since_ms" },
		{ "{\"wave\":0,\"since_ms\":0,\"history\":[]}",
		  "evidence: want an object of wave, since_ms, history, lockups, hard" },
		{ "{\"wave\":0,\"since_ms\":0,\"history\":{\"s\":{\"events\":1,\"hours\":2}}}",
		  "evidence.history: want [events, hours] per stratum" },
		{ LOCKUPS("[true,0,0,0,0,0,0,0]", "{}", "[]", "[]"),
		  "lockups.log_lr[0]: not a finite number" },
		{ LOCKUPS(LR, "[]", "[]", "[]"),
		  "lockups: want last an object, cells and looked arrays" },
		{ LOCKUPS(LR, "{}", "[{\"wave\":0}]", "[]"), CELL_BAD },
		{ LOCKUPS(LR, "{}", "[[0,7,1,2,3,4,0]]", "[]"), CELL_BAD },
		{ LOCKUPS(LR, "{}", "[[0,\"s\",1.5,2,3,4,0]]", "[]"), CELL_BAD },
		{ LOCKUPS(LR, "{}", "[[0,\"s\",1,2,3,4,null]]", "[]"), CELL_BAD },
		{ LOCKUPS(LR, "{}", "[[17,\"s\",1,2,3,4,0]]", "[]"), CELL_BAD },
		{ LOCKUPS(LR, "{}", "[]", "[[true,0.5]]"), "lockups.looked[0]: want [wave, p]" },
		/* arrays longer than the struct holds */
		{ LOCKUPS("[0,0,0,0,0,0,0,0,0]", "{}", "[]", "[]"),
		  "lockups.log_lr: want 8 numbers" },
		{ LOCKUPS(LR, "{\"s\":[1,2,3,4,5]}", "[]", "[]"),
		  "lockups.last: want [x_c, t_c, x_b, t_b] per stratum" },
		{ LOCKUPS(LR, "{}", "[[0,\"s\",1,2,3,4,0,0]]", "[]"), CELL_BAD },
		{ LOCKUPS(LR, "{}", "[]", "[[0,0.5,1]]"), "lockups.looked[0]: want [wave, p]" },
		{ "{\"wave\":0,\"since_ms\":0,\"history\":{\"s\":[1,2,3]}}",
		  "evidence.history: want [events, hours] per stratum" },
		{ "{\"wave\":0,\"since_ms\":0,\"history\":{\"" S159 "s\":[1,2]}}",
		  "evidence.history: want [events, hours] per stratum" },
		{ LOCKUPS(LR, "{}", "[[0,\"" S159 "s\",1,2,3,4,0]]", "[]"), CELL_BAD },
		/* the input quoted in the reason is escaped, so it stays one line */
		{ "\x15\xff", "evidence: not JSON: '[' or '{' expected near '\\x15'" },
		{ "{\"wave\":0,\x01}", "evidence: not JSON: string or '}' expected near '\\x01'" },
	};
	struct evidence e;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&e, 0x5a, sizeof(e));
		if (evidence_from_json(bad[i].json, strlen(bad[i].json), &e, err, sizeof(err)) !=
		    -EINVAL)
			fail_msg("taken: %s", bad[i].json);
		if (strcmp(err, bad[i].why))
			fail_msg("%zu: '%s', not '%s'", i, err, bad[i].why);
		assert_null(e.history);
		assert_null(e.lockups.cells);
		assert_int_equal(e.lockups.nlast + e.lockups.ncells + e.lockups.nlooked, 0);
	}
}

/* Nesting past jansson's depth stops there, not on our stack. */
static void test_deep(void **state)
{
	size_t depth = 5000, at = 0;
	char *json = malloc(2 * depth + 64), err[256];
	struct evidence e;

	(void)state;
	assert_non_null(json);
	at += (size_t)sprintf(json, "{\"wave\":0,\"since_ms\":0,\"history\":{\"s\":");
	memset(json + at, '[', depth);
	memset(json + at + depth, ']', depth);
	strcpy(json + at + 2 * depth, "}}");
	assert_int_equal(evidence_from_json(json, strlen(json), &e, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "evidence: not JSON: maximum parsing depth reached near '['");
	free(json);
}

/* At the limits and still what evidence_to_json() could write: taken, and written back the same. */
static void test_edges(void **state)
{
	static const char *const good[] = {
		LOCKUPS(LR, "{}", "[[0,\"" S159 "\",4503599627370496,1e-300,0,1e308,0]]", "[]"),
		LOCKUPS("[-1e300,0,0,0,0,0,0,1e300]", "{\"\":[0,0,0,0]}",
			"[[16,\"s\",0,0,0,0,0],[0,\"s\",1,2,3,4,5]]", "[[16,0],[0,1]]"),
		"{\"wave\":16,\"since_ms\":-9223372036854775808,\"history\":{\"s\":[1e308,0]},"
		"\"lockups\":" EMPTY ",\"hard\":" EMPTY "}",
	};
	char err[256], *json, *again;
	struct evidence e, back;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		if (evidence_from_json(good[i], strlen(good[i]), &e, err, sizeof(err)))
			fail_msg("%zu: %s", i, err);
		assert_int_equal(evidence_to_json(&e, &json), 0);
		assert_int_equal(evidence_from_json(json, strlen(json), &back, err, sizeof(err)),
				 0);
		assert_int_equal(evidence_to_json(&back, &again), 0);
		assert_string_equal(json, again);
		free(json);
		free(again);
		evidence_free(&back);
		evidence_free(&e);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan),	   cmocka_unit_test(test_bake_needed),
		cmocka_unit_test(test_no_lockups), cmocka_unit_test(test_nlooks),
		cmocka_unit_test(test_bad_json),   cmocka_unit_test(test_deep),
		cmocka_unit_test(test_edges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

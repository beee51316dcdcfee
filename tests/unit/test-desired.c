// SPDX-License-Identifier: GPL-2.0
/*
 * daemon/desired.c over a real SQLite store: a rollout that reached a host
 * beats the assignments, what each state sends (the rollback target once
 * rolled back, the assignments when that is nothing), a wave not yet come
 * has no say, newest first, loads after changes, rows the store holds that
 * do not parse; and the rollout state machine's one table (engine.c).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "desired.h"
#include "engine.h"
#include "rollout.h"
#include "store.h"

static char path[4096];

struct fixture {
	struct store *st;
	struct desired *d;
	int64_t t; /* each change one millisecond after the last */
};

static int setup(void **state)
{
	static struct fixture fx;
	char err[256];

	snprintf(path, sizeof(path), "%s/test-desired.sqlite", getenv("KMEM_TEST_TMP"));
	unlink(path);
	fx = (struct fixture){ .t = 1000 };
	if (store_open(path, &fx.st, err, sizeof(err)) < 0)
		fail_msg("store_open: %s", err);
	assert_int_equal(desired_new(&fx.d), 0);
	for (size_t i = 0; i < 6; i++) {
		static const char *const names[] = { "base", "web", "web", "fleet", "db", "lab" };
		static const uint64_t versions[] = { 4, 6, 7, 2, 1, 3 };
		struct store_policy p = { .version = versions[i], .document_json = "{}" };

		snprintf(p.name, sizeof(p.name), "%s", names[i]);
		assert_int_equal(fx.st->ops->policy_add(fx.st, &p, fx.t), 0);
	}
	*state = &fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	desired_free(fx->d);
	fx->st->ops->close(fx->st);
	return 0;
}

/* desired_refresh(), which must skip nothing. */
static int refresh(struct fixture *fx)
{
	struct desired_skipped sk;
	int r = desired_refresh(fx->d, fx->st, &sk);

	assert_int_equal(sk.n, 0);
	return r;
}

static void assign(struct fixture *fx, const char *policy, uint64_t version, const char *selector)
{
	struct store_assignment a = { .version = version, .selector_json = (char *)selector };
	int64_t id;

	snprintf(a.policy, sizeof(a.policy), "%s", policy);
	assert_int_equal(fx->st->ops->assign(fx->st, &a, fx->t++, &id), 0);
}

/* Rollout name (doc) started with hosts "host/wave/prev@version" ("host/wave/-": nothing before). */
static void start(struct fixture *fx, const char *name, const char *doc, const char *const *hosts)
{
	struct store_rollout ro = { .state = ROLLOUT_RUNNING, .wave_started_ms = fx->t };
	struct store_member m[8];
	char host[8][16], prev[8][16];
	size_t n;

	for (n = 0; hosts[n]; n++) {
		unsigned long long version = 0;
		int wave = 0;

		assert_int_equal(sscanf(hosts[n], "%15[^/]/%d/%15[^@]@%llu", host[n], &wave,
					prev[n], &version) >= 3,
				 true);
		m[n] = (struct store_member){ .host_id = host[n],
					      .stratum = "s",
					      .position = (double)n,
					      .wave = (unsigned)wave,
					      .prev_policy = strcmp(prev[n], "-") ? prev[n] : NULL,
					      .prev_version = version };
	}
	snprintf(ro.name, sizeof(ro.name), "%s", name);
	assert_int_equal(fx->st->ops->rollout_add(fx->st, name, doc, fx->t++), 0);
	assert_int_equal(fx->st->ops->rollout_start(fx->st, &ro, m, n, fx->t++), 0);
}

static void move(struct fixture *fx, const char *name, enum rollout_state state, unsigned wave,
		 const char *reason)
{
	struct store_rollout ro = { .state = state, .wave = wave };

	snprintf(ro.name, sizeof(ro.name), "%s", name);
	snprintf(ro.reason, sizeof(ro.reason), "%s", reason);
	assert_int_equal(fx->st->ops->rollout_update(fx->st, &ro, NULL, fx->t++, NULL), 0);
}

/* What host (labelled role) is to run: "name@version", or "-". */
static const char *want(struct fixture *fx, const char *host, const char *role)
{
	Kmemctl__V1__HostFacts f = KMEMCTL__V1__HOST_FACTS__INIT;
	Kmemctl__V1__HostFacts__LabelsEntry le = KMEMCTL__V1__HOST_FACTS__LABELS_ENTRY__INIT,
					    *lep[] = { &le };
	static char out[STORE_ID_MAX + 24];
	char name[STORE_ID_MAX];
	uint64_t version;
	int r;

	f.host_id = (char *)host;
	f.kernel_release = "6.1.0-57-amd64";
	f.possible_cpus = 8;
	le.key = "role";
	le.value = (char *)role;
	f.n_labels = 1;
	f.labels = lep;
	r = desired_policy(fx->d, &f, name, &version);
	if (r == -ENOENT)
		return "-";
	assert_int_equal(r, 0);
	snprintf(out, sizeof(out), "%s@%llu", name, (unsigned long long)version);
	return out;
}

static const char r1_doc[] = "{\"name\":\"r1\",\"policy\":\"web\",\"version\":6,"
			     "\"selector\":{\"labels\":{\"role\":\"web\"}},"
			     "\"waves\":[{\"count\":1},{\"percent\":100}]}";
static const char *const r1_hosts[] = { "web-1/0/base@4", "web-2/1/base@4", "web-3/1/-", NULL };

/* A rollout that reached a host has the say over assignments; where it has not, they do. */
static void test_rollout_beats_assignment(void **state)
{
	struct fixture *fx = *state;

	assign(fx, "fleet", 2, "{\"all\":true}");
	assert_int_equal(refresh(fx), 1);
	assert_string_equal(want(fx, "web-1", "web"), "fleet@2");
	start(fx, "r1", r1_doc, r1_hosts);
	/* not yet loaded: the answer kept holds until a refresh */
	assert_string_equal(want(fx, "web-1", "web"), "fleet@2");
	assert_int_equal(refresh(fx), 1);
	assert_string_equal(want(fx, "web-1", "web"), "web@6");
	/* wave 2 has not come: no say there */
	assert_string_equal(want(fx, "web-2", "web"), "fleet@2");
	assert_string_equal(want(fx, "web-3", "web"), "fleet@2");
	assert_string_equal(want(fx, "db-1", "db"), "fleet@2");
	move(fx, "r1", ROLLOUT_RUNNING, 1, "wave 1 passed");
	assert_int_equal(refresh(fx), 1);
	assert_string_equal(want(fx, "web-2", "web"), "web@6");
	assert_string_equal(want(fx, "web-3", "web"), "web@6");
	assert_string_equal(want(fx, "db-1", "db"), "fleet@2");
}

/* Each state's target: the rollout's policy, or each host's rollback target. */
static void test_states(void **state)
{
	static const char rb_doc[] = "{\"name\":\"r2\",\"policy\":\"web\",\"version\":6,"
				     "\"selector\":{\"labels\":{\"role\":\"web\"}},"
				     "\"waves\":[{\"percent\":100}],"
				     "\"rollback\":{\"policy\":\"web\",\"version\":7}}";
	static const char *const r2_hosts[] = { "web-9/0/-", NULL };
	struct fixture *fx = *state;
	const struct {
		enum rollout_state state;
		const char *web1, *web3;
	} cases[] = {
		{ ROLLOUT_RUNNING, "web@6", "web@6" },
		{ ROLLOUT_HOLDING, "web@6", "web@6" },
		{ ROLLOUT_PAUSED, "web@6", "web@6" },
		{ ROLLOUT_DONE, "web@6", "web@6" },
		/* back to what each ran; web-3 ran nothing: the assignments decide */
		{ ROLLOUT_ROLLING_BACK, "base@4", "fleet@2" },
		{ ROLLOUT_ROLLED_BACK, "base@4", "fleet@2" },
		{ ROLLOUT_ABORTED, "base@4", "fleet@2" },
	};

	assign(fx, "fleet", 2, "{\"all\":true}");
	start(fx, "r1", r1_doc, r1_hosts);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		move(fx, "r1", cases[i].state, 1, "");
		assert_int_equal(refresh(fx), 1);
		assert_string_equal(want(fx, "web-1", "web"), cases[i].web1);
		assert_string_equal(want(fx, "web-2", "web"), cases[i].web1);
		assert_string_equal(want(fx, "web-3", "web"), cases[i].web3);
	}
	/* a rollback version in the document goes to every host, whatever it ran */
	start(fx, "r2", rb_doc, r2_hosts);
	move(fx, "r2", ROLLOUT_ABORTED, 0, "abort by an operator");
	assert_int_equal(refresh(fx), 1);
	assert_string_equal(want(fx, "web-9", "web"), "web@7");
}

/* The newest rollout that reached a host, and the newest matching assignment. */
static void test_newest_first(void **state)
{
	static const char r0_doc[] = "{\"name\":\"r0\",\"policy\":\"lab\",\"version\":3,"
				     "\"selector\":{\"all\":true},\"waves\":[{\"percent\":100}]}";
	static const char *const r0_hosts[] = { "web-2/0/base@4", "web-5/0/base@4", NULL };
	struct fixture *fx = *state;

	assign(fx, "fleet", 2, "{\"labels\":{\"role\":\"web\"}}");
	assign(fx, "db", 1, "{\"labels\":{\"role\":\"web\"}}");
	assign(fx, "base", 4, "{\"host\":\"web-7\"}");
	assert_int_equal(refresh(fx), 1);
	assert_string_equal(want(fx, "web-5", "web"), "db@1");
	assert_string_equal(want(fx, "web-7", "web"), "base@4");
	start(fx, "r0", r0_doc, r0_hosts);
	move(fx, "r0", ROLLOUT_DONE, 0, "wave 1 passed: done");
	start(fx, "r1", r1_doc, r1_hosts);
	assert_int_equal(refresh(fx), 1);
	/* r1 is newer, but its wave 2 has not reached web-2: r0 has the say there */
	assert_string_equal(want(fx, "web-2", "web"), "lab@3");
	assert_string_equal(want(fx, "web-1", "web"), "web@6");
	move(fx, "r1", ROLLOUT_RUNNING, 1, "wave 1 passed");
	assert_int_equal(refresh(fx), 1);
	assert_string_equal(want(fx, "web-2", "web"), "web@6");
	assert_string_equal(want(fx, "web-5", "web"), "lab@3");
}

/* Loads happen when the store changed, and only then; a host's new facts decide again. */
static void test_refresh(void **state)
{
	struct fixture *fx = *state;

	assert_int_equal(refresh(fx), 1);
	assert_int_equal(refresh(fx), 0);
	assert_string_equal(want(fx, "web-1", "web"), "-");
	assign(fx, "db", 1, "{\"labels\":{\"role\":\"db\"}}");
	assert_int_equal(refresh(fx), 1);
	assert_string_equal(want(fx, "web-1", "web"), "-");
	assert_string_equal(want(fx, "web-1", "db"), "db@1");
	assert_string_equal(want(fx, "web-1", "web"), "-");
	assert_int_equal(refresh(fx), 0);
	start(fx, "r1", r1_doc, r1_hosts);
	assert_int_equal(refresh(fx), 1);
	assert_string_equal(want(fx, "web-1", "web"), "web@6");
	/* a hold's new numbers: loaded, and the answers stay */
	move(fx, "r1", ROLLOUT_HOLDING, 0, "wave 1 held: 1 host-hours");
	assert_int_equal(refresh(fx), 1);
	move(fx, "r1", ROLLOUT_HOLDING, 0, "wave 1 held: 2 host-hours");
	assert_int_equal(refresh(fx), 1);
	assert_int_equal(refresh(fx), 0);
	assert_string_equal(want(fx, "web-1", "web"), "web@6");
	move(fx, "r1", ROLLOUT_ROLLING_BACK, 0, "wave 1 failed");
	assert_int_equal(refresh(fx), 1);
	assert_string_equal(want(fx, "web-1", "web"), "base@4");
}

/* Rows kmemd cannot read are left out with the reason, and the others still decide. */
static void test_bad_rows(void **state)
{
	static const char bad_doc[] = "{\"name\":\"bad\",\"version\":6}";
	static const char *const bad_hosts[] = { "web-1/0/base@4", NULL };
	struct fixture *fx = *state;
	struct desired_skipped sk;

	assign(fx, "base", 4, "{\"labels\":{\"role\":\"web\"}}");
	assign(fx, "fleet", 2, "{\"role\":\"web\"}");
	assign(fx, "db", 1, "not json");
	assert_int_equal(desired_refresh(fx->d, fx->st, &sk), 1);
	assert_int_equal(sk.n, 2);
	/* newest first: assignment 3 is the first left out */
	assert_non_null(strstr(sk.first, "assignment 3: its selector is not valid"));
	assert_string_equal(want(fx, "web-1", "web"), "base@4");
	start(fx, "bad", bad_doc, bad_hosts);
	assert_int_equal(desired_refresh(fx->d, fx->st, &sk), 1);
	assert_int_equal(sk.n, 1);
	assert_non_null(strstr(sk.first, "rollout bad: its document is not valid: "));
	assert_non_null(strstr(sk.first, "\"policy\""));
	assert_string_equal(want(fx, "web-1", "web"), "base@4");
	start(fx, "r1", r1_doc, r1_hosts);
	assert_int_equal(desired_refresh(fx->d, fx->st, &sk), 1);
	assert_int_equal(sk.n, 1);
	assert_string_equal(want(fx, "web-1", "web"), "web@6");
}

/* engine_transition(): every allowed transition and what it does; all others refused. */
static void test_transitions(void **state)
{
	static const char *const events[ROLLOUT_NEVENTS] = {
		"start", "pause", "resume",	"promote",   "abort", "pass",
		"hold",	 "fail",  "fail-pause", "pass-wait", "back",
	};
	/* "event from>to:wave" from wave 1 (0) of 2, and from the last wave ("@last") */
	static const char *const allowed[] = {
		"start pending>running:0",
		"pause running>paused:0",
		"pause holding>paused:0",
		"resume paused>running:0",
		"promote running>running:1",
		"promote holding>running:1",
		"promote paused>running:1",
		"promote@last running>done:1",
		"promote@last holding>done:1",
		"promote@last paused>done:1",
		"abort pending>aborted:0",
		"abort running>aborted:0",
		"abort holding>aborted:0",
		"abort paused>aborted:0",
		"pass running>running:1",
		"pass holding>running:1",
		"pass@last running>done:1",
		"pass@last holding>done:1",
		"hold running>holding:0",
		"hold holding>holding:0",
		"fail running>rolling-back:0",
		"fail holding>rolling-back:0",
		"fail paused>rolling-back:0",
		"back rolling-back>rolled-back:0",
		/* on_fail = pause, and a manual gate before the next wave */
		"fail-pause running>paused:0",
		"fail-pause holding>paused:0",
		"pass-wait running>paused:0",
		"pass-wait holding>paused:0",
	};
	size_t seen = 0, n = sizeof(allowed) / sizeof(allowed[0]);
	char why[256], got[96];

	(void)state;
	for (unsigned last = 0; last < 2; last++)
		for (int ev = 0; ev < ROLLOUT_NEVENTS; ev++)
			for (int s = 0; s < ROLLOUT_NSTATES; s++) {
				struct store_rollout ro = { .name = "r",
							    .state = (enum rollout_state)s,
							    .wave = last,
							    .wave_started_ms = 5 },
						     was = ro;
				bool advance = ev == ROLLOUT_EV_PROMOTE || ev == ROLLOUT_EV_PASS;
				size_t i;
				int r;

				why[0] = 0;
				r = engine_transition(&ro, ev, 2, 100, why, sizeof(why));
				if (r < 0) {
					assert_int_equal(r, -EBUSY);
					assert_memory_equal(&ro, &was, sizeof(ro));
					snprintf(got, sizeof(got), "rollout r is %s: it cannot ",
						 rollout_state_name(was.state));
					assert_true(!strncmp(why, got, strlen(got)));
					continue;
				}
				/* from the last wave only where it matters */
				if (last && !advance)
					continue;
				snprintf(got, sizeof(got), "%s%s %s>%s:%u", events[ev],
					 last && advance ? "@last" : "",
					 rollout_state_name(was.state),
					 rollout_state_name(ro.state), ro.wave);
				for (i = 0; i < n && strcmp(allowed[i], got); i++)
					;
				if (i == n)
					fail_msg("not an allowed transition: %s", got);
				seen++;
				/* a new wave's bake starts now; otherwise it goes on */
				assert_int_equal(
					ro.wave_started_ms,
					ro.wave != was.wave || ev == ROLLOUT_EV_START ? 100 : 5);
			}
	assert_int_equal(seen, n);
	{
		struct store_rollout ro = { .name = "rstat-on", .state = ROLLOUT_DONE, .wave = 1 };

		assert_int_equal(engine_transition(&ro, ROLLOUT_EV_PROMOTE, 2, 100, why,
						   sizeof(why)),
				 -EBUSY);
		assert_string_equal(why, "rollout rstat-on is done: it cannot promote");
	}
	assert_int_equal(engine_action("promote"), ROLLOUT_EV_PROMOTE);
	assert_int_equal(engine_action("pass"), -EINVAL);
	assert_int_equal(engine_action("Promote"), -EINVAL);
	for (int s = 0; s < ROLLOUT_NSTATES; s++)
		assert_int_equal(rollout_state_parse(rollout_state_name((enum rollout_state)s)), s);
	assert_int_equal(rollout_state_parse("rolledback"), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rollout_beats_assignment, setup, teardown),
		cmocka_unit_test_setup_teardown(test_states, setup, teardown),
		cmocka_unit_test_setup_teardown(test_newest_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refresh, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_rows, setup, teardown),
		cmocka_unit_test(test_transitions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * daemon/engine.c over a real store (a SQLite file; PostgreSQL with
 * KMEM_STORE_URL, as test-engine-pg runs it) fed reports at chosen times:
 * a wave bakes, passes and the next starts; too little data holds it (one
 * verdict, not one per tick) until the data comes; canaries' soft lockups
 * fail it and roll back, which ends once the hosts report the previous
 * policy; an unhealthy canary fails a wave before its bake is over; a
 * paused rollout is not promoted; a reopened store carries on; a pass
 * made by the engine's thread (daemon/engine-worker.h) is heard on the
 * loop, and a move made meanwhile by another is not undone. The
 * dashboard's series (daemon/series.c) of the same data.
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
#include "admin-json.h"
#include <event2/event.h>

#include "engine-worker.h"
#include "engine.h"
#include "hist.h"
#include "rollout.h"
#include "series.h"
#include "store-fixture.h"

#define N 12
#define MIN 60000LL
#define T0 1700000000000LL

static char path[4096];

static const char spec_latency[] =
	"{\"name\": \"r\", \"policy\": \"new\", \"version\": 2, \"selector\": {\"all\": true},"
	" \"waves\": [{\"count\": 3}, {\"percent\": 100}], \"bake_s\": 3600, \"holdback_percent\": 0,"
	" \"gates\": {\"min_exposure_h\": 1, \"min_hosts\": 3, \"underpowered\": \"pass\", \"latency_probes\": [\"vmap-purge\"]}}";

static const char spec_json[] =
	"{\"name\": \"r\", \"policy\": \"new\", \"version\": 2, \"selector\": {\"all\": true},"
	" \"waves\": [{\"count\": 3}, {\"percent\": 100}], \"bake_s\": 3600, \"holdback_percent\": 0,"
	" \"gates\": {\"min_exposure_h\": 1, \"min_hosts\": 3, \"underpowered\": \"pass\"}}";

struct fleet {
	struct store *st;
	struct rollout_member m[N]; /* in plan order */
	uint64_t seq[N];
	uint64_t vmap_purge_ns[N]; /* each report's one sample of it; 0: none */
	uint64_t vmap_purge_count[N]; /* values in that sample; 0: one */
	char changes[1024]; /* "was>state:verdict/gate " per change heard */
};

static struct store *open_store(void)
{
	struct store *s = NULL;
	char err[256];

	if (store_open(test_store_where(path), &s, err, sizeof(err)) < 0)
		fail_msg("store_open: %s", err);
	return s;
}

static void heard(void *arg, const struct engine_change *c)
{
	struct fleet *f = arg;
	size_t len = strlen(f->changes);

	snprintf(f->changes + len, sizeof(f->changes) - len, "%s>%s:%s/%s ",
		 rollout_state_name(c->was), rollout_state_name(c->ro->state),
		 c->v ? c->v->verdict : "-", c->v ? c->v->gate : "-");
}

/* One report of host i at t, running policy@version, with soft lockups and a tripped mitigation. */
static void report(struct fleet *f, size_t i, int64_t t, const char *policy, uint64_t version,
		   unsigned lockups, bool tripped)
{
	Kmemctl__V1__Report rep = KMEMCTL__V1__REPORT__INIT;
	Kmemctl__V1__HostFacts facts = KMEMCTL__V1__HOST_FACTS__INIT;
	Kmemctl__V1__HostFacts__LabelsEntry le = KMEMCTL__V1__HOST_FACTS__LABELS_ENTRY__INIT,
					    *lep[] = { &le };
	Kmemctl__V1__Counters c = KMEMCTL__V1__COUNTERS__INIT;
	Kmemctl__V1__KernelEvent e[4], *ep[4];
	Kmemctl__V1__MitigationState m = KMEMCTL__V1__MITIGATION_STATE__INIT, *mp[] = { &m };
	Kmemctl__V1__Histogram h = KMEMCTL__V1__HISTOGRAM__INIT;
	Kmemctl__V1__ProbeSample p = KMEMCTL__V1__PROBE_SAMPLE__INIT, *pp[] = { &p };
	uint64_t n = f->vmap_purge_count[i] ?: 1;

	facts.host_id = f->m[i].host;
	facts.kernel_build_id = "b1";
	facts.online_cpus = 4;
	le.key = "role";
	le.value = "web";
	facts.n_labels = 1;
	facts.labels = lep;
	rep.facts = &facts;
	rep.seq = ++f->seq[i];
	rep.unix_ms = t;
	rep.policy_name = (char *)policy;
	rep.policy_version = version;
	rep.counters = &c;
	for (unsigned k = 0; k < lockups && k < 4; k++) {
		kmemctl__v1__kernel_event__init(&e[k]);
		e[k].kind = KMEMCTL__V1__EVENT_KIND__EVENT_KIND_SOFT_LOCKUP;
		e[k].unix_ms = t;
		e[k].message = "watchdog: BUG: soft lockup - CPU#1 stuck for 23s!";
		ep[k] = &e[k];
	}
	rep.n_events = lockups;
	rep.events = ep;
	m.id = "rstat-yield";
	m.state = tripped ? KMEMCTL__V1__MITIGATION_STATE_KIND__MITIGATION_STATE_TRIPPED :
			    KMEMCTL__V1__MITIGATION_STATE_KIND__MITIGATION_STATE_ON;
	m.mode = KMEMCTL__V1__MITIGATION_MODE__MITIGATION_MODE_ON;
	m.reason = tripped ? "tripped: flush took 2 s" : "on";
	rep.n_mitigations = 1;
	rep.mitigations = mp;
	if (f->vmap_purge_ns[i]) {
		h.first_bucket = hist_bucket(f->vmap_purge_ns[i]);
		h.n_counts = 1;
		h.counts = &n;
		h.count = n;
		h.sum_ns = n * f->vmap_purge_ns[i];
		h.max_ns = f->vmap_purge_ns[i];
		p.probe = "vmap-purge";
		p.end_unix_ms = t;
		p.hist = &h;
		rep.n_probes = 1;
		rep.probes = pp;
	}
	assert_int_equal(f->st->ops->ingest(f->st, &rep, t), 0);
}

/* Every host at t, each running what the rollout wants there (daemon/desired.c). */
static void all_report(struct fleet *f, int64_t t, size_t skip_from, size_t skip_to)
{
	Kmemctl__V1__HostFacts facts = KMEMCTL__V1__HOST_FACTS__INIT;
	struct desired_skipped sk;
	struct desired *d;
	char name[STORE_ID_MAX];
	uint64_t version;

	assert_int_equal(desired_new(&d), 0);
	assert_int_equal(desired_refresh(d, f->st, &sk), 1);
	assert_int_equal(sk.n, 0);
	for (size_t i = 0; i < N; i++) {
		if (i >= skip_from && i < skip_to)
			continue;
		facts.host_id = f->m[i].host;
		if (desired_policy(d, &facts, name, &version) < 0) {
			strcpy(name, "old");
			version = 1;
		}
		report(f, i, t, name, version, 0, false);
	}
	desired_free(d);
}

/* Twelve hosts on policy old@1 and rollout r (doc) started at T0: wave 1 is m[0..2]. */
static void start(struct fleet *f, const char *doc)
{
	struct store_member sm[N];
	struct rollout_spec spec;
	struct store_rollout ro = { .name = "r", .state = ROLLOUT_RUNNING, .wave_started_ms = T0 };
	char err[256];

	memset(f, 0, sizeof(*f));
	test_store_wipe(path);
	f->st = open_store();
	assert_int_equal(rollout_spec_parse(doc, strlen(doc), &spec, err, sizeof(err)), 0);
	for (size_t i = 0; i < N; i++) {
		snprintf(f->m[i].host, sizeof(f->m[i].host), "h%02zu", i);
		rollout_stratum("b1", 4, "web", f->m[i].stratum, sizeof(f->m[i].stratum));
	}
	rollout_plan(&spec, f->m, N);
	for (size_t i = 0; i < N; i++) {
		report(f, i, T0 - 10 * MIN, "old", 1, 0, false);
		sm[i] = (struct store_member){ .host_id = f->m[i].host,
					       .stratum = f->m[i].stratum,
					       .position = f->m[i].position,
					       .wave = f->m[i].wave,
					       .prev_policy = "old",
					       .prev_version = 1 };
	}
	assert_int_equal(f->m[2].wave, 0);
	assert_int_equal(f->m[3].wave, 1);
	assert_int_equal(f->st->ops->rollout_add(f->st, "r", doc, T0 - MIN), 0);
	assert_int_equal(f->st->ops->rollout_start(f->st, &ro, sm, N, T0), 0);
}

/* How many rollouts the engine judged. */
static int tick(struct fleet *f, int64_t t)
{
	int r = engine_tick(f->st, t, NULL, heard, f);

	assert_true(r >= 0);
	return r;
}

static void expect_state(struct fleet *f, const char *state, unsigned wave)
{
	struct store_rollout ro;

	assert_int_equal(f->st->ops->rollout_get(f->st, "r", &ro), 0);
	assert_string_equal(rollout_state_name(ro.state), state);
	assert_int_equal(ro.wave, wave);
	store_rollout_clear(&ro);
}

static char *status(struct fleet *f)
{
	json_t *o = NULL;
	char *json;

	assert_int_equal(admin_json_rollout_status(f->st, "r", SIZE_MAX, &o), 0);
	json = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return json;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static void test_promotes(void **state)
{
	struct fleet f;
	char *json;

	(void)state;
	start(&f, spec_json);
	for (int64_t t = T0; t <= T0 + 60 * MIN; t += 10 * MIN)
		all_report(&f, t, 0, 0);
	/* baking: nothing to say yet */
	tick(&f, T0 + 30 * MIN);
	assert_string_equal(f.changes, "");
	expect_state(&f, "running", 0);
	/* baked: 3 canaries against 9 baselines, an hour each, no lockups */
	tick(&f, T0 + 61 * MIN);
	assert_string_equal(f.changes, "running>running:pass/ ");
	expect_state(&f, "running", 1);
	json = status(&f);
	assert_non_null(
		strstr(json, "\"strata\":{\"b1/cpus<=4/web\":{\"canaries\":3,\"baselines\":9}}"));
	assert_non_null(strstr(json, "\"scope\":\"all\""));
	assert_non_null(strstr(
		json, "\"canary\":{\"hosts\":3,\"events\":0,\"hard_lockups\":0,\"hours\":3.0,"
		      "\"hosts_capped\":0}"));
	assert_non_null(strstr(
		json, "\"baseline\":{\"hosts\":9,\"events\":0,\"hours\":9.0,\"hosts_capped\":0}"));
	/* each host the verdict names, with its numbers and role */
	assert_int_equal(count(json, "\"role\":\"canary\""), 3);
	assert_int_equal(count(json, "\"role\":\"baseline\""), 9);
	assert_non_null(strstr(json, "\"lockup_p\":1.0"));
	assert_non_null(strstr(json, "\"reason\":\"wave 1 passed: wave 2 started\""));
	free(json);
	/* the evidence is kept with the rollout: wave 1's final look made, its cell */
	{
		struct store_rollout ro;

		assert_int_equal(f.st->ops->rollout_get(f.st, "r", &ro), 0);
		assert_non_null(ro.evidence_json);
		assert_non_null(strstr(ro.evidence_json, "\"looked\":[[0,1.0]]"));
		assert_non_null(
			strstr(ro.evidence_json, "[[0,\"b1/cpus<=4/web\",0,3.0,0,9.0,0.0]]"));
		store_rollout_clear(&ro);
	}
	/* the last wave reaches all: health and data judge it */
	for (int64_t t = T0 + 70 * MIN; t <= T0 + 130 * MIN; t += 10 * MIN)
		all_report(&f, t, 0, 0);
	tick(&f, T0 + 100 * MIN);
	expect_state(&f, "running", 1);
	tick(&f, T0 + 122 * MIN);
	assert_string_equal(f.changes, "running>running:pass/ running>done:pass/ ");
	expect_state(&f, "done", 1);
	json = status(&f);
	assert_non_null(strstr(json, "\"scope\":\"last-wave\""));
	assert_int_equal(count(json, "\"verdict\":\"pass\""), 2);
	free(json);
	/* done is done */
	assert_int_equal(tick(&f, T0 + 200 * MIN), 0);
	assert_int_equal(count(f.changes, ">"), 2);
	f.st->ops->close(f.st);
}

static void test_holds(void **state)
{
	struct fleet f;
	char *json;

	(void)state;
	start(&f, spec_json);
	/* seven of the nine baselines are silent */
	for (int64_t t = T0; t <= T0 + 60 * MIN; t += 10 * MIN)
		all_report(&f, t, 5, N);
	tick(&f, T0 + 61 * MIN);
	assert_string_equal(f.changes, "running>holding:inconclusive/baselines ");
	expect_state(&f, "holding", 0);
	/* held for the same reason: no second verdict, also after a restart */
	tick(&f, T0 + 62 * MIN);
	f.st->ops->close(f.st);
	f.st = open_store();
	tick(&f, T0 + 63 * MIN);
	assert_string_equal(f.changes, "running>holding:inconclusive/baselines ");
	json = status(&f);
	assert_int_equal(count(json, "\"verdict\":"), 1);
	assert_non_null(strstr(json, "\"reason\":\"2 matched baselines reported, fewer than 3\""));
	free(json);
	/* the data comes: the held wave passes */
	for (int64_t t = T0 + 64 * MIN; t <= T0 + 74 * MIN; t += 5 * MIN)
		all_report(&f, t, 0, 0);
	tick(&f, T0 + 75 * MIN);
	expect_state(&f, "running", 1);
	assert_string_equal(f.changes,
			    "running>holding:inconclusive/baselines holding>running:pass/ ");
	f.st->ops->close(f.st);
}

static void test_rolls_back(void **state)
{
	char *json;
	struct fleet f;

	(void)state;
	/* six lockups on the canaries against none: the sequential test stops the wave early */
	start(&f, spec_json);
	for (int64_t t = T0; t <= T0 + 40 * MIN; t += 10 * MIN) {
		all_report(&f, t, 0, 3);
		for (size_t i = 0; i < 3; i++)
			report(&f, i, t, "new", 2, t == T0 + 20 * MIN || t == T0 + 40 * MIN, false);
	}
	tick(&f, T0 + 41 * MIN);
	assert_string_equal(f.changes, "running>rolling-back:fail/lockups-sequential ");
	json = status(&f);
	assert_non_null(strstr(json, "\"lr_threshold\":200.0"));
	free(json);
	f.st->ops->close(f.st);

	start(&f, spec_json);
	for (int64_t t = T0; t <= T0 + 60 * MIN; t += 10 * MIN) {
		all_report(&f, t, 0, 3);
		/* the canaries run the new policy, and two lock up */
		for (size_t i = 0; i < 3; i++)
			report(&f, i, t, "new", 2,
			       i < 2 && (t == T0 + 20 * MIN || t == T0 + 40 * MIN), false);
	}
	/* too few for the sequential test before the bake is over */
	tick(&f, T0 + 50 * MIN);
	assert_string_equal(f.changes, "");
	/* 4 in 3 canary host-hours against 0 in 9: p = (3/12)^4, at most 0.01 / 2 */
	tick(&f, T0 + 61 * MIN);
	assert_string_equal(f.changes, "running>rolling-back:fail/lockups ");
	json = status(&f);
	assert_non_null(strstr(json,
			       "\"reason\":\"lockups: 4 in 3 canary host-hours against 0 in 9 "
			       "(p = 0.00391, at most 0.005)\""));
	assert_non_null(strstr(json, "\"soft_lockups\":2"));
	free(json);
	/* the canaries are sent the old policy; the rollback ends when they run it */
	tick(&f, T0 + 62 * MIN);
	expect_state(&f, "rolling-back", 0);
	all_report(&f, T0 + 63 * MIN, 0, 2);
	tick(&f, T0 + 64 * MIN);
	expect_state(&f, "rolling-back", 0);
	all_report(&f, T0 + 65 * MIN, 0, 0);
	tick(&f, T0 + 66 * MIN);
	expect_state(&f, "rolled-back", 0);
	assert_string_equal(f.changes,
			    "running>rolling-back:fail/lockups rolling-back>rolled-back:-/- ");
	json = status(&f);
	assert_non_null(strstr(json, "every host it reached is back"));
	free(json);
	f.st->ops->close(f.st);
}

static void test_unhealthy_fails_early(void **state)
{
	struct fleet f;

	(void)state;
	start(&f, spec_json);
	all_report(&f, T0, 0, 0);
	report(&f, 1, T0 + 5 * MIN, "new", 2, 0, true);
	tick(&f, T0 + 6 * MIN);
	assert_string_equal(f.changes, "running>rolling-back:fail/health ");
	f.st->ops->close(f.st);
}

static void test_paused(void **state)
{
	struct store_rollout ro;
	struct fleet f;

	(void)state;
	start(&f, spec_json);
	for (int64_t t = T0; t <= T0 + 60 * MIN; t += 10 * MIN)
		all_report(&f, t, 0, 0);
	assert_int_equal(f.st->ops->rollout_get(f.st, "r", &ro), 0);
	ro.state = ROLLOUT_PAUSED;
	assert_int_equal(f.st->ops->rollout_update(f.st, &ro, NULL, T0 + 30 * MIN, NULL), 0);
	store_rollout_clear(&ro);
	tick(&f, T0 + 61 * MIN);
	expect_state(&f, "paused", 0);
	/* but an unhealthy canary still rolls it back */
	report(&f, 0, T0 + 62 * MIN, "new", 2, 0, true);
	tick(&f, T0 + 63 * MIN);
	assert_string_equal(f.changes, "paused>rolling-back:fail/health ");
	f.st->ops->close(f.st);
}

/* A rollout that says on_fail = pause: its failed wave pauses it, once, for the operator. */
static void test_fail_pauses(void **state)
{
	static const char doc[] =
		"{\"name\": \"r\", \"policy\": \"new\", \"version\": 2, \"selector\": {\"all\": true},"
		" \"waves\": [{\"count\": 3}, {\"percent\": 100}], \"bake_s\": 3600,"
		" \"holdback_percent\": 0, \"on_fail\": \"pause\","
		" \"gates\": {\"min_exposure_h\": 1, \"min_hosts\": 3, \"underpowered\": \"pass\"}}";
	struct store_rollout ro;
	struct fleet f;
	char *json, why[128];

	(void)state;
	start(&f, doc);
	for (int64_t t = T0; t <= T0 + 60 * MIN; t += 10 * MIN) {
		all_report(&f, t, 0, 3);
		for (size_t i = 0; i < 3; i++)
			report(&f, i, t, "new", 2,
			       i < 2 && (t == T0 + 20 * MIN || t == T0 + 40 * MIN), false);
	}
	tick(&f, T0 + 61 * MIN);
	assert_string_equal(f.changes, "running>paused:fail/lockups ");
	expect_state(&f, "paused", 0);
	/* it stays paused, the canaries on the new policy, with one verdict */
	tick(&f, T0 + 62 * MIN);
	tick(&f, T0 + 70 * MIN);
	assert_string_equal(f.changes, "running>paused:fail/lockups ");
	json = status(&f);
	assert_int_equal(count(json, "\"verdict\":\"fail\""), 1);
	assert_non_null(strstr(json, "paused (on_fail = pause)"));
	free(json);
	assert_int_equal(f.st->ops->rollout_get(f.st, "r", &ro), 0);
	assert_int_equal(rollout_state_target(ro.state), ROLLOUT_TARGET_POLICY);
	/* the operator decides: abort sends the hosts back */
	assert_int_equal(
		engine_transition(&ro, ROLLOUT_EV_ABORT, 2, T0 + 71 * MIN, why, sizeof(why)), 0);
	assert_string_equal(rollout_state_name(ro.state), "aborted");
	store_rollout_clear(&ro);
	f.st->ops->close(f.st);
}

/* A manual gate before wave 2: wave 1 passes and the rollout waits for a promote. */
static void test_manual_gate(void **state)
{
	static const char doc[] =
		"{\"name\": \"r\", \"policy\": \"new\", \"version\": 2, \"selector\": {\"all\": true},"
		" \"waves\": [{\"count\": 3}, {\"percent\": 100, \"manual\": true}], \"bake_s\": 3600,"
		" \"holdback_percent\": 0,"
		" \"gates\": {\"min_exposure_h\": 1, \"min_hosts\": 3, \"underpowered\": \"pass\"}}";
	struct store_rollout ro;
	struct fleet f;
	char *json, why[128];

	(void)state;
	start(&f, doc);
	for (int64_t t = T0; t <= T0 + 90 * MIN; t += 10 * MIN)
		all_report(&f, t, 0, 0);
	tick(&f, T0 + 61 * MIN);
	assert_string_equal(f.changes, "running>paused:pass/ ");
	expect_state(&f, "paused", 0);
	json = status(&f);
	assert_non_null(strstr(json, "wave 1 passed: wave 2 waits for kmemctl rollout promote"));
	free(json);
	/* waiting: later passes move nothing */
	tick(&f, T0 + 80 * MIN);
	tick(&f, T0 + 90 * MIN);
	assert_string_equal(f.changes, "running>paused:pass/ ");
	expect_state(&f, "paused", 0);
	/* resume is not the gate: the next pass waits again; promote starts wave 2 */
	assert_int_equal(f.st->ops->rollout_get(f.st, "r", &ro), 0);
	assert_int_equal(
		engine_transition(&ro, ROLLOUT_EV_PROMOTE, 2, T0 + 91 * MIN, why, sizeof(why)), 0);
	assert_string_equal(rollout_state_name(ro.state), "running");
	assert_int_equal(ro.wave, 1);
	store_rollout_clear(&ro);
	f.st->ops->close(f.st);
}

/* A manual gate on the first wave is refused: starting it is the operator's already. */
static void test_manual_first(void **state)
{
	static const char doc[] = "{\"name\": \"r\", \"policy\": \"new\", \"version\": 2,"
				  " \"selector\": {\"all\": true},"
				  " \"waves\": [{\"count\": 3, \"manual\": true}]}";
	static const char *const bad[] = {
		"{\"name\": \"r\", \"policy\": \"p\", \"version\": 1, \"selector\": {\"all\": true},"
		" \"waves\": [{\"count\": 3}], \"on_fail\": \"retry\"}",
		"{\"name\": \"r\", \"policy\": \"p\", \"version\": 1, \"selector\": {\"all\": true},"
		" \"waves\": [{\"count\": 3}], \"dry_run\": \"yes\"}",
		"{\"name\": \"r\", \"policy\": \"p\", \"version\": 1, \"selector\": {\"all\": true},"
		" \"waves\": [{\"count\": 3}, {\"count\": 5, \"manual\": 1}]}",
	};
	struct rollout_spec spec;
	char err[256];

	(void)state;
	assert_int_equal(rollout_spec_parse(doc, strlen(doc), &spec, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "waves[0].manual"));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(rollout_spec_parse(bad[i], strlen(bad[i]), &spec, err,
						    sizeof(err)),
				 -EINVAL);
}

/*
 * A pass for a kmemd whose lease another took (it stalled past it)
 * writes nothing and says so; for the holder, the same pass promotes.
 */
static void test_fenced(void **state)
{
	struct fleet f;

	(void)state;
	start(&f, spec_json);
	for (int64_t t = T0; t <= T0 + 60 * MIN; t += 10 * MIN)
		all_report(&f, t, 0, 0);
	assert_int_equal(f.st->ops->lease(f.st, "engine", "a:1:00", T0, 45000), 1);
	assert_int_equal(f.st->ops->lease(f.st, "engine", "b:2:00", T0 + MIN, 45000), 1);
	assert_int_equal(engine_tick(f.st, T0 + 61 * MIN, "a:1:00", heard, &f), -ENOLCK);
	assert_string_equal(f.changes, "");
	expect_state(&f, "running", 0);
	assert_int_equal(engine_tick(f.st, T0 + 61 * MIN, "b:2:00", heard, &f), 1);
	assert_string_equal(f.changes, "running>running:pass/ ");
	expect_state(&f, "running", 1);
	f.st->ops->close(f.st);
}

/* The canaries' vmap purges take 8 ms, the baselines' 1 ms: the latency gate fails the wave. */
static void test_latency(void **state)
{
	struct fleet f;
	char *json;

	(void)state;
	start(&f, spec_latency);
	for (size_t i = 0; i < N; i++)
		f.vmap_purge_ns[i] = i < 3 ? 8000000 : 1000000 + 1000 * i;
	for (int64_t t = T0; t <= T0 + 60 * MIN; t += 10 * MIN)
		all_report(&f, t, 0, 0);
	tick(&f, T0 + 61 * MIN);
	assert_string_equal(f.changes, "running>rolling-back:fail/latency ");
	json = status(&f);
	assert_non_null(
		strstr(json, "\"reason\":\"vmap-purge: canaries' p99 above the baselines'"));
	assert_non_null(strstr(json, "\"latency\":{\"vmap-purge\":{\"canaries\":3,\"baselines\":9,"
				     "\"p99\":{"));
	free(json);
	f.st->ops->close(f.st);

	/* no samples at all: held, never passed */
	start(&f, spec_latency);
	for (int64_t t = T0; t <= T0 + 60 * MIN; t += 10 * MIN)
		all_report(&f, t, 0, 0);
	tick(&f, T0 + 61 * MIN);
	assert_string_equal(f.changes, "running>holding:inconclusive/latency ");
	f.st->ops->close(f.st);
}

static json_t *side(json_t *o, size_t i)
{
	return json_array_get(json_object_get(json_object_get(o, "series"), "sides"), i);
}

static double total(json_t *a)
{
	double t = 0;
	size_t i;
	json_t *v;

	json_array_foreach(a, i, v) t += json_number_value(v);
	return t;
}

/* The p99 of n samples of ns each, as the store merges them. */
static json_int_t p99_of(uint64_t ns, unsigned n)
{
	struct hist h = { 0 };

	for (unsigned i = 0; i < n; i++)
		hist_record(&h, ns);
	return (json_int_t)hist_quantile(&h, 0.99);
}

static void test_series(void **state)
{
	json_int_t slow = p99_of(4000000, 3), fast = p99_of(100000, 9);
	json_t *o, *c, *b, *p99, *ev;
	struct fleet f;
	int64_t step;

	(void)state;
	start(&f, spec_latency);
	for (size_t i = 0; i < N; i++)
		f.vmap_purge_ns[i] = i < 3 ? 4000000 : 100000;
	for (int64_t t = T0; t <= T0 + 60 * MIN; t += 10 * MIN) {
		all_report(&f, t, 0, 3);
		for (size_t i = 0; i < 3; i++)
			report(&f, i, t, "new", 2, t == T0 + 20 * MIN || t == T0 + 40 * MIN, false);
	}
	/* the wave so far in 10 minute steps: 3 canaries against 9 baselines */
	assert_int_equal(series_rollout(f.st, "r", -1, 0, T0 + 60 * MIN + 1, 10 * MIN, 0, &o), 0);
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(o, "series"), "from_ms")), T0);
	assert_int_equal(json_array_size(json_object_get(json_object_get(o, "series"), "t")), 7);
	c = side(o, 0);
	b = side(o, 1);
	assert_string_equal(json_string_value(json_object_get(c, "name")), "canary");
	assert_int_equal(json_integer_value(json_object_get(c, "hosts")), 3);
	assert_int_equal(json_integer_value(json_object_get(b, "hosts")), 9);
	/* what the lockup gate counts: 6 lockups in 3 canary host-hours, 0 in 9 */
	assert_int_equal(total(json_object_get(c, "lockups")), 6);
	assert_int_equal(json_integer_value(json_array_get(json_object_get(c, "lockups"), 2)), 3);
	assert_int_equal(total(json_object_get(b, "lockups")), 0);
	assert_float_equal(total(json_object_get(c, "hours")), 3.0, 1e-9);
	assert_float_equal(total(json_object_get(b, "hours")), 9.0, 1e-9);
	/* the canaries' purges are the slow ones; a step without samples is null */
	p99 = json_object_get(json_object_get(json_object_get(c, "probes"), "vmap-purge"),
			      "p99_ns");
	assert_int_equal(json_integer_value(json_array_get(p99, 1)), slow);
	p99 = json_object_get(json_object_get(json_object_get(b, "probes"), "vmap-purge"),
			      "p99_ns");
	assert_int_equal(json_integer_value(json_array_get(p99, 1)), fast);
	assert_int_equal(
		json_integer_value(json_array_get(
			json_object_get(json_object_get(json_object_get(b, "probes"), "vmap-purge"),
					"count"),
			1)),
		9);
	json_decref(o);
	/* a baseline claiming a million purges a step counts as ten baselines, no more */
	f.vmap_purge_count[5] = 1000000;
	all_report(&f, T0 + 70 * MIN, 0, 3);
	assert_int_equal(series_rollout(f.st, "r", -1, 0, T0 + 80 * MIN, 10 * MIN, 0, &o), 0);
	assert_int_equal(
		json_integer_value(json_array_get(
			json_object_get(json_object_get(json_object_get(side(o, 1), "probes"),
							"vmap-purge"),
					"count"),
			7)),
		8 + 10);
	json_decref(o);
	f.vmap_purge_count[5] = 0;
	/* the default window is the wave's, up to now */
	assert_int_equal(series_rollout(f.st, "r", 0, 0, 0, 0, T0 + 60 * MIN + 1, &o), 0);
	assert_float_equal(total(json_object_get(side(o, 0), "hours")), 3.0, 1e-9);
	json_decref(o);
	assert_int_equal(series_rollout(f.st, "r", 1, 0, 0, 0, T0 + MIN, &o), -ERANGE);
	assert_int_equal(series_rollout(f.st, "nope", -1, 0, 0, 0, T0 + MIN, &o), -ENOENT);
	assert_int_equal(series_rollout(f.st, "r", -1, T0, T0, 0, 0, &o), -EINVAL);

	/* a host: from its first report, its newest event first, every probe it reports */
	assert_int_equal(series_host(f.st, f.m[0].host, 0, T0 + 61 * MIN, 6 * 60 * MIN, 0, 1, &o),
			 0);
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(o, "series"), "from_ms")),
		T0 - 10 * MIN);
	assert_int_equal(json_array_size(json_object_get(o, "events")), 1);
	ev = json_array_get(json_object_get(o, "events"), 0);
	assert_int_equal(json_integer_value(json_object_get(ev, "unix_ms")), T0 + 40 * MIN);
	assert_string_equal(json_string_value(json_object_get(ev, "kind")), "soft-lockup");
	assert_true(json_is_array(json_object_get(ev, "stack")));
	assert_int_equal(total(json_object_get(side(o, 0), "lockups")), 2);
	assert_string_equal(json_string_value(json_array_get(
				    json_object_get(json_object_get(o, "series"), "probes"), 0)),
			    "vmap-purge");
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(o, "host"), "host_id")),
		f.m[0].host);
	json_decref(o);
	assert_int_equal(series_host(f.st, "nobody", 0, T0, MIN, 0, 1, &o), -ENOENT);
	f.st->ops->close(f.st);

	/* about 60 steps; never more than 240, nor under a second */
	assert_int_equal(series_step(0, 3600000, 0, &step), 0);
	assert_int_equal(step, 60000);
	assert_int_equal(series_step(0, 100, 0, &step), 0);
	assert_int_equal(step, 1000);
	assert_int_equal(series_step(0, 2400000, 1, &step), 0);
	assert_int_equal(step, 10000);
	assert_int_equal(series_step(5, 5, 0, &step), -EINVAL);
}

struct pass {
	int heard, r;
};

static void on_pass(void *arg, int r, const char *store_error, double pass_s)
{
	struct pass *p = arg;

	(void)store_error;
	(void)pass_s;
	p->heard++;
	p->r = r;
}

/* The worker's changes go to the fleet, its ends to a pass: one argument for both. */
struct both {
	struct fleet *f;
	struct pass p;
};

static void heard_both(void *arg, const struct engine_change *c)
{
	heard(((struct both *)arg)->f, c);
}

static void on_pass_both(void *arg, int r, const char *store_error, double pass_s)
{
	on_pass(&((struct both *)arg)->p, r, store_error, pass_s);
}

/* A pass on the engine's thread, heard on the loop; none asked while it runs. */
static void test_worker(void **state)
{
	struct event_base *base = event_base_new();
	struct engine_worker *w;
	struct fleet f;
	struct both b = { .f = &f };
	char err[256];

	(void)state;
	assert_non_null(base);
	start(&f, spec_json);
	for (int64_t t = T0; t <= T0 + 60 * MIN; t += 10 * MIN)
		all_report(&f, t, 0, 0);
	assert_int_equal(engine_worker_new(base, f.st, NULL, heard_both, on_pass_both, &b, &w, err,
					   sizeof(err)),
			 0);
	assert_int_equal(engine_worker_tick(w, T0 + 61 * MIN), 0);
	assert_int_equal(engine_worker_tick(w, T0 + 62 * MIN), -EBUSY);
	/* nothing is heard before the loop runs */
	assert_string_equal(f.changes, "");
	while (!b.p.heard)
		assert_true(event_base_loop(base, EVLOOP_ONCE) >= 0);
	assert_int_equal(b.p.heard, 1);
	assert_int_equal(b.p.r, 1);
	assert_string_equal(f.changes, "running>running:pass/ ");
	expect_state(&f, "running", 1);
	/* the next pass may be asked for once this one is heard */
	assert_int_equal(engine_worker_tick(w, T0 + 62 * MIN), 0);
	engine_worker_free(w);
	/* a pass asked for is heard before the worker goes */
	assert_int_equal(b.p.heard, 2);
	event_base_free(base);
	f.st->ops->close(f.st);
}

/*
 * An operator pauses the rollout while a pass judges it: the pass's
 * update, made from what it read before, is refused and the pause stays;
 * the next pass sees the pause.
 */
static void test_moved_meanwhile(void **state)
{
	struct store_rollout engine, op, literal = { .name = "r", .state = ROLLOUT_RUNNING };
	struct fleet f;

	(void)state;
	start(&f, spec_json);
	assert_int_equal(f.st->ops->rollout_get(f.st, "r", &engine), 0);
	assert_int_equal(f.st->ops->rollout_get(f.st, "r", &op), 0);
	op.state = ROLLOUT_PAUSED;
	assert_int_equal(f.st->ops->rollout_update(f.st, &op, NULL, T0 + MIN, NULL), 0);
	/* what was written is what a second update by the same hand starts from */
	snprintf(op.reason, sizeof(op.reason), "paused by an operator");
	assert_int_equal(f.st->ops->rollout_update(f.st, &op, NULL, T0 + MIN, NULL), 0);
	engine.state = ROLLOUT_RUNNING;
	engine.wave = 1;
	assert_int_equal(f.st->ops->rollout_update(f.st, &engine, NULL, T0 + 2 * MIN, NULL),
			 -ESTALE);
	expect_state(&f, "paused", 0);
	/* a rollout not read is written as it is (the store's own tests, fixtures) */
	assert_int_equal(f.st->ops->rollout_update(f.st, &literal, NULL, T0 + 3 * MIN, NULL), 0);
	expect_state(&f, "running", 0);
	store_rollout_clear(&engine);
	store_rollout_clear(&op);
	f.st->ops->close(f.st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_promotes),
		cmocka_unit_test(test_holds),
		cmocka_unit_test(test_rolls_back),
		cmocka_unit_test(test_unhealthy_fails_early),
		cmocka_unit_test(test_paused),
		cmocka_unit_test(test_fenced),
		cmocka_unit_test(test_fail_pauses),
		cmocka_unit_test(test_manual_gate),
		cmocka_unit_test(test_manual_first),
		cmocka_unit_test(test_latency),
		cmocka_unit_test(test_series),
		cmocka_unit_test(test_worker),
		cmocka_unit_test(test_moved_meanwhile),
	};

	snprintf(path, sizeof(path), "%s/test-engine.sqlite", getenv("KMEM_TEST_TMP"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}

// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "evidence.h"
#include "gates.h"
#include "json-text.h"
#include "log.h"
#include "rollout.h"

#define FROM(s) (1u << ROLLOUT_##s)

/* Every allowed transition: the states each event may come from, and where it leads. */
static const struct {
	const char *name;
	bool action; /* an operator's; the others are the engine's */
	unsigned from; /* FROM() of each state it is allowed in */
	enum rollout_state to;
	bool advance; /* to the next wave in state to, or done after the last */
} transitions[ROLLOUT_NEVENTS] = {
	[ROLLOUT_EV_START] = { "start", true, FROM(PENDING), ROLLOUT_RUNNING, false },
	[ROLLOUT_EV_PAUSE] = { "pause", true, FROM(RUNNING) | FROM(HOLDING), ROLLOUT_PAUSED,
			       false },
	[ROLLOUT_EV_RESUME] = { "resume", true, FROM(PAUSED), ROLLOUT_RUNNING, false },
	[ROLLOUT_EV_PROMOTE] = { "promote", true, FROM(RUNNING) | FROM(HOLDING) | FROM(PAUSED),
				 ROLLOUT_RUNNING, true },
	[ROLLOUT_EV_ABORT] = { "abort", true,
			       FROM(PENDING) | FROM(RUNNING) | FROM(HOLDING) | FROM(PAUSED),
			       ROLLOUT_ABORTED, false },
	[ROLLOUT_EV_PASS] = { "pass", false, FROM(RUNNING) | FROM(HOLDING), ROLLOUT_RUNNING, true },
	[ROLLOUT_EV_HOLD] = { "hold", false, FROM(RUNNING) | FROM(HOLDING), ROLLOUT_HOLDING,
			      false },
	[ROLLOUT_EV_FAIL] = { "fail", false, FROM(RUNNING) | FROM(HOLDING) | FROM(PAUSED),
			      ROLLOUT_ROLLING_BACK, false },
	[ROLLOUT_EV_BACK] = { "finish rolling back", false, FROM(ROLLING_BACK), ROLLOUT_ROLLED_BACK,
			      false },
};

int engine_action(const char *name)
{
	for (int i = 0; i < ROLLOUT_NEVENTS; i++)
		if (transitions[i].action && !strcmp(name, transitions[i].name))
			return i;
	return -EINVAL;
}

int engine_transition(struct store_rollout *ro, enum rollout_event ev, size_t nwaves,
		      int64_t now_ms, char *why, size_t len)
{
	if (!(transitions[ev].from & (1u << ro->state))) {
		snprintf(why, len, "rollout %s is %s: it cannot %s", ro->name,
			 rollout_state_name(ro->state), transitions[ev].name);
		return -EBUSY;
	}
	if (transitions[ev].advance && ro->wave + 1 >= nwaves) {
		ro->state = ROLLOUT_DONE;
		return 0;
	}
	ro->state = transitions[ev].to;
	if (ev == ROLLOUT_EV_START)
		ro->wave = 0;
	else if (transitions[ev].advance)
		ro->wave++;
	else
		return 0;
	ro->wave_started_ms = now_ms;
	return 0;
}

int engine_add_member(void *arg, const struct store_member *sm)
{
	struct rollout_member *m = rollout_members_add(arg);

	if (!m)
		return -ENOMEM;
	snprintf(m->host, sizeof(m->host), "%s", sm->host_id);
	snprintf(m->stratum, sizeof(m->stratum), "%s", sm->stratum);
	m->wave = sm->wave;
	return 0;
}

/* What the gates are given, and the per-host numbers the verdict keeps. */
struct wave {
	struct gate_host *c, *b;
	size_t nc, nb;
	struct store_window *w; /* per member: the gate hosts point into it */
	json_t *hosts, *strata, *unmatched;
};

/* A host's numbers in a verdict: per probe p99 and max, null without samples. */
static json_t *host_json(const struct store_window *w, size_t nprobes, const char *role)
{
	json_t *p99 = json_array(), *max = json_array(), *o;

	for (size_t i = 0; i < nprobes; i++) {
		json_array_append_new(p99,
				      w->p99_ns[i] < 0 ? json_null() : json_real(w->p99_ns[i]));
		json_array_append_new(max,
				      w->max_ns[i] < 0 ? json_null() : json_real(w->max_ns[i]));
	}
	o = json_pack("{s:s, s:f, s:I, s:I, s:I, s:o, s:o}", "role", role, "hours", w->hours,
		      "soft_lockups", (json_int_t)w->soft_lockups, "hard_lockups",
		      (json_int_t)w->hard_lockups, "rcu_stalls", (json_int_t)w->rcu_stalls,
		      "p99_ns", p99, "max_ns", max);
	if (o && w->unhealthy[0])
		json_object_set_new(o, "unhealthy", json_text(w->unhealthy));
	return o;
}

/* Counts a member into its stratum's summary. */
static void stratum_count(json_t *strata, const struct rollout_member *m, const char *side)
{
	json_t *o = json_object_get(strata, m->stratum);

	if (!o) {
		o = json_pack("{s:i, s:i}", "canaries", 0, "baselines", 0);
		json_object_set_new(strata, m->stratum, o);
	}
	json_object_set_new(o, side,
			    json_integer(json_integer_value(json_object_get(o, side)) + 1));
}

/* The window of every canary, and of every matched baseline when they are compared. */
static int gather(struct store *st, const struct rollout_spec *s, const struct rollout_members *ms,
		  bool baselines, int64_t from, int64_t to, struct wave *wv)
{
	const char *probes[ROLLOUT_MAX_PROBES];
	size_t i;
	int r = 0;

	for (i = 0; i < s->gates.nprobes; i++)
		probes[i] = s->gates.latency_probes[i];
	wv->c = calloc(ms->n ?: 1, sizeof(*wv->c));
	wv->b = calloc(ms->n ?: 1, sizeof(*wv->b));
	wv->w = calloc(ms->n ?: 1, sizeof(*wv->w));
	wv->hosts = json_object();
	wv->strata = json_object();
	wv->unmatched = json_array();
	if (!wv->c || !wv->b || !wv->w || !wv->hosts || !wv->strata || !wv->unmatched)
		return -ENOMEM;
	for (i = 0; r == 0 && i < ms->n; i++) {
		const struct rollout_member *m = &ms->m[i];
		bool canary = m->role == ROLLOUT_CANARY || m->role == ROLLOUT_UNMATCHED;
		struct gate_host *g;

		if (!canary && !(baselines && m->role == ROLLOUT_BASELINE))
			continue;
		r = st->ops->window(st, m->host, from, to, probes, s->gates.nprobes, &wv->w[i]);
		if (r < 0)
			break;
		g = canary ? &wv->c[wv->nc++] : &wv->b[wv->nb++];
		*g = (struct gate_host){ .host = m->host,
					 .stratum = m->stratum,
					 .hours = wv->w[i].hours,
					 .soft_lockups = wv->w[i].soft_lockups,
					 .hard_lockups = wv->w[i].hard_lockups,
					 .rcu_stalls = wv->w[i].rcu_stalls,
					 .unhealthy = wv->w[i].unhealthy[0] ? wv->w[i].unhealthy :
									      NULL,
					 .unmatched = m->role == ROLLOUT_UNMATCHED };
		memcpy(g->p99_ns, wv->w[i].p99_ns, sizeof(g->p99_ns));
		memcpy(g->max_ns, wv->w[i].max_ns, sizeof(g->max_ns));
		json_object_set_new(wv->hosts, m->host,
				    host_json(&wv->w[i], s->gates.nprobes,
					      m->role == ROLLOUT_CANARY	   ? "canary" :
					      m->role == ROLLOUT_UNMATCHED ? "unmatched" :
									     "baseline"));
		if (m->role == ROLLOUT_UNMATCHED)
			json_array_append_new(wv->unmatched, json_text(m->host));
		else
			stratum_count(wv->strata, m, canary ? "canaries" : "baselines");
	}
	return r;
}

static void wave_free(struct wave *wv)
{
	free(wv->c);
	free(wv->b);
	free(wv->w);
	json_decref(wv->hosts);
	json_decref(wv->strata);
	json_decref(wv->unmatched);
}

static const char *const scope_names[] = { "health", "last-wave", "all" };

/*
 * A held wave's verdict is stored again only when another gate holds it
 * (its numbers change with every tick; its reason says them).
 */
static bool verdict_new(struct store *st, const struct store_rollout *ro,
			const struct store_verdict *v)
{
	char verdict[16], gate[32];
	unsigned wave;

	if (strcmp(v->verdict, "inconclusive"))
		return true;
	if (st->ops->verdict_last(st, ro->name, &wave, verdict, gate) < 0)
		return true;
	return wave != v->wave || strcmp(verdict, v->verdict) || strcmp(gate, v->gate);
}

static int commit(struct store *st, struct store_rollout *ro, enum rollout_state was,
		  const struct store_verdict *v, int64_t now, engine_cb cb, void *arg)
{
	struct engine_change c = { .ro = ro, .was = was, .v = v };
	int r = st->ops->rollout_update(st, ro, v, now);

	if (r == 0 && cb)
		cb(arg, &c);
	return r;
}

/* Hosts a rollback reached that do not run its target yet. */
struct pending {
	const struct store_rollout *ro;
	const struct rollout_spec *s;
	uint64_t n;
};

static int count_pending(void *arg, const struct store_member *m)
{
	struct pending *p = arg;
	const char *policy;
	uint64_t version;

	/* a revoked host (or one gone) runs nothing kmemd hands out */
	if (m->wave > p->ro->wave || !m->host || m->revoked ||
	    !rollout_rollback_target(p->s->rollback_policy, p->s->rollback_version, m->prev_policy,
				     m->prev_version, &policy, &version))
		return 0;
	if (!m->policy || strcmp(m->policy, policy) != 0 || m->version != (int64_t)version)
		p->n++;
	return 0;
}

/*
 * The rollback is over once every host it reached runs its target; until
 * then the members in a rollout's status say who does not.
 */
static int rolling_back(struct store *st, struct store_rollout *ro, const struct rollout_spec *s,
			int64_t now, engine_cb cb, void *arg)
{
	struct pending p = { .ro = ro, .s = s };
	char reason[sizeof(ro->reason)];
	int r = st->ops->members(st, ro->name, count_pending, &p);

	if (r < 0 || p.n)
		return r;
	r = engine_transition(ro, ROLLOUT_EV_BACK, 0, now, reason, sizeof(reason));
	if (r < 0)
		return r;
	snprintf(reason, sizeof(reason), "%.180s; every host it reached is back", ro->reason);
	snprintf(ro->reason, sizeof(ro->reason), "%s", reason);
	return commit(st, ro, ROLLOUT_ROLLING_BACK, NULL, now, cb, arg);
}

/* The evidence, when the gates changed it, goes with the rollout's row. */
static int evidence_keep(struct store_rollout *ro, const struct evidence *ev, bool changed)
{
	char *json;
	int r;

	if (!changed)
		return 0;
	r = evidence_to_json(ev, &json);
	if (r < 0)
		return r;
	free(ro->evidence_json);
	ro->evidence_json = json;
	return 0;
}

static int judge(struct store *st, struct store_rollout *ro, const struct rollout_spec *s,
		 struct evidence *ev, int64_t now, engine_cb cb, void *arg)
{
	struct rollout_members ms = { 0 };
	struct wave wv = { 0 };
	struct gate_result res = { 0 };
	struct gate_look look = { .wave = ro->wave,
				  .sequential = ro->state == ROLLOUT_RUNNING ||
						ro->state == ROLLOUT_HOLDING,
				  .detectable = true };
	struct store_verdict v = { .wave = ro->wave, .ts_ms = now };
	enum rollout_state was = ro->state;
	enum gate_scope scope;
	char *detail = NULL, why[320];
	unsigned wave = ro->wave;
	bool last = true, changed = evidence_wave(ev, ro->wave, ro->wave_started_ms);
	size_t i;
	int r;

	r = st->ops->members(st, ro->name, engine_add_member, &ms);
	if (r == 0)
		r = rollout_match(ms.m, ms.n, ro->wave);
	if (r < 0)
		goto out;
	for (i = 0; i < ms.n; i++)
		last &= ms.m[i].wave <= ro->wave;
	look.nlooks = evidence_nlooks(s, ms.n);
	if (ro->state == ROLLOUT_PAUSED ||
	    now < ro->wave_started_ms + (int64_t)s->waves[ro->wave].bake_ms)
		scope = GATES_HEALTH;
	else
		scope = last ? GATES_LAST_WAVE : GATES_ALL;
	/* baselines every tick: the sequential tests look at them from the wave's start */
	r = gather(st, s, &ms, !last && ro->state != ROLLOUT_PAUSED, ro->wave_started_ms, now, &wv);
	if (r == 0)
		r = gates_judge(&s->gates, ev, &look, wv.c, wv.nc, wv.b, wv.nb, scope, &res,
				&changed);
	if (r == 0)
		r = evidence_keep(ro, ev, changed);
	if (r < 0)
		goto out;
	/* nothing is wrong yet: the bake goes on */
	if (res.verdict == GATE_PASS && scope == GATES_HEALTH) {
		if (changed)
			r = st->ops->rollout_update(st, ro, NULL, now);
		goto out;
	}
	json_object_set_new(res.detail, "scope", json_string(scope_names[scope]));
	json_object_set_new(res.detail, "window",
			    json_pack("{s:I, s:I}", "from_ms", (json_int_t)ro->wave_started_ms,
				      "to_ms", (json_int_t)now));
	json_object_set(res.detail, "strata", wv.strata);
	json_object_set(res.detail, "unmatched", wv.unmatched);
	json_object_set(res.detail, "hosts", wv.hosts);
	detail = json_dumps(res.detail, JSON_COMPACT);
	if (!detail) {
		r = -ENOMEM;
		goto out;
	}
	v.verdict = gate_verdict_name(res.verdict);
	v.gate = res.gate;
	v.reason = res.reason;
	v.detail_json = detail;
	r = engine_transition(ro,
			      res.verdict == GATE_FAIL ? ROLLOUT_EV_FAIL :
			      res.verdict == GATE_PASS ? ROLLOUT_EV_PASS :
							 ROLLOUT_EV_HOLD,
			      s->nwaves, now, why, sizeof(why));
	if (r < 0)
		goto out;
	if (res.verdict == GATE_FAIL) {
		snprintf(ro->reason, sizeof(ro->reason), "wave %u failed: %.200s", wave + 1,
			 res.reason);
	} else if (ro->state == ROLLOUT_DONE) {
		snprintf(ro->reason, sizeof(ro->reason), "wave %u passed: done", wave + 1);
	} else if (res.verdict == GATE_PASS) {
		snprintf(ro->reason, sizeof(ro->reason), "wave %u passed: wave %u started",
			 wave + 1, ro->wave + 1);
	} else {
		char reason[sizeof(ro->reason)];

		snprintf(reason, sizeof(reason), "wave %u held: %.200s", wave + 1, res.reason);
		if (!verdict_new(st, ro, &v)) {
			/* the same hold, with this tick's numbers in its reason */
			if (strcmp(reason, ro->reason) || changed) {
				snprintf(ro->reason, sizeof(ro->reason), "%s", reason);
				r = st->ops->rollout_update(st, ro, NULL, now);
			}
			goto out;
		}
		snprintf(ro->reason, sizeof(ro->reason), "%s", reason);
	}
	r = commit(st, ro, was, &v, now, cb, arg);
out:
	free(detail);
	json_decref(res.detail);
	wave_free(&wv);
	free(ms.m);
	return r;
}

static int step(struct store *st, const char *name, int64_t now, engine_cb cb, void *arg)
{
	struct store_rollout ro;
	struct rollout_spec *s = malloc(sizeof(*s));
	struct evidence ev = { 0 };
	char err[256];
	int r = s ? st->ops->rollout_get(st, name, &ro) : -ENOMEM;

	if (r < 0) {
		free(s);
		return r;
	}
	/* kept documents were checked when created */
	if (rollout_spec_parse(ro.spec_json, strlen(ro.spec_json), s, err, sizeof(err)) < 0 ||
	    ro.wave >= s->nwaves) {
		r = log_error_errno(-EINVAL, "rollout %s is not judged: its stored document: %s",
				    name, ro.wave >= s->nwaves ? "no such wave" : err);
	} else if (ro.state == ROLLOUT_ROLLING_BACK) {
		r = rolling_back(st, &ro, s, now, cb, arg);
	} else if (ro.evidence_json &&
		   evidence_from_json(ro.evidence_json, strlen(ro.evidence_json), &ev, err,
				      sizeof(err)) < 0) {
		/* an edited copy in the store is refused, as a document would be */
		r = log_error_errno(-EINVAL, "rollout %s is not judged: its stored evidence: %s",
				    name, err);
	} else {
		r = judge(st, &ro, s, &ev, now, cb, arg);
	}
	evidence_free(&ev);
	store_rollout_clear(&ro);
	free(s);
	/* moved meanwhile (an operator, or another kmemd): judged again next tick, as it now stands */
	return r == -ESTALE ? 0 : r;
}

struct names {
	char (*name)[STORE_ID_MAX];
	size_t n, cap;
};

static int add_name(void *arg, const char *name)
{
	struct names *ns = arg;

	if (ns->n == ns->cap) {
		size_t cap = ns->cap ? ns->cap * 2 : 8;
		char(*p)[STORE_ID_MAX] = realloc(ns->name, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		ns->name = p;
		ns->cap = cap;
	}
	snprintf(ns->name[ns->n++], STORE_ID_MAX, "%s", name);
	return 0;
}

int engine_tick(struct store *st, int64_t now_ms, engine_cb cb, void *arg)
{
	struct names ns = { 0 };
	int r = st->ops->rollouts_active(st, add_name, &ns), first = r;

	for (size_t i = 0; r == 0 && i < ns.n; i++) {
		int e = step(st, ns.name[i], now_ms, cb, arg);

		if (e < 0 && !first)
			first = e;
	}
	free(ns.name);
	return first < 0 ? first : (int)ns.n;
}

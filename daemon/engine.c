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
#include "macro.h"
#include "policydoc.h"
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
	[ROLLOUT_EV_FAIL_PAUSE] = { "fail and pause", false, FROM(RUNNING) | FROM(HOLDING),
				    ROLLOUT_PAUSED, false },
	[ROLLOUT_EV_PASS_WAIT] = { "pass and wait", false, FROM(RUNNING) | FROM(HOLDING),
				   ROLLOUT_PAUSED, false },
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

/* What the gates are given, and the per-stratum counts the verdict keeps. */
struct wave {
	struct gate_host *c, *b;
	size_t nc, nb, nunmatched;
	struct store_window *w; /* per host judged: the gate hosts point into it */
	char (*waiting)[POLICY_ID_MAX + 1]; /* likewise: what each waits for (gate_host's) */
	json_t *strata, *unmatched;
};

/* A host's numbers in a verdict: per probe p99 and max, null without samples. */
static json_t *host_json(const struct gate_host *g, size_t nprobes, const char *role)
{
	json_t *p99 = json_array(), *max = json_array(), *o;

	for (size_t i = 0; i < nprobes; i++) {
		json_array_append_new(p99,
				      g->p99_ns[i] < 0 ? json_null() : json_real(g->p99_ns[i]));
		json_array_append_new(max,
				      g->max_ns[i] < 0 ? json_null() : json_real(g->max_ns[i]));
	}
	o = json_pack("{s:s, s:f, s:I, s:I, s:I, s:o, s:o}", "role", role, "hours", g->hours,
		      "soft_lockups", json_count(g->soft_lockups), "hard_lockups",
		      json_count(g->hard_lockups), "rcu_stalls", json_count(g->rcu_stalls),
		      "p99_ns", p99, "max_ns", max);
	if (o && g->unhealthy)
		json_object_set_new(o, "unhealthy", json_text(g->unhealthy));
	return o;
}

/* The numbers of each host the verdict names (detail's canaries, baselines, unmatched). */
static json_t *named_hosts(json_t *detail, const struct wave *wv, size_t nprobes)
{
	static const char *const lists[] = { "canaries", "baselines", "unmatched" };
	json_t *named = json_object(), *hosts = json_object(), *v;
	size_t i, k;

	if (!named || !hosts) {
		json_decref(named);
		json_decref(hosts);
		return NULL;
	}
	for (k = 0; k < ARRAY_SIZE(lists); k++)
		json_array_foreach(json_object_get(detail, lists[k]), i, v)
			json_object_set(named, json_string_value(v), json_true());
	for (i = 0; i < wv->nc + wv->nb; i++) {
		const struct gate_host *g = i < wv->nc ? &wv->c[i] : &wv->b[i - wv->nc];

		if (json_object_get(named, g->host))
			json_object_set_new(hosts, g->host,
					    host_json(g, nprobes,
						      i >= wv->nc  ? "baseline" :
						      g->unmatched ? "unmatched" :
								     "canary"));
	}
	json_decref(named);
	return hosts;
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

/*
 * The first mitigation of waiting (a host's window's JSON array) that doc
 * turns on (doc NULL: any), into out; false when there is none.
 */
static bool waits_for(const char *waiting, const struct policy_doc *doc, char *out, size_t len)
{
	json_t *a = waiting[0] ? json_loads(waiting, 0, NULL) : NULL;
	bool found = false;

	for (size_t i = 0; !found && i < json_array_size(a); i++) {
		const char *m = json_string_value(json_array_get(a, i));
		size_t j = 0;

		while (m && doc && j < doc->nmitigations &&
		       (doc->mitigations[j].mode != POLICY_MODE_ON ||
			strcmp(doc->mitigations[j].id, m)))
			j++;
		found = m && (!doc || j < doc->nmitigations);
		if (found)
			snprintf(out, len, "%s", m);
	}
	json_decref(a);
	return found;
}

/*
 * The rollout's policy document, to know what it turns on; NULL (any
 * mitigation counts) when it cannot be read, logged.
 */
static struct policy_doc *policy_of(struct store *st, const struct rollout_spec *s)
{
	struct policy_doc *doc = malloc(sizeof(*doc));
	struct store_policy p;
	char err[256] = "out of memory";
	int r = doc ? st->ops->policy_get(st, s->policy, s->version, &p) : -ENOMEM;

	if (r == 0) {
		r = policy_doc_parse(p.document_json, strlen(p.document_json), doc, err,
				     sizeof(err));
		store_policy_clear(&p);
	} else if (r != -ENOMEM) {
		snprintf(err, sizeof(err), "%s", st->ops->error(st));
	}
	if (r < 0) {
		log_warning(
			"rollout %s: policy %s version %llu not read (%s): canaries waiting for "
			"any build record hold its waves",
			s->name, s->policy, (unsigned long long)s->version, err);
		free(doc);
		return NULL;
	}
	return doc;
}

/* The window of every canary, and of every matched baseline when they are compared. */
static int gather(struct store *st, const struct rollout_spec *s, const struct rollout_members *ms,
		  bool baselines, int64_t from, int64_t to, struct wave *wv)
{
	_cleanup_free_ struct policy_doc *doc = policy_of(st, s);
	const char *probes[ROLLOUT_MAX_PROBES];
	const char **hosts;
	size_t i, n = 0, *at;
	int r = 0;

	for (i = 0; i < s->gates.nprobes; i++)
		probes[i] = s->gates.latency_probes[i];
	wv->c = calloc(ms->n ?: 1, sizeof(*wv->c));
	wv->b = calloc(ms->n ?: 1, sizeof(*wv->b));
	wv->w = calloc(ms->n ?: 1, sizeof(*wv->w));
	wv->waiting = calloc(ms->n ?: 1, sizeof(*wv->waiting));
	hosts = calloc(ms->n ?: 1, sizeof(*hosts));
	at = calloc(ms->n ?: 1, sizeof(*at));
	wv->strata = json_object();
	wv->unmatched = json_array();
	if (!wv->c || !wv->b || !wv->w || !wv->waiting || !hosts || !at || !wv->strata ||
	    !wv->unmatched) {
		r = -ENOMEM;
		goto out;
	}
	/* the members judged, read in one call: w[k] is member at[k]'s */
	for (i = 0; i < ms->n; i++) {
		const struct rollout_member *m = &ms->m[i];

		if (m->role == ROLLOUT_CANARY || m->role == ROLLOUT_UNMATCHED ||
		    (baselines && m->role == ROLLOUT_BASELINE)) {
			hosts[n] = m->host;
			at[n++] = i;
		}
	}
	r = st->ops->window(st, hosts, n, from, to, probes, s->gates.nprobes, wv->w);
	for (size_t k = 0; r == 0 && k < n; k++) {
		const struct rollout_member *m = &ms->m[at[k]];
		const struct store_window *w = &wv->w[k];
		bool canary = m->role != ROLLOUT_BASELINE;
		struct gate_host *g = canary ? &wv->c[wv->nc++] : &wv->b[wv->nb++];

		*g = (struct gate_host){ .host = m->host,
					 .stratum = m->stratum,
					 .hours = w->hours,
					 .soft_lockups = w->soft_lockups,
					 .hard_lockups = w->hard_lockups,
					 .rcu_stalls = w->rcu_stalls,
					 .unhealthy = w->unhealthy[0] ? w->unhealthy : NULL,
					 .unmatched = m->role == ROLLOUT_UNMATCHED };
		if (canary && waits_for(w->waiting, doc, wv->waiting[k], sizeof(wv->waiting[k]))) {
			g->waiting = wv->waiting[k];
			g->release = w->release;
		}
		memcpy(g->p99_ns, w->p99_ns, sizeof(g->p99_ns));
		memcpy(g->max_ns, w->max_ns, sizeof(g->max_ns));
		if (m->role == ROLLOUT_UNMATCHED && wv->nunmatched++ < GATES_HOSTS_NAMED)
			json_array_append_new(wv->unmatched, json_text(m->host));
		else if (m->role != ROLLOUT_UNMATCHED)
			stratum_count(wv->strata, m, canary ? "canaries" : "baselines");
	}
out:
	free(hosts);
	free(at);
	return r;
}

static void wave_free(struct wave *wv)
{
	free(wv->c);
	free(wv->b);
	free(wv->w);
	free(wv->waiting);
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

/* One pass: its store, time and lease holder, and whom it tells of changes. */
struct pass {
	struct store *st;
	int64_t now;
	const char *engine;
	engine_cb cb;
	void *arg;
};

/* A write of the pass: none once its kmemd's lease has gone to another. */
static int pass_write(const struct pass *p, struct store_rollout *ro, const struct store_verdict *v)
{
	return p->st->ops->rollout_update(p->st, ro, v, p->now, p->engine);
}

static int commit(const struct pass *p, struct store_rollout *ro, enum rollout_state was,
		  const struct store_verdict *v)
{
	struct engine_change c = { .ro = ro, .was = was, .v = v };
	int r = pass_write(p, ro, v);

	if (r == 0 && p->cb)
		p->cb(p->arg, &c);
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
static int rolling_back(const struct pass *ps, struct store_rollout *ro,
			const struct rollout_spec *s)
{
	struct pending p = { .ro = ro, .s = s };
	char reason[sizeof(ro->reason)];
	int r = ps->st->ops->members(ps->st, ro->name, count_pending, &p);

	if (r < 0 || p.n)
		return r;
	r = engine_transition(ro, ROLLOUT_EV_BACK, 0, ps->now, reason, sizeof(reason));
	if (r < 0)
		return r;
	snprintf(reason, sizeof(reason), "%.180s; every host it reached is back", ro->reason);
	snprintf(ro->reason, sizeof(ro->reason), "%s", reason);
	return commit(ps, ro, ROLLOUT_ROLLING_BACK, NULL);
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

static int judge(const struct pass *p, struct store_rollout *ro, const struct rollout_spec *s,
		 struct evidence *ev)
{
	struct store *st = p->st;
	int64_t now = p->now;
	struct rollout_members ms = { 0 };
	struct wave wv = { 0 };
	struct gate_result res = { 0 };
	struct gate_look look = { .wave = ro->wave,
				  .sequential = ro->state == ROLLOUT_RUNNING ||
						ro->state == ROLLOUT_HOLDING,
				  .detectable = true };
	struct store_verdict v = { .wave = ro->wave, .ts_ms = now };
	enum rollout_state was = ro->state;
	enum rollout_event e;
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
			r = pass_write(p, ro, NULL);
		goto out;
	}
	json_object_set_new(res.detail, "scope", json_string(scope_names[scope]));
	json_object_set_new(res.detail, "window",
			    json_pack("{s:I, s:I}", "from_ms", (json_int_t)ro->wave_started_ms,
				      "to_ms", (json_int_t)now));
	json_object_set(res.detail, "strata", wv.strata);
	json_object_set(res.detail, "unmatched", wv.unmatched);
	json_object_set_new(res.detail, "unmatched_hosts", json_integer((json_int_t)wv.nunmatched));
	json_object_set_new(res.detail, "hosts", named_hosts(res.detail, &wv, s->gates.nprobes));
	detail = json_dumps(res.detail, JSON_COMPACT);
	if (!detail) {
		r = -ENOMEM;
		goto out;
	}
	v.verdict = gate_verdict_name(res.verdict);
	v.gate = res.gate;
	v.reason = res.reason;
	v.detail_json = detail;
	e = res.verdict == GATE_FAIL ? ROLLOUT_EV_FAIL :
	    res.verdict == GATE_PASS ? ROLLOUT_EV_PASS :
				       ROLLOUT_EV_HOLD;
	/* paused by its failure already: it waits for the operator, its first verdict kept */
	if (e == ROLLOUT_EV_FAIL && s->on_fail_pause && ro->state == ROLLOUT_PAUSED)
		goto out;
	if (e == ROLLOUT_EV_FAIL && s->on_fail_pause)
		e = ROLLOUT_EV_FAIL_PAUSE;
	if (e == ROLLOUT_EV_PASS && wave + 1 < s->nwaves && s->waves[wave + 1].manual)
		e = ROLLOUT_EV_PASS_WAIT;
	r = engine_transition(ro, e, s->nwaves, now, why, sizeof(why));
	if (r < 0)
		goto out;
	if (e == ROLLOUT_EV_FAIL_PAUSE) {
		snprintf(ro->reason, sizeof(ro->reason),
			 "wave %u failed, paused (on_fail = pause): %.150s; promote, resume or "
			 "abort",
			 wave + 1, res.reason);
	} else if (e == ROLLOUT_EV_PASS_WAIT) {
		snprintf(ro->reason, sizeof(ro->reason),
			 "wave %u passed: wave %u waits for kmemctl rollout promote", wave + 1,
			 wave + 2);
	} else if (res.verdict == GATE_FAIL) {
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
				r = pass_write(p, ro, NULL);
			}
			goto out;
		}
		snprintf(ro->reason, sizeof(ro->reason), "%s", reason);
	}
	r = commit(p, ro, was, &v);
out:
	free(detail);
	json_decref(res.detail);
	wave_free(&wv);
	free(ms.m);
	return r;
}

static int step(const struct pass *p, const char *name)
{
	struct store *st = p->st;
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
		r = rolling_back(p, &ro, s);
	} else if (ro.evidence_json &&
		   evidence_from_json(ro.evidence_json, strlen(ro.evidence_json), &ev, err,
				      sizeof(err)) < 0) {
		/* an edited copy in the store is refused, as a document would be */
		r = log_error_errno(-EINVAL, "rollout %s is not judged: its stored evidence: %s",
				    name, err);
	} else {
		r = judge(p, &ro, s, &ev);
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

int engine_tick(struct store *st, int64_t now_ms, const char *engine, engine_cb cb, void *arg)
{
	const struct pass p = { .st = st, .now = now_ms, .engine = engine, .cb = cb, .arg = arg };
	struct names ns = { 0 };
	int r = st->ops->rollouts_active(st, add_name, &ns), first = r;

	for (size_t i = 0; r == 0 && i < ns.n; i++) {
		int e = step(&p, ns.name[i]);

		if (e < 0 && !first)
			first = e;
		/* another kmemd runs the engine now: the rest is its to judge */
		if (e == -ENOLCK)
			break;
	}
	free(ns.name);
	return first < 0 ? first : (int)ns.n;
}

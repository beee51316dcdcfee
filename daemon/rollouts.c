// SPDX-License-Identifier: GPL-2.0
/*
 * The rollout admin API (docs/rollouts.md): create one, list them, and the
 * operator's actions. Starting one makes its members and wave plan; the
 * hosts of each wave reached get its policy with their next report.
 */
#include <errno.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin-json.h"
#include "desired.h"
#include "engine-worker.h"
#include "engine.h"
#include "evidence.h"
#include "gates.h"
#include "log.h"
#include "notify.h"
#include "macro.h"
#include "message-ids.h"
#include "policydoc.h"
#include "requests.h"
#include "rollout.h"
#include "server.h"
#include "store.h"
#include "text.h"

/* The version exists and carries an operator's signature: agents take nothing else. */
static int signed_policy(struct kmemd *k, const char *name, uint64_t version, char *why, size_t len)
{
	struct store_policy p;
	int r = k->store->ops->policy_get(k->store, name, version, &p);

	if (r < 0) {
		snprintf(why, len, "no policy %s version %llu", name, (unsigned long long)version);
		return r;
	}
	r = p.bundle ? 0 : -EPERM;
	if (r < 0)
		snprintf(why, len,
			 "policy %s version %llu is unsigned: agents run signed policies only",
			 name, (unsigned long long)version);
	if (r == 0 && p.retired_ms != STORE_NULL) {
		snprintf(why, len, "policy %s version %llu is retired", name,
			 (unsigned long long)version);
		r = -EPERM;
	}
	store_policy_clear(&p);
	return r;
}

/*
 * Whether rolling back to name@version undoes what the rollout's policy
 * changes: a mitigation it does not mention would stay as the rollout set
 * it. -EPERM with why; -ENOENT for a version kmemd does not have.
 */
static int undoes(struct kmemd *k, const struct rollout_spec *s, const char *name, uint64_t version,
		  char *why, size_t len)
{
	_cleanup_(store_policy_clear) struct store_policy p = { 0 };
	_cleanup_(store_policy_clear) struct store_policy b = { 0 };
	_cleanup_free_ struct policy_doc *d = malloc(2 * sizeof(*d));
	char err[160];
	int r = d ? k->store->ops->policy_get(k->store, s->policy, s->version, &p) : -ENOMEM;

	if (r == 0)
		r = k->store->ops->policy_get(k->store, name, version, &b);
	if (r == -ENOENT)
		snprintf(why, len, "kmemd has no policy %s version %llu to roll back to", name,
			 (unsigned long long)version);
	/* stored documents were checked when uploaded */
	if (r == 0 && (policy_doc_parse(p.document_json, strlen(p.document_json), &d[0], err,
					sizeof(err)) < 0 ||
		       policy_doc_parse(b.document_json, strlen(b.document_json), &d[1], err,
					sizeof(err)) < 0))
		r = -EIO;
	if (r == 0 && policy_doc_undoes(&d[0], &d[1], err, sizeof(err)) < 0) {
		snprintf(why, len,
			 "rolling back to %s version %llu would not undo %s version %llu: %s there",
			 name, (unsigned long long)version, s->policy,
			 (unsigned long long)s->version, err);
		r = -EPERM;
	}
	return r;
}

/* The hosts the rollout's selector picks now, with what each runs. */
struct members {
	const struct rollout_spec *s;
	struct rollout_members list;
	char why[320]; /* a host rollback could not reach */
};

static int collect(void *arg, const Kmemctl__V1__HostFacts *f, const char *policy, uint64_t version)
{
	struct members *ms = arg;
	struct rollout_member *m;
	const char *role = "";
	size_t i;

	if (!selector_match(&ms->s->selector, f))
		return 0;
	m = rollout_members_add(&ms->list);
	if (!m)
		return -ENOMEM;
	for (i = 0; i < f->n_labels; i++)
		if (!strcmp(f->labels[i]->key, "role"))
			role = f->labels[i]->value;
	snprintf(m->host, sizeof(m->host), "%s", f->host_id);
	rollout_stratum(f->kernel_build_id, f->online_cpus, role, m->stratum, sizeof(m->stratum));
	snprintf(m->prev_policy, sizeof(m->prev_policy), "%s", policy ?: "");
	m->prev_version = version;
	/*
	 * Without a rollback version, rollback sends each host what it ran:
	 * there must be something, under another name (an agent refuses an
	 * older version of the policy it runs).
	 */
	if (!ms->s->rollback_policy[0] && !ms->why[0] &&
	    (!m->prev_policy[0] || !strcmp(m->prev_policy, ms->s->policy)))
		snprintf(ms->why, sizeof(ms->why),
			 "host %s runs %s: without a \"rollback\" policy it could not be rolled "
			 "back",
			 m->host, m->prev_policy[0] ? "the rollout's policy" : "no policy");
	return 0;
}

/* The fleet's lockup rate per stratum over this before a rollout starts: its final looks' prior. */
#define HISTORY_MS (7 * 86400 * 1000LL)

/* Each member's lockups and host-hours before now, by stratum, as the evidence's history. */
static int history(struct kmemd *k, const struct rollout_members *ms, int64_t now,
		   struct evidence *ev)
{
	struct store_window *w = calloc(ms->n ?: 1, sizeof(*w));
	const char **hosts = calloc(ms->n ?: 1, sizeof(*hosts));
	int r = w && hosts ? 0 : -ENOMEM;
	size_t i;

	for (i = 0; r == 0 && i < ms->n; i++)
		hosts[i] = ms->m[i].host;
	if (r == 0)
		r = k->store->ops->window(k->store, hosts, ms->n, now - HISTORY_MS, now, NULL, 0,
					  w);
	for (i = 0; r == 0 && i < ms->n; i++)
		r = evidence_history_add(
			ev, ms->m[i].stratum,
			(double)(w[i].soft_lockups + w[i].hard_lockups + w[i].rcu_stalls),
			w[i].hours);
	free(w);
	free(hosts);
	return r;
}

/*
 * What start, create and a plan know of a rollout before it starts: the
 * hosts its selector picks now in plan order, and the fleet's lockup rate
 * per stratum before now in ev. -EIO, -ENOMEM or 0; ms->list.m to free.
 */
static int select_members(struct kmemd *k, struct members *ms, int64_t now, struct evidence *ev)
{
	int r = k->store->ops->host_facts(k->store, collect, ms);

	if (r < 0)
		return r;
	rollout_plan(ms->s, ms->list.m, ms->list.n);
	return history(k, &ms->list, now, ev);
}

/* JSON for a number that may be infinite: null then. */
static json_t *json_finite(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

/* A wave that cannot detect the declared ratio with the declared power in its bake. */
static json_t *wave_warning(const struct rollout_spec *s, size_t k,
			    const struct evidence_plan_wave *w)
{
	const struct rollout_gates *g = &s->gates;
	char can[48], bake[16], need[16];

	if (isfinite(w->detectable))
		snprintf(can, sizeof(can), "%.1fx", w->detectable);
	else
		snprintf(can, sizeof(can), "no ratio up to 1000x");
	text_duration(w->bake_s, bake, sizeof(bake));
	if (!isfinite(w->bake_needed_s))
		return json_sprintf("wave %zu (%zu canaries, bake %s) can detect %s, not %gx, with "
				    "power %g, and no bake would: %s",
				    k + 1, w->canaries, bake, can, g->detect_ratio, g->power,
				    g->underpowered == ROLLOUT_UNDERPOWERED_PASS ?
					    "it passes undetected" :
					    "it is held until an operator promotes it");
	return json_sprintf("wave %zu (%zu canaries, bake %s) can detect %s, not %gx, with power "
			    "%g: it needs a bake of %s, or it %s",
			    k + 1, w->canaries, bake, can, g->detect_ratio, g->power,
			    text_duration(w->bake_needed_s, need, sizeof(need)),
			    g->underpowered == ROLLOUT_UNDERPOWERED_PASS ? "passes undetected" :
									   "is held until then");
}

/*
 * What each wave of s can detect over the members ms (planned) at the
 * fleet's rates in ev, and what the plan cannot do, as the replies of
 * plan, create and start carry it. NULL when out of memory.
 */
static json_t *plan_json(const struct rollout_spec *s, const struct members *ms,
			 const struct evidence *ev)
{
	const struct rollout_gates *g = &s->gates;
	size_t n = ms->list.n, looks = evidence_nlooks(s, n);
	double alpha = gates_alpha(g->lockup_alpha, false, looks), reach = 1;
	struct evidence_plan_wave w[ROLLOUT_MAX_WAVES + 1];
	json_t *o, *waves = json_array(), *rates = json_object(), *warnings = json_array();
	char why[320];

	if (!waves || !rates || !warnings || evidence_plan(s, ms->list.m, n, ev, w) < 0) {
		json_decref(waves);
		json_decref(rates);
		json_decref(warnings);
		return NULL;
	}
	if (!n)
		json_array_append_new(warnings,
				      json_string("no host matches the rollout's selector"));
	if (n && rollout_wave_empty(s, n, why, sizeof(why)) >= 0)
		json_array_append_new(warnings, json_string(why));
	if (ms->why[0])
		json_array_append_new(warnings, json_string(ms->why));
	for (size_t k = 0; k < s->nwaves; k++) {
		json_array_append_new(
			waves,
			json_pack("{s:i, s:I, s:I, s:f, s:f, s:o, s:o, s:o, s:b}", "wave",
				  (int)k + 1, "canaries", (json_int_t)w[k].canaries, "baselines",
				  (json_int_t)w[k].baselines, "bake_s", w[k].bake_s,
				  "mu0_at_bake_end", w[k].mu0, "mu_needed",
				  json_finite(w[k].mu_needed), "detectable_ratio",
				  json_finite(w[k].detectable), "bake_needed_s",
				  json_finite(w[k].bake_needed_s), "final_look", w[k].looked));
		if (!w[k].looked)
			continue;
		/* a bad policy must pass every look: the likeliest to miss it bounds them all */
		reach = fmin(reach,
			     1 - stats_rate_power(g->detect_ratio, w[k].mu0, w[k].rho, alpha));
		if (w[k].mu0 < w[k].mu_needed)
			json_array_append_new(warnings, wave_warning(s, k, &w[k]));
	}
	for (size_t i = 0; i < ev->nhistory; i++) {
		const struct evidence_history *h = &ev->history[i];

		json_object_set_new(
			rates, h->stratum,
			json_pack("{s:f, s:f, s:o}", "events", h->events, "hours", h->hours,
				  "per_host_hour",
				  json_finite(h->hours > 0 ? h->events / h->hours : NAN)));
		if (h->events == 0)
			json_array_append_new(
				warnings,
				json_sprintf("stratum %s had no lockups in the 7 days before: its "
					     "canaries cannot show a ratio",
					     h->stratum));
	}
	o = json_pack("{s:f, s:f, s:f, s:o, s:o, s:f, s:o}", "detect_ratio", g->detect_ratio,
		      "power", g->power, "alpha_look", alpha, "waves", waves, "rates", rates,
		      "p_reach_all_at_most", reach, "warnings", warnings);
	return o;
}

/* The request's rollout document (malloc'ed); NULL with 415, 400 or 500 sent. */
static struct rollout_spec *request_spec(struct http_request *req)
{
	struct rollout_spec *s;
	const uint8_t *body;
	char why[320];
	size_t len;

	body = request_json(req, &len);
	if (!body)
		return NULL;
	s = malloc(sizeof(*s));
	if (!s) {
		reply_error(req, HTTP_INTERNAL, "Internal Server Error", "out of memory");
		return NULL;
	}
	if (rollout_spec_parse((const char *)body, len, s, why, sizeof(why)) < 0) {
		reply_error(req, HTTP_BADREQUEST, "Bad Request", why);
		free(s);
		return NULL;
	}
	return s;
}

/* POST /v1/rollouts/plan: what a rollout document could detect if it started now. */
void handle_rollouts_plan(struct http_request *req, struct kmemd *k,
			  const struct tls_identity *peer)
{
	_cleanup_free_ struct rollout_spec *s = request_spec(req);
	struct evidence ev = { 0 };
	struct members ms = { .s = s };
	json_t *plan = NULL;
	int r;

	(void)peer;
	if (!s)
		return;
	r = select_members(k, &ms, kmemd_now_ms(), &ev);
	if (r == 0)
		plan = plan_json(s, &ms, &ev);
	if (plan)
		reply_json(req, HTTP_OK, "OK",
			   json_pack("{s:s, s:I, s:o}", "name", s->name, "members",
				     (json_int_t)ms.list.n, "plan", plan));
	else if (r == -EIO)
		reply_store_failed(req, k);
	else
		reply_error(req, HTTP_INTERNAL, "Internal Server Error", "out of memory");
	evidence_free(&ev);
	free(ms.list.m);
}

/*
 * The document's checks that need the fleet, and its plan over the hosts
 * its selector picks now. -EPERM with why for a wave that adds no host
 * (as start refuses it); -EIO, -ENOMEM.
 */
static int create_plan(struct kmemd *k, const struct rollout_spec *s, json_t **plan, char *why,
		       size_t len)
{
	struct members ms = { .s = s };
	struct evidence ev = { 0 };
	int r = select_members(k, &ms, kmemd_now_ms(), &ev);

	*plan = NULL;
	if (r == 0 && ms.list.n && rollout_wave_empty(s, ms.list.n, why, len) >= 0)
		r = -EPERM;
	if (r == 0) {
		*plan = plan_json(s, &ms, &ev);
		r = *plan ? 0 : -ENOMEM;
	}
	evidence_free(&ev);
	free(ms.list.m);
	return r;
}

void handle_rollouts_post(struct http_request *req, struct kmemd *k,
			  const struct tls_identity *peer)
{
	_cleanup_free_ struct rollout_spec *s = request_spec(req);
	_cleanup_free_ char *text = NULL;
	_cleanup_json_ json_t *plan = NULL;
	const uint8_t *body;
	char why[320];
	size_t len;
	int r;

	(void)peer;
	if (!s)
		return;
	r = signed_policy(k, s->policy, s->version, why, sizeof(why));
	if (r == 0 && s->rollback_policy[0])
		r = signed_policy(k, s->rollback_policy, s->rollback_version, why, sizeof(why));
	if (r == 0 && s->rollback_policy[0])
		r = undoes(k, s, s->rollback_policy, s->rollback_version, why, sizeof(why));
	if (r == 0)
		r = create_plan(k, s, &plan, why, sizeof(why));
	if (r == -EIO || r == -ENOMEM) {
		reply_error(req, HTTP_INTERNAL, "Internal Server Error", "the store failed");
		return;
	}
	if (r < 0) {
		reply_error(req, r == -ENOENT ? HTTP_NOTFOUND : 409,
			    r == -ENOENT ? "Not Found" : "Conflict", why);
		return;
	}
	/* the document as sent: kmemd's own reading of it is rollout_spec_parse() */
	body = request_body(req, &len);
	text = body ? strndup((const char *)body, len) : NULL;
	r = text ? k->store->ops->rollout_add(k->store, s->name, text, kmemd_now_ms()) : -ENOMEM;
	if (r == -EEXIST) {
		snprintf(why, sizeof(why), "a rollout named %s exists", s->name);
		reply_error(req, 409, "Conflict", why);
		return;
	}
	if (r < 0) {
		reply_error(req, HTTP_INTERNAL, "Internal Server Error", "the store failed");
		return;
	}
	audit_detail(req, NULL, "%s: %s/%llu in %zu waves", s->name, s->policy,
		     (unsigned long long)s->version, s->nwaves);
	reply_json(req, 201, "Created",
		   json_pack("{s:s, s:s, s:O}", "name", s->name, "state",
			     rollout_state_name(ROLLOUT_PENDING), "plan", plan));
}

/* [?archived=1]: archived rollouts too. */
void handle_rollouts_get(struct http_request *req, struct kmemd *k, const struct tls_identity *peer)
{
	_cleanup_query_ struct evkeyvalq q = { 0 };
	int64_t archived = 0;
	json_t *rows = NULL;

	(void)peer;
	if (!request_query(req, &q, "want [?archived=0|1]"))
		return;
	if (query_number(evhttp_find_header(&q, "archived"), 1, &archived) < 0) {
		reply_error(req, HTTP_BADREQUEST, "Bad Request", "archived is 0 or 1");
		return;
	}
	if (admin_json_rollouts_archived(k->store, archived, &rows) < 0) {
		reply_store_failed(req, k);
		return;
	}
	reply_json(req, HTTP_OK, "OK", rows);
}

/* {"name"}: a finished rollout archived, out of the lists. */
void handle_rollout_archive(struct http_request *req, struct kmemd *k,
			    const struct tls_identity *peer)
{
	const char *name = NULL;
	_cleanup_json_ json_t *o =
		request_json_unpack(req, "want {\"name\": N}", false, "{s:s}", "name", &name);
	int r;

	(void)peer;
	if (!o)
		return;
	r = k->store->ops->rollout_archive(k->store, name, kmemd_now_ms());
	if (r == -ENOENT || r == -EBUSY) {
		reply_error(req, r == -ENOENT ? HTTP_NOTFOUND : 409,
			    r == -ENOENT ? "Not Found" : "Conflict",
			    r == -ENOENT ?
				    "no such rollout" :
				    "only a finished rollout (done, rolled back or aborted) is "
				    "archived");
		return;
	}
	if (r < 0) {
		reply_store_failed(req, k);
		return;
	}
	audit_detail(req, NULL, "%s", name);
	reply_json(req, HTTP_OK, "OK", json_pack("{s:s, s:b}", "name", name, "archived", 1));
}

/* Members a status lists unless asked for more: a large fleet's rollout has 100,000. */
#define STATUS_MEMBERS 1000
#define STATUS_MEMBERS_MAX 10000000

/*
 * ?name=N[&members=M]: one rollout with its first M members (1000), its
 * hosts per wave, and its verdicts and their numbers.
 */
void handle_rollout_status(struct http_request *req, struct kmemd *k,
			   const struct tls_identity *peer)
{
	static const char want[] =
		"want ?name=ROLLOUT[&members=0..10000000], a name of [A-Za-z0-9._-]";
	_cleanup_query_ struct evkeyvalq q = { 0 };
	const char *name, *members;
	int64_t max = STATUS_MEMBERS;
	json_t *o = NULL;
	char why[320];
	int r;

	(void)peer;
	if (!request_query(req, &q, want))
		return;
	name = evhttp_find_header(&q, "name");
	members = evhttp_find_header(&q, "members");
	if (!text_name_valid(name, ROLLOUT_NAME_MAX - 1) ||
	    query_number(members, STATUS_MEMBERS_MAX, &max) < 0) {
		reply_error(req, HTTP_BADREQUEST, "Bad Request", want);
		return;
	}
	r = admin_json_rollout_status(k->store, name, (size_t)max, &o);
	if (r == -ENOENT) {
		snprintf(why, sizeof(why), "no rollout %s", name);
		reply_error(req, HTTP_NOTFOUND, "Not Found", why);
	} else if (r < 0) {
		reply_store_failed(req, k);
	} else {
		reply_json(req, HTTP_OK, "OK", o);
	}
}

/* Members, their plan and the state ro was moved to, all at once. */
static int start(struct kmemd *k, struct store_rollout *ro, const struct rollout_spec *s,
		 json_t **plan, char *why, size_t len)
{
	struct members ms = { .s = s };
	struct store_member *sm = NULL;
	struct evidence ev = { 0 };
	int64_t now = kmemd_now_ms();
	size_t i;
	int r = select_members(k, &ms, now, &ev);

	if (r == 0 && !ms.list.n) {
		snprintf(why, len, "no host matches the rollout's selector");
		r = -ENOENT;
	} else if (r == 0 && rollout_wave_empty(s, ms.list.n, why, len) >= 0) {
		/* it would bake the same canaries again */
		r = -EPERM;
	} else if (r == 0 && ms.why[0]) {
		snprintf(why, len, "%s", ms.why);
		r = -EPERM;
	}
	/* each policy the hosts would go back to must undo the rollout's */
	for (i = 0; r == 0 && !s->rollback_policy[0] && i < ms.list.n; i++) {
		size_t j;

		for (j = 0; j < i && (strcmp(ms.list.m[j].prev_policy, ms.list.m[i].prev_policy) ||
				      ms.list.m[j].prev_version != ms.list.m[i].prev_version);
		     j++)
			;
		if (j == i)
			r = undoes(k, s, ms.list.m[i].prev_policy, ms.list.m[i].prev_version, why,
				   len);
	}
	if (r == -EIO)
		snprintf(why, len, "the store failed");
	if (r < 0)
		goto out;
	r = evidence_to_json(&ev, &ro->evidence_json);
	if (r == 0) {
		*plan = plan_json(s, &ms, &ev);
		r = *plan ? 0 : -ENOMEM;
	}
	if (r < 0) {
		snprintf(why, len, "the store failed");
		goto out;
	}
	sm = calloc(ms.list.n, sizeof(*sm));
	if (!sm) {
		r = -ENOMEM;
		goto out;
	}
	for (i = 0; i < ms.list.n; i++)
		sm[i] = (struct store_member){ .host_id = ms.list.m[i].host,
					       .stratum = ms.list.m[i].stratum,
					       .position = ms.list.m[i].position,
					       .wave = ms.list.m[i].wave,
					       .prev_policy = ms.list.m[i].prev_policy[0] ?
								      ms.list.m[i].prev_policy :
								      NULL,
					       .prev_version = ms.list.m[i].prev_version };
	snprintf(ro->reason, sizeof(ro->reason), "started with %zu hosts", ms.list.n);
	r = k->store->ops->rollout_start(k->store, ro, sm, ms.list.n, now);
	if (r < 0)
		snprintf(why, len, "the store failed");
out:
	evidence_free(&ev);
	free(sm);
	free(ms.list.m);
	return r;
}

/*
 * The operator's move (engine.c's table says from which states): start,
 * pause, resume, promote (the next wave now, or done after the last),
 * abort (its hosts are rolled back).
 */
static int act(struct kmemd *k, struct store_rollout *ro, const struct rollout_spec *s,
	       const char *action, json_t **plan, char *why, size_t len)
{
	int64_t now = kmemd_now_ms();
	int ev = engine_action(action), r;

	if (ev < 0) {
		snprintf(why, len, "no action \"%s\": start, pause, resume, promote or abort",
			 action);
		return -EINVAL;
	}
	r = engine_transition(ro, (enum rollout_event)ev, s->nwaves, now, why, len);
	if (r < 0)
		return r;
	if (ev == ROLLOUT_EV_START)
		return start(k, ro, s, plan, why, len);
	snprintf(ro->reason, sizeof(ro->reason), "%s by an operator", action);
	return k->store->ops->rollout_update(k->store, ro, NULL, now, NULL);
}

/* {"name": N, "action": A}: the rollout as it now stands. */
void handle_rollout_action(struct http_request *req, struct kmemd *k,
			   const struct tls_identity *peer)
{
	_cleanup_free_ struct rollout_spec *s = malloc(sizeof(*s));
	_cleanup_(store_rollout_clear) struct store_rollout ro = { 0 };
	const char *name = NULL, *action = NULL;
	_cleanup_json_ json_t *o = NULL, *plan = NULL;
	json_t *reply;
	char why[320];
	int r;

	(void)peer;
	o = request_json_unpack(req, "want {\"name\", \"action\"}", true, "{s:s, s:s}", "name",
				&name, "action", &action);
	if (!o)
		return;
	r = s ? k->store->ops->rollout_get(k->store, name, &ro) : -ENOMEM;
	if (r == -ENOENT) {
		snprintf(why, sizeof(why), "no rollout %s", name);
		reply_error(req, HTTP_NOTFOUND, "Not Found", why);
		return;
	}
	/* kept documents were checked when created */
	if (r < 0 ||
	    rollout_spec_parse(ro.spec_json, strlen(ro.spec_json), s, why, sizeof(why)) < 0) {
		reply_error(req, HTTP_INTERNAL, "Internal Server Error", "the store failed");
		return;
	}
	r = act(k, &ro, s, action, &plan, why, sizeof(why));
	if (r == -ESTALE)
		snprintf(why, sizeof(why),
			 "rollout %s moved while the action was made (the engine judged it); "
			 "read its status and try again",
			 ro.name);
	if (r < 0) {
		reply_error(req,
			    r == -EINVAL ? HTTP_BADREQUEST :
			    r == -EIO	 ? HTTP_INTERNAL :
					   409,
			    r == -EINVAL ? "Bad Request" :
			    r == -EIO	 ? "Internal Server Error" :
					   "Conflict",
			    why);
		return;
	}
	audit_detail(req, NULL, "%s: %s, now %s in wave %u", ro.name, action,
		     rollout_state_name(ro.state), ro.wave + 1);
	kmemd_desired_refresh(k);
	reply = json_pack("{s:s, s:s, s:i, s:s}", "name", ro.name, "state",
			  rollout_state_name(ro.state), "wave", (int)ro.wave, "reason", ro.reason);
	/* start's: what the plan can detect, computed as it started */
	if (reply && plan)
		json_object_set(reply, "plan", plan);
	reply_json(req, HTTP_OK, "OK", reply);
}

/* The engine's changes, to the journal (verdicts under their MESSAGE_ID) and the webhook. */
static void on_change(void *arg, const struct engine_change *c)
{
	const struct store_rollout *ro = c->ro;
	char f_rollout[16 + STORE_ID_MAX], f_wave[32], f_verdict[48], f_gate[48], f_state[48];
	const char *fields[] = { f_rollout, f_wave, f_verdict, f_gate, f_state, NULL };
	struct kmemd *k = arg;

	if (!c->v) {
		log_notice("rollout %s: %s, now %s: %s", ro->name, rollout_state_name(c->was),
			   rollout_state_name(ro->state), ro->reason);
		return;
	}
	snprintf(f_rollout, sizeof(f_rollout), "ROLLOUT=%s", ro->name);
	snprintf(f_wave, sizeof(f_wave), "WAVE=%u", c->v->wave + 1);
	snprintf(f_verdict, sizeof(f_verdict), "VERDICT=%s", c->v->verdict);
	snprintf(f_gate, sizeof(f_gate), "GATE=%s", c->v->gate);
	snprintf(f_state, sizeof(f_state), "STATE=%s", rollout_state_name(ro->state));
	log_event(strcmp(c->v->verdict, "fail") ? LOG_NOTICE : LOG_WARNING, MID_ROLLOUT_VERDICT,
		  fields, "rollout %s wave %u: %s%s%s: %s; now %s", ro->name, c->v->wave + 1,
		  c->v->verdict, c->v->gate[0] ? " at " : "", c->v->gate, c->v->reason,
		  rollout_state_name(ro->state));
	notify_post(k->notify,
		    json_pack("{s:s, s:s, s:I, s:s, s:o, s:o, s:s, s:s, s:I}", "kind", "verdict",
			      "rollout", ro->name, "wave", (json_int_t)c->v->wave + 1, "verdict",
			      c->v->verdict, "gate",
			      c->v->gate[0] ? json_string(c->v->gate) : json_null(), "reason",
			      c->v->reason ? json_string(c->v->reason) : json_null(), "was",
			      rollout_state_name(c->was), "state", rollout_state_name(ro->state),
			      "ts_ms", (json_int_t)c->v->ts_ms));
}

int kmemd_desired_refresh(struct kmemd *k)
{
	struct desired_skipped sk;
	int r = desired_refresh(k->desired, k->store, &sk);

	if (sk.n)
		log_error(
			"%u stored assignments or rollouts left out of which policy hosts run: %s",
			sk.n, sk.first);
	if (r == -EIO)
		log_error("loading assignments and rollouts failed: %s",
			  k->store->ops->error(k->store));
	else if (r < 0)
		log_error_errno(r, "loading assignments and rollouts failed: %m");
	return r;
}

/* A pass's end, on the loop: which policy hosts run follows what it changed. */
static void on_pass(void *arg, int r, const char *store_error, double pass_s)
{
	struct kmemd *k = arg;

	k->engine_passes.n++;
	k->engine_passes.sum_s += pass_s;
	if (pass_s > k->engine_passes.max_s)
		k->engine_passes.max_s = pass_s;
	if (r == -EIO)
		log_error("judging rollouts failed: %s", store_error);
	else if (r == -ENOLCK)
		log_notice("this kmemd's pass of the rollout engine outlived its lease: another "
			   "kmemd runs the engine, and the pass wrote nothing more");
	else if (r < 0)
		log_error_errno(r, "judging rollouts failed: %m");
	else if (r > 0)
		log_debug("%d rollouts judged in %.3f s", r, pass_s);
	kmemd_desired_refresh(k);
}

int rollouts_engine_start(struct kmemd *k, char *err, size_t errlen)
{
	return engine_worker_new(k->base, k->store, k->engine_holder, on_change, on_pass, k,
				 &k->engine, err, errlen);
}

/*
 * A pass of the engine, when this kmemd holds its lease and the last pass
 * is over; and what other kmemd changed in the store: at most once a
 * tick, never per report.
 */
void rollouts_tick(struct kmemd *k)
{
	if (!k->engine_leader) {
		kmemd_desired_refresh(k);
		return;
	}
	if (engine_worker_tick(k->engine, kmemd_now_ms()) == -EBUSY) {
		log_debug("the last pass of the rollout engine is still under way");
		kmemd_desired_refresh(k);
	}
}

void rollouts_lease_end(struct kmemd *k)
{
	if (!k->engine_leader)
		return;
	/* expired now: another kmemd, or this one restarted, need not wait it out */
	if (k->store->ops->lease(k->store, "engine", k->engine_holder, kmemd_now_ms(), -1) < 0)
		log_error("giving up the rollout engine's lease failed: %s",
			  k->store->ops->error(k->store));
	else
		log_notice("this kmemd (%s) stops: it gave the rollout engine's lease up",
			   k->engine_holder);
	k->engine_leader = false;
}

void rollouts_lease(struct kmemd *k)
{
	int64_t ttl = (int64_t)k->cfg->rollout_tick_ms * 3 / 4;
	int r = k->store->ops->lease(k->store, "engine", k->engine_holder, kmemd_now_ms(), ttl);

	if (r < 0)
		log_error("renewing the rollout engine's lease failed: %s",
			  k->store->ops->error(k->store));
	if (r > 0 && !k->engine_leader) {
		log_notice("this kmemd (%s) runs the rollout engine", k->engine_holder);
		k->engine_leader = true;
		/* a rollout left by the last holder is judged now, not a tick later */
		rollouts_tick(k);
	} else if (r <= 0 && k->engine_leader) {
		log_notice(
			"this kmemd (%s) no longer runs the rollout engine: %s", k->engine_holder,
			r < 0 ? "its lease could not be renewed" : "another kmemd holds its lease");
		k->engine_leader = false;
	}
}

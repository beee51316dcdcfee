// SPDX-License-Identifier: GPL-2.0
/*
 * The admin API's JSON from the store's rows. The store only loads and
 * saves; what an operator reads is shaped here, in one place, and a second
 * store backend answers the same bytes. SQL NULL is JSON null.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "admin-json.h"
#include "json-text.h"
#include "macro.h"
#include "rollout.h"

static json_t *text_or_null(const char *s)
{
	return s ? json_text(s) : json_null();
}

static json_t *int_or_null(int64_t v)
{
	return v == STORE_NULL ? json_null() : json_integer(v);
}

/* A JSON document kept as text (a spec, a label set, a verdict's numbers); NULL: null. */
static json_t *doc_or_null(const char *text)
{
	return text ? json_loads_lossy(text) : json_null();
}

/* {"name": policy, "version": version}, either null. */
static json_t *policy_ref(const char *policy, int64_t version)
{
	return json_pack("{s:o, s:o}", "name", text_or_null(policy), "version",
			 int_or_null(version));
}

/*
 * Why a host applies nothing, as its last report said: "none" (it applies
 * its policy), "cmdline", "local", "fleet-stop"; null from an agent older
 * than the field.
 */
static json_t *off_name(int off)
{
	static const char *const names[] = { NULL, "none", "cmdline", "local", "fleet-stop" };

	return off > 0 && (size_t)off < sizeof(names) / sizeof(names[0]) ? json_string(names[off]) :
									   json_null();
}

static int add_host(void *arg, const struct store_host *h)
{
	json_t *o = json_pack(
		"{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:b, s:o, s:o, s:o, s:o, s:o,"
		" s:b, s:o, s:o, s:[]}",
		"host_id", json_text(h->host_id), "hostname", text_or_null(h->hostname),
		"kernel_release", text_or_null(h->kernel_release), "build_id",
		text_or_null(h->build_id), "possible_cpus", int_or_null(h->possible_cpus),
		"online_cpus", int_or_null(h->online_cpus), "mem_total", int_or_null(h->mem_total),
		"kasan", h->kasan, "module_version", text_or_null(h->module_version), "labels",
		doc_or_null(h->labels_json), "first_seen_ms", int_or_null(h->first_seen_ms),
		"last_seen_ms", int_or_null(h->last_seen_ms), "last_seq", int_or_null(h->last_seq),
		"revoked", h->revoked, "policy", policy_ref(h->policy, h->policy_version), "off",
		off_name(h->off), "mitigations");

	return o && json_array_append_new(arg, o) == 0 ? 0 : -ENOMEM;
}

/* A state goes to the host added last. */
static int add_state(void *arg, const struct store_host_state *m)
{
	json_t *host = json_array_get(arg, json_array_size(arg) - 1);
	json_t *o = json_pack("{s:o, s:o, s:o, s:o, s:o}", "id", text_or_null(m->id), "state",
			      text_or_null(m->state), "mode", text_or_null(m->mode), "source",
			      text_or_null(m->source), "reason", text_or_null(m->reason));

	return o && json_array_append_new(json_object_get(host, "mitigations"), o) == 0 ? 0 :
											  -ENOMEM;
}

static const struct store_host_cb host_cb = { .host = add_host, .state = add_state };

/* r < 0: *rows let go; else *out is it. */
static int done(int r, json_t *rows, json_t **out)
{
	if (r < 0) {
		json_decref(rows);
		return r;
	}
	*out = rows;
	return 0;
}

int admin_json_hosts(struct store *st, json_t **out)
{
	json_t *rows = json_array();

	return done(rows ? st->ops->hosts(st, &host_cb, rows) : -ENOMEM, rows, out);
}

int admin_json_hosts_page(struct store *st, const char *after, const char *match, unsigned limit,
			  json_t **out)
{
	json_t *rows = json_array();

	return done(rows ? st->ops->hosts_page(st, after, match, limit, &host_cb, rows) : -ENOMEM,
		    rows, out);
}

int admin_json_host(struct store *st, const char *host_id, json_t **out)
{
	json_t *rows = json_array();
	int r = rows ? st->ops->host(st, host_id, &host_cb, rows) : -ENOMEM;

	if (r == 0)
		*out = json_incref(json_array_get(rows, 0));
	json_decref(rows);
	return r;
}

struct policy_rows {
	json_t *rows;
	bool retired; /* retired versions too */
};

static int add_policy(void *arg, const struct store_policy *p)
{
	struct policy_rows *pr = arg;
	json_t *o;

	if (p->retired_ms != STORE_NULL && !pr->retired)
		return 0;
	o = json_pack("{s:o, s:I, s:o, s:o, s:b, s:I, s:o}", "name", json_text(p->name), "version",
		      (json_int_t)p->version, "signer", json_text(p->signer), "key_id",
		      json_text(p->key_id), "signed", p->bundle != NULL, "created_ms",
		      (json_int_t)p->created_ms, "document", doc_or_null(p->document_json));
	if (o && p->retired_ms != STORE_NULL)
		json_object_set_new(o, "retired_ms", json_integer(p->retired_ms));
	return o && json_array_append_new(pr->rows, o) == 0 ? 0 : -ENOMEM;
}

int admin_json_policies_retired(struct store *st, bool retired, json_t **out)
{
	struct policy_rows pr = { .rows = json_array(), .retired = retired };

	return done(pr.rows ? st->ops->policies(st, add_policy, &pr) : -ENOMEM, pr.rows, out);
}

int admin_json_policies(struct store *st, json_t **out)
{
	return admin_json_policies_retired(st, false, out);
}

/*
 * The waves kmemd runs (the document's, then the release wave when
 * something is held back) and the gates with their defaults filled in:
 * readers do not restate the parser's defaults. Null for a document kmemd
 * cannot read.
 */
static void spec_resolved(const char *spec_json, json_t **waves, json_t **gates)
{
	_cleanup_free_ struct rollout_spec *s = malloc(sizeof(*s));
	const struct rollout_gates *g;
	char err[256];

	*waves = *gates = NULL;
	if (!s || !spec_json ||
	    rollout_spec_parse(spec_json, strlen(spec_json), s, err, sizeof(err)) < 0)
		return;
	*waves = json_array();
	for (size_t k = 0; *waves && k < s->nwaves; k++)
		json_array_append_new(*waves, json_pack("{s:I, s:I, s:b}",
							s->waves[k].percent ? "percent" : "count",
							(json_int_t)s->waves[k].n, "bake_s",
							(json_int_t)(s->waves[k].bake_ms / 1000),
							"release", s->waves[k].release));
	g = &s->gates;
	*gates = json_pack("{s:f, s:f, s:f, s:f, s:s, s:f, s:I, s:o, s:I}", "lockup_alpha",
			   g->lockup_alpha, "hard_alpha", g->hard_alpha, "detect_ratio",
			   g->detect_ratio, "power", g->power, "underpowered",
			   g->underpowered == ROLLOUT_UNDERPOWERED_HOLD ? "hold" : "pass",
			   "min_exposure_h", g->min_exposure_h, "min_hosts",
			   (json_int_t)g->min_hosts, "max_hard_lockups",
			   g->has_max_hard_lockups ? json_integer((json_int_t)g->max_hard_lockups) :
						     json_null(),
			   "holdback_percent", (json_int_t)s->holdback_percent);
}

/* What a rollout's listing and its status both say of it. */
static json_t *rollout_json(const struct store_rollout *r)
{
	json_t *waves, *gates;

	spec_resolved(r->spec_json, &waves, &gates);
	return json_pack("{s:o, s:s, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "name",
			 json_text(r->name), "state", rollout_state_name(r->state), "wave",
			 (json_int_t)r->wave, "wave_started_ms", int_or_null(r->wave_started_ms),
			 "reason", r->has_reason ? json_text(r->reason) : json_null(), "created_ms",
			 int_or_null(r->created_ms), "updated_ms", int_or_null(r->updated_ms),
			 "spec", doc_or_null(r->spec_json), "waves", waves ?: json_null(), "gates",
			 gates ?: json_null());
}

struct rollout_rows {
	json_t *rows;
	bool archived; /* archived ones too */
};

static int add_rollout(void *arg, const struct store_rollout *r, const uint64_t *members, size_t n)
{
	struct rollout_rows *rr = arg;
	json_t *o, *counts;
	size_t i;
	int ret;

	if (r->archived_ms != STORE_NULL && !rr->archived)
		return 0;
	o = rollout_json(r);
	counts = json_array();
	ret = o && counts ? 0 : -ENOMEM;
	if (ret == 0 && r->archived_ms != STORE_NULL)
		ret = json_object_set_new(o, "archived_ms", json_integer(r->archived_ms));

	for (i = 0; ret == 0 && i < n; i++)
		ret = json_array_append_new(counts, json_integer((json_int_t)members[i]));
	if (ret < 0) {
		json_decref(counts);
		json_decref(o);
		return ret;
	}
	/* both steal their value, also when they fail */
	if (json_object_set_new(o, "members", counts) < 0) {
		json_decref(o);
		return -ENOMEM;
	}
	return json_array_append_new(rr->rows, o) == 0 ? 0 : -ENOMEM;
}

int admin_json_rollouts_archived(struct store *st, bool archived, json_t **out)
{
	struct rollout_rows rr = { .rows = json_array(), .archived = archived };

	return done(rr.rows ? st->ops->rollouts(st, add_rollout, &rr) : -ENOMEM, rr.rows, out);
}

int admin_json_rollouts(struct store *st, json_t **out)
{
	return admin_json_rollouts_archived(st, false, out);
}

/* A status's members: the first max listed, every one counted into its wave. */
struct members_out {
	json_t *list;
	size_t max, total;
	const char *policy; /* the rollout's, and its version: a member running it */
	json_int_t version;
	json_int_t waves[ROLLOUT_MAX_WAVES + 1][2]; /* members, running the policy */
};

static int add_member(void *arg, const struct store_member *m)
{
	struct members_out *mo = arg;
	json_t *prev, *o;

	mo->total++;
	if (m->wave < ARRAY_SIZE(mo->waves)) {
		mo->waves[m->wave][0]++;
		mo->waves[m->wave][1] += m->policy && mo->policy &&
					 !strcmp(m->policy, mo->policy) &&
					 m->version == mo->version;
	}
	if (json_array_size(mo->list) >= mo->max)
		return 0;
	prev = m->prev_policy ? policy_ref(m->prev_policy, (int64_t)m->prev_version) : json_null();
	o = json_pack("{s:o, s:o, s:I, s:o, s:o, s:o}", "host_id", json_text(m->host_id), "stratum",
		      text_or_null(m->stratum), "wave", (json_int_t)m->wave, "previous", prev,
		      "policy", policy_ref(m->policy, m->version), "last_seen_ms",
		      int_or_null(m->last_seen_ms));
	return o && json_array_append_new(mo->list, o) == 0 ? 0 : -ENOMEM;
}

/* Per wave with members: how many, and how many of them run the rollout's policy. */
static json_t *wave_hosts(const struct members_out *mo)
{
	json_t *a = json_array();
	size_t n = ARRAY_SIZE(mo->waves);

	while (n && !mo->waves[n - 1][0])
		n--;
	for (size_t i = 0; a && i < n; i++)
		if (json_array_append_new(a, json_pack("{s:I, s:I}", "members", mo->waves[i][0],
						       "running", mo->waves[i][1])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static int add_verdict(void *arg, const struct store_verdict *v)
{
	json_t *o = json_pack("{s:I, s:I, s:o, s:o, s:o, s:o}", "wave", (json_int_t)v->wave,
			      "ts_ms", (json_int_t)v->ts_ms, "verdict", text_or_null(v->verdict),
			      "gate", text_or_null(v->gate), "reason", text_or_null(v->reason),
			      "detail", doc_or_null(v->detail_json));

	return o && json_array_append_new(arg, o) == 0 ? 0 : -ENOMEM;
}

int admin_json_rollout_status(struct store *st, const char *name, size_t members_max, json_t **out)
{
	struct members_out mo = { .list = json_array(), .max = members_max };
	struct store_rollout r;
	json_t *o = NULL, *verdicts = json_array(), *spec;
	int ret = mo.list && verdicts ? st->ops->rollout_get(st, name, &r) : -ENOMEM;

	if (ret < 0)
		goto fail;
	o = rollout_json(&r);
	store_rollout_clear(&r);
	spec = json_object_get(o, "spec");
	mo.policy = json_string_value(json_object_get(spec, "policy"));
	mo.version = json_integer_value(json_object_get(spec, "version"));
	ret = o ? st->ops->members(st, name, add_member, &mo) : -ENOMEM;
	if (ret == 0)
		ret = st->ops->verdicts(st, name, add_verdict, verdicts);
	if (ret == 0) {
		/* each steals its value, also when it fails */
		int a = json_object_set_new(o, "members", mo.list);
		int b = json_object_set_new(o, "verdicts", verdicts);
		int c = json_object_set_new(o, "members_total", json_integer((json_int_t)mo.total));
		int d = json_object_set_new(o, "wave_hosts", wave_hosts(&mo));

		mo.list = verdicts = NULL;
		ret = a < 0 || b < 0 || c < 0 || d < 0 ? -ENOMEM : 0;
	}
	if (ret == 0) {
		*out = o;
		return 0;
	}
fail:
	json_decref(o);
	json_decref(mo.list);
	json_decref(verdicts);
	return ret;
}

static int audit_row(void *arg, const struct store_audit_row *a)
{
	json_t *o = json_pack("{s:I, s:I, s:o, s:o, s:o, s:o}", "id", (json_int_t)a->id, "ts_ms",
			      (json_int_t)a->ts_ms, "actor", json_text(a->actor), "action",
			      json_text(a->action), "host", text_or_null(a->host), "detail",
			      json_text(a->detail));

	return o && json_array_append_new(arg, o) == 0 ? 0 : -ENOMEM;
}

int admin_json_audit(struct store *st, const struct store_audit_query *q, json_t **out)
{
	json_t *rows = json_array();

	return done(rows ? st->ops->audit_rows(st, q, audit_row, rows) : -ENOMEM, rows, out);
}

static int operator_row(void *arg, const struct store_operator *o)
{
	bool revoked = o->revoked_ms != STORE_NULL;
	json_t *j = json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "fingerprint",
			      o->fingerprint, "name", text_or_null(o->name[0] ? o->name : NULL),
			      "role", text_or_null(o->role[0] ? o->role : NULL), "not_after_ms",
			      int_or_null(o->not_after_ms), "first_seen_ms",
			      int_or_null(o->first_seen_ms), "last_seen_ms",
			      int_or_null(o->last_seen_ms), "revoked_ms",
			      int_or_null(o->revoked_ms), "revoked_by",
			      text_or_null(revoked ? o->revoked_by : NULL));

	return j && json_array_append_new(arg, j) == 0 ? 0 : -ENOMEM;
}

int admin_json_operators(struct store *st, json_t **out)
{
	json_t *rows = json_array();

	return done(rows ? st->ops->operators(st, operator_row, rows) : -ENOMEM, rows, out);
}

static int secret_row(void *arg, const struct store_secret *sec)
{
	json_t *o = json_pack("{s:I, s:I, s:o, s:b, s:I, s:o, s:o}", "id", (json_int_t)sec->id,
			      "created_ms", (json_int_t)sec->created_ms, "expires_ms",
			      sec->expires_ms ? json_integer(sec->expires_ms) : json_null(),
			      "revoked", sec->revoked, "uses", (json_int_t)sec->uses, "max_uses",
			      sec->max_uses ? json_integer(sec->max_uses) : json_null(), "hosts",
			      sec->host_pattern[0] ? json_text(sec->host_pattern) : json_null());

	return o && json_array_append_new(arg, o) == 0 ? 0 : -ENOMEM;
}

int admin_json_secrets(struct store *st, json_t **out)
{
	json_t *rows = json_array();

	return done(rows ? st->ops->secrets(st, secret_row, rows) : -ENOMEM, rows, out);
}

static int assignment_row(void *arg, const struct store_assignment *a)
{
	json_t *o = json_pack("{s:I, s:o, s:I, s:o, s:I}", "id", (json_int_t)a->id, "policy",
			      json_text(a->policy), "version", (json_int_t)a->version, "selector",
			      doc_or_null(a->selector_json), "created_ms",
			      (json_int_t)a->created_ms);

	return o && json_array_append_new(arg, o) == 0 ? 0 : -ENOMEM;
}

int admin_json_assignments(struct store *st, json_t **out)
{
	json_t *rows = json_array();

	return done(rows ? st->ops->assignments(st, assignment_row, rows) : -ENOMEM, rows, out);
}

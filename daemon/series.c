// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "hist.h"
#include "engine.h"
#include "admin-json.h"
#include "json-text.h"
#include "rollout.h"
#include "series.h"

/* probes a host reports; a rollout charts at most its gates' ROLLOUT_MAX_PROBES */
#define SERIES_MAX_PROBES 16

/*
 * A side's step of one probe, its hosts merged so that none weighs more
 * than HIST_HOST_WEIGHT_MAX of the others' median (as /v1/telemetry's
 * hist_merge_hosts()): the host with the largest count is kept apart, to
 * be scaled down at the end (weigh()); the others' counts give the median.
 */
struct cell {
	struct hist rest, top;
	struct hist counts; /* of the hosts in rest: their counts as values */
};

struct side {
	const char *name;
	uint64_t hosts;
	uint64_t lockups[SERIES_MAX_STEPS];
	double hours[SERIES_MAX_STEPS];
	struct cell *c[SERIES_MAX_PROBES]; /* per probe, nsteps each */
	struct hist *h[SERIES_MAX_PROBES]; /* the cells weighed: what is charted */
};

struct series {
	int64_t from, to, step;
	size_t nsteps, nprobes;
	char probe[SERIES_MAX_PROBES][ROLLOUT_NAME_MAX];
	bool fixed; /* the probes are given: others are not charted */
	struct side side[2];
	size_t nsides;
	struct side *cur; /* the side of the host being read */
	struct hist *host[SERIES_MAX_PROBES]; /* the host being read's, per probe and step */
	size_t *touched, ntouched; /* its cells with samples, p * nsteps + k */
	int64_t last_report;
	json_t *events; /* a host's events, newest last; NULL: not kept */
	size_t max_events;
};

int series_step(int64_t from_ms, int64_t to_ms, int64_t step_ms, int64_t *out)
{
	int64_t span = to_ms - from_ms, min;

	if (to_ms <= from_ms)
		return -EINVAL;
	min = (span + SERIES_MAX_STEPS - 1) / SERIES_MAX_STEPS;
	if (min < SERIES_MIN_STEP_MS)
		min = SERIES_MIN_STEP_MS;
	if (!step_ms)
		step_ms = (span + 59) / 60;
	*out = step_ms < min ? min : step_ms;
	return 0;
}

static int series_init(struct series *s, int64_t from, int64_t to, int64_t step)
{
	int r = series_step(from, to, step, &s->step);

	if (r < 0)
		return r;
	s->from = from;
	s->to = to;
	s->nsteps = (size_t)((to - from + s->step - 1) / s->step);
	return 0;
}

static void series_free(struct series *s)
{
	for (size_t p = 0; p < s->nprobes; p++) {
		for (size_t i = 0; i < s->nsides; i++) {
			free(s->side[i].c[p]);
			free(s->side[i].h[p]);
		}
		free(s->host[p]);
	}
	free(s->touched);
	json_decref(s->events);
}

/* Probe p's steps on side d. */
static int side_probe(struct series *s, struct side *d, size_t p)
{
	d->c[p] = calloc(s->nsteps, sizeof(struct cell));
	d->h[p] = calloc(s->nsteps, sizeof(struct hist));
	return d->c[p] && d->h[p] ? 0 : -ENOMEM;
}

/* Probe p's steps of the host being read. */
static int host_probe(struct series *s, size_t p)
{
	size_t *t;

	s->host[p] = calloc(s->nsteps, sizeof(struct hist));
	t = reallocarray(s->touched, (p + 1) * s->nsteps, sizeof(*t));
	if (t)
		s->touched = t;
	return s->host[p] && t ? 0 : -ENOMEM;
}

static struct side *side_add(struct series *s, const char *name)
{
	struct side *d = &s->side[s->nsides++];

	d->name = name;
	for (size_t p = 0; p < s->nprobes; p++)
		if (side_probe(s, d, p) < 0 || (s->nsides == 1 && host_probe(s, p) < 0))
			return NULL;
	return d;
}

/* The probe's index, added when the probes are not fixed; -ENOENT: not charted. */
static int probe_index(struct series *s, const char *probe)
{
	size_t p;

	for (p = 0; p < s->nprobes; p++)
		if (!strcmp(s->probe[p], probe))
			return (int)p;
	if (s->fixed || p == SERIES_MAX_PROBES || strlen(probe) >= sizeof(s->probe[p]))
		return -ENOENT;
	/* counted first: series_free() frees what was allocated */
	strcpy(s->probe[p], probe);
	s->nprobes++;
	for (size_t i = 0; i < s->nsides; i++)
		if (side_probe(s, &s->side[i], p) < 0)
			return -ENOMEM;
	return host_probe(s, p) < 0 ? -ENOMEM : (int)p;
}

static bool step_of(const struct series *s, int64_t t, size_t *k)
{
	if (t < s->from || t >= s->to)
		return false;
	*k = (size_t)((t - s->from) / s->step);
	return *k < s->nsteps;
}

/* Reporting time, as the gates count a host's exposure: between its reports. */
static int on_report(void *arg, int64_t unix_ms)
{
	struct series *s = arg;
	size_t k;

	if (s->last_report && step_of(s, unix_ms, &k))
		s->cur->hours[k] += (double)(unix_ms - s->last_report) / 3600000;
	s->last_report = unix_ms;
	return 0;
}

static json_t *event_json(const struct store_event *e)
{
	json_t *stack = json_loads_lossy(e->stack);

	if (!json_is_array(stack)) {
		json_decref(stack);
		stack = json_array();
	}
	/* stored strings may predate kmemd's checks: never a reason to fail the page */
	return json_pack("{s:I, s:o, s:i, s:I, s:o, s:i, s:o, s:o, s:o, s:o}", "unix_ms",
			 (json_int_t)e->unix_ms, "kind", json_text(e->kind), "cpu", e->cpu,
			 "duration_ns", json_count(e->duration_ns), "comm", json_text(e->comm),
			 "pid", e->pid, "stack", stack, "mitigation", json_text(e->mitigation),
			 "probe", json_text(e->probe), "message", json_text(e->message));
}

static int on_event(void *arg, const struct store_event *e)
{
	struct series *s = arg;
	size_t k;

	if ((!strcmp(e->kind, "soft-lockup") || !strcmp(e->kind, "hard-lockup") ||
	     !strcmp(e->kind, "rcu-stall")) &&
	    step_of(s, e->unix_ms, &k))
		s->cur->lockups[k]++;
	if (!s->events)
		return 0;
	if (json_array_append_new(s->events, event_json(e)) < 0)
		return -ENOMEM;
	if (json_array_size(s->events) > s->max_events)
		json_array_remove(s->events, 0);
	return 0;
}

static int on_sample(void *arg, const struct store_sample *x)
{
	struct series *s = arg;
	int p = probe_index(s, x->probe);
	size_t k;

	if (p == -ENOENT || (p >= 0 && !step_of(s, x->end_ms, &k)))
		return 0;
	if (p < 0)
		return p;
	if (!s->host[p][k].count && x->h.count)
		s->touched[s->ntouched++] = (size_t)p * s->nsteps + k;
	hist_merge(&s->host[p][k], &x->h);
	return 0;
}

/* The host read, its step h of a probe, into cell c. */
static void fold(struct cell *c, struct hist *h)
{
	struct hist *rest = h;

	if (h->count > c->top.count) {
		rest = &c->top;
		if (!c->top.count) {
			c->top = *h;
			return;
		}
	}
	hist_merge(&c->rest, rest);
	hist_record(&c->counts, rest->count);
	if (rest == &c->top)
		c->top = *h;
}

/* What each cell charts: its top host no heavier than HIST_HOST_WEIGHT_MAX median others. */
static void weigh(struct series *s, struct side *d)
{
	for (size_t p = 0; p < s->nprobes; p++)
		for (size_t k = 0; k < s->nsteps; k++) {
			struct cell *c = &d->c[p][k];
			uint64_t m = hist_quantile(&c->counts, 0.5) ?: 1;

			if (c->counts.count && c->top.count)
				hist_scale_to(&c->top, hist_weight_cap(m));
			d->h[p][k] = c->rest;
			hist_merge(&d->h[p][k], &c->top);
		}
}

static const struct store_host_rows series_rows = {
	.report = on_report,
	.event = on_event,
	.sample = on_sample,
};

static int read_host(struct store *st, struct series *s, struct side *d, const char *host)
{
	int r;

	s->cur = d;
	s->last_report = 0;
	s->ntouched = 0;
	d->hosts++;
	r = st->ops->host_rows(st, host, s->from, s->to, &series_rows, s);
	for (size_t i = 0; i < s->ntouched; i++) {
		size_t p = s->touched[i] / s->nsteps, k = s->touched[i] % s->nsteps;

		fold(&d->c[p][k], &s->host[p][k]);
		s->host[p][k] = (struct hist){ 0 };
	}
	return r;
}

/* null where the step has no samples */
static json_t *quantiles(const struct series *s, const struct hist *h, double q)
{
	json_t *a = json_array();

	for (size_t k = 0; a && k < s->nsteps; k++)
		json_array_append_new(a,
				      !h[k].count ? json_null() :
				      q >= 1	  ? json_integer(json_count(h[k].max_ns)) :
					       json_integer(json_count(hist_quantile(&h[k], q))));
	return a;
}

static json_t *side_json(const struct series *s, const struct side *d)
{
	json_t *lockups = json_array(), *hours = json_array(), *probes = json_object();

	for (size_t k = 0; k < s->nsteps; k++) {
		json_array_append_new(lockups, json_integer(json_count(d->lockups[k])));
		json_array_append_new(hours, json_real(d->hours[k]));
	}
	for (size_t p = 0; p < s->nprobes; p++) {
		json_t *count = json_array();

		for (size_t k = 0; count && k < s->nsteps; k++)
			json_array_append_new(count, json_integer(json_count(d->h[p][k].count)));
		json_object_set_new(probes, s->probe[p],
				    json_pack("{s:o, s:o, s:o, s:o}", "count", count, "p50_ns",
					      quantiles(s, d->h[p], 0.5), "p99_ns",
					      quantiles(s, d->h[p], 0.99), "max_ns",
					      quantiles(s, d->h[p], 1)));
	}
	return json_pack("{s:s, s:I, s:o, s:o, s:o}", "name", d->name, "hosts",
			 (json_int_t)d->hosts, "lockups", lockups, "hours", hours, "probes",
			 probes);
}

static json_t *series_json(struct series *s)
{
	json_t *t = json_array(), *sides = json_array(), *probes = json_array();

	for (size_t k = 0; k < s->nsteps; k++)
		json_array_append_new(t,
				      json_integer((json_int_t)(s->from + (int64_t)k * s->step)));
	for (size_t p = 0; p < s->nprobes; p++)
		json_array_append_new(probes, json_text(s->probe[p]));
	for (size_t i = 0; i < s->nsides; i++) {
		weigh(s, &s->side[i]);
		json_array_append_new(sides, side_json(s, &s->side[i]));
	}
	return json_pack("{s:I, s:I, s:I, s:o, s:o, s:o}", "from_ms", (json_int_t)s->from, "to_ms",
			 (json_int_t)s->to, "step_ms", (json_int_t)s->step, "t", t, "probes",
			 probes, "sides", sides);
}

int series_host(struct store *st, const char *host, int64_t from_ms, int64_t to_ms,
		int64_t window_ms, int64_t step_ms, size_t max_events, json_t **out)
{
	struct series *s = calloc(1, sizeof(*s));
	json_t *o = NULL, *events, *h = NULL;
	int64_t first;
	int r;

	if (!s)
		return -ENOMEM;
	r = admin_json_host(st, host, &h);
	if (r < 0)
		goto out;
	first = json_integer_value(json_object_get(h, "first_seen_ms"));
	/* a new host's charts start when it did */
	if (!from_ms)
		from_ms = first > to_ms - window_ms && first < to_ms ? first : to_ms - window_ms;
	r = series_init(s, from_ms, to_ms, step_ms);
	if (r < 0)
		goto out;
	s->events = json_array();
	s->max_events = max_events;
	r = s->events && side_add(s, "host") ? read_host(st, s, &s->side[0], host) : -ENOMEM;
	if (r < 0)
		goto out;
	events = json_array();
	for (size_t i = json_array_size(s->events); events && i > 0; i--)
		json_array_append(events, json_array_get(s->events, i - 1));
	o = json_pack("{s:O, s:o, s:o}", "host", h, "events", events, "series", series_json(s));
	r = o ? 0 : -ENOMEM;
out:
	*out = o;
	json_decref(h);
	series_free(s);
	free(s);
	return r;
}

int series_rollout(struct store *st, const char *name, int wave, int64_t from_ms, int64_t to_ms,
		   int64_t step_ms, int64_t now_ms, json_t **out)
{
	struct rollout_spec *spec = calloc(1, sizeof(*spec));
	struct series *s = calloc(1, sizeof(*s));
	struct rollout_members ms = { 0 };
	struct store_rollout ro = { 0 };
	struct side *canary, *base;
	char err[256];
	json_t *o = NULL;
	int r;

	*out = NULL;
	r = spec && s ? st->ops->rollout_get(st, name, &ro) : -ENOMEM;
	if (r < 0)
		goto out;
	/* kept documents were checked when created */
	if (rollout_spec_parse(ro.spec_json, strlen(ro.spec_json), spec, err, sizeof(err)) < 0) {
		r = -EINVAL;
		goto out;
	}
	if (wave < 0)
		wave = (int)ro.wave;
	if ((unsigned)wave >= spec->nwaves || (unsigned)wave > ro.wave) {
		r = -ERANGE;
		goto out;
	}
	r = series_init(s, from_ms ?: ro.wave_started_ms, to_ms ?: now_ms, step_ms);
	if (r < 0)
		goto out;
	s->fixed = true;
	for (size_t p = 0; p < spec->gates.nprobes; p++)
		snprintf(s->probe[s->nprobes++], sizeof(s->probe[0]), "%s",
			 spec->gates.latency_probes[p]);
	canary = side_add(s, "canary");
	base = canary ? side_add(s, "baseline") : NULL;
	r = base ? st->ops->members(st, name, engine_add_member, &ms) : -ENOMEM;
	if (r == 0)
		r = rollout_match(ms.m, ms.n, (unsigned)wave);
	/* what the gates compare: matched canaries with their strata's baselines */
	for (size_t i = 0; r == 0 && i < ms.n; i++)
		if (ms.m[i].role == ROLLOUT_CANARY || ms.m[i].role == ROLLOUT_BASELINE)
			r = read_host(st, s, ms.m[i].role == ROLLOUT_CANARY ? canary : base,
				      ms.m[i].host);
	if (r == 0) {
		o = json_pack("{s:s, s:i, s:o}", "rollout", name, "wave", wave, "series",
			      series_json(s));
		r = o ? 0 : -ENOMEM;
	}
out:
	*out = o;
	free(ms.m);
	store_rollout_clear(&ro);
	if (s)
		series_free(s);
	free(s);
	free(spec);
	return r;
}

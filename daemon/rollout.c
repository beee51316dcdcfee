// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rollout.h"
#include "text.h"

/* The one table of rollout states: their names in the store and the API, and their targets. */
static const struct {
	const char *name;
	enum rollout_target target;
} states[ROLLOUT_NSTATES] = {
	[ROLLOUT_PENDING] = { "pending", ROLLOUT_TARGET_NONE },
	[ROLLOUT_RUNNING] = { "running", ROLLOUT_TARGET_POLICY },
	[ROLLOUT_HOLDING] = { "holding", ROLLOUT_TARGET_POLICY },
	[ROLLOUT_PAUSED] = { "paused", ROLLOUT_TARGET_POLICY },
	[ROLLOUT_ROLLING_BACK] = { "rolling-back", ROLLOUT_TARGET_ROLLBACK },
	[ROLLOUT_ROLLED_BACK] = { "rolled-back", ROLLOUT_TARGET_ROLLBACK },
	[ROLLOUT_DONE] = { "done", ROLLOUT_TARGET_POLICY },
	[ROLLOUT_ABORTED] = { "aborted", ROLLOUT_TARGET_ROLLBACK },
};

const char *rollout_state_name(enum rollout_state s)
{
	return (unsigned)s < ROLLOUT_NSTATES ? states[s].name : "unknown";
}

int rollout_state_parse(const char *name)
{
	for (int i = 0; i < ROLLOUT_NSTATES; i++)
		if (!strcmp(name, states[i].name))
			return i;
	return -EINVAL;
}

bool rollout_rollback_target(const char *rollback, uint64_t rollback_version, const char *prev,
			     uint64_t prev_version, const char **policy, uint64_t *version)
{
	if (rollback[0]) {
		*policy = rollback;
		*version = rollback_version;
	} else if (prev) {
		*policy = prev;
		*version = prev_version;
	} else {
		return false;
	}
	return true;
}

enum rollout_target rollout_state_target(enum rollout_state s)
{
	return (unsigned)s < ROLLOUT_NSTATES ? states[s].target : ROLLOUT_TARGET_NONE;
}

/* Only the keys in allowed (NULL-terminated) may appear in obj. */
static int known_keys(json_t *obj, const char *const *allowed, const char *where, char *err,
		      size_t errlen)
{
	const char *key, *const *a;
	json_t *v;

	json_object_foreach(obj, key, v)
	{
		for (a = allowed; *a && strcmp(key, *a); a++)
			;
		if (!*a)
			return text_refuse(err, errlen, "%sunknown key \"%s\"", where, key);
	}
	return 0;
}

static int name_into(json_t *o, const char *key, char *out, bool required, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);
	const char *s = json_string_value(v);

	if (!v && !required)
		return 0;
	if (!text_name_valid(s, ROLLOUT_NAME_MAX - 1))
		return text_refuse(err, errlen, "\"%s\" must be 1 to %d of [A-Za-z0-9._-]", key,
				   ROLLOUT_NAME_MAX - 1);
	strcpy(out, s);
	return 0;
}

/* An integer in [min, max]; absent leaves *out as it is. */
static int uint_into(json_t *o, const char *key, const char *where, uint64_t min, uint64_t max,
		     uint64_t *out, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);

	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (uint64_t)json_integer_value(v) < min || (uint64_t)json_integer_value(v) > max)
		return text_refuse(err, errlen, "%s%s: want an integer from %llu to %llu", where,
				   key, (unsigned long long)min, (unsigned long long)max);
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

/* A number in (min, max]; absent leaves *out as it is. */
static int real_into(json_t *o, const char *key, double min, double max, double *out, char *err,
		     size_t errlen)
{
	json_t *v = json_object_get(o, key);

	if (!v)
		return 0;
	if (!json_is_number(v) || !(json_number_value(v) > min) || json_number_value(v) > max)
		return text_refuse(err, errlen, "gates.%s: want a number above %g, at most %g", key,
				   min, max);
	*out = json_number_value(v);
	return 0;
}

/* o's key as a boolean (absent: false). */
static int bool_into(json_t *o, const char *key, const char *where, bool *out, char *err,
		     size_t errlen)
{
	json_t *v = json_object_get(o, key);

	*out = false;
	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return text_refuse(err, errlen, "%s%s: want true or false", where, key);
	*out = json_is_true(v);
	return 0;
}

/* "on_fail": "rollback" (the default) or "pause". */
static int on_fail_into(json_t *o, bool *pause, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, "on_fail");
	const char *s = json_string_value(v);

	*pause = false;
	if (!v)
		return 0;
	if (!s || (strcmp(s, "rollback") && strcmp(s, "pause")))
		return text_refuse(err, errlen, "on_fail: want \"rollback\" or \"pause\"");
	*pause = !strcmp(s, "pause");
	return 0;
}

static int parse_waves(json_t *a, uint64_t bake_ms, struct rollout_spec *s, char *err,
		       size_t errlen)
{
	static const char *const keys[] = { "percent", "count", "bake_s", "manual", NULL };
	struct rollout_wave *wv;
	char where[32];
	json_t *w;
	size_t i;
	int r;

	if (!json_is_array(a) || !json_array_size(a) || json_array_size(a) > ROLLOUT_MAX_WAVES)
		return text_refuse(err, errlen, "\"waves\" must be an array of 1 to %d waves",
				   ROLLOUT_MAX_WAVES);
	json_array_foreach(a, i, w)
	{
		uint64_t bake_s = bake_ms / 1000;

		wv = &s->waves[i];
		snprintf(where, sizeof(where), "waves[%zu].", i);
		if (!json_is_object(w))
			return text_refuse(err, errlen, "waves[%zu]: not an object", i);
		r = known_keys(w, keys, where, err, errlen);
		if (r < 0)
			return r;
		if (!json_object_get(w, "percent") == !json_object_get(w, "count"))
			return text_refuse(err, errlen,
					   "waves[%zu]: want one of \"percent\" and \"count\"", i);
		wv->percent = json_object_get(w, "percent") != NULL;
		r = wv->percent ? uint_into(w, "percent", where, 1, 100, &wv->n, err, errlen) :
				  uint_into(w, "count", where, 1, 1000000, &wv->n, err, errlen);
		if (r == 0)
			r = uint_into(w, "bake_s", where, 1, 30 * 86400, &bake_s, err, errlen);
		if (r == 0)
			r = bool_into(w, "manual", where, &wv->manual, err, errlen);
		if (r == 0 && i == 0 && wv->manual)
			r = text_refuse(err, errlen,
					"waves[0].manual: the first wave starts with the rollout's "
					"start");
		if (r < 0)
			return r;
		wv->bake_ms = bake_s * 1000;
		/* targets are cumulative; of the same kind they cannot shrink */
		if (i && s->waves[i - 1].percent == wv->percent && s->waves[i - 1].n > wv->n)
			return text_refuse(err, errlen, "waves[%zu]: smaller than the wave before",
					   i);
		s->nwaves++;
	}
	/* a plan that ends at every member keeps its holdback until a wave of its own */
	wv = &s->waves[s->nwaves - 1];
	if (s->holdback_percent && wv->percent && wv->n == 100)
		s->waves[s->nwaves++] = (struct rollout_wave){
			.percent = true, .n = 100, .bake_ms = wv->bake_ms, .release = true
		};
	return 0;
}

static int parse_gates(json_t *g, struct rollout_gates *gt, char *err, size_t errlen)
{
	static const char *const keys[] = { "lockup_alpha",
					    "min_exposure_h",
					    "latency_probes",
					    "latency_alpha",
					    "latency_effect",
					    "max_hard_lockups",
					    "p99_ceiling_ns",
					    "min_hosts",
					    "detect_ratio",
					    "power",
					    "hard_alpha",
					    "underpowered",
					    NULL };
	json_t *p, *v;
	size_t i;
	int r;

	if (!g)
		return 0;
	if (!json_is_object(g))
		return text_refuse(err, errlen, "\"gates\" must be an object");
	r = known_keys(g, keys, "gates: ", err, errlen);
	if (r == 0)
		r = real_into(g, "lockup_alpha", 0, 0.5, &gt->lockup_alpha, err, errlen);
	if (r == 0)
		r = real_into(g, "min_exposure_h", 0, 1e9, &gt->min_exposure_h, err, errlen);
	if (r == 0)
		r = real_into(g, "latency_alpha", 0, 0.5, &gt->latency_alpha, err, errlen);
	if (r == 0)
		r = real_into(g, "latency_effect", 0.5, 1, &gt->latency_effect, err, errlen);
	if (r == 0)
		r = real_into(g, "hard_alpha", 0, 0.5, &gt->hard_alpha, err, errlen);
	if (r == 0)
		r = real_into(g, "detect_ratio", 1, 100, &gt->detect_ratio, err, errlen);
	/* power: [0.5, 0.99], below 0.5 a "detectable" ratio would mean little */
	v = json_object_get(g, "power");
	if (r == 0 && v &&
	    (!json_is_number(v) || !(json_number_value(v) >= 0.5) || json_number_value(v) > 0.99))
		r = text_refuse(err, errlen, "gates.power: want a number from 0.5 to 0.99");
	if (r == 0 && v)
		gt->power = json_number_value(v);
	v = json_object_get(g, "underpowered");
	if (r == 0 && v) {
		if (!json_is_string(v) ||
		    (strcmp(json_string_value(v), "hold") && strcmp(json_string_value(v), "pass")))
			r = text_refuse(err, errlen,
					"gates.underpowered: want \"hold\" or \"pass\"");
		else
			gt->underpowered = strcmp(json_string_value(v), "hold") ?
						   ROLLOUT_UNDERPOWERED_PASS :
						   ROLLOUT_UNDERPOWERED_HOLD;
	}
	gt->has_max_hard_lockups = json_object_get(g, "max_hard_lockups") != NULL;
	if (r == 0)
		r = uint_into(g, "max_hard_lockups", "gates.", 0, 1000000, &gt->max_hard_lockups,
			      err, errlen);
	if (r == 0)
		r = uint_into(g, "p99_ceiling_ns", "gates.", 0, UINT64_MAX >> 1,
			      &gt->p99_ceiling_ns, err, errlen);
	if (r == 0)
		r = uint_into(g, "min_hosts", "gates.", 1, 100000, &gt->min_hosts, err, errlen);
	if (r < 0)
		return r;
	p = json_object_get(g, "latency_probes");
	if (!p)
		return 0;
	if (!json_is_array(p) || json_array_size(p) > ROLLOUT_MAX_PROBES)
		return text_refuse(err, errlen,
				   "gates.latency_probes: want an array of at most %d names",
				   ROLLOUT_MAX_PROBES);
	gt->nprobes = 0;
	json_array_foreach(p, i, v)
	{
		if (!text_name_valid(json_string_value(v), ROLLOUT_NAME_MAX - 1))
			return text_refuse(err, errlen,
					   "gates.latency_probes[%zu]: not a probe name", i);
		strcpy(gt->latency_probes[gt->nprobes++], json_string_value(v));
	}
	return 0;
}

static int spec_parse(const char *json, size_t len, struct rollout_spec *s, char *err,
		      size_t errlen)
{
	static const char *const keys[] = { "name",  "policy",	"version",	    "selector",
					    "waves", "bake_s",	"holdback_percent", "rollback",
					    "gates", "dry_run", "on_fail",	    NULL };
	static const char *const rb_keys[] = { "policy", "version", NULL };
	json_error_t je;
	json_t *o = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je), *v;
	uint64_t bake_s = 3600;
	char *sel;
	int r;

	memset(s, 0, sizeof(*s));
	s->gates = (struct rollout_gates){ .lockup_alpha = 0.01,
					   .min_exposure_h = 24,
					   .latency_alpha = 0.01,
					   .latency_effect = 0.6,
					   .min_hosts = 3,
					   .hard_alpha = 0.01,
					   .detect_ratio = 2,
					   .power = 0.8 };
	s->holdback_percent = 5;
	if (!o)
		return text_refuse(err, errlen, "not JSON: %s (line %d)", je.text, je.line);
	if (!json_is_object(o)) {
		r = text_refuse(err, errlen, "want a JSON object");
		goto out;
	}
	r = known_keys(o, keys, "", err, errlen);
	if (r == 0)
		r = name_into(o, "name", s->name, true, err, errlen);
	if (r == 0)
		r = name_into(o, "policy", s->policy, true, err, errlen);
	if (r == 0 && !json_object_get(o, "version"))
		r = text_refuse(err, errlen, "\"version\" is required");
	if (r == 0)
		r = uint_into(o, "version", "", 1, UINT64_MAX >> 1, &s->version, err, errlen);
	if (r == 0)
		r = uint_into(o, "bake_s", "", 1, 30 * 86400, &bake_s, err, errlen);
	if (r == 0)
		r = uint_into(o, "holdback_percent", "", 0, 50, &s->holdback_percent, err, errlen);
	if (r == 0)
		r = bool_into(o, "dry_run", "", &s->dry_run, err, errlen);
	if (r == 0)
		r = on_fail_into(o, &s->on_fail_pause, err, errlen);
	if (r < 0)
		goto out;
	v = json_object_get(o, "selector");
	if (!json_is_object(v)) {
		r = text_refuse(err, errlen, "\"selector\" is required (an object)");
		goto out;
	}
	sel = json_dumps(v, JSON_COMPACT);
	r = sel ? selector_parse(sel, strlen(sel), &s->selector, err, errlen) : -ENOMEM;
	free(sel);
	if (r == 0)
		r = parse_waves(json_object_get(o, "waves"), bake_s * 1000, s, err, errlen);
	if (r < 0)
		goto out;
	v = json_object_get(o, "rollback");
	if (v) {
		if (!json_is_object(v))
			r = text_refuse(err, errlen, "\"rollback\" must be an object");
		if (r == 0)
			r = known_keys(v, rb_keys, "rollback: ", err, errlen);
		if (r == 0)
			r = name_into(v, "policy", s->rollback_policy, true, err, errlen);
		if (r == 0 && !json_object_get(v, "version"))
			r = text_refuse(err, errlen, "rollback: \"version\" is required");
		if (r == 0)
			r = uint_into(v, "version", "rollback.", 1, UINT64_MAX >> 1,
				      &s->rollback_version, err, errlen);
		/* an agent refuses an older version of the policy it runs */
		if (r == 0 && !strcmp(s->rollback_policy, s->policy) &&
		    s->rollback_version <= s->version)
			r = text_refuse(
				err, errlen,
				"rollback: version %llu of \"%s\" is not newer than the rolled "
				"out %llu; agents would refuse it",
				(unsigned long long)s->rollback_version, s->policy,
				(unsigned long long)s->version);
		if (r < 0)
			goto out;
	}
	r = parse_gates(json_object_get(o, "gates"), &s->gates, err, errlen);
out:
	json_decref(o);
	return r;
}

void rollout_stratum(const char *build_id, uint32_t cpus, const char *role, char *out, size_t len)
{
	static const uint32_t classes[] = { 4, 16, 64, 256 };
	size_t i;

	for (i = 0; i < sizeof(classes) / sizeof(classes[0]) && cpus > classes[i]; i++)
		;
	if (i < sizeof(classes) / sizeof(classes[0]))
		snprintf(out, len, "%s/cpus<=%u/%s", build_id ?: "", classes[i], role ?: "");
	else
		snprintf(out, len, "%s/cpus>256/%s", build_id ?: "", role ?: "");
}

uint64_t rollout_hash(const char *rollout, const char *host)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	const char *parts[] = { rollout, "/", host };

	for (size_t i = 0; i < 3; i++)
		for (const unsigned char *p = (const unsigned char *)parts[i]; *p; p++) {
			h ^= *p;
			h *= 0x100000001b3ULL;
		}
	return h;
}

/* Members the release wave adds: the last holdback_percent of n, none when that is all. */
static size_t holdback(const struct rollout_spec *s, size_t n)
{
	size_t h = (size_t)((n * s->holdback_percent + 99) / 100);

	if (!s->nwaves || !s->waves[s->nwaves - 1].release || h >= n)
		return 0;
	return h;
}

size_t rollout_target(const struct rollout_spec *s, size_t k, size_t n)
{
	const struct rollout_wave *w = &s->waves[k];
	size_t t, most = n - holdback(s, n);

	if (!n)
		return 0;
	if (w->release)
		return n;
	t = w->percent ? (size_t)((n * w->n + 99) / 100) : (size_t)w->n;
	if (!t)
		t = 1;
	return t < most ? t : most;
}

/* "count 500" or "10%": a wave as its document says it. */
static void wave_text(const struct rollout_wave *w, char *out, size_t len)
{
	snprintf(out, len, w->percent ? "%llu%%" : "count %llu", (unsigned long long)w->n);
}

int rollout_wave_empty(const struct rollout_spec *s, size_t n, char *why, size_t len)
{
	char a[32];

	for (size_t k = 1; k < s->nwaves; k++) {
		size_t before = rollout_target(s, k - 1, n);

		if (s->waves[k].release || rollout_target(s, k, n) > before)
			continue;
		wave_text(&s->waves[k], a, sizeof(a));
		snprintf(why, len, "wave %zu (%s) adds no host after wave %zu (%zu of %zu)", k + 1,
			 a, k, before, n);
		return (int)k;
	}
	return -1;
}

static int by_stratum_hash(const void *a, const void *b)
{
	const struct rollout_member *x = a, *y = b;
	int c = strcmp(x->stratum, y->stratum);

	if (c)
		return c;
	return (x->hash > y->hash) - (x->hash < y->hash);
}

static int by_position(const void *a, const void *b)
{
	const struct rollout_member *x = a, *y = b;

	if (x->position != y->position)
		return (x->position > y->position) - (x->position < y->position);
	return (x->hash > y->hash) - (x->hash < y->hash);
}

void rollout_plan(const struct rollout_spec *s, struct rollout_member *m, size_t n)
{
	size_t i, j, k;

	/* no member (a selector that picks none yet): m may be NULL, which qsort() does not take */
	if (!n)
		return;
	for (i = 0; i < n; i++)
		m[i].hash = rollout_hash(s->name, m[i].host);
	qsort(m, n, sizeof(*m), by_stratum_hash);
	for (i = 0; i < n; i = j) {
		for (j = i + 1; j < n && !strcmp(m[j].stratum, m[i].stratum); j++)
			;
		for (k = i; k < j; k++)
			m[k].position = ((double)(k - i) + 0.5) / (double)(j - i);
	}
	qsort(m, n, sizeof(*m), by_position);
	/* each member joins the first wave whose target covers its place */
	for (i = 0, k = 0; i < n; i++) {
		while (k < s->nwaves && rollout_target(s, k, n) <= i)
			k++;
		m[i].wave = (unsigned)k;
	}
}

struct rollout_member *rollout_members_add(struct rollout_members *ms)
{
	struct rollout_member *m;

	if (ms->n == ms->cap) {
		size_t cap = ms->cap ? ms->cap * 2 : 64;

		m = realloc(ms->m, cap * sizeof(*m));
		if (!m)
			return NULL;
		ms->m = m;
		ms->cap = cap;
	}
	m = &ms->m[ms->n++];
	memset(m, 0, sizeof(*m));
	return m;
}

static int by_stratum_ptr(const void *a, const void *b)
{
	return strcmp((*(struct rollout_member *const *)a)->stratum,
		      (*(struct rollout_member *const *)b)->stratum);
}

int rollout_match(struct rollout_member *m, size_t n, unsigned k)
{
	struct rollout_member **p = malloc((n ?: 1) * sizeof(*p));
	size_t i, j, g, reached;

	if (!p)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		p[i] = &m[i];
	qsort(p, n, sizeof(*p), by_stratum_ptr);
	for (i = 0; i < n; i = j) {
		reached = 0;
		for (j = i; j < n && !strcmp(p[j]->stratum, p[i]->stratum); j++)
			reached += p[j]->wave <= k;
		for (g = i; g < j; g++) {
			if (p[g]->wave <= k)
				p[g]->role = reached < j - i ? ROLLOUT_CANARY : ROLLOUT_UNMATCHED;
			else
				p[g]->role = reached ? ROLLOUT_BASELINE : ROLLOUT_UNUSED;
		}
	}
	free(p);
	return 0;
}

int rollout_spec_parse(const char *json, size_t len, struct rollout_spec *s, char *err,
		       size_t errlen)
{
	char raw[1024];
	int r = spec_parse(json, len, s, err, errlen);

	/* reasons quote the sender's keys and text: one printable line, whatever they hold */
	if (r < 0 && errlen) {
		snprintf(raw, sizeof(raw), "%s", err);
		text_escape(raw, err, errlen);
	}
	return r;
}

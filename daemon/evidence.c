// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evidence.h"
#include "json-text.h"
#include "macro.h"
#include "text.h"

static void test_free(struct evidence_test *t)
{
	free(t->last);
	free(t->cells);
	free(t->looked);
}

void evidence_free(struct evidence *e)
{
	free(e->history);
	test_free(&e->lockups);
	test_free(&e->hard);
	memset(e, 0, sizeof(*e));
}

/*
 * Room for one more after the n elements of array a (capacities are 8 and
 * then powers of two): false, a as it was, when out of memory.
 */
#define GROW(a, n)                                                                             \
	({                                                                                     \
		__typeof__(a) q_ = (n) >= 8 && ((n) & ((n)-1)) ?                               \
					   (a) :                                               \
					   realloc((a), ((n) < 8 ? 8 : (n)*2) * sizeof(*(a))); \
		if (q_)                                                                        \
			(a) = q_;                                                              \
		q_ != NULL;                                                                    \
	})

static json_t *sums_json(const struct evidence_sums *s)
{
	return json_pack("[I, f, I, f]", json_count(s->x_c), s->t_c, json_count(s->x_b), s->t_b);
}

static json_t *test_json(const struct evidence_test *t)
{
	json_t *o = json_object(), *lr = json_array(), *last = json_object(), *cells = json_array(),
	       *looked = json_array();
	size_t i;

	for (i = 0; i < STATS_MSPRT_RATIOS; i++)
		json_array_append_new(lr, json_real(t->log_lr[i]));
	for (i = 0; i < t->nlast; i++)
		json_object_set_new(last, t->last[i].stratum, sums_json(&t->last[i]));
	for (i = 0; i < t->ncells; i++) {
		const struct evidence_cell *c = &t->cells[i];

		json_array_append_new(cells, json_pack("[i, s, I, f, I, f, f]", (int)c->wave,
						       c->s.stratum, json_count(c->s.x_c), c->s.t_c,
						       json_count(c->s.x_b), c->s.t_b, c->mu0));
	}
	for (i = 0; i < t->nlooked; i++)
		json_array_append_new(looked,
				      json_pack("[i, f]", (int)t->looked[i].wave, t->looked[i].p));
	json_object_set_new(o, "log_lr", lr);
	json_object_set_new(o, "last", last);
	json_object_set_new(o, "cells", cells);
	json_object_set_new(o, "looked", looked);
	return o;
}

int evidence_to_json(const struct evidence *e, char **out)
{
	json_t *o = json_object(), *h = json_object();

	for (size_t i = 0; i < e->nhistory; i++)
		json_object_set_new(h, e->history[i].stratum,
				    json_pack("[f, f]", e->history[i].events, e->history[i].hours));
	json_object_set_new(o, "wave", json_integer(e->wave));
	json_object_set_new(o, "since_ms", json_integer(e->since_ms));
	json_object_set_new(o, "history", h);
	json_object_set_new(o, "lockups", test_json(&e->lockups));
	json_object_set_new(o, "hard", test_json(&e->hard));
	*out = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	return *out ? 0 : -ENOMEM;
}

/* A finite number, at least min. */
static bool number(json_t *v, double min, double *out)
{
	if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < min)
		return false;
	*out = json_number_value(v);
	return true;
}

static bool count(json_t *v, uint64_t *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return false;
	*out = (uint64_t)json_integer_value(v);
	return true;
}

static bool stratum(const char *s, char out[EVIDENCE_STRATUM_MAX])
{
	if (!s || strlen(s) >= EVIDENCE_STRATUM_MAX)
		return false;
	strcpy(out, s);
	return true;
}

/* [x_c, t_c, x_b, t_b] from a[at..] */
static bool sums_from(json_t *a, size_t at, struct evidence_sums *s)
{
	return count(json_array_get(a, at), &s->x_c) &&
	       number(json_array_get(a, at + 1), 0, &s->t_c) &&
	       count(json_array_get(a, at + 2), &s->x_b) &&
	       number(json_array_get(a, at + 3), 0, &s->t_b);
}

static bool keys_only(json_t *o, const char *const *keys)
{
	const char *k, *const *a;
	json_t *v;

	json_object_foreach(o, k, v)
	{
		for (a = keys; *a && strcmp(k, *a); a++)
			;
		if (!*a)
			return false;
	}
	return true;
}

static bool wave_of(json_t *v, unsigned *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > ROLLOUT_MAX_WAVES)
		return false;
	*out = (unsigned)json_integer_value(v);
	return true;
}

static int by_cell(const void *a, const void *b)
{
	const struct evidence_cell *x = a, *y = b;

	return x->wave != y->wave ? (x->wave > y->wave) - (x->wave < y->wave) :
				    strcmp(x->s.stratum, y->s.stratum);
}

static int by_look(const void *a, const void *b)
{
	const struct evidence_look *x = a, *y = b;

	return (x->wave > y->wave) - (x->wave < y->wave);
}

/*
 * Whether n elements of size sz at a (sorted by cmp) hold two equal ones:
 * -ENOMEM, 1 or 0.
 */
static int duplicates(const void *a, size_t n, size_t sz, int (*cmp)(const void *, const void *))
{
	int r = 0;
	char *c;

	if (n < 2)
		return 0;
	c = malloc(n * sz);
	if (!c)
		return -ENOMEM;
	memcpy(c, a, n * sz);
	qsort(c, n, sz, cmp);
	for (size_t i = 1; i < n && !r; i++)
		r = !cmp(c + (i - 1) * sz, c + i * sz);
	free(c);
	return r;
}

/*
 * A test's events over all its cells: the final looks sum them as uint64_t
 * and take them as doubles, so an edited row must not wrap the one or
 * round the other.
 */
#define EVIDENCE_EVENTS_MAX (1ULL << 53)

/* -EINVAL with what in err; -ENOMEM */
static int test_from(json_t *o, const char *name, struct evidence_test *t, char *err, size_t errlen)
{
	static const char *const keys[] = { "log_lr", "last", "cells", "looked", NULL };
	json_t *lr = json_object_get(o, "log_lr"), *last = json_object_get(o, "last"),
	       *cells = json_object_get(o, "cells"), *looked = json_object_get(o, "looked"), *v;
	const char *k;
	uint64_t events = 0;
	size_t i;
	int r;

	if (!json_is_object(o) || !keys_only(o, keys))
		return text_refuse(err, errlen, "%s: want an object of log_lr, last, cells, looked",
				   name);
	if (!json_is_array(lr) || json_array_size(lr) != STATS_MSPRT_RATIOS)
		return text_refuse(err, errlen, "%s.log_lr: want %d numbers", name,
				   STATS_MSPRT_RATIOS);
	for (i = 0; i < STATS_MSPRT_RATIOS; i++)
		if (!number(json_array_get(lr, i), -INFINITY, &t->log_lr[i]))
			return text_refuse(err, errlen, "%s.log_lr[%zu]: not a finite number", name,
					   i);
	if (!json_is_object(last) || !json_is_array(cells) || !json_is_array(looked))
		return text_refuse(err, errlen, "%s: want last an object, cells and looked arrays",
				   name);
	json_object_foreach(last, k, v)
	{
		struct evidence_sums *s;

		if (!GROW(t->last, t->nlast))
			return -ENOMEM;
		s = &t->last[t->nlast];
		if (!stratum(k, s->stratum) || !json_is_array(v) || json_array_size(v) != 4 ||
		    !sums_from(v, 0, s))
			return text_refuse(err, errlen,
					   "%s.last: want [x_c, t_c, x_b, t_b] per stratum", name);
		t->nlast++;
	}
	json_array_foreach(cells, i, v)
	{
		struct evidence_cell *c;

		if (!GROW(t->cells, t->ncells))
			return -ENOMEM;
		c = &t->cells[t->ncells];
		if (!json_is_array(v) || json_array_size(v) != 7 ||
		    !wave_of(json_array_get(v, 0), &c->wave) ||
		    !stratum(json_string_value(json_array_get(v, 1)), c->s.stratum) ||
		    !sums_from(v, 2, &c->s) || !number(json_array_get(v, 6), 0, &c->mu0))
			return text_refuse(
				err, errlen,
				"%s.cells[%zu]: want [wave, stratum, x_c, t_c, x_b, t_b, mu0]",
				name, i);
		if (c->s.x_c > EVIDENCE_EVENTS_MAX - events ||
		    c->s.x_b > EVIDENCE_EVENTS_MAX - events - c->s.x_c)
			return text_refuse(err, errlen, "%s.cells: more than 2^53 events in all",
					   name);
		events += c->s.x_c + c->s.x_b;
		t->ncells++;
	}
	/* a cell or a look twice would count its evidence twice */
	r = duplicates(t->cells, t->ncells, sizeof(*t->cells), by_cell);
	if (r)
		return r < 0 ? r :
			       text_refuse(err, errlen, "%s.cells: a wave and stratum twice", name);
	json_array_foreach(looked, i, v)
	{
		struct evidence_look *l;

		if (!GROW(t->looked, t->nlooked))
			return -ENOMEM;
		l = &t->looked[t->nlooked];
		if (!json_is_array(v) || json_array_size(v) != 2 ||
		    !wave_of(json_array_get(v, 0), &l->wave) ||
		    !number(json_array_get(v, 1), 0, &l->p) || l->p > 1)
			return text_refuse(err, errlen, "%s.looked[%zu]: want [wave, p]", name, i);
		t->nlooked++;
	}
	r = duplicates(t->looked, t->nlooked, sizeof(*t->looked), by_look);
	if (r)
		return r < 0 ? r : text_refuse(err, errlen, "%s.looked: a wave twice", name);
	return 0;
}

int evidence_from_json(const char *json, size_t len, struct evidence *e, char *err, size_t errlen)
{
	static const char *const keys[] = { "wave", "since_ms", "history", "lockups", "hard", NULL };
	json_error_t je;
	json_t *o = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je), *h, *v;
	char near[4 * JSON_ERROR_TEXT_LENGTH];
	const char *k;
	int r = 0;

	memset(e, 0, sizeof(*e));
	/* jansson quotes the input where it stopped, control characters too */
	if (!o)
		return text_refuse(err, errlen, "evidence: not JSON: %s",
				   text_escape(je.text, near, sizeof(near)));
	h = json_object_get(o, "history");
	if (!json_is_object(o) || !keys_only(o, keys) || !json_is_object(h)) {
		r = text_refuse(
			err, errlen,
			"evidence: want an object of wave, since_ms, history, lockups, hard");
		goto out;
	}
	v = json_object_get(o, "since_ms");
	if (!wave_of(json_object_get(o, "wave"), &e->wave) || !json_is_integer(v)) {
		r = text_refuse(err, errlen, "evidence: want wave from 0 to %d and since_ms",
				ROLLOUT_MAX_WAVES);
		goto out;
	}
	e->since_ms = json_integer_value(v);
	json_object_foreach(h, k, v)
	{
		struct evidence_history *x;

		if (!GROW(e->history, e->nhistory)) {
			r = -ENOMEM;
			goto out;
		}
		x = &e->history[e->nhistory];
		if (!stratum(k, x->stratum) || !json_is_array(v) || json_array_size(v) != 2 ||
		    !number(json_array_get(v, 0), 0, &x->events) ||
		    !number(json_array_get(v, 1), 0, &x->hours)) {
			r = text_refuse(err, errlen,
					"evidence.history: want [events, hours] per stratum");
			goto out;
		}
		e->nhistory++;
	}
	r = test_from(json_object_get(o, "lockups"), "lockups", &e->lockups, err, errlen);
	if (r == 0)
		r = test_from(json_object_get(o, "hard"), "hard", &e->hard, err, errlen);
out:
	json_decref(o);
	if (r < 0)
		evidence_free(e);
	return r;
}

static struct evidence_history *history_of(const struct evidence *e, const char *stratum)
{
	for (size_t i = 0; i < e->nhistory; i++)
		if (!strcmp(e->history[i].stratum, stratum))
			return &e->history[i];
	return NULL;
}

int evidence_history_add(struct evidence *e, const char *s, double events, double hours)
{
	struct evidence_history *h = history_of(e, s);

	if (!h) {
		if (!GROW(e->history, e->nhistory))
			return -ENOMEM;
		h = &e->history[e->nhistory++];
		memset(h, 0, sizeof(*h));
		snprintf(h->stratum, sizeof(h->stratum), "%s", s);
	}
	h->events += events;
	h->hours += hours;
	return 0;
}

bool evidence_wave(struct evidence *e, unsigned wave, int64_t since_ms)
{
	if (e->wave == wave && e->since_ms == since_ms)
		return false;
	e->wave = wave;
	e->since_ms = since_ms;
	e->lockups.nlast = 0;
	e->hard.nlast = 0;
	return true;
}

double evidence_rate(const struct evidence *e, const char *stratum, uint64_t x_b, double t_b)
{
	const struct evidence_history *h = history_of(e, stratum);
	double events = (double)x_b + (h ? h->events : 0), hours = t_b + (h ? h->hours : 0);

	return hours > 0 ? events / hours : 0;
}

static struct evidence_sums *last_of(struct evidence_test *t, const char *stratum)
{
	for (size_t i = 0; i < t->nlast; i++)
		if (!strcmp(t->last[i].stratum, stratum))
			return &t->last[i];
	return NULL;
}

static struct evidence_cell *cell_of(struct evidence_test *t, unsigned wave, const char *stratum)
{
	for (size_t i = 0; i < t->ncells; i++)
		if (t->cells[i].wave == wave && !strcmp(t->cells[i].s.stratum, stratum))
			return &t->cells[i];
	return NULL;
}

static bool sums_equal(const struct evidence_sums *a, const struct evidence_sums *b)
{
	return a->x_c == b->x_c && a->t_c == b->t_c && a->x_b == b->x_b && a->t_b == b->t_b;
}

int evidence_update(struct evidence *e, struct evidence_test *t, const struct evidence_sums *cur,
		    size_t n, bool rates, bool *changed)
{
	for (size_t i = 0; i < n; i++) {
		const struct evidence_sums *now = &cur[i];
		struct evidence_sums *was = last_of(t, now->stratum), zero = { 0 };
		const struct evidence_sums *from = was ?: &zero;
		struct evidence_cell *c;
		double mu0;

		if (was && sums_equal(was, now))
			continue;
		/* a window that lost a report or gained on one side only adds nothing */
		if (now->x_c >= from->x_c && now->x_b >= from->x_b && now->t_c > from->t_c &&
		    now->t_b > from->t_b) {
			struct stats_cell inc = { .x1 = now->x_c - from->x_c,
						  .t1 = now->t_c - from->t_c,
						  .x2 = now->x_b - from->x_b,
						  .t2 = now->t_b - from->t_b };

			stats_msprt_add(t->log_lr, &inc);
		}
		if (!was) {
			if (!GROW(t->last, t->nlast))
				return -ENOMEM;
			was = &t->last[t->nlast++];
		}
		*was = *now;
		c = cell_of(t, e->wave, now->stratum);
		if (!c) {
			if (!GROW(t->cells, t->ncells))
				return -ENOMEM;
			c = &t->cells[t->ncells++];
			c->wave = e->wave;
		}
		mu0 = rates ? evidence_rate(e, now->stratum, now->x_b, now->t_b) * now->t_c : 0;
		c->s = *now;
		c->mu0 = mu0;
		*changed = true;
	}
	return 0;
}

bool evidence_looked(const struct evidence_test *t, unsigned wave, double *p)
{
	for (size_t i = 0; i < t->nlooked; i++)
		if (t->looked[i].wave == wave) {
			*p = t->looked[i].p;
			return true;
		}
	return false;
}

int evidence_look_add(struct evidence_test *t, unsigned wave, double p)
{
	if (!GROW(t->looked, t->nlooked))
		return -ENOMEM;
	t->looked[t->nlooked++] = (struct evidence_look){ .wave = wave, .p = p };
	return 0;
}

size_t evidence_cells(const struct evidence_test *t, unsigned wave, struct stats_cell *c,
		      double *mu0, double *rho)
{
	double tc = 0, tb = 0;
	size_t k = 0;

	*mu0 = 0;
	for (size_t i = 0; i < t->ncells; i++) {
		const struct evidence_cell *x = &t->cells[i];

		if (x->wave > wave)
			continue;
		c[k++] = (struct stats_cell){
			.x1 = x->s.x_c, .t1 = x->s.t_c, .x2 = x->s.x_b, .t2 = x->s.t_b
		};
		*mu0 += x->mu0;
		tc += x->s.t_c;
		tb += x->s.t_b;
	}
	*rho = tc > 0 ? tb / tc : 0;
	return k;
}

size_t evidence_nlooks(const struct rollout_spec *s, size_t n)
{
	size_t k, looks = 0;

	for (k = 0; k < s->nwaves; k++)
		looks += rollout_target(s, k, n) < n;
	return looks;
}

static int by_stratum(const void *a, const void *b)
{
	return strcmp((*(const struct rollout_member *const *)a)->stratum,
		      (*(const struct rollout_member *const *)b)->stratum);
}

int evidence_plan(const struct rollout_spec *s, const struct rollout_member *m, size_t n,
		  const struct evidence *e, struct evidence_plan_wave *out)
{
	const struct rollout_member **p = malloc((n ?: 1) * sizeof(*p));
	size_t looks = evidence_nlooks(s, n), i, j, g;
	double alpha = s->gates.lockup_alpha / 2 / (double)(looks ?: 1), mu0 = 0, tc = 0, tb = 0;

	if (!p)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		p[i] = &m[i];
	qsort(p, n, sizeof(*p), by_stratum);
	for (size_t k = 0; k < s->nwaves; k++) {
		struct evidence_plan_wave *w = &out[k];
		double hours = (double)s->waves[k].bake_ms / 3600e3, rate = 0;

		memset(w, 0, sizeof(*w));
		w->bake_s = (double)s->waves[k].bake_ms / 1000;
		for (i = 0; i < n; i = j) {
			size_t c = 0;

			for (j = i; j < n && !strcmp(p[j]->stratum, p[i]->stratum); j++)
				c += p[j]->wave <= k;
			g = j - i;
			/* canaries are compared only in a stratum with baselines left */
			if (!c || c == g)
				continue;
			w->canaries += c;
			w->baselines += g - c;
			rate += evidence_rate(e, p[i]->stratum, 0, 0) * (double)c;
			tc += (double)c * hours;
			tb += (double)(g - c) * hours;
		}
		w->looked = w->canaries > 0;
		w->rho = tc > 0 ? tb / tc : 0;
		mu0 += rate * hours;
		w->mu0 = mu0;
		w->mu_needed =
			stats_rate_mu_needed(s->gates.detect_ratio, w->rho, alpha, s->gates.power);
		w->detectable = stats_rate_detectable(mu0, w->rho, alpha, s->gates.power);
		/*
		 * The bake at which mu0 meets mu_needed at this wave's rate, rho
		 * held: less than its own when it has more than enough, 0 when
		 * the waves before are enough alone.
		 */
		if (!isfinite(w->mu_needed))
			w->bake_needed_s = INFINITY;
		else if (rate > 0)
			w->bake_needed_s = fmax(0, w->bake_s + (w->mu_needed - mu0) / rate * 3600);
		else
			w->bake_needed_s = mu0 >= w->mu_needed ? 0 : INFINITY;
	}
	free(p);
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * Probe histograms for /metrics, summed in memory as reports commit: one
 * series per probe and the policy its hosts run, so a scrape costs no
 * store query and a canary's latencies stand next to the baseline's.
 * They count from kmemd's start, as Prometheus counters do. Probe names
 * are bounded (names.h) and policies past PROBE_SERIES_MAX series fold
 * into "other"; series are found by hash, whatever their number.
 */
#include <errno.h>
#include <openssl/lhash.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kmemd.h"
#include "text.h"

static unsigned long series_hash(const void *p)
{
	const struct probe_series *s = p;

	return OPENSSL_LH_strhash(s->probe) ^ (OPENSSL_LH_strhash(s->policy) * 31);
}

static int series_cmp(const void *a, const void *b)
{
	const struct probe_series *x = a, *y = b;

	return strcmp(x->probe, y->probe) ?: strcmp(x->policy, y->policy);
}

static struct probe_series *lookup(struct probe_totals *t, const char *probe, const char *policy)
{
	struct probe_series key;

	if (!t->index)
		return NULL;
	snprintf(key.probe, sizeof(key.probe), "%s", probe);
	snprintf(key.policy, sizeof(key.policy), "%s", policy);
	return OPENSSL_LH_retrieve(t->index, &key);
}

/* The series of probe and policy, created empty the first time. */
static struct probe_series *find(struct probe_totals *t, const char *probe, const char *policy)
{
	struct probe_series *s = lookup(t, probe, policy), **grown;

	if (s)
		return s;
	if (!t->index && !(t->index = OPENSSL_LH_new(series_hash, series_cmp)))
		return NULL;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;

		grown = realloc(t->s, cap * sizeof(*grown));
		if (!grown)
			return NULL;
		t->s = grown;
		t->cap = cap;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	snprintf(s->probe, sizeof(s->probe), "%s", probe);
	snprintf(s->policy, sizeof(s->policy), "%s", policy);
	OPENSSL_LH_insert(t->index, s);
	if (!lookup(t, probe, policy)) {
		free(s);
		return NULL;
	}
	t->s[t->n++] = s;
	return s;
}

int probe_totals_add(struct probe_totals *t, const char *probe, const char *policy,
		     const struct hist *h)
{
	struct probe_series *s;

	/* past the cap, new policies share one series per probe: bounded cardinality */
	if (t->n >= PROBE_SERIES_MAX && !lookup(t, probe, policy))
		policy = "other";
	s = find(t, probe, policy);
	if (!s)
		return -ENOMEM;
	hist_merge(&s->h, h);
	return 0;
}

void probe_totals_clear(struct probe_totals *t)
{
	for (size_t i = 0; i < t->n; i++) {
		if (t->index)
			OPENSSL_LH_delete(t->index, t->s[i]);
		free(t->s[i]);
	}
	t->n = 0;
}

int probe_totals_merge(struct probe_totals *dst, struct probe_totals *src)
{
	size_t i;
	int r = 0;

	for (i = 0; r == 0 && i < src->n; i++)
		r = probe_totals_add(dst, src->s[i]->probe, src->s[i]->policy, &src->s[i]->h);
	probe_totals_clear(src);
	return r;
}

struct share_slot {
	uint64_t key; /* 0: empty */
	uint64_t total, counted; /* the values the host sent, and those /metrics took */
};

/* what kmemd.h says a host costs */
_Static_assert(sizeof(struct share_slot) == 24, "a share slot is 24 bytes");

struct probe_share_set {
	char probe[64];
	struct share_slot *slots; /* open addressing, at most half full */
	size_t cap, n, with_values;
	uint64_t median; /* known: the lower median of the totals, as of `since` updates ago */
	size_t since;
	bool known;
};

static struct share_slot *share_slot(struct share_slot *slots, size_t cap, uint64_t key)
{
	size_t i = (size_t)(key ^ key >> 32) & (cap - 1);

	while (slots[i].key && slots[i].key != key)
		i = (i + 1) & (cap - 1);
	return &slots[i];
}

static struct probe_share_set *share_set(struct probe_shares *r, const char *probe)
{
	struct probe_share_set *s, **grown;
	size_t i;

	/* probes are few (names.h bounds them) */
	for (i = 0; i < r->n; i++)
		if (!strcmp(r->set[i]->probe, probe))
			return r->set[i];
	grown = realloc(r->set, (r->n + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	r->set = grown;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	snprintf(s->probe, sizeof(s->probe), "%s", probe);
	r->set[r->n++] = s;
	return s;
}

/* host's slot, added empty the first time; NULL when out of memory. */
static struct share_slot *share_get(struct probe_share_set *s, uint64_t key)
{
	struct share_slot *slots, *x;
	size_t cap, i;

	if (2 * (s->n + 1) > s->cap) {
		cap = s->cap ? 2 * s->cap : 16;
		slots = calloc(cap, sizeof(*slots));
		if (!slots)
			return NULL;
		for (i = 0; i < s->cap; i++)
			if (s->slots[i].key)
				*share_slot(slots, cap, s->slots[i].key) = s->slots[i];
		free(s->slots);
		s->slots = slots;
		s->cap = cap;
	}
	x = share_slot(s->slots, s->cap, key);
	if (!x->key) {
		x->key = key;
		s->n++;
	}
	return x;
}

/* Sorting the totals of the hosts with values: again once an eighth of them have reported. */
static int share_median(struct probe_share_set *s)
{
	uint64_t *v;
	size_t i, k = 0;

	if (s->known && s->since <= s->with_values / 8)
		return 0;
	v = malloc(s->with_values * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < s->cap; i++)
		if (s->slots[i].key && s->slots[i].total)
			v[k++] = s->slots[i].total;
	s->median = hist_lower_median(v, k);
	s->since = 0;
	s->known = true;
	free(v);
	return 0;
}

int probe_shares_weigh(struct probe_shares *r, const char *host, const char *probe, struct hist *h)
{
	struct probe_share_set *s = share_set(r, probe);
	struct share_slot *x = s ? share_get(s, text_hash(host)) : NULL;
	uint64_t cap, allowed;
	int scaled = 0;

	if (!x)
		return -ENOMEM;
	if (!h->count)
		return 0;
	s->with_values += !x->total;
	x->total = x->total > UINT64_MAX - h->count ? UINT64_MAX : x->total + h->count;
	s->since++;
	if (s->with_values >= 2) {
		if (share_median(s) < 0)
			return -ENOMEM;
		cap = hist_weight_cap(s->median);
		allowed = cap > x->counted ? cap - x->counted : 0;
		if (h->count > allowed) {
			hist_scale_to(h, allowed);
			scaled = 1;
		}
	}
	x->counted += h->count;
	return scaled;
}

void probe_shares_free(struct probe_shares *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->set[i]->slots);
		free(r->set[i]);
	}
	free(r->set);
	*r = (struct probe_shares){ 0 };
}

void probe_totals_free(struct probe_totals *t)
{
	probe_totals_clear(t);
	OPENSSL_LH_free(t->index);
	free(t->s);
	*t = (struct probe_totals){ 0 };
}

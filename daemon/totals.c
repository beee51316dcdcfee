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

void probe_totals_free(struct probe_totals *t)
{
	probe_totals_clear(t);
	OPENSSL_LH_free(t->index);
	free(t->s);
	*t = (struct probe_totals){ 0 };
}

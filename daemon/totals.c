// SPDX-License-Identifier: GPL-2.0
/*
 * Probe histograms for /metrics, summed in memory as reports commit: one
 * series per probe and the policy its hosts run, so a scrape costs no
 * store query and a canary's latencies stand next to the baseline's.
 * They count from kmemd's start, as Prometheus counters do.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kmemd.h"

static struct probe_series *find(struct probe_totals *t, const char *probe, const char *policy)
{
	struct probe_series *s;
	size_t i;

	for (i = 0; i < t->n; i++)
		if (!strcmp(t->s[i].probe, probe) && !strcmp(t->s[i].policy, policy))
			return &t->s[i];
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;

		s = realloc(t->s, cap * sizeof(*s));
		if (!s)
			return NULL;
		t->s = s;
		t->cap = cap;
	}
	s = &t->s[t->n++];
	memset(s, 0, sizeof(*s));
	snprintf(s->probe, sizeof(s->probe), "%s", probe);
	snprintf(s->policy, sizeof(s->policy), "%s", policy);
	return s;
}

int probe_totals_add(struct probe_totals *t, const char *probe, const char *policy,
		     const struct hist *h)
{
	struct probe_series *s;

	/* past the cap, new policies share one series per probe: bounded cardinality */
	if (t->n >= PROBE_SERIES_MAX) {
		size_t i;

		for (i = 0; i < t->n; i++)
			if (!strcmp(t->s[i].probe, probe) && !strcmp(t->s[i].policy, policy))
				break;
		if (i == t->n)
			policy = "other";
	}
	s = find(t, probe, policy);
	if (!s)
		return -ENOMEM;
	hist_merge(&s->h, h);
	return 0;
}

int probe_totals_merge(struct probe_totals *dst, struct probe_totals *src)
{
	size_t i;
	int r = 0;

	for (i = 0; r == 0 && i < src->n; i++)
		r = probe_totals_add(dst, src->s[i].probe, src->s[i].policy, &src->s[i].h);
	src->n = 0;
	return r;
}

void probe_totals_free(struct probe_totals *t)
{
	free(t->s);
	*t = (struct probe_totals){ 0 };
}

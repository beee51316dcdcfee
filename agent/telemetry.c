// SPDX-License-Identifier: GPL-2.0
/*
 * Probe deltas for reports (telemetry.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telemetry.h"

void telemetry_init(struct telemetry *t)
{
	memset(t, 0, sizeof(*t));
}

/* The previous totals of name, created zeroed the first time. */
static struct hist *previous(struct telemetry *t, const char *name, bool *fresh)
{
	size_t i;

	*fresh = false;
	for (i = 0; i < t->nseen; i++)
		if (!strcmp(t->seen[i].name, name))
			return &t->seen[i].prev;
	if (t->nseen == TELEMETRY_MAX_SAMPLES)
		return NULL;
	*fresh = true;
	snprintf(t->seen[t->nseen].name, sizeof(t->seen[0].name), "%s", name);
	memset(&t->seen[t->nseen].prev, 0, sizeof(struct hist));
	return &t->seen[t->nseen++].prev;
}

static void sample(struct telemetry *t, const char *name, const struct hist *cur, int64_t now_ms)
{
	Kmemctl__V1__ProbeSample *s;
	struct hist delta, *prev;
	bool fresh;

	prev = previous(t, name, &fresh);
	if (!prev)
		return;
	if (!fresh && t->last_ms) {
		hist_delta(&delta, prev, cur);
		s = &t->samples[t->n];
		kmemctl__v1__probe_sample__init(s);
		kmemctl__v1__histogram__init(&t->hists[t->n]);
		snprintf(t->names[t->n], sizeof(t->names[0]), "%s", name);
		hist_to_pb(&delta, &t->hists[t->n], t->counts[t->n]);
		s->probe = t->names[t->n];
		s->start_unix_ms = t->last_ms;
		s->end_unix_ms = now_ms;
		s->hist = &t->hists[t->n];
		t->samplesp[t->n++] = s;
	}
	*prev = *cur;
}

int telemetry_read(const struct rootfs *rfs, struct telemetry_read *rd)
{
	char ids[KERNEL_MAX_IDS][KERNEL_ID_MAX + 1];
	struct kernel_probe p;
	size_t n, i;
	int r;

	rd->n = 0;
	rd->unreadable = 0;
	r = kernel_ids(rfs, "probes", ids, KERNEL_MAX_IDS, &n);
	if (r < 0)
		return r;
	for (i = 0; i < n && rd->n + 2 <= TELEMETRY_MAX_SAMPLES; i++) {
		if (kernel_read_probe(rfs, ids[i], &p) < 0) {
			rd->unreadable++;
			continue;
		}
		if (!p.enabled)
			continue;
		snprintf(rd->names[rd->n], TELEMETRY_NAME_MAX, "%s", p.id);
		rd->hists[rd->n++] = p.hist;
		if (p.second[0]) {
			snprintf(rd->names[rd->n], TELEMETRY_NAME_MAX, "%s-%s", p.id, p.second);
			rd->hists[rd->n++] = p.hist2;
		}
	}
	return 0;
}

void telemetry_update(struct telemetry *t, const struct telemetry_read *rd, int64_t now_ms)
{
	size_t i;

	t->n = 0;
	t->unreadable = rd->unreadable;
	for (i = 0; i < rd->n; i++)
		sample(t, rd->names[i], &rd->hists[i], now_ms);
	t->last_ms = now_ms;
}

int telemetry_probes(const struct rootfs *rfs, struct telemetry *t, int64_t now_ms)
{
	struct telemetry_read *rd = malloc(sizeof(*rd));
	int r;

	if (!rd)
		return -ENOMEM;
	r = telemetry_read(rfs, rd);
	if (r == 0) {
		telemetry_update(t, rd, now_ms);
		r = (int)t->n;
	}
	free(rd);
	return r;
}

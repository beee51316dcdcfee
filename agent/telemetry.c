// SPDX-License-Identifier: GPL-2.0
/*
 * Probe deltas for reports (telemetry.h).
 */
#include <errno.h>
#include <stdio.h>
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

int telemetry_probes(const struct rootfs *rfs, struct telemetry *t, int64_t now_ms)
{
	char ids[KERNEL_MAX_IDS][KERNEL_ID_MAX + 1], name[TELEMETRY_NAME_MAX];
	struct kernel_probe p;
	size_t n, i;
	int r;

	t->n = 0;
	t->unreadable = 0;
	r = kernel_ids(rfs, "probes", ids, KERNEL_MAX_IDS, &n);
	if (r < 0)
		return r;
	for (i = 0; i < n; i++) {
		if (kernel_read_probe(rfs, ids[i], &p) < 0) {
			t->unreadable++;
			continue;
		}
		if (!p.enabled)
			continue;
		sample(t, p.id, &p.hist, now_ms);
		if (p.second[0]) {
			snprintf(name, sizeof(name), "%s-%s", p.id, p.second);
			sample(t, name, &p.hist2, now_ms);
		}
	}
	t->last_ms = now_ms;
	return (int)t->n;
}

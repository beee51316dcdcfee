/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Probe telemetry: each interval, what every enabled probe of kmemctl.ko
 * recorded since the last one, as ProbeSample deltas
 * (proto/kmemctl/v1/telemetry.proto). A probe's secondary histogram is a
 * sample of its own, named "<probe>-<name>" (vmap-purge-flushes).
 *
 * The module's histograms are running totals; a total that went down
 * (the probe was reset, or the module reloaded) makes the delta the new
 * total, as lib/hist.c's hist_delta() does.
 */
#ifndef KMEM_AGENT_TELEMETRY_H
#define KMEM_AGENT_TELEMETRY_H

#include <stdbool.h>
#include <stdint.h>

#include "hist.h"
#include "kernel.h"
#include "kmemctl/v1/telemetry.pb-c.h"

#define TELEMETRY_MAX_SAMPLES (2 * KERNEL_MAX_IDS)
#define TELEMETRY_NAME_MAX (2 * KERNEL_ID_MAX + 2)

struct telemetry {
	struct {
		char name[TELEMETRY_NAME_MAX];
		struct hist prev;
	} seen[TELEMETRY_MAX_SAMPLES];
	size_t nseen;
	int64_t last_ms; /* 0: no baseline yet */

	Kmemctl__V1__ProbeSample samples[TELEMETRY_MAX_SAMPLES];
	Kmemctl__V1__ProbeSample *samplesp[TELEMETRY_MAX_SAMPLES];
	Kmemctl__V1__Histogram hists[TELEMETRY_MAX_SAMPLES];
	uint64_t counts[TELEMETRY_MAX_SAMPLES][HIST_BUCKETS];
	char names[TELEMETRY_MAX_SAMPLES][TELEMETRY_NAME_MAX];
	size_t n;
	size_t unreadable; /* probes whose files did not parse */
};

/* What one reading of the module's probes found: running totals. */
struct telemetry_read {
	char names[TELEMETRY_MAX_SAMPLES][TELEMETRY_NAME_MAX];
	struct hist hists[TELEMETRY_MAX_SAMPLES];
	size_t n;
	size_t unreadable;
};

void telemetry_init(struct telemetry *t);

/*
 * Reads the totals of every enabled probe (the part that touches the
 * kernel, run by a collector). -ENOENT when the module is not loaded.
 */
int telemetry_read(const struct rootfs *rfs, struct telemetry_read *rd);

/*
 * Fills t's samples with the deltas of rd since the previous update (none
 * the first time, which sets the baseline). A reading never used leaves
 * the baseline alone, so its counts show up in the next delta.
 */
void telemetry_update(struct telemetry *t, const struct telemetry_read *rd, int64_t now_ms);

/*
 * telemetry_read() and telemetry_update() at now_ms. Returns the number of
 * samples, or -ENOENT when the module is not loaded.
 */
int telemetry_probes(const struct rootfs *rfs, struct telemetry *t, int64_t now_ms);

#endif

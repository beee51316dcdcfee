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

void telemetry_init(struct telemetry *t);

/*
 * Reads every probe at now_ms and fills samples with the deltas since the
 * previous call (none the first time, which sets the baseline). Returns
 * the number of samples, or -ENOENT when the module is not loaded.
 */
int telemetry_probes(const struct rootfs *rfs, struct telemetry *t, int64_t now_ms);

#endif

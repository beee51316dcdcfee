/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A wave's verdict from its canaries' and baselines' telemetry over the
 * bake (docs/rollouts.md, "gates"). Pure: the engine gathers each host's
 * numbers from the store, this judges them and says why, with every
 * number it used.
 */
#ifndef KMEMD_GATES_H
#define KMEMD_GATES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rollout.h"

/* One host over the bake window. */
struct gate_host {
	const char *host;
	double hours; /* reporting time in the window: its exposure */
	uint64_t soft_lockups, hard_lockups, rcu_stalls;
	/* p99 of each of the gates' latency_probes; < 0: no samples */
	double p99_ns[ROLLOUT_MAX_PROBES];
	const char *unhealthy; /* a tripped mitigation, a stalled transition, a refusal; NULL */
};

enum gate_verdict {
	GATE_PASS,
	GATE_FAIL,
	GATE_INCONCLUSIVE, /* holds the wave: too little data is never a pass */
};

struct gate_result {
	enum gate_verdict verdict;
	char reason[256];
	json_t *detail; /* the numbers: counts, exposures, p-values, effects, hosts */
};

const char *gate_verdict_name(enum gate_verdict v);

/*
 * Judges a wave: health, then ceilings, then (when there are baselines)
 * the lockup rate and latency comparisons. final: the wave reaches every
 * member, so no baselines are left and only health and ceilings judge it.
 * -ENOMEM; otherwise 0 with out filled (out->detail to be json_decref'ed).
 */
int gates_judge(const struct rollout_gates *g, const struct gate_host *canary, size_t nc,
		const struct gate_host *base, size_t nb, bool final, struct gate_result *out);

#endif

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
	/* p99 and max of each of the gates' latency_probes; < 0: no samples */
	double p99_ns[ROLLOUT_MAX_PROBES], max_ns[ROLLOUT_MAX_PROBES];
	const char *unhealthy; /* a tripped mitigation, a stalled transition, a refusal; NULL */
	bool unmatched; /* a canary with no baseline in its stratum: not compared */
};

enum gate_verdict {
	GATE_PASS,
	GATE_FAIL,
	GATE_INCONCLUSIVE, /* holds the wave: too little data is never a pass */
};

/* How much of a wave to judge. */
enum gate_scope {
	GATES_HEALTH, /* while it bakes: health and ceilings fail it early, nothing passes it */
	GATES_LAST_WAVE, /* it reached every member: no baselines, so health, ceilings, data */
	GATES_ALL, /* its bake is over: everything */
};

struct gate_result {
	enum gate_verdict verdict;
	/*
	 * The gate that decided: health, hard-lockups, p99-ceiling, canaries,
	 * baselines, exposure, lockups, latency; "" when none objected.
	 */
	const char *gate;
	char reason[256];
	json_t *detail; /* the numbers: counts, exposures, p-values, effects, hosts */
};

const char *gate_verdict_name(enum gate_verdict v);

/*
 * Judges a wave: health, then ceilings, then (GATES_ALL) the lockup rate
 * and latency of the matched canaries against the baselines. Under
 * GATES_HEALTH a wave that is not failed is "pass" only in the sense that
 * nothing is wrong yet. -ENOMEM; otherwise 0 with out filled (out->detail
 * to be json_decref'ed).
 */
int gates_judge(const struct rollout_gates *g, const struct gate_host *canary, size_t nc,
		const struct gate_host *base, size_t nb, enum gate_scope scope,
		struct gate_result *out);

#endif

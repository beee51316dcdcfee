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

#include "evidence.h"
#include "rollout.h"

/* One host over the bake window. */
/* Hosts a verdict names per list (canaries, baselines, unmatched); it counts them all. */
#define GATES_HOSTS_NAMED 100

struct gate_host {
	const char *host;
	const char *stratum; /* its plan stratum: canaries are compared within it */
	double hours; /* reporting time in the window: its exposure */
	uint64_t soft_lockups, hard_lockups, rcu_stalls;
	/* p99 and max of each of the gates' latency_probes; < 0: no samples */
	double p99_ns[ROLLOUT_MAX_PROBES], max_ns[ROLLOUT_MAX_PROBES];
	const char *unhealthy; /* a tripped mitigation, a stalled transition, a refusal; NULL */
	/*
	 * A mitigation the rollout's policy turns on that the host's module
	 * holds until a build record vouches for its build (release): the
	 * host cannot show the policy's effect yet. NULL: none.
	 */
	const char *waiting, *release;
	bool unmatched; /* a canary with no baseline in its stratum: not compared */
};

enum gate_verdict {
	GATE_PASS,
	GATE_FAIL,
	GATE_INCONCLUSIVE, /* holds the wave: too little data is never a pass */
};

/* How much of a wave to judge. */
enum gate_scope {
	/* while it bakes: health, ceilings and the sequential tests fail it early, nothing passes it */
	GATES_HEALTH,
	GATES_LAST_WAVE, /* it reached every member: no baselines, so health, ceilings, data */
	GATES_ALL, /* its bake is over: everything */
};

struct gate_result {
	enum gate_verdict verdict;
	/*
	 * The gate that decided: health, hard-lockups, p99-ceiling,
	 * lockups-sequential, hard-lockups-sequential, build-record, canaries, baselines,
	 * exposure, information, lockups, latency; "" when none objected.
	 */
	const char *gate;
	char reason[256];
	json_t *detail; /* the numbers: counts, exposures, p-values, effects, hosts */
};

const char *gate_verdict_name(enum gate_verdict v);

/* Where the rollout is, as the error budget needs it. */
struct gate_look {
	unsigned wave;
	size_t nlooks; /* waves with a final look (with baselines): alpha_final is split over them */
	bool sequential; /* running or holding: the sequential tests take this tick */
	/* the detail says the ratio the evidence can detect (a bisection of the power: a simulation of many verdicts leaves it out) */
	bool detectable;
};

/*
 * Judges a wave: health, then ceilings, then (not at the last wave) the
 * sequential tests of the lockup and hard-lockup rates on the tick's
 * increments, then (past the bake) canaries waiting for a build record
 * hold it, then (GATES_ALL) the final looks at the rates over every
 * wave so far, at most once a wave, and latency of the matched canaries
 * against the baselines. ev, the rollout's evidence, goes in and out
 * (*changed set when it changed). Under GATES_HEALTH a wave that is not
 * failed is "pass" only in the sense that nothing is wrong yet. -ENOMEM;
 * otherwise 0 with out filled (out->detail to be json_decref'ed).
 */
int gates_judge(const struct rollout_gates *g, struct evidence *ev, const struct gate_look *look,
		const struct gate_host *canary, size_t nc, const struct gate_host *base, size_t nb,
		enum gate_scope scope, struct gate_result *out, bool *changed);

/* The alpha of the sequential test (seq) or of one final look (nlooks of them) of a budget. */
double gates_alpha(double budget, bool seq, size_t nlooks);

#endif

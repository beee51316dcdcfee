/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A rollout's evidence (docs/rollouts.md, "statistics"): what its gates'
 * tests have seen so far, kept with the rollout in the store so that a
 * restarted kmemd (or another) goes on with the same tests. Per test
 * (lockups, hard lockups): the mixture SPRT's log likelihood ratios, the
 * current wave's sums per stratum at the last tick, the cells (wave,
 * stratum) the final looks compare, and the looks already made. And the
 * fleet's lockup rate per stratum before the rollout started.
 */
#ifndef KMEMD_EVIDENCE_H
#define KMEMD_EVIDENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rollout.h"
#include "stats.h"

#define EVIDENCE_STRATUM_MAX 160 /* as struct rollout_member's */

/* One stratum's matched canaries and baselines over a wave's window. */
struct evidence_sums {
	char stratum[EVIDENCE_STRATUM_MAX];
	uint64_t x_c; /* canary events */
	double t_c; /* canary host-hours */
	uint64_t x_b;
	double t_b;
};

/* A (wave, stratum) cell: its sums at the wave's end (the current wave's: now). */
struct evidence_cell {
	unsigned wave;
	struct evidence_sums s;
	double mu0; /* canary events expected at the fleet's rate */
};

/* A final look made, and its p-value: it is not made again. */
struct evidence_look {
	unsigned wave;
	double p;
};

struct evidence_test {
	double log_lr[STATS_MSPRT_RATIOS];
	struct evidence_sums *last; /* the current wave's, per stratum, at the last tick */
	size_t nlast;
	struct evidence_cell *cells;
	size_t ncells;
	struct evidence_look *looked;
	size_t nlooked;
};

/* The fleet's lockups in a stratum before the rollout. */
struct evidence_history {
	char stratum[EVIDENCE_STRATUM_MAX];
	double events, hours;
};

struct evidence {
	unsigned wave; /* the wave whose window last is of */
	int64_t since_ms; /* its start */
	struct evidence_history *history;
	size_t nhistory;
	struct evidence_test lockups, hard;
};

/* What a rollout holds back in memory; the struct is zeroed, ready for a new rollout. */
void evidence_free(struct evidence *e);

/* The evidence as compact JSON (malloc'ed) into *out; -ENOMEM. */
int evidence_to_json(const struct evidence *e, char **out);
/*
 * Reads what evidence_to_json() wrote. The store's copy may have been
 * edited: -EINVAL with a one-line reason for anything else. e is zeroed
 * first and left empty on error.
 */
int evidence_from_json(const char *json, size_t len, struct evidence *e, char *err, size_t errlen);

/* Adds events over host-hours to a stratum's history. -ENOMEM or 0. */
int evidence_history_add(struct evidence *e, const char *stratum, double events, double hours);

/*
 * Wave w began at since_ms: when it is not the wave the evidence last saw,
 * the sums of its window start from nothing. true when that changed e.
 */
bool evidence_wave(struct evidence *e, unsigned wave, int64_t since_ms);

/*
 * The fleet's lockup rate in a stratum: its history and the x_b baseline
 * events over t_b host-hours pooled. 0 when it had no lockups.
 */
double evidence_rate(const struct evidence *e, const char *stratum, uint64_t x_b, double t_b);

/*
 * One tick of test t in the current wave: cur, the wave's sums so far per
 * stratum. Adds each stratum's increment since the last tick to the SPRT
 * (a stratum whose sums went back or did not grow on both sides is rebased),
 * and makes cur the current wave's cells (with their mu0 when rates).
 * -ENOMEM or 0; *changed set when e changed.
 */
int evidence_update(struct evidence *e, struct evidence_test *t, const struct evidence_sums *cur,
		    size_t n, bool rates, bool *changed);

/* The final look of wave w made, and its p; false when not. */
bool evidence_looked(const struct evidence_test *t, unsigned wave, double *p);
int evidence_look_add(struct evidence_test *t, unsigned wave, double p);

/*
 * The cells of waves 0..w as a stratified comparison (c: ncells of t), with
 * the canary events expected at the fleet's rate (mu0) and the baseline
 * over canary host-hours (rho; 0 without canary host-hours). How many.
 */
size_t evidence_cells(const struct evidence_test *t, unsigned wave, struct stats_cell *c,
		      double *mu0, double *rho);

/* What a wave of a plan can detect (POST /v1/rollouts/plan, kmemctl rollout plan). */
struct evidence_plan_wave {
	size_t canaries, baselines;
	double bake_s;
	double mu0; /* at the bake's end, waves 0..w */
	double rho; /* baseline over canary host-hours, waves 0..w */
	double mu_needed; /* for detect_ratio at power; INFINITY: never */
	double detectable; /* at mu0; INFINITY: none up to 1000 */
	double bake_needed_s; /* this wave's bake for mu_needed; INFINITY: never */
	bool looked; /* it has baselines, so a final look */
};

/* The final looks of a plan of n members: waves that leave a baseline. */
size_t evidence_nlooks(const struct rollout_spec *s, size_t n);

/*
 * What each wave of s can detect, its members planned (rollout_plan()) and
 * the fleet's rate per stratum in e's history, assuming each member reports
 * through every bake; out has s->nwaves entries. -ENOMEM or 0.
 */
int evidence_plan(const struct rollout_spec *s, const struct rollout_member *m, size_t n,
		  const struct evidence *e, struct evidence_plan_wave *out);

#endif

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Rollouts (docs/rollouts.md): the document an operator submits, and the
 * plan made from it: which member hosts each wave reaches, and which
 * members are a canary's matched baselines. Pure functions; the store
 * keeps the result and the engine moves it.
 */
#ifndef KMEMD_ROLLOUT_H
#define KMEMD_ROLLOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "selector.h"

#define ROLLOUT_NAME_MAX 64
#define ROLLOUT_MAX_WAVES 16
#define ROLLOUT_MAX_PROBES 4

struct rollout_wave {
	bool percent; /* n is a percentage of the members, else a count */
	uint64_t n;
	uint64_t bake_ms;
	bool release; /* the holdback's: the parser's last wave, reaching everyone */
	bool manual; /* it starts on an operator's promote, not on the wave before passing */
};

enum rollout_underpowered {
	ROLLOUT_UNDERPOWERED_HOLD, /* a wave without the information is held */
	ROLLOUT_UNDERPOWERED_PASS, /* it passes, saying what it could have detected */
};

struct rollout_gates {
	double lockup_alpha; /* false rollbacks on lockups, over the whole rollout */
	double min_exposure_h; /* host-hours on each side */
	char latency_probes[ROLLOUT_MAX_PROBES][ROLLOUT_NAME_MAX];
	size_t nprobes;
	double latency_alpha;
	double latency_effect; /* P(canary slower) at least this to fail */
	double hard_alpha; /* the hard-lockup rate test's, over the whole rollout */
	bool has_max_hard_lockups; /* false: no absolute ceiling */
	uint64_t max_hard_lockups;
	double detect_ratio; /* the smallest regression the plan must catch */
	double power; /* with this probability */
	enum rollout_underpowered underpowered;
	uint64_t p99_ceiling_ns; /* 0: none */
	uint64_t min_hosts; /* with data, on each side */
};

struct rollout_spec {
	char name[ROLLOUT_NAME_MAX];
	char policy[ROLLOUT_NAME_MAX];
	uint64_t version;
	struct selector selector;
	/* the document's, then the release wave when something is held back */
	struct rollout_wave waves[ROLLOUT_MAX_WAVES + 1];
	size_t nwaves;
	uint64_t holdback_percent; /* of each stratum, kept out of the waves until release */
	char rollback_policy[ROLLOUT_NAME_MAX]; /* "": each host's previous policy */
	uint64_t rollback_version;
	struct rollout_gates gates;
	bool dry_run; /* members, waves and verdicts, and no host is sent the policy */
	bool on_fail_pause; /* a failed wave pauses the rollout instead of rolling it back */
};

/*
 * Where a rollout stands (docs/rollouts.md). The store keeps each by its
 * name; engine_transition() is the only way from one to another.
 */
enum rollout_state {
	ROLLOUT_PENDING, /* created; it has no members until it starts */
	ROLLOUT_RUNNING,
	ROLLOUT_HOLDING, /* its gates cannot tell yet */
	ROLLOUT_PAUSED,
	ROLLOUT_ROLLING_BACK,
	ROLLOUT_ROLLED_BACK,
	ROLLOUT_DONE,
	ROLLOUT_ABORTED,
	ROLLOUT_NSTATES,
};

/* What the hosts a rollout reached are to run while it is in a state. */
enum rollout_target {
	ROLLOUT_TARGET_NONE, /* pending: it reached no host */
	ROLLOUT_TARGET_POLICY, /* the rollout's policy */
	ROLLOUT_TARGET_ROLLBACK, /* its rollback policy, else what each host ran before */
};

const char *rollout_state_name(enum rollout_state s);
/* The state of that name, or -EINVAL. */
int rollout_state_parse(const char *name);
enum rollout_target rollout_state_target(enum rollout_state s);
/*
 * The policy a member of a rollout goes back to: the rollout's rollback
 * policy (rollback "": none), else what the member ran before (prev NULL:
 * nothing). false when there is neither. The one statement of the rule:
 * desired.c hands it out, engine.c waits for hosts to run it.
 */
bool rollout_rollback_target(const char *rollback, uint64_t rollback_version, const char *prev,
			     uint64_t prev_version, const char **policy, uint64_t *version);

/* -EINVAL with a one-line reason naming the key for anything but a valid document. */
int rollout_spec_parse(const char *json, size_t len, struct rollout_spec *s, char *err,
		       size_t errlen);

/* What a member is while wave k runs. */
enum rollout_role {
	ROLLOUT_CANARY, /* reached, with baselines in its stratum */
	ROLLOUT_UNMATCHED, /* reached, but no one in its stratum is left to compare with */
	ROLLOUT_BASELINE, /* not reached, in a stratum with canaries */
	ROLLOUT_UNUSED, /* not reached, and no canary to compare with */
};

/* A host of the rollout, as the plan needs it. */
struct rollout_member {
	char host[65];
	char stratum[160]; /* kernel build id / CPU class / role label */
	uint64_t hash;
	double position; /* (rank in stratum + 1/2) / stratum size */
	unsigned wave; /* the first wave that reaches it */
	char prev_policy[ROLLOUT_NAME_MAX]; /* what it ran before; "": nothing */
	uint64_t prev_version;
	enum rollout_role role; /* set by rollout_match() */
};

/* A growing array of members. */
struct rollout_members {
	struct rollout_member *m;
	size_t n, cap;
};

/* A new zeroed member at the end; NULL when out of memory. free(ms->m) when done. */
struct rollout_member *rollout_members_add(struct rollout_members *ms);

/* "build/cpus<=N/role": the hosts a canary is compared with share it. */
void rollout_stratum(const char *build_id, uint32_t cpus, const char *role, char *out, size_t len);
/* The stable order of a rollout's hosts: FNV-1a 64 of "rollout/host". */
uint64_t rollout_hash(const char *rollout, const char *host);
/*
 * Hosts wave k reaches in all (cumulative), of n members. Every wave but
 * the release wave reaches at most n less the holdback.
 */
size_t rollout_target(const struct rollout_spec *s, size_t k, size_t n);
/*
 * The first wave (not the release wave) that adds no host to the one
 * before, of n members, with why: -1 when every wave adds one.
 */
int rollout_wave_empty(const struct rollout_spec *s, size_t n, char *why, size_t len);

/*
 * Orders members (host, stratum filled in) so that every prefix spreads
 * over the strata, and sets each one's hash, position and wave (nwaves:
 * no wave reaches it).
 */
void rollout_plan(const struct rollout_spec *s, struct rollout_member *m, size_t n);

/*
 * Sets each member's role while wave k runs: a canary's matched baselines
 * are the members of its stratum that no wave has reached yet. Keeps the
 * order of m. -ENOMEM or 0.
 */
int rollout_match(struct rollout_member *m, size_t n, unsigned k);

#endif

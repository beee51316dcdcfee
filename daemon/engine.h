/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The rollout engine (docs/rollouts.md): each tick, every unfinished
 * rollout's wave is judged from its members' telemetry and moved on:
 * promoted when its bake is over and the gates pass, held while they
 * cannot tell, rolled back when one fails; a rollback ends once every
 * host it reached reports its rollback target. All it knows is in the
 * store, so a restarted kmemd carries on exactly where the last stopped.
 */
#ifndef KMEMD_ENGINE_H
#define KMEMD_ENGINE_H

#include <stdint.h>

#include "store.h"

/* What moves a rollout: an operator's action, or the engine's judgement. */
enum rollout_event {
	ROLLOUT_EV_START, /* members and plan made, wave 1 begins */
	ROLLOUT_EV_PAUSE,
	ROLLOUT_EV_RESUME,
	ROLLOUT_EV_PROMOTE, /* the next wave now, or done after the last */
	ROLLOUT_EV_ABORT, /* its hosts are rolled back */
	ROLLOUT_EV_PASS, /* the wave's gates passed: the next wave, or done */
	ROLLOUT_EV_HOLD, /* the gates cannot tell yet */
	ROLLOUT_EV_FAIL, /* a gate failed: roll back */
	ROLLOUT_EV_FAIL_PAUSE, /* a gate failed, and the rollout says on_fail = pause */
	ROLLOUT_EV_PASS_WAIT, /* the wave passed; the next has a manual gate: promote starts it */
	ROLLOUT_EV_BACK, /* every host it reached runs its rollback target */
	ROLLOUT_NEVENTS,
};

/* The operator's action of that name (start, pause, resume, promote, abort), or -EINVAL. */
int engine_action(const char *name);

/*
 * The one place a rollout's state changes: ev moves ro from its state as
 * the table of allowed transitions says, in a plan of nwaves waves; a wave
 * that starts, starts at now_ms. -EBUSY, with why and ro as it was, when
 * ro's state does not allow ev.
 */
int engine_transition(struct store_rollout *ro, enum rollout_event ev, size_t nwaves,
		      int64_t now_ms, char *why, size_t len);

struct engine_change {
	const struct store_rollout *ro; /* as it now stands */
	enum rollout_state was; /* its state before */
	const struct store_verdict *v; /* the verdict stored with the change; NULL: none */
};

typedef void (*engine_cb)(void *arg, const struct engine_change *c);

/*
 * One pass at now_ms over every running, holding, paused or rolling-back
 * rollout; cb hears of each change made. How many were judged, or the
 * first error after trying every one (-EIO: the store's, see its error()).
 * A rollout that moved while it was judged (its update -ESTALE) keeps
 * that move and is judged again at the next pass. engine: the lease
 * holder the pass runs for (NULL: unfenced, a store of its own): once
 * another kmemd holds the lease, the pass writes nothing more and ends
 * with -ENOLCK.
 */
int engine_tick(struct store *st, int64_t now_ms, const char *engine, engine_cb cb, void *arg);

/* A store members() callback that adds each to a struct rollout_members (arg). */
int engine_add_member(void *arg, const struct store_member *sm);

#endif

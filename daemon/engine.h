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

struct engine_change {
	const struct store_rollout *ro; /* as it now stands */
	const char *was; /* its state before */
	const struct store_verdict *v; /* the verdict stored with the change; NULL: none */
};

typedef void (*engine_cb)(void *arg, const struct engine_change *c);

/*
 * One pass at now_ms over every running, holding, paused or rolling-back
 * rollout; cb hears of each change made. How many were judged, or the
 * first error after trying every one (-EIO: the store's, see its error()).
 */
int engine_tick(struct store *st, int64_t now_ms, engine_cb cb, void *arg);

/* A store members() callback that adds each to a struct rollout_members (arg). */
int engine_add_member(void *arg, const struct store_member *sm);

#endif

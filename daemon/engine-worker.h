/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The rollout engine (engine.h) off kmemd's event loop: a pass over a
 * rollout of 10,000 members reads every member's window, a fraction of a
 * second (bench/rollout-engine) that reports would otherwise wait each
 * tick. One thread ("kmemd-engine") with its own read-write connection,
 * opened beside the loop's (store.h's open_beside), runs the passes; the
 * loop asks for one each tick, and hears of its changes, in the order
 * they were made, and of its end on the loop. A tick while a pass runs
 * asks for none: the next pass judges everything as it then stands.
 *
 * An operator's action on the loop and a pass may move the same rollout
 * at once; the store refuses the second move (rollout_update's -ESTALE):
 * the pass judges it again at its next tick, the operator is told to try
 * again.
 */
#ifndef KMEMD_ENGINE_WORKER_H
#define KMEMD_ENGINE_WORKER_H

#include <stdint.h>

#include "engine.h"

struct event_base;
struct engine_worker;

/*
 * A pass's end: engine_tick()'s result r, the store's words when r is
 * -EIO, and what the pass cost its thread.
 */
typedef void (*engine_pass_fn)(void *arg, int r, const char *store_error, double pass_s);

/*
 * A worker on a connection beside st's, its passes for the lease holder
 * engine (engine_tick()'s; kept, not copied); changed(arg) and done(arg)
 * on base's loop.
 */
int engine_worker_new(struct event_base *base, struct store *st, const char *engine,
		      engine_cb changed, engine_pass_fn done, void *arg, struct engine_worker **out,
		      char *err, size_t errlen);

/* A pass at now_ms; -EBUSY while one runs (nothing asked). */
int engine_worker_tick(struct engine_worker *w, int64_t now_ms);

/* After the pass asked for, if one is, is made and heard. */
void engine_worker_free(struct engine_worker *w);

#endif

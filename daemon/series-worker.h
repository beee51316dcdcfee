/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The dashboard's rollout series (daemon/series.c), computed off kmemd's
 * event loop: a wave of 10,000 members reads every member's rows, a
 * fraction of a second that reports would otherwise wait. One worker
 * thread with its own read-only connection to the store computes them;
 * the loop keeps the last answer for each set of parameters.
 *
 * A request is answered at once with the last answer for its parameters,
 * which says when it was computed ("computed_ms"), and a new one is
 * computed when that is SERIES_FRESH_MS old. The first request for
 * parameters with no answer yet waits for it while the loop serves
 * everything else. Errors (no such rollout, a wave not reached) go to
 * those waiting and are not kept.
 */
#ifndef KMEMD_SERIES_WORKER_H
#define KMEMD_SERIES_WORKER_H

#include <stdint.h>

#include "rollout.h"

/* A new answer is computed when a request finds the last this old. */
#define SERIES_FRESH_MS 2000
/* Sets of parameters kept; the least recently asked for goes first. */
#define SERIES_KEEP 32

struct event_base;
struct series_worker;

/* series_rollout()'s parameters but now. */
struct series_key {
	char name[ROLLOUT_NAME_MAX];
	int wave; /* 0-based; < 0: the current */
	int64_t from_ms, to_ms, step_ms; /* 0: series_rollout()'s defaults */
};

struct series_answer {
	const struct series_key *key;
	int r; /* series_rollout()'s, or -ECANCELED: the worker stopped first */
	const char *json; /* r == 0: {"rollout", "wave", "computed_ms", "series"} and "\n" */
	size_t len;
	int64_t computed_ms; /* the now it was computed for */
	const char *store_error; /* r == -EIO: what the store said */
	double compute_s; /* what computing it cost the worker */
};

typedef void (*series_answer_fn)(void *arg, const struct series_answer *a);

/* A worker reading the store at path, answering on base's loop. */
int series_worker_new(struct event_base *base, const char *path, struct series_worker **out,
		      char *err, size_t errlen);

/* Stops the worker (after the series it is computing); those waiting hear -ECANCELED. */
void series_worker_free(struct series_worker *w);

/*
 * fn(arg) hears key's series at now_ms: before this returns when an
 * answer is kept, else from the loop once it is computed. -EBUSY:
 * SERIES_KEEP sets of parameters are being computed; -ENOMEM. fn is not
 * called when this fails.
 */
int series_worker_get(struct series_worker *w, const struct series_key *key, int64_t now_ms,
		      series_answer_fn fn, void *arg);

#endif

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The dashboard's charts (docs/dashboard.md): one host's, or a rollout
 * wave's canaries' against its baselines', telemetry over time, in fixed
 * steps. Per step and side: probe quantiles from the merged histograms,
 * lockups (soft, hard, RCU stalls: what the lockup gate counts) and the
 * host-hours of reporting they happened in, as the gates count them.
 */
#ifndef KMEMD_SERIES_H
#define KMEMD_SERIES_H

#include <jansson.h>
#include <stdint.h>

#include "store.h"

#define SERIES_MAX_STEPS 240
#define SERIES_MIN_STEP_MS 1000

/*
 * The steps of [from_ms, to_ms): step_ms, or 0 for about 60 steps; never
 * more than SERIES_MAX_STEPS nor shorter than SERIES_MIN_STEP_MS.
 * -EINVAL when to_ms <= from_ms.
 */
int series_step(int64_t from_ms, int64_t to_ms, int64_t step_ms, int64_t *out);

/*
 * {"host": {...}, "events": [newest first, at most max_events],
 * "series": {...}} over [from_ms, to_ms); from_ms 0: window_ms before
 * to_ms, or from the host's first report when that is later. -ENOENT no
 * such host.
 */
int series_host(struct store *st, const char *host, int64_t from_ms, int64_t to_ms,
		int64_t window_ms, int64_t step_ms, size_t max_events, json_t **out);

/*
 * A rollout's wave (its current one when wave < 0): its canaries and the
 * baselines they are compared with, each as one side of the series, over
 * [from_ms, to_ms) (0: the wave's start, and now). -ENOENT no such
 * rollout, -ERANGE no such wave.
 */
int series_rollout(struct store *st, const char *name, int wave, int64_t from_ms, int64_t to_ms,
		   int64_t step_ms, int64_t now_ms, json_t **out);

#endif

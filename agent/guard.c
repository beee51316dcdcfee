// SPDX-License-Identifier: GPL-2.0
/*
 * Which mitigations a lockup reverts (guard.h).
 */
#include <string.h>

#include "guard.h"

void guard_init(struct guard *g, uint64_t window_ms)
{
	*g = (struct guard){ .window_ms = window_ms };
}

static void drop(struct guard *g, size_t i)
{
	g->armed[i] = g->armed[--g->n];
}

/* Forgets what has been on for longer than the window. */
static void expire(struct guard *g, uint64_t now_ms)
{
	size_t i = 0;

	while (i < g->n) {
		if (now_ms - g->armed[i].since_ms > g->window_ms)
			drop(g, i);
		else
			i++;
	}
}

void guard_disarm(struct guard *g, const char *id)
{
	size_t i;

	for (i = 0; i < g->n; i++)
		if (!strcmp(g->armed[i].id, id)) {
			drop(g, i);
			return;
		}
}

void guard_arm(struct guard *g, const char *id, uint64_t now_ms)
{
	if (!g->window_ms || !policy_id_valid(id))
		return;
	guard_disarm(g, id);
	expire(g, now_ms);
	if (g->n == GUARD_MAX)
		return;
	strcpy(g->armed[g->n].id, id);
	g->armed[g->n++].since_ms = now_ms;
}

size_t guard_trip(struct guard *g, enum kmsg_kind kind, uint64_t now_ms,
		  char out[][POLICY_ID_MAX + 1], size_t max)
{
	size_t n = 0;

	if (kind != KMSG_SOFT_LOCKUP && kind != KMSG_HARD_LOCKUP && kind != KMSG_RCU_STALL)
		return 0;
	expire(g, now_ms);
	while (g->n && n < max) {
		strcpy(out[n++], g->armed[0].id);
		drop(g, 0);
	}
	return n;
}

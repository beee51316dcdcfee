/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The local guard: a mitigation the agent switched on is watched for a
 * window (guard_window in agent.conf), and a soft lockup, hard lockup or
 * RCU stall inside that window reverts it, on the host, without waiting
 * for kmemd. The kernel's report may well be unrelated; turning a
 * mitigation off costs a known stall, keeping a harmful one costs a host.
 * Hung tasks do not trip it: they block on I/O far more often than on
 * anything a mitigation changes.
 */
#ifndef KMEM_AGENT_GUARD_H
#define KMEM_AGENT_GUARD_H

#include <stddef.h>
#include <stdint.h>

#include "kmsg.h"
#include "policydoc.h"

#define GUARD_MAX 16

struct guard {
	uint64_t window_ms;
	struct {
		char id[POLICY_ID_MAX + 1];
		uint64_t since_ms; /* monotonic */
	} armed[GUARD_MAX];
	size_t n;
};

void guard_init(struct guard *g, uint64_t window_ms);
/* id went on at now_ms: watched until now_ms + window_ms. */
void guard_arm(struct guard *g, const char *id, uint64_t now_ms);
/* id went off by other means. */
void guard_disarm(struct guard *g, const char *id);
/*
 * A kernel report at now_ms: the ids to revert, disarmed, in out (at most
 * max). Returns how many; 0 when the kind does not trip the guard.
 */
size_t guard_trip(struct guard *g, enum kmsg_kind kind, uint64_t now_ms,
		  char out[][POLICY_ID_MAX + 1], size_t max);

#endif

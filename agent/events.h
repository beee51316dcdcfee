/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What happened on the host between two reports: kernel reports from
 * /dev/kmsg, the agent's own acts (guard reverts, quarantines, refused
 * policies), as KernelEvent messages, and the running counters
 * (proto/kmemctl/v1/telemetry.proto). Events wait here until a report
 * carries them; past EVENTS_MAX the oldest are kept and the rest counted
 * as dropped, so a storm of lockup reports cannot grow the agent. The
 * counters run from the agent's start; mitigation_trips counts the
 * guard's reverts and the module's trips.
 */
#ifndef KMEM_AGENT_EVENTS_H
#define KMEM_AGENT_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "kmemctl/v1/telemetry.pb-c.h"
#include "kmsg.h"
#include "policydoc.h"

#define EVENTS_MAX 64

struct events {
	struct {
		Kmemctl__V1__KernelEvent pb;
		char comm[KMSG_COMM_MAX];
		char stack[KMSG_STACK_MAX][KMSG_FRAME_MAX];
		char *stackp[KMSG_STACK_MAX];
		char mitigation[POLICY_ID_MAX + 1];
		char probe[POLICY_ID_MAX + 1];
		char message[KMSG_MESSAGE_MAX];
	} slot[EVENTS_MAX];
	Kmemctl__V1__KernelEvent *pbp[EVENTS_MAX];
	size_t n;
	Kmemctl__V1__Counters counters;
};

void events_init(struct events *e);
/* A kernel report; counted by kind whether or not it still fits. */
void events_add_kmsg(struct events *e, const struct kmsg_event *ev, int64_t unix_ms);
/* One of the agent's own acts, on mitigation (may be ""), with a message. */
void events_add(struct events *e, Kmemctl__V1__EventKind kind, const char *mitigation,
		const char *message, int64_t unix_ms);
/*
 * One record of /dev/kmemctl (kmod/uapi/kmemctl.h), len bytes of it.
 * Threshold crossings, trips and livepatch stalls become events; lockup
 * and RCU stall notices are left to the kmsg parser, which has their
 * stacks, so nothing is counted twice. A jump in seq past *next_seq
 * counts the records the module overwrote as dropped events. Returns the
 * event kind added (or 0 for a notice left to kmsg), -EBADMSG for a
 * record of the wrong size, an unknown type or a source out of range
 * (counted as a dropped event: the module is newer than the agent).
 */
int events_add_record(struct events *e, const void *rec, size_t len, uint64_t *next_seq);
/*
 * The cause in a TRIP record's flags (enum kmemctl_trip_cause), as reasons
 * name it: "soft lockup", ... "livepatch stall"; "unknown cause" for one
 * this build does not know.
 */
const char *events_trip_cause(uint32_t cause);
/* The events have been handed on: the queue empties, the counters stay. */
void events_clear(struct events *e);

#endif

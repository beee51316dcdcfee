// SPDX-License-Identifier: GPL-2.0
/*
 * The events and counters a report carries (events.h).
 */
#include <stdio.h>
#include <string.h>

#include "events.h"

void events_init(struct events *e)
{
	memset(e, 0, sizeof(*e));
	kmemctl__v1__counters__init(&e->counters);
}

/* The next free slot, or NULL (counted as dropped) when the queue is full. */
static Kmemctl__V1__KernelEvent *take(struct events *e, Kmemctl__V1__EventKind kind,
				      int64_t unix_ms)
{
	Kmemctl__V1__KernelEvent *pb;

	if (e->n == EVENTS_MAX) {
		e->counters.events_dropped++;
		return NULL;
	}
	pb = &e->slot[e->n].pb;
	kmemctl__v1__kernel_event__init(pb);
	pb->kind = kind;
	pb->unix_ms = unix_ms;
	pb->cpu = -1;
	pb->pid = -1;
	pb->comm = e->slot[e->n].comm;
	pb->mitigation = e->slot[e->n].mitigation;
	pb->message = e->slot[e->n].message;
	pb->probe = "";
	e->slot[e->n].comm[0] = '\0';
	e->slot[e->n].mitigation[0] = '\0';
	e->slot[e->n].message[0] = '\0';
	e->pbp[e->n] = pb;
	return pb;
}

void events_add_kmsg(struct events *e, const struct kmsg_event *ev, int64_t unix_ms)
{
	static const Kmemctl__V1__EventKind kinds[] = {
		[KMSG_SOFT_LOCKUP] = KMEMCTL__V1__EVENT_KIND__EVENT_KIND_SOFT_LOCKUP,
		[KMSG_HARD_LOCKUP] = KMEMCTL__V1__EVENT_KIND__EVENT_KIND_HARD_LOCKUP,
		[KMSG_RCU_STALL] = KMEMCTL__V1__EVENT_KIND__EVENT_KIND_RCU_STALL,
		[KMSG_HUNG_TASK] = KMEMCTL__V1__EVENT_KIND__EVENT_KIND_HUNG_TASK,
	};
	Kmemctl__V1__KernelEvent *pb;
	unsigned int i;

	switch (ev->kind) {
	case KMSG_SOFT_LOCKUP:
		e->counters.soft_lockups++;
		break;
	case KMSG_HARD_LOCKUP:
		e->counters.hard_lockups++;
		break;
	case KMSG_RCU_STALL:
		e->counters.rcu_stalls++;
		break;
	case KMSG_HUNG_TASK:
		e->counters.hung_tasks++;
		break;
	}
	pb = take(e, kinds[ev->kind], unix_ms);
	if (!pb)
		return;
	pb->cpu = ev->cpu;
	pb->pid = ev->pid;
	pb->duration_ns = ev->duration_ns;
	snprintf(e->slot[e->n].comm, sizeof(e->slot[0].comm), "%s", ev->comm);
	snprintf(e->slot[e->n].message, sizeof(e->slot[0].message), "%s", ev->message);
	for (i = 0; i < ev->nstack; i++) {
		snprintf(e->slot[e->n].stack[i], KMSG_FRAME_MAX, "%s", ev->stack[i]);
		e->slot[e->n].stackp[i] = e->slot[e->n].stack[i];
	}
	pb->n_stack_top = ev->nstack;
	pb->stack_top = e->slot[e->n].stackp;
	e->n++;
}

void events_add(struct events *e, Kmemctl__V1__EventKind kind, const char *mitigation,
		const char *message, int64_t unix_ms)
{
	if (kind == KMEMCTL__V1__EVENT_KIND__EVENT_KIND_GUARD_REVERT)
		e->counters.mitigation_trips++;
	if (!take(e, kind, unix_ms))
		return;
	snprintf(e->slot[e->n].mitigation, sizeof(e->slot[0].mitigation), "%s", mitigation);
	snprintf(e->slot[e->n].message, sizeof(e->slot[0].message), "%s", message);
	e->n++;
}

void events_clear(struct events *e)
{
	e->n = 0;
}

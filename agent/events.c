// SPDX-License-Identifier: GPL-2.0
/*
 * The events and counters a report carries (events.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "events.h"
#include "macro.h"
#include "kmemctl-names.h"
#include "report-check.h"
#include "text.h"

_Static_assert(EVENTS_MAX <= REPORT_EVENTS_MAX && KMSG_STACK_MAX <= REPORT_FRAMES_MAX &&
		       KMSG_FRAME_MAX <= REPORT_FRAME_MAX &&
		       KMSG_COMM_MAX <= REPORT_SHORT_MAX + 1 &&
		       KMSG_MESSAGE_MAX <= REPORT_MESSAGE_MAX + 1,
	       "a report would carry more than kmemd takes");

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
	pb->probe = e->slot[e->n].probe;
	e->slot[e->n].probe[0] = '\0';
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
	/* a task names itself: kmemd refuses a report with control characters */
	text_escape(ev->comm, e->slot[e->n].comm, sizeof(e->slot[0].comm));
	text_escape(ev->message, e->slot[e->n].message, sizeof(e->slot[0].message));
	for (i = 0; i < ev->nstack; i++) {
		text_escape(ev->stack[i], e->slot[e->n].stack[i], KMSG_FRAME_MAX);
		e->slot[e->n].stackp[i] = e->slot[e->n].stack[i];
	}
	pb->n_stack_top = ev->nstack;
	pb->stack_top = e->slot[e->n].stackp;
	e->n++;
}

void events_add(struct events *e, Kmemctl__V1__EventKind kind, const char *mitigation,
		const char *message, int64_t unix_ms)
{
	if (kind == KMEMCTL__V1__EVENT_KIND__EVENT_KIND_GUARD_REVERT ||
	    kind == KMEMCTL__V1__EVENT_KIND__EVENT_KIND_TRIP)
		e->counters.mitigation_trips++;
	if (!take(e, kind, unix_ms))
		return;
	snprintf(e->slot[e->n].mitigation, sizeof(e->slot[0].mitigation), "%s", mitigation);
	text_escape(message, e->slot[e->n].message, sizeof(e->slot[0].message));
	e->n++;
}

const char *events_trip_cause(uint32_t cause)
{
	const char *name = kmemctl_trip_cause_name(cause);

	return name ? name : "unknown cause";
}

/* "rstat-yield tripped: slow call, ran 2100 ms, over its limit of 2000 ms" */
static void trip_message(char *buf, size_t size, const char *name, const struct kmemctl_event *rec)
{
	size_t len =
		(size_t)snprintf(buf, size, "%s tripped: %s", name, events_trip_cause(rec->flags));

	if (rec->threshold && len < size)
		len += (size_t)snprintf(buf + len, size - len,
					", ran %llu ms, over its limit of %llu ms",
					(unsigned long long)(rec->value / 1000000),
					(unsigned long long)(rec->threshold / 1000000));
	if (rec->flags == KMEMCTL_TRIP_LIVEPATCH_STALL && len < size)
		snprintf(buf + len, size - len, "; the transition was reversed");
}

int events_add_record(struct events *e, const void *buf, size_t len, uint64_t *next_seq)
{
	Kmemctl__V1__EventKind kind;
	Kmemctl__V1__KernelEvent *pb;
	struct kmemctl_event rec;
	char raw_comm[sizeof(rec.comm) + 1];
	const char *name;
	bool probe = false;

	if (len != sizeof(rec)) {
		e->counters.events_dropped++;
		return -EBADMSG;
	}
	memcpy(&rec, buf, sizeof(rec));
	/* a lower seq: the module was reloaded and counts from 1 again */
	if (*next_seq && rec.seq > *next_seq)
		e->counters.events_dropped += rec.seq - *next_seq;
	*next_seq = rec.seq + 1;
	/* the kernel's own reports reach kmemd from kmsg, with their text */
	if (rec.type == KMEMCTL_EV_SOFTLOCKUP || rec.type == KMEMCTL_EV_RCU_STALL)
		return 0;
	switch (rec.type) {
	case KMEMCTL_EV_THRESHOLD:
		kind = KMEMCTL__V1__EVENT_KIND__EVENT_KIND_THRESHOLD;
		break;
	case KMEMCTL_EV_TRIP:
		kind = KMEMCTL__V1__EVENT_KIND__EVENT_KIND_TRIP;
		break;
	case KMEMCTL_EV_LIVEPATCH_STALL:
		kind = KMEMCTL__V1__EVENT_KIND__EVENT_KIND_TRANSITION_STALL;
		break;
	default:
		e->counters.events_dropped++;
		return -EBADMSG;
	}
	switch (kmemctl_event_source(rec.type)) {
	case KMEMCTL_SOURCE_PROBE:
		name = kmemctl_probe_name(rec.source);
		probe = true;
		break;
	case KMEMCTL_SOURCE_MITIGATION:
		name = kmemctl_mitigation_name(rec.source);
		break;
	default:
		name = NULL;
	}
	if (!name) {
		e->counters.events_dropped++;
		return -EBADMSG;
	}
	if (kind == KMEMCTL__V1__EVENT_KIND__EVENT_KIND_TRIP)
		e->counters.mitigation_trips++;
	pb = take(e, kind, (int64_t)(rec.time_ns / 1000000));
	if (!pb)
		return kind;
	pb->cpu = (int32_t)rec.cpu;
	pb->pid = (int32_t)rec.pid;
	pb->duration_ns = rec.value;
	snprintf(raw_comm, sizeof(raw_comm), "%.*s", (int)sizeof(rec.comm), rec.comm);
	text_escape(raw_comm, e->slot[e->n].comm, sizeof(e->slot[0].comm));
	snprintf(probe ? e->slot[e->n].probe : e->slot[e->n].mitigation, POLICY_ID_MAX + 1, "%s",
		 name);
	if (kind == KMEMCTL__V1__EVENT_KIND__EVENT_KIND_THRESHOLD)
		snprintf(e->slot[e->n].message, sizeof(e->slot[0].message),
			 "%s: %llu ns over the threshold of %llu ns", name,
			 (unsigned long long)rec.value, (unsigned long long)rec.threshold);
	else if (kind == KMEMCTL__V1__EVENT_KIND__EVENT_KIND_TRIP)
		trip_message(e->slot[e->n].message, sizeof(e->slot[0].message), name, &rec);
	else
		snprintf(e->slot[e->n].message, sizeof(e->slot[0].message),
			 "%s: livepatch %s for %llu ms", name, rec.flags ? "patching" : "removal",
			 (unsigned long long)(rec.value / 1000000));
	e->n++;
	return kind;
}

void events_clear(struct events *e)
{
	e->n = 0;
}

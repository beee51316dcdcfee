// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "events.h"
#include "uapi/kmemctl.h"
#include "kmemctl/v1/report.pb-c.h"

static struct kmsg_event lockup(void)
{
	struct kmsg_event ev = { .kind = KMSG_SOFT_LOCKUP,
				 .cpu = 28,
				 .pid = 1760,
				 .duration_ns = 22000000000ULL,
				 .nstack = 2 };

	strcpy(ev.comm, "kworker/28:1");
	strcpy(ev.stack[0], "smp_call_function_many_cond+0x1d8/0xbb0");
	strcpy(ev.stack[1], "on_each_cpu_cond_mask+0x20/0x40");
	strcpy(ev.message,
	       "watchdog: BUG: soft lockup - CPU#28 stuck for 22s! [kworker/28:1:1760]");
	return ev;
}

/* Through the wire and back, as kmemd gets them. */
static void test_report(void **state)
{
	Kmemctl__V1__Report rep = KMEMCTL__V1__REPORT__INIT, *back;
	struct kmsg_event ev = lockup();
	static struct events e;
	uint8_t *buf;
	size_t len;

	(void)state;
	events_init(&e);
	events_add_kmsg(&e, &ev, 1700000000000);
	events_add(&e, KMEMCTL__V1__EVENT_KIND__EVENT_KIND_GUARD_REVERT, "rstat-yield",
		   "soft lockup within 600 s of enabling it", 1700000000001);
	rep.n_events = e.n;
	rep.events = e.pbp;
	rep.counters = &e.counters;
	len = kmemctl__v1__report__get_packed_size(&rep);
	buf = malloc(len);
	assert_non_null(buf);
	kmemctl__v1__report__pack(&rep, buf);
	back = kmemctl__v1__report__unpack(NULL, len, buf);
	free(buf);
	assert_non_null(back);
	assert_int_equal(back->n_events, 2);
	assert_int_equal(back->events[0]->kind, KMEMCTL__V1__EVENT_KIND__EVENT_KIND_SOFT_LOCKUP);
	assert_int_equal(back->events[0]->cpu, 28);
	assert_int_equal(back->events[0]->pid, 1760);
	assert_int_equal(back->events[0]->duration_ns, 22000000000ULL);
	assert_string_equal(back->events[0]->comm, "kworker/28:1");
	assert_int_equal(back->events[0]->n_stack_top, 2);
	assert_string_equal(back->events[0]->stack_top[1], "on_each_cpu_cond_mask+0x20/0x40");
	assert_int_equal(back->events[1]->kind, KMEMCTL__V1__EVENT_KIND__EVENT_KIND_GUARD_REVERT);
	assert_string_equal(back->events[1]->mitigation, "rstat-yield");
	assert_int_equal(back->events[1]->cpu, -1);
	assert_int_equal(back->counters->soft_lockups, 1);
	assert_int_equal(back->counters->mitigation_trips, 1);
	kmemctl__v1__report__free_unpacked(back, NULL);
}

/* A storm keeps the first EVENTS_MAX, counts the rest, and counts every lockup. */
static void test_storm(void **state)
{
	struct kmsg_event ev = lockup();
	static struct events e;
	int i;

	(void)state;
	events_init(&e);
	for (i = 0; i < EVENTS_MAX + 10; i++)
		events_add_kmsg(&e, &ev, i);
	events_add(&e, KMEMCTL__V1__EVENT_KIND__EVENT_KIND_POLICY_REFUSED, "", "expired", 99);
	assert_int_equal(e.n, EVENTS_MAX);
	assert_int_equal(e.counters.events_dropped, 11);
	assert_int_equal(e.counters.soft_lockups, EVENTS_MAX + 10);
	assert_int_equal(e.pbp[EVENTS_MAX - 1]->unix_ms, EVENTS_MAX - 1);
	/* handed on: the queue empties, the counters run on */
	events_clear(&e);
	assert_int_equal(e.n, 0);
	ev.kind = KMSG_HUNG_TASK;
	ev.nstack = 0;
	events_add_kmsg(&e, &ev, 100);
	assert_int_equal(e.n, 1);
	assert_int_equal(e.pbp[0]->kind, KMEMCTL__V1__EVENT_KIND__EVENT_KIND_HUNG_TASK);
	assert_int_equal(e.pbp[0]->n_stack_top, 0);
	assert_int_equal(e.counters.hung_tasks, 1);
	assert_int_equal(e.counters.soft_lockups, EVENTS_MAX + 10);
}

static struct kmemctl_event record(uint16_t type, uint16_t source, uint64_t seq)
{
	struct kmemctl_event r = { .type = type, .source = source, .cpu = 1, .seq = seq };

	r.time_ns = 1700000000123456789ULL;
	r.pid = 93;
	/* a full comm has no NUL */
	memcpy(r.comm, "kworker/u4:1-events", sizeof(r.comm));
	return r;
}

/* /dev/kmemctl records as the module writes them (kmod/uapi/kmemctl.h). */
static void test_records(void **state)
{
	struct kmemctl_event r;
	static struct events e;
	uint64_t next = 0;

	(void)state;
	events_init(&e);
	r = record(KMEMCTL_EV_THRESHOLD, KMEMCTL_PROBE_VMAP_PURGE, 1);
	r.value = 250000000;
	r.threshold = 100000000;
	assert_int_equal(events_add_record(&e, &r, sizeof(r), &next),
			 KMEMCTL__V1__EVENT_KIND__EVENT_KIND_THRESHOLD);
	assert_int_equal(next, 2);
	assert_string_equal(e.pbp[0]->probe, "vmap-purge");
	assert_string_equal(e.pbp[0]->mitigation, "");
	assert_int_equal(e.pbp[0]->duration_ns, 250000000);
	assert_int_equal(e.pbp[0]->unix_ms, 1700000000123LL);
	assert_int_equal(e.pbp[0]->pid, 93);
	assert_string_equal(e.pbp[0]->comm, "kworker/u4:1-eve");
	assert_string_equal(e.pbp[0]->message,
			    "vmap-purge: 250000000 ns over the threshold of 100000000 ns");

	/* a replacement call that ran past its limit: the cause in flags */
	r = record(KMEMCTL_EV_TRIP, KMEMCTL_MIT_RSTAT_YIELD, 2);
	r.flags = KMEMCTL_TRIP_SLOW_CALL;
	r.value = 2100000000ULL;
	r.threshold = 2000000000ULL;
	assert_int_equal(events_add_record(&e, &r, sizeof(r), &next),
			 KMEMCTL__V1__EVENT_KIND__EVENT_KIND_TRIP);
	assert_string_equal(e.pbp[1]->mitigation, "rstat-yield");
	assert_int_equal(e.pbp[1]->duration_ns, 2100000000ULL);
	assert_string_equal(
		e.pbp[1]->message,
		"rstat-yield tripped: slow call, ran 2100 ms, over its limit of 2000 ms");
	assert_int_equal(e.counters.mitigation_trips, 1);

	/* seq 3 and 4 were overwritten before the agent read them */
	r = record(KMEMCTL_EV_LIVEPATCH_STALL, KMEMCTL_MIT_KASAN_FLUSH_BATCH, 5);
	r.value = 10500000000ULL;
	r.flags = 1;
	assert_int_equal(events_add_record(&e, &r, sizeof(r), &next),
			 KMEMCTL__V1__EVENT_KIND__EVENT_KIND_TRANSITION_STALL);
	assert_int_equal(e.counters.events_dropped, 2);
	assert_string_equal(e.pbp[2]->message,
			    "kasan-flush-batch: livepatch patching for 10500 ms");

	/* the kmsg parser reports lockups, with their stacks */
	r = record(KMEMCTL_EV_SOFTLOCKUP, 0, 6);
	assert_int_equal(events_add_record(&e, &r, sizeof(r), &next), 0);
	assert_int_equal(e.n, 3);
	assert_int_equal(e.counters.soft_lockups, 0);

	/* the module was reloaded: seq starts over, nothing counted lost */
	r = record(KMEMCTL_EV_TRIP, KMEMCTL_MIT_TLB_GEN, 1);
	r.flags = KMEMCTL_TRIP_SOFTLOCKUP;
	assert_int_equal(events_add_record(&e, &r, sizeof(r), &next),
			 KMEMCTL__V1__EVENT_KIND__EVENT_KIND_TRIP);
	assert_int_equal(e.counters.events_dropped, 2);
	assert_int_equal(next, 2);
	assert_string_equal(e.pbp[3]->message, "tlb-gen tripped: soft lockup");
	/* a stalled transition the module reversed */
	r = record(KMEMCTL_EV_TRIP, KMEMCTL_MIT_TLB_GEN, 2);
	r.flags = KMEMCTL_TRIP_LIVEPATCH_STALL;
	r.value = 30000000000ULL;
	r.threshold = 30000000000ULL;
	assert_int_equal(events_add_record(&e, &r, sizeof(r), &next),
			 KMEMCTL__V1__EVENT_KIND__EVENT_KIND_TRIP);
	assert_string_equal(e.pbp[4]->message,
			    "tlb-gen tripped: livepatch stall, ran 30000 ms, over its limit of "
			    "30000 ms; the transition was reversed");
	assert_int_equal(e.counters.mitigation_trips, 3);

	/* a task names itself: what is not text is escaped, or kmemd would refuse the report */
	r = record(KMEMCTL_EV_THRESHOLD, KMEMCTL_PROBE_VMAP_PURGE, 3);
	memcpy(r.comm, "x\xff\n\x1b[2J", 8);
	assert_int_equal(events_add_record(&e, &r, sizeof(r), &next),
			 KMEMCTL__V1__EVENT_KIND__EVENT_KIND_THRESHOLD);
	assert_string_equal(e.pbp[e.n - 1]->comm, "x\\xff\\n\\x1b[2J");
}

/* Records this agent cannot read are counted as dropped, never guessed at. */
static void test_bad_records(void **state)
{
	struct kmemctl_event r;
	static struct events e;
	uint64_t next = 0;

	(void)state;
	events_init(&e);
	r = record(KMEMCTL_EV_TRIP, KMEMCTL_MIT_COUNT, 1);
	assert_int_equal(events_add_record(&e, &r, sizeof(r), &next), -EBADMSG);
	r = record(KMEMCTL_EV_THRESHOLD, KMEMCTL_PROBE_COUNT + 7, 2);
	assert_int_equal(events_add_record(&e, &r, sizeof(r), &next), -EBADMSG);
	r = record(99, 0, 3);
	assert_int_equal(events_add_record(&e, &r, sizeof(r), &next), -EBADMSG);
	r = record(0, 0, 4);
	assert_int_equal(events_add_record(&e, &r, sizeof(r), &next), -EBADMSG);
	assert_int_equal(events_add_record(&e, &r, sizeof(r) - 1, &next), -EBADMSG);
	assert_int_equal(events_add_record(&e, &r, 0, &next), -EBADMSG);
	assert_int_equal(e.n, 0);
	assert_int_equal(e.counters.events_dropped, 6);
	/* and the stream goes on */
	r = record(KMEMCTL_EV_TRIP, KMEMCTL_MIT_KASAN_QUARANTINE, 5);
	r.flags = 99;
	assert_int_equal(events_add_record(&e, &r, sizeof(r), &next),
			 KMEMCTL__V1__EVENT_KIND__EVENT_KIND_TRIP);
	assert_string_equal(e.pbp[0]->mitigation, "kasan-quarantine");
	/* a cause from a newer module is named as unknown, not guessed at */
	assert_string_equal(e.pbp[0]->message, "kasan-quarantine tripped: unknown cause");
	assert_int_equal(e.counters.events_dropped, 6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_report),
		cmocka_unit_test(test_storm),
		cmocka_unit_test(test_records),
		cmocka_unit_test(test_bad_records),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

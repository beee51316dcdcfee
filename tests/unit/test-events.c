// SPDX-License-Identifier: GPL-2.0
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "events.h"
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_report),
		cmocka_unit_test(test_storm),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kmsg.h"
#include "macro.h"

#define MAX_EVENTS 8

struct run {
	struct kmsg_event ev[MAX_EVENTS];
	unsigned int n;
	unsigned int bad;
};

static void feed(struct kmsg_parser *p, struct run *r, const char *rec)
{
	struct kmsg_event ev;
	int ret;

	ret = kmsg_parser_feed(p, rec, strlen(rec), &ev);
	if (ret == -EBADMSG) {
		r->bad++;
		return;
	}
	assert_true(ret == 0 || ret == 1);
	if (ret == 1) {
		assert_true(r->n < MAX_EVENTS);
		r->ev[r->n++] = ev;
	}
}

static void finish(struct kmsg_parser *p, struct run *r)
{
	struct kmsg_event ev;

	if (kmsg_parser_flush(p, &ev) == 1) {
		assert_true(r->n < MAX_EVENTS);
		r->ev[r->n++] = ev;
	}
	assert_int_equal(kmsg_parser_flush(p, &ev), 0);
}

/* Feeds a capture in tests/unit/kmsg/, one record per line. */
static void feed_file(struct kmsg_parser *p, struct run *r, const char *name)
{
	_cleanup_fclose_ FILE *f = NULL;
	char path[4096], line[4096];

	snprintf(path, sizeof(path), "%s/kmsg/%s", getenv("KMEM_TEST_DATA"), name);
	f = fopen(path, "re");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		feed(p, r, line);
	finish(p, r);
}

static void assert_stack(const struct kmsg_event *ev, const char *const *want)
{
	unsigned int i;

	for (i = 0; want[i]; i++) {
		assert_true(i < ev->nstack);
		assert_string_equal(ev->stack[i], want[i]);
	}
}

static void test_record(void **state)
{
	static const char good[] = "6,339,5140900,-;NET: Registered PF_INET6 protocol family\n"
				   " SUBSYSTEM=net\n";
	struct kmsg_record rec;

	(void)state;
	assert_int_equal(kmsg_record_parse(good, strlen(good), &rec), 0);
	assert_int_equal(rec.prio, 6);
	assert_int_equal(rec.seq, 339);
	assert_int_equal(rec.ts_us, 5140900);
	assert_false(rec.cont);
	assert_int_equal(rec.len, strlen("NET: Registered PF_INET6 protocol family"));
	assert_memory_equal(rec.text, "NET: Reg", 8);

	assert_int_equal(kmsg_record_parse("4,2,3,+,caller=T1;x", 19, &rec), 0);
	assert_true(rec.cont);
	assert_int_equal(rec.len, 1);
	assert_int_equal(kmsg_record_parse("4,2,3,c;", 8, &rec), 0);
	assert_int_equal(rec.len, 0);
}

static void test_record_len(void **state)
{
	static const char two[] =
		"6,339,5140900,-;NET: Registered\n SUBSYSTEM=net\n DEVICE=+net:lo\n"
		"0,340,5140901,-;watchdog: BUG: soft lockup\n";
	size_t first = strlen("6,339,5140900,-;NET: Registered\n SUBSYSTEM=net\n DEVICE=+net:lo\n");

	(void)state;
	assert_int_equal(kmsg_record_len(two, strlen(two)), first);
	assert_int_equal(kmsg_record_len(two + first, strlen(two) - first), strlen(two) - first);
	/* one record, no newline: all of it */
	assert_int_equal(kmsg_record_len("4,2,3,-;x", 9), 9);
	assert_int_equal(kmsg_record_len("4,2,3,-;x\n ", 11), 11);
	assert_int_equal(kmsg_record_len("", 0), 0);
}

static void test_record_bad(void **state)
{
	static const char *const bad[] = {
		"",
		"no header at all",
		";text",
		"6;text",
		"6,1;text",
		"6,1,2;text",
		"6,1,2,;text",
		"6,1,2,x;text",
		"6,1,2,-x;text",
		"a,1,2,-;text",
		"6,b,2,-;text",
		"6,1,c,-;text",
		"-6,1,2,-;text",
		"1024,1,2,-;text",
		"6,99999999999999999999,2,-;text",
		"6,1,2,-",
	};
	struct kmsg_record rec;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_equal(kmsg_record_parse(bad[i], strlen(bad[i]), &rec), -EBADMSG);
}

/* Debian 6.1 under QEMU: two soft lockups and two kinds of RCU stall. */
static void test_debian_capture(void **state)
{
	static const char *const soft_stack[] = {
		"kmt_spin+0x24/0x50",
		"spin_store+0x69/0xa7",
		"kernfs_fop_write_iter+0x12e/0x200",
		"vfs_write+0x235/0x3f0",
		"ksys_write+0x6b/0xf0",
		"do_syscall_64+0x5d/0xb0",
		NULL,
	};
	static const char *const irqoff_stack[] = {
		"kmt_spin+0x24/0x50",
		"spin_irqoff_store+0x72/0xb0",
		NULL,
	};
	struct kmsg_parser p;
	struct run r = { 0 };

	(void)state;
	kmsg_parser_init(&p, 250);
	feed_file(&p, &r, "debian-6.1-lockups.kmsg");
	assert_int_equal(r.bad, 0);
	assert_int_equal(p.lost, 0);
	assert_int_equal(r.n, 4);

	assert_int_equal(r.ev[0].kind, KMSG_SOFT_LOCKUP);
	assert_int_equal(r.ev[0].seq, 372);
	assert_int_equal(r.ev[0].cpu, 0);
	assert_int_equal(r.ev[0].duration_ns, 3000000000ULL);
	assert_string_equal(r.ev[0].comm, "sh");
	assert_int_equal(r.ev[0].pid, 106);
	assert_stack(&r.ev[0], soft_stack);
	assert_string_equal(r.ev[0].message,
			    "watchdog: BUG: soft lockup - CPU#0 stuck for 3s! [sh:106]");

	assert_int_equal(r.ev[1].kind, KMSG_RCU_STALL);
	assert_int_equal(r.ev[1].cpu, 0);
	/* t=750 jiffies at HZ=250 */
	assert_int_equal(r.ev[1].duration_ns, 3000000000ULL);
	assert_string_equal(r.ev[1].comm, "sh");
	assert_int_equal(r.ev[1].pid, 106);
	assert_stack(&r.ev[1], soft_stack);

	assert_int_equal(r.ev[2].kind, KMSG_SOFT_LOCKUP);
	assert_int_equal(r.ev[2].duration_ns, 6000000000ULL);

	assert_int_equal(r.ev[3].kind, KMSG_RCU_STALL);
	assert_int_equal(r.ev[3].cpu, 1);
	assert_int_equal(r.ev[3].duration_ns, 3024000000ULL);
	assert_int_equal(r.ev[3].pid, 108);
	assert_stack(&r.ev[3], irqoff_stack);
}

/* Upstream's KASAN purge lockup: the interrupt's frames are not the task's. */
static void test_upstream_capture(void **state)
{
	static const char *const stack[] = {
		"smp_call_function_many_cond+0x1d8/0xbb0",
		"on_each_cpu_cond_mask+0x20/0x40",
		"flush_tlb_kernel_range+0x19b/0x250",
		"purge_vmap_node+0x357/0x820",
		"__purge_vmap_area_lazy+0x5b8/0xa10",
		"drain_vmap_area_work+0x21/0x30",
		"process_one_work+0x661/0x10b0",
		"worker_thread+0x844/0x10e0",
		NULL,
	};
	struct kmsg_parser p;
	struct run r = { 0 };

	(void)state;
	kmsg_parser_init(&p, 0);
	feed_file(&p, &r, "upstream-kasan-purge.kmsg");
	assert_int_equal(r.n, 1);
	assert_int_equal(r.ev[0].kind, KMSG_SOFT_LOCKUP);
	assert_int_equal(r.ev[0].cpu, 28);
	assert_int_equal(r.ev[0].duration_ns, 22000000000ULL);
	assert_string_equal(r.ev[0].comm, "kworker/28:1");
	assert_int_equal(r.ev[0].pid, 1760);
	assert_int_equal(r.ev[0].nstack, KMSG_STACK_MAX);
	assert_stack(&r.ev[0], stack);
}

/* Reports in the kernel's own formats (kernel/watchdog_hld.c, hung_task.c). */
static void test_hard_lockup_and_hung_task(void **state)
{
	struct kmsg_parser p;
	struct run r = { 0 };

	(void)state;
	kmsg_parser_init(&p, 250);
	feed(&p, &r, "0,10,100,-;NMI watchdog: Watchdog detected hard LOCKUP on cpu 5\n");
	feed(&p, &r, "4,11,100,-;CPU: 5 PID: 77 Comm: swapper/5 Not tainted 6.1.0 #1\n");
	feed(&p, &r, "3,12,200,-;INFO: task jbd2/sda1-8:341 blocked for more than 120 seconds.\n");
	feed(&p, &r, "3,13,200,-;task:jbd2/sda1-8     state:D stack:0     pid:341   ppid:2\n");
	feed(&p, &r, "4,14,200,-;Call Trace:\n");
	feed(&p, &r, "4,15,200,-; <TASK>\n");
	feed(&p, &r, "4,16,200,-; __schedule+0x34d/0x9e0\n");
	feed(&p, &r, "4,17,200,-; schedule+0x5a/0xd0 [some_mod]\n");
	feed(&p, &r, "4,18,200,-; </TASK>\n");
	finish(&p, &r);
	assert_int_equal(r.n, 2);
	assert_int_equal(r.ev[0].kind, KMSG_HARD_LOCKUP);
	assert_int_equal(r.ev[0].cpu, 5);
	assert_int_equal(r.ev[0].pid, 77);
	assert_string_equal(r.ev[0].comm, "swapper/5");
	assert_int_equal(r.ev[0].nstack, 0);
	assert_int_equal(r.ev[1].kind, KMSG_HUNG_TASK);
	assert_string_equal(r.ev[1].comm, "jbd2/sda1-8");
	assert_int_equal(r.ev[1].pid, 341);
	assert_int_equal(r.ev[1].cpu, -1);
	assert_int_equal(r.ev[1].duration_ns, 120000000000ULL);
	assert_int_equal(r.ev[1].nstack, 2);
	assert_string_equal(r.ev[1].stack[1], "schedule+0x5a/0xd0");
}

/*
 * Garbage between records is counted and skipped, a truncated report is
 * handed out by flush with what it had, and seq gaps count as lost.
 */
static void test_bad_input(void **state)
{
	struct kmsg_parser p;
	struct run r = { 0 };

	(void)state;
	kmsg_parser_init(&p, 100);
	feed(&p, &r, "0,20,1,-;watchdog: BUG: soft lockup - CPU#x stuck for ?s! [broken\n");
	feed(&p, &r, "garbage\n");
	feed(&p, &r, "4,21,1,-;RIP: 0010:\n");
	feed(&p, &r, "4,22,1,-;Call Trace:\n");
	feed(&p, &r, "4,23,1,-; <TASK>\n");
	feed(&p, &r, "4,24,1,-; not_a_frame\n");
	feed(&p, &r, "4,25,1,-; half+0x/0x10\n");
	feed(&p, &r, "4,26,1,-; trailing+0x10/0x20junk\n");
	feed(&p, &r, "6,99999999999999999999,1,-;x\n");
	feed(&p, &r, "4,30,1,-; good_one+0x10/0x20\n");
	feed(&p, &r, "3,31,1,-;rcu: INFO: rcu_sched detected stalls on CPUs/tasks:\n");
	feed(&p, &r, "3,32,1,-;rcu: \\x09-...: nonsense\n");
	feed(&p, &r, "4,33,1,c;\\x09(detected by 0, t=99999999999999999999 jiffies)\n");
	feed(&p, &r, "4,34,1,-; frame_without_end+0x10/0x20\n");
	finish(&p, &r);
	assert_int_equal(r.bad, 2);
	assert_int_equal(p.bad, 2);
	/* 27..29 never came */
	assert_int_equal(p.lost, 3);
	assert_int_equal(r.n, 2);
	assert_int_equal(r.ev[0].kind, KMSG_SOFT_LOCKUP);
	assert_int_equal(r.ev[0].cpu, -1);
	assert_int_equal(r.ev[0].pid, -1);
	assert_int_equal(r.ev[0].duration_ns, 0);
	assert_int_equal(r.ev[0].nstack, 1);
	assert_string_equal(r.ev[0].stack[0], "good_one+0x10/0x20");
	assert_int_equal(r.ev[1].kind, KMSG_RCU_STALL);
	assert_int_equal(r.ev[1].cpu, -1);
	assert_int_equal(r.ev[1].duration_ns, 0);
	/* no "Call Trace:" yet, so nothing counts as a frame */
	assert_int_equal(r.ev[1].nstack, 0);
}

/* A line longer than any the kernel prints is cut, not overrun. */
static void test_long_line(void **state)
{
	char rec[8192];
	struct kmsg_parser p;
	struct run r = { 0 };
	size_t n;

	(void)state;
	n = (size_t)snprintf(rec, sizeof(rec), "0,1,1,-;INFO: task ");
	memset(rec + n, 'a', sizeof(rec) - n - 64);
	n = sizeof(rec) - 64;
	snprintf(rec + n, sizeof(rec) - n, ":1 blocked for more than 5 seconds.\n");
	kmsg_parser_init(&p, 0);
	feed(&p, &r, rec);
	finish(&p, &r);
	assert_int_equal(r.n, 0);
	assert_int_equal(r.bad, 0);
}

/*
 * Numbers out of range are left unsaid, never wrapped: a CPU of 4000000001
 * became a negative int (fuzz-kmsg), a pid of -5 was taken as it was.
 */
static void test_out_of_range(void **state)
{
	struct kmsg_parser p;
	struct run r = { 0 };

	(void)state;
	kmsg_parser_init(&p, 250);
	feed(&p, &r, "0,1,1,-;Watchdog detected hard LOCKUP on cpu 4000000001\n");
	feed(&p, &r, "4,2,2,-;CPU: 4294967295 PID: -5 Comm: sh Tainted: G\n");
	feed(&p, &r, "0,3,3,-;watchdog: BUG: soft lockup - CPU#3000000000 stuck for 5s! [sh:9]\n");
	feed(&p, &r,
	     "0,4,4,-;watchdog: BUG: soft lockup - CPU#1 stuck for 99999999999s! [sh:-9]\n");
	feed(&p, &r, "3,5,5,-;rcu: INFO: rcu_preempt self-detected stall on CPU\n");
	feed(&p, &r, "3,6,6,-;rcu: \\x0999999999999-....: (1 ticks this GP)\n");
	feed(&p, &r, "4,7,7,c;\\x09(t=-750 jiffies g=-859 q=23 ncpus=2)\n");
	feed(&p, &r, "3,8,8,-;INFO: task sh:1 blocked for more than 99999999999 seconds.\n");
	finish(&p, &r);
	assert_int_equal(r.n, 5);
	for (unsigned int i = 0; i < r.n; i++) {
		assert_int_equal(r.ev[i].cpu, -1);
		assert_int_equal(r.ev[i].duration_ns, 0);
	}
	assert_int_equal(r.ev[0].pid, -1);
	assert_int_equal(r.ev[1].pid, 9);
	assert_int_equal(r.ev[2].pid, -1);
	assert_int_equal(r.ev[4].pid, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_record),
		cmocka_unit_test(test_record_len),
		cmocka_unit_test(test_record_bad),
		cmocka_unit_test(test_debian_capture),
		cmocka_unit_test(test_upstream_capture),
		cmocka_unit_test(test_hard_lockup_and_hung_task),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_long_line),
		cmocka_unit_test(test_out_of_range),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

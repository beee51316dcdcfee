// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel's own lockup, stall and hung-task reports, for /dev/kmemctl
 * and for the breaker (breaker.c):
 * - soft lockups: the watchdog taints the kernel with TAINT_SOFTLOCKUP from
 *   the stuck CPU every time it reports, so a kprobe on add_taint() sees
 *   each report;
 * - RCU stalls: the rcu_stall_warning tracepoint;
 * - hung tasks: the sched_process_hang tracepoint (CONFIG_DETECT_HUNG_TASK);
 * - hard lockups: the check that reports them sets a per-CPU "warned" flag,
 *   so a kretprobe on it sees the flag go up: watchdog_hardlockup_check(cpu)
 *   from 6.5, called for the stuck CPU by the perf NMI or a buddy CPU, and
 *   6.1's watchdog_overflow_callback(), the perf NMI on the stuck CPU. It
 *   is only hooked where the kernel found a detector it could run (none in
 *   a VM without a PMU): a kretprobe is an int3 probe the kprobe optimizer
 *   waits an RCU-tasks grace period over, holding text_mutex, so livepatch
 *   and ftrace changes wait too, for nothing.
 * Any of them may be missing (no kprobes on add_taint, a kernel without the
 * detector): the module then says so once.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/percpu.h>
#include <linux/smp.h>
#include <linux/string.h>
#include <linux/tracepoint.h>

#include "kmem.h"

static struct kprobe taint_kp = {
	.symbol_name = "add_taint",
};

static bool taint_registered;
static struct tracepoint *stall_tp, *hang_tp;

static int taint_pre(struct kprobe *kp, struct pt_regs *regs)
{
	if (regs_get_kernel_argument(regs, 0) != TAINT_SOFTLOCKUP)
		return 0;
	kmem_event_queue(KMEMCTL_EV_SOFTLOCKUP, 0, 0, 0);
	kmem_breaker_report(KMEMCTL_TRIP_SOFTLOCKUP, smp_processor_id(), current);
	return 0;
}

/*
 * "StallDetected" from the GP kthread's view, which does not say which CPU
 * stalled; "SelfDetected" from the stalled CPU's.
 */
static void stall_probe(void *data, const char *rcuname, const char *msg)
{
	if (!strstr(msg, "Detected"))
		return;
	kmem_event_queue(KMEMCTL_EV_RCU_STALL, 0, 0, 0);
	if (strstr(msg, "Self"))
		kmem_breaker_report(KMEMCTL_TRIP_RCU_STALL, smp_processor_id(), current);
	else
		kmem_breaker_report(KMEMCTL_TRIP_RCU_STALL, -1, NULL);
}

static void hang_probe(void *data, struct task_struct *task)
{
	kmem_breaker_report(KMEMCTL_TRIP_HUNG_TASK, task_cpu(task), task);
}

static void find_tps(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, "rcu_stall_warning"))
		stall_tp = tp;
	else if (!strcmp(tp->name, "sched_process_hang"))
		hang_tp = tp;
}

static struct tracepoint *register_tp(struct tracepoint *tp, void *probe, const char *what,
				      const char *name)
{
	int ret;

	if (!tp) {
		pr_info("%s notices unavailable: no %s tracepoint\n", what, name);
		return NULL;
	}
	ret = tracepoint_probe_register(tp, probe, NULL);
	if (ret) {
		pr_info("%s notices unavailable: tracepoint registration failed (%d)\n", what, ret);
		return NULL;
	}
	return tp;
}

/*
 * The hard-lockup check, its per-CPU flag and whether the kernel runs a
 * detector (a bool from 6.5, an int before), one of two generations.
 */
static struct {
	const char *func, *warned, *available;
	bool available_int;
	bool cpu_arg;	/* the stuck CPU is the first argument, else this CPU */
} const hardlockup_checks[] = {
	{ "watchdog_hardlockup_check", "watchdog_hardlockup_warned",
	  "watchdog_hardlockup_available", false, true },
	{ "watchdog_overflow_callback", "hard_watchdog_warn", "nmi_watchdog_available", true,
	  false },
};

static bool __percpu *hard_warned;
static bool hard_cpu_arg;
static struct kretprobe hard_rp;
static bool hard_registered;

struct hard_data {
	int cpu;
	bool warned;
};

static int hard_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct hard_data *d = (struct hard_data *)ri->data;

	d->cpu = hard_cpu_arg ? regs_get_kernel_argument(regs, 0) : smp_processor_id();
	if (d->cpu < 0 || d->cpu >= nr_cpu_ids)
		return 1;
	d->warned = READ_ONCE(*per_cpu_ptr(hard_warned, d->cpu));
	return 0;
}

/* In NMI, or in a buddy CPU's timer: the breaker only records and defers. */
static int hard_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct hard_data *d = (struct hard_data *)ri->data;

	if (d->warned || !READ_ONCE(*per_cpu_ptr(hard_warned, d->cpu)))
		return 0;
	kmem_breaker_report(KMEMCTL_TRIP_HARDLOCKUP, d->cpu,
			    d->cpu == smp_processor_id() ? current : NULL);
	return 0;
}

static void hardlockup_init(void)
{
	unsigned long available = 0;
	int i, ret;

	for (i = 0; i < ARRAY_SIZE(hardlockup_checks); i++) {
		hard_warned = (bool __percpu *)kmem_symbol(hardlockup_checks[i].warned);
		available = kmem_symbol(hardlockup_checks[i].available);
		if (hard_warned && available && kmem_symbol(hardlockup_checks[i].func))
			break;
	}
	if (i == ARRAY_SIZE(hardlockup_checks)) {
		pr_info("hard-lockup notices unavailable: no hard-lockup detector in this kernel\n");
		return;
	}
	if (hardlockup_checks[i].available_int ? !READ_ONCE(*(int *)available) :
						 !READ_ONCE(*(bool *)available)) {
		pr_info("hard-lockup notices unavailable: the kernel runs no hard-lockup detector\n");
		return;
	}
	hard_cpu_arg = hardlockup_checks[i].cpu_arg;
	kmem_kretprobe_init(&hard_rp, hardlockup_checks[i].func, hard_entry, hard_ret,
			    sizeof(struct hard_data));
	ret = register_kretprobe(&hard_rp);
	if (ret) {
		pr_info("hard-lockup notices unavailable: kretprobe on %s failed (%d)\n",
			hardlockup_checks[i].func, ret);
		return;
	}
	hard_registered = true;
}

void kmem_watchdog_init(void)
{
	int ret;

	taint_kp.pre_handler = taint_pre;
	ret = register_kprobe(&taint_kp);
	if (ret)
		pr_info("soft-lockup notices unavailable: kprobe on add_taint failed (%d)\n", ret);
	taint_registered = !ret;

	for_each_kernel_tracepoint(find_tps, NULL);
	stall_tp = register_tp(stall_tp, stall_probe, "rcu-stall", "rcu_stall_warning");
	hang_tp = register_tp(hang_tp, hang_probe, "hung-task", "sched_process_hang");
	hardlockup_init();
}

void kmem_watchdog_exit(void)
{
	if (hard_registered)
		unregister_kretprobe(&hard_rp);
	hard_registered = false;
	if (stall_tp)
		tracepoint_probe_unregister(stall_tp, stall_probe, NULL);
	if (hang_tp)
		tracepoint_probe_unregister(hang_tp, hang_probe, NULL);
	if (stall_tp || hang_tp)
		tracepoint_synchronize_unregister();
	stall_tp = NULL;
	hang_tp = NULL;
	if (taint_registered)
		unregister_kprobe(&taint_kp);
	taint_registered = false;
}

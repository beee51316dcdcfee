// SPDX-License-Identifier: GPL-2.0
/*
 * Lockup notices for /dev/kmemctl. The soft-lockup watchdog taints the
 * kernel with TAINT_SOFTLOCKUP from the stuck CPU every time it reports,
 * so a kprobe on add_taint() sees each report; RCU stall reports fire the
 * rcu_stall_warning tracepoint. Either may be missing (no kprobes on
 * add_taint, RCU tracing compiled out): the module then says so once.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/string.h>
#include <linux/tracepoint.h>

#include "kmem.h"

static struct kprobe taint_kp = {
	.symbol_name = "add_taint",
};

static bool taint_registered;
static struct tracepoint *stall_tp;

static int taint_pre(struct kprobe *kp, struct pt_regs *regs)
{
	if (regs_get_kernel_argument(regs, 0) == TAINT_SOFTLOCKUP)
		kmem_event_queue(KMEMCTL_EV_SOFTLOCKUP, 0, 0, 0);
	return 0;
}

/* "StallDetected" from the GP kthread's view, "SelfDetected" from the CPU's. */
static void stall_probe(void *data, const char *rcuname, const char *msg)
{
	if (strstr(msg, "Detected"))
		kmem_event_queue(KMEMCTL_EV_RCU_STALL, 0, 0, 0);
}

static void find_stall_tp(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, "rcu_stall_warning"))
		stall_tp = tp;
}

void kmem_watchdog_init(void)
{
	int ret;

	taint_kp.pre_handler = taint_pre;
	ret = register_kprobe(&taint_kp);
	if (ret)
		pr_info("soft-lockup notices unavailable: kprobe on add_taint failed (%d)\n", ret);
	taint_registered = !ret;

	for_each_kernel_tracepoint(find_stall_tp, NULL);
	if (!stall_tp) {
		pr_info("rcu-stall notices unavailable: no rcu_stall_warning tracepoint\n");
		return;
	}
	ret = tracepoint_probe_register(stall_tp, stall_probe, NULL);
	if (ret) {
		pr_info("rcu-stall notices unavailable: tracepoint registration failed (%d)\n",
			ret);
		stall_tp = NULL;
	}
}

void kmem_watchdog_exit(void)
{
	if (stall_tp) {
		tracepoint_probe_unregister(stall_tp, stall_probe, NULL);
		tracepoint_synchronize_unregister();
		stall_tp = NULL;
	}
	if (taint_registered)
		unregister_kprobe(&taint_kp);
	taint_registered = false;
}

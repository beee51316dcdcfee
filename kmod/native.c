// SPDX-License-Identifier: GPL-2.0
/*
 * Native: whether the running kernel already carries the upstream fix a
 * mitigation stands in for. Distributions backport fixes without changing
 * the version (RHEL does for thousands of commits), and a build may have a
 * fix reverted, so the answer comes from the kernel itself: the headers the
 * module is built against, the shape of its code (decoded with the kernel's
 * own instruction decoder), or a behaviour the module can watch at load.
 * An answer the module cannot get is "not native": the later gates then
 * refuse a kernel whose code is not what the copies were checked against.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cgroup.h>
#include <linux/cpumask.h>
#include <linux/kprobes.h>
#include <linux/slab.h>
#include <asm/tlbflush.h>

#include "kmem.h"

/*
 * "x86/mm/tlb: Avoid reading mm_tlb_gen when possible" (6.0) made
 * flush_tlb_func() return before reading the mm's tlb_gen when the request
 * is already flushed; the guard it needed against a request with no
 * generation, TLB_GENERATION_INVALID, came with it and is only in kernels
 * that have the check.
 */
bool kmem_native_tlb_gen(char *reason, size_t len)
{
#ifdef TLB_GENERATION_INVALID
	snprintf(reason, len,
		 "flush_tlb_func() skips a flush already done without reading mm_tlb_gen (TLB_GENERATION_INVALID in the kernel's headers; upstream since 6.0)");
	return true;
#else
	return false;
#endif
}

#ifdef CONFIG_KPROBES
struct release_count {
	struct kprobe kp;
	struct task_struct *task;
	unsigned long lock;
	unsigned int releases;
};

static int count_release(struct kprobe *kp, struct pt_regs *regs)
{
	struct release_count *rc = container_of(kp, struct release_count, kp);

	if (current == rc->task && regs_get_kernel_argument(regs, 0) == rc->lock)
		rc->releases++;
	return 0;
}

#define RSTAT_FLUSHES 3

/*
 * "cgroup/rstat: avoid disabling irqs for O(num_cpu)" (6.15, 6.12.31) makes
 * the flush drop cgroup_rstat_lock after every possible CPU; before it, the
 * flush drops it inside its loop only when asked to yield. So the module
 * flushes the root cgroup itself and counts its releases of the lock: more
 * than one per possible CPU, in each of three flushes, is the fix.
 */
static bool rstat_flush_yields(char *reason, size_t len)
{
	unsigned int cpus = num_possible_cpus(), fewest = UINT_MAX;
	void (*flush)(struct cgroup *root);
	struct release_count *rc;
	int i, ret;

	flush = (void *)kmem_symbol("cgroup_rstat_flush");
	rc = kzalloc(sizeof(*rc), GFP_KERNEL);
	if (!rc)
		return false;
	rc->lock = kmem_symbol("cgroup_rstat_lock");
	rc->task = current;
	if (!flush || !rc->lock)
		goto out;
	kmem_kprobe_init(&rc->kp, "_raw_spin_unlock_irq", count_release);
	ret = register_kprobe(&rc->kp);
	if (ret) {
		pr_info("rstat-yield: cannot watch the kernel's flush (%d)\n", ret);
		goto out;
	}
	for (i = 0; i < RSTAT_FLUSHES; i++) {
		WRITE_ONCE(rc->releases, 0);
		flush(&cgrp_dfl_root.cgrp);
		fewest = min(fewest, READ_ONCE(rc->releases));
	}
	unregister_kprobe(&rc->kp);
	if (fewest > cpus)
		snprintf(reason, len,
			 "the kernel's flush released cgroup_rstat_lock after each of %u possible CPUs (upstream since 6.15 and 6.12.31)",
			 cpus);
out:
	kfree(rc);
	return fewest != UINT_MAX && fewest > cpus;
}
#else
static bool rstat_flush_yields(char *reason, size_t len)
{
	return false;
}
#endif

/*
 * On PREEMPT_RT a spinlock_t is an rt_mutex: cgroup_rstat_lock sleeps and
 * spin_lock_irq() on it leaves interrupts on (6.1's kernel/cgroup/rstat.c
 * says so beside its per-CPU lock), so a flush is preemptible throughout and
 * keeps interrupts off only under one CPU's raw cgroup_rstat_cpu_lock at a
 * time: there is no O(possible CPUs) irqs-off section to break up. Decided
 * before the symbols are looked up, which RT builds lay out differently.
 */
bool kmem_native_rstat_yield(char *reason, size_t len)
{
	if (IS_ENABLED(CONFIG_PREEMPT_RT)) {
		snprintf(reason, len,
			 "PREEMPT_RT: cgroup_rstat_lock is a sleeping lock, flushes run with interrupts on");
		return true;
	}
	return rstat_flush_yields(reason, len);
}

/*
 * "mm/vmalloc: combine all TLB flush operations of KASAN shadow virtual
 * address into one operation" (6.13, 6.12.4) makes each vmap node's purge
 * release its areas' shadow in two passes: kasan_release_vmalloc() once per
 * area without a flush, then once over the whole range with the one flush.
 * Before it, the purge (purge_vmap_node() from 6.9, __purge_vmap_area_lazy()
 * before) has one call, flushing per area. So: two calls in the purge, or in
 * the kasan_release_vmalloc_node() helper where GCC kept it out of line.
 */
bool kmem_native_kasan_flush_batch(char *reason, size_t len)
{
	static const char *const purges[] = { "purge_vmap_node", "__purge_vmap_area_lazy" };
	unsigned long release = kmem_symbol("kasan_release_vmalloc");
	int i, n;

	if (!release)
		return false;
	for (i = 0; i < ARRAY_SIZE(purges); i++) {
		n = kmem_calls_to(purges[i], "kasan_release_vmalloc_node", release);
		if (n == -ENOENT)
			continue;
		if (n >= 2) {
			snprintf(reason, len,
				 "%s() releases KASAN shadow in one pass and flushes once (%d calls of kasan_release_vmalloc(); upstream since 6.13 and 6.12.4)",
				 purges[i], n);
			return true;
		}
		return false;
	}
	return false;
}

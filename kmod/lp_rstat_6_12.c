// SPDX-License-Identifier: GPL-2.0
/*
 * rstat-yield for 6.12 without upstream's "cgroup/rstat: avoid disabling
 * irqs for O(num_cpu)" (6.12.0 to 6.12.30): cgroup_rstat_flush_locked()
 * walks every possible CPU with cgroup_rstat_lock held and irqs off, and
 * drops the lock inside its loop only on need_resched() or contention.
 * Every flush is sleepable here (memcg's became so in 6.5), so the one
 * replacement is the flush's loop: with the mitigation on it drops and
 * retakes the lock every every_cpus CPUs, as upstream does after every CPU;
 * off, it yields as the kernel it replaces does.
 *
 * The copies are of 6.12's kernel/cgroup/rstat.c as Debian ships it, with
 * the fix: the loop's yield is declared as the difference, and is the
 * pre-fix code when the mitigation is off. The helpers 6.12 inlines into
 * the loop (the updated-list walk, the base stats) are copied for the
 * layouts of the 6.12 headers this module is built against (compat.h:
 * HAVE_LP_RSTAT_6_12), without their tracepoints, which a module cannot
 * fire.
 */
#include <linux/cgroup.h>
#include <linux/rculist.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/u64_stats_sync.h>

#include "compat.h"
#include "kmem.h"

#ifdef HAVE_LP_RSTAT_6_12

/* kmemctl-series: 6.12 */

static spinlock_t *rstat_lock;
static raw_spinlock_t __percpu *rstat_cpu_lock;
static void (*bpf_flush)(struct cgroup *cgrp, struct cgroup *parent, int cpu);
static bool yield_on;
static const u64 *every_cpus;

/*
 * kmemctl-copy: rstat-yield kernel/cgroup/rstat.c cgroup_rstat_cpu
 * rename: cgroup_rstat_cpu -> rstatc_of
 */
static struct cgroup_rstat_cpu *rstatc_of(struct cgroup *cgrp, int cpu)
{
	return per_cpu_ptr(cgrp->rstat_cpu, cpu);
}

/*
 * kmemctl-copy: rstat-yield kernel/cgroup/rstat.c cgroup_rstat_push_children
 * rename: cgroup_rstat_push_children -> push_children, cgroup_rstat_cpu -> rstatc_of
 */
static struct cgroup *push_children(struct cgroup *head, struct cgroup *child, int cpu)
{
	struct cgroup *chead = child;	/* Head of child cgroup level */
	struct cgroup *ghead = NULL;	/* Head of grandchild cgroup level */
	struct cgroup *parent, *grandchild;
	struct cgroup_rstat_cpu *crstatc;

	child->rstat_flush_next = NULL;

next_level:
	while (chead) {
		child = chead;
		chead = child->rstat_flush_next;
		parent = cgroup_parent(child);

		/* updated_next is parent cgroup terminated */
		while (child != parent) {
			child->rstat_flush_next = head;
			head = child;
			crstatc = rstatc_of(child, cpu);
			grandchild = crstatc->updated_children;
			if (grandchild != child) {
				/* Push the grand child to the next level */
				crstatc->updated_children = child;
				grandchild->rstat_flush_next = ghead;
				ghead = grandchild;
			}
			child = crstatc->updated_next;
			crstatc->updated_next = NULL;
		}
	}

	if (ghead) {
		chead = ghead;
		ghead = NULL;
		goto next_level;
	}
	return head;
}

/*
 * kmemctl-copy: rstat-yield kernel/cgroup/rstat.c cgroup_rstat_updated_list
 * rename: cgroup_rstat_updated_list -> updated_list, cgroup_rstat_cpu -> rstatc_of,
 *   cgroup_rstat_push_children -> push_children
 * replace: "&cgroup_rstat_cpu_lock" -> "rstat_cpu_lock": found through kallsyms
 * replace: "flags = _cgroup_rstat_cpu_lock(cpu_lock, cpu, root, false)"
 *   -> "raw_spin_lock_irqsave(cpu_lock, flags)": the helper without its tracepoints
 * replace: "_cgroup_rstat_cpu_unlock(cpu_lock, cpu, root, flags, false)"
 *   -> "raw_spin_unlock_irqrestore(cpu_lock, flags)": the same
 */
static struct cgroup *updated_list(struct cgroup *root, int cpu)
{
	raw_spinlock_t *cpu_lock = per_cpu_ptr(rstat_cpu_lock, cpu);
	struct cgroup_rstat_cpu *rstatc = rstatc_of(root, cpu);
	struct cgroup *head = NULL, *parent, *child;
	unsigned long flags;

	raw_spin_lock_irqsave(cpu_lock, flags);

	/* Return NULL if this subtree is not on-list */
	if (!rstatc->updated_next)
		goto unlock_ret;

	/*
	 * Unlink @root from its parent. As the updated_children list is
	 * singly linked, we have to walk it to find the removal point.
	 */
	parent = cgroup_parent(root);
	if (parent) {
		struct cgroup_rstat_cpu *prstatc;
		struct cgroup **nextp;

		prstatc = rstatc_of(parent, cpu);
		nextp = &prstatc->updated_children;
		while (*nextp != root) {
			struct cgroup_rstat_cpu *nrstatc;

			nrstatc = rstatc_of(*nextp, cpu);
			WARN_ON_ONCE(*nextp == parent);
			nextp = &nrstatc->updated_next;
		}
		*nextp = rstatc->updated_next;
	}

	rstatc->updated_next = NULL;

	/* Push @root to the list first before pushing the children */
	head = root;
	root->rstat_flush_next = NULL;
	child = rstatc->updated_children;
	rstatc->updated_children = root;
	if (child != root)
		head = push_children(head, child, cpu);
unlock_ret:
	raw_spin_unlock_irqrestore(cpu_lock, flags);
	return head;
}

/*
 * kmemctl-copy: rstat-yield kernel/cgroup/rstat.c cgroup_base_stat_add
 * rename: cgroup_base_stat_add -> base_stat_add, dst_bstat -> dst, src_bstat -> src
 */
static void base_stat_add(struct cgroup_base_stat *dst, struct cgroup_base_stat *src)
{
	dst->cputime.utime += src->cputime.utime;
	dst->cputime.stime += src->cputime.stime;
	dst->cputime.sum_exec_runtime += src->cputime.sum_exec_runtime;
#ifdef CONFIG_SCHED_CORE
	dst->forceidle_sum += src->forceidle_sum;
#endif
	dst->ntime += src->ntime;
}

/*
 * kmemctl-copy: rstat-yield kernel/cgroup/rstat.c cgroup_base_stat_sub
 * rename: cgroup_base_stat_sub -> base_stat_sub, dst_bstat -> dst, src_bstat -> src
 */
static void base_stat_sub(struct cgroup_base_stat *dst, struct cgroup_base_stat *src)
{
	dst->cputime.utime -= src->cputime.utime;
	dst->cputime.stime -= src->cputime.stime;
	dst->cputime.sum_exec_runtime -= src->cputime.sum_exec_runtime;
#ifdef CONFIG_SCHED_CORE
	dst->forceidle_sum -= src->forceidle_sum;
#endif
	dst->ntime -= src->ntime;
}

/*
 * kmemctl-copy: rstat-yield kernel/cgroup/rstat.c cgroup_base_stat_flush
 * rename: cgroup_base_stat_flush -> base_stat_flush, cgroup_rstat_cpu -> rstatc_of,
 *   cgroup_base_stat_sub -> base_stat_sub, cgroup_base_stat_add -> base_stat_add
 * replace: "unsigned seq" -> "unsigned int seq": checkpatch's spelling
 */
static void base_stat_flush(struct cgroup *cgrp, int cpu)
{
	struct cgroup_rstat_cpu *rstatc = rstatc_of(cgrp, cpu);
	struct cgroup *parent = cgroup_parent(cgrp);
	struct cgroup_rstat_cpu *prstatc;
	struct cgroup_base_stat delta;
	unsigned int seq;

	/* Root-level stats are sourced from system-wide CPU stats */
	if (!parent)
		return;

	/* fetch the current per-cpu values */
	do {
		seq = __u64_stats_fetch_begin(&rstatc->bsync);
		delta = rstatc->bstat;
	} while (__u64_stats_fetch_retry(&rstatc->bsync, seq));

	/* propagate per-cpu delta to cgroup and per-cpu global statistics */
	base_stat_sub(&delta, &rstatc->last_bstat);
	base_stat_add(&cgrp->bstat, &delta);
	base_stat_add(&rstatc->last_bstat, &delta);
	base_stat_add(&rstatc->subtree_bstat, &delta);

	/* propagate cgroup and per-cpu global delta to parent (unless that's root) */
	if (cgroup_parent(parent)) {
		delta = cgrp->bstat;
		base_stat_sub(&delta, &cgrp->last_bstat);
		base_stat_add(&parent->bstat, &delta);
		base_stat_add(&cgrp->last_bstat, &delta);

		delta = rstatc->subtree_bstat;
		prstatc = rstatc_of(parent, cpu);
		base_stat_sub(&delta, &rstatc->last_subtree_bstat);
		base_stat_add(&prstatc->subtree_bstat, &delta);
		base_stat_add(&rstatc->last_subtree_bstat, &delta);
	}
}

/*
 * kmemctl-copy: rstat-yield kernel/cgroup/rstat.c cgroup_rstat_flush_locked
 * rename: cgroup_rstat_flush_locked -> lp_cgroup_rstat_flush_locked,
 *   cgroup_rstat_updated_list -> updated_list, cgroup_base_stat_flush -> base_stat_flush,
 *   bpf_rstat_flush -> bpf_flush
 * replace: "&cgroup_rstat_lock" -> "rstat_lock": found through kallsyms
 * replace: "__cgroup_rstat_unlock(cgrp, cpu)" -> "spin_unlock_irq(rstat_lock)":
 *   the helper without its tracepoint
 * replace: "__cgroup_rstat_lock(cgrp, cpu)" -> "spin_lock_irq(rstat_lock)":
 *   the helper without its tracepoints and its trylock, which only feeds them
 */
static void lp_cgroup_rstat_flush_locked(struct cgroup *cgrp)
	__releases(rstat_lock) __acquires(rstat_lock)
{
	/*
	 * kmemctl-differs-begin: every every_cpus CPUs with the mitigation on;
	 * pairs with rstat_set(): every_cpus is set before yield_on
	 */
	u64 every = smp_load_acquire(&yield_on) ? READ_ONCE(*every_cpus) : 0;
	unsigned int n = 0;
	/* kmemctl-differs-end */
	int cpu;

	lockdep_assert_held(rstat_lock);

	for_each_possible_cpu(cpu) {
		struct cgroup *pos = updated_list(cgrp, cpu);

		for (; pos; pos = pos->rstat_flush_next) {
			struct cgroup_subsys_state *css;

			base_stat_flush(pos, cpu);
			bpf_flush(pos, cgroup_parent(pos), cpu);

			rcu_read_lock();
			list_for_each_entry_rcu(css, &pos->rstat_css_list,
						rstat_css_node)
				css->ss->css_rstat_flush(css, cpu);
			rcu_read_unlock();
		}

		/*
		 * kmemctl-differs-begin: on, upstream's yield every every_cpus CPUs;
		 * off, the kernel's before it, on need_resched() or contention only
		 */
		if ((every && ++n % every == 0) || need_resched() ||
		    spin_needbreak(rstat_lock)) {
			/* kmemctl-differs-end */
			spin_unlock_irq(rstat_lock);
			if (!cond_resched())
				cpu_relax();
			spin_lock_irq(rstat_lock);
		/* kmemctl-differs: the end of the yield's block */
		}
	}
}

/* The replacement proper: the copy, timed for the breaker while the mitigation is on. */
static void lp_cgroup_rstat_flush_locked_timed(struct cgroup *cgrp)
{
	struct kmem_call *call = kmem_call_begin(KMEMCTL_MIT_RSTAT_YIELD,
						 "cgroup_rstat_flush_locked");

	lp_cgroup_rstat_flush_locked(cgrp);
	kmem_call_end(call, KMEMCTL_MIT_RSTAT_YIELD);
}

/* what rstat_prepare() resolves, and the replaced flush */
static const char *const rstat_symbols[] = {
	"cgroup_rstat_flush_locked", "cgroup_rstat_lock", "cgroup_rstat_cpu_lock",
	"bpf_rstat_flush", NULL
};

static const struct kmem_lp_func rstat_funcs[] = {
	{ "cgroup_rstat_flush_locked", lp_cgroup_rstat_flush_locked_timed },
	{}
};

/*
 * The replaced flush, then what 6.12 inlines into it and the copies
 * reproduce (a target that is its own symbol in this build is checked as
 * such; one the compiler inlined is checked as part of its caller).
 */
static const char *const rstat_targets[] = {
	"cgroup_rstat_flush_locked", "cgroup_rstat_updated_list", "cgroup_rstat_push_children",
	"cgroup_rstat_cpu", "cgroup_base_stat_flush", "cgroup_base_stat_add",
	"cgroup_base_stat_sub", NULL
};

static int rstat_prepare(void)
{
	rstat_lock = (spinlock_t *)kmem_symbol("cgroup_rstat_lock");
	rstat_cpu_lock = (raw_spinlock_t __percpu *)kmem_symbol("cgroup_rstat_cpu_lock");
	bpf_flush = (void *)kmem_symbol("bpf_rstat_flush");
	if (!rstat_lock || !rstat_cpu_lock || !bpf_flush)
		return -ENOENT;
	return 0;
}

/* every_cpus is read at each flush. */
static void rstat_set(bool on, const u64 *params)
{
	WRITE_ONCE(every_cpus, &params[KMEMCTL_PARAM_RSTAT_YIELD_EVERY_CPUS]);
	/* pairs with lp_cgroup_rstat_flush_locked(): it sees every_cpus once it sees yield_on */
	smp_store_release(&yield_on, on);
}

const struct kmem_lp_fix kmem_lp_rstat = {
	.symbols = rstat_symbols,
	.funcs = rstat_funcs,
	.targets = rstat_targets,
	.prepare = rstat_prepare,
	.set = rstat_set,
};

#endif

// SPDX-License-Identifier: GPL-2.0
/*
 * rstat-yield: upstream's "cgroup/rstat: avoid disabling irqs for
 * O(num_cpu)" (6.15, 6.12.31) for 6.1, whose cgroup_rstat_flush_locked()
 * walks every possible CPU with cgroup_rstat_lock held and irqs off, and
 * yields only on need_resched() or lock contention; the irqsafe variant
 * never yields.
 *
 * The replacements drop and retake the lock every every_cpus CPUs: the
 * sleepable path as upstream does, the irqsafe path (memcg's flushes)
 * without sleeping and restoring its caller's flags. Off, they are 6.1's
 * code. 6.1 inlines cgroup_rstat_cpu_pop_updated() and
 * cgroup_base_stat_flush() into the flush, so they are copied here from
 * 6.1's kernel/cgroup/rstat.c, for the struct layout of the 6.1 headers
 * this module is built against (compat.h: HAVE_LP_RSTAT_6_1).
 *
 * 6.1's memcg flush, __mem_cgroup_flush_stats(), calls the irqsafe flush
 * inside spin_trylock_irqsave(&stats_flush_lock): the flush's caller has
 * irqs off, and yielding cgroup_rstat_lock would leave them off. With the
 * mitigation on, its replacement takes stats_flush_lock with a plain
 * trylock, which no interrupt can deadlock on (every taker only tries), so
 * irqs come back on between CPUs; 6.5 made memcg flushes sleepable
 * ("memcg: sleep during flushing stats in safe contexts") for the same
 * reason.
 */
#include <linux/cgroup.h>
#include <linux/jiffies.h>
#include <linux/memcontrol.h>
#include <linux/rculist.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/u64_stats_sync.h>

#include "compat.h"
#include "kmem.h"

#ifdef HAVE_LP_RSTAT_6_1

/* kmemctl-series: 6.1 */

static spinlock_t *rstat_lock;
static raw_spinlock_t __percpu *rstat_cpu_lock;
static void (*bpf_flush)(struct cgroup *cgrp, struct cgroup *parent, int cpu);
static spinlock_t *memcg_flush_lock;
static atomic_t *memcg_flush_threshold;
static u64 *memcg_flush_next;
static struct mem_cgroup **memcg_root;
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
 * kmemctl-copy: rstat-yield kernel/cgroup/rstat.c cgroup_rstat_cpu_pop_updated
 * rename: cgroup_rstat_cpu_pop_updated -> pop_updated, cgroup_rstat_cpu -> rstatc_of
 */
static struct cgroup *pop_updated(struct cgroup *pos, struct cgroup *root, int cpu)
{
	struct cgroup_rstat_cpu *rstatc;
	struct cgroup *parent;

	if (pos == root)
		return NULL;
	if (!pos) {
		pos = root;
		if (!rstatc_of(pos, cpu)->updated_next)
			return NULL;
	} else {
		pos = cgroup_parent(pos);
	}
	while (true) {
		rstatc = rstatc_of(pos, cpu);
		if (rstatc->updated_children == pos)
			break;
		pos = rstatc->updated_children;
	}
	parent = cgroup_parent(pos);
	if (parent) {
		/* kmemctl-differs: the parent's rstatc is not kept in a variable */
		struct cgroup **nextp = &rstatc_of(parent, cpu)->updated_children;

		while (*nextp != pos) {
			/* kmemctl-differs-begin: nor is the next's */
			WARN_ON_ONCE(*nextp == parent);
			nextp = &rstatc_of(*nextp, cpu)->updated_next;
			/* kmemctl-differs-end */
		}
		*nextp = rstatc->updated_next;
	}
	rstatc->updated_next = NULL;
	return pos;
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
	struct cgroup_base_stat delta;
	unsigned int seq;

	if (!parent)
		return;
	do {
		seq = __u64_stats_fetch_begin(&rstatc->bsync);
		delta = rstatc->bstat;
	} while (__u64_stats_fetch_retry(&rstatc->bsync, seq));
	base_stat_sub(&delta, &rstatc->last_bstat);
	base_stat_add(&cgrp->bstat, &delta);
	base_stat_add(&rstatc->last_bstat, &delta);
	if (cgroup_parent(parent)) {
		delta = cgrp->bstat;
		base_stat_sub(&delta, &cgrp->last_bstat);
		base_stat_add(&parent->bstat, &delta);
		base_stat_add(&cgrp->last_bstat, &delta);
	}
}

/*
 * kmemctl-copy: rstat-yield kernel/cgroup/rstat.c cgroup_rstat_flush_locked
 * copy: flush_cpu, flush_cpus
 * rename: cgroup_rstat_flush_locked -> flush_cpus,
 *   cgroup_rstat_cpu_pop_updated -> pop_updated, cgroup_base_stat_flush -> base_stat_flush,
 *   bpf_rstat_flush -> bpf_flush
 * replace: "&cgroup_rstat_cpu_lock" -> "rstat_cpu_lock": found through kallsyms
 * replace: "&cgroup_rstat_lock" -> "rstat_lock": found through kallsyms
 */
/*
 * kmemctl-differs-begin: one CPU's flush is a function of its own, called
 * by the loop, so that each caller can yield between CPUs its own way
 */
static void flush_cpu(struct cgroup *cgrp, int cpu)
/* kmemctl-differs-end */
{
	raw_spinlock_t *cpu_lock = per_cpu_ptr(rstat_cpu_lock, cpu);
	struct cgroup *pos = NULL;
	unsigned long flags;

	raw_spin_lock_irqsave(cpu_lock, flags);
	while ((pos = pop_updated(pos, cgrp, cpu))) {
		struct cgroup_subsys_state *css;

		base_stat_flush(pos, cpu);
		bpf_flush(pos, cgroup_parent(pos), cpu);
		rcu_read_lock();
		list_for_each_entry_rcu(css, &pos->rstat_css_list, rstat_css_node)
			css->ss->css_rstat_flush(css, cpu);
		rcu_read_unlock();
	}
	raw_spin_unlock_irqrestore(cpu_lock, flags);
	/* kmemctl-differs: the loop's body ends here, in flush_cpu() */
}

/*
 * Called with cgroup_rstat_lock held: by spin_lock_irq() when may_sleep,
 * else by spin_lock_irqsave() into *flags (NULL when the caller is 6.1's
 * own irqsafe flush, during a transition: then it never yields).
 */
/*
 * kmemctl-differs-begin: the irqsafe caller's flags; the loop calls
 * flush_cpu(), and yields every every_cpus CPUs for both callers
 */
static void flush_cpus(struct cgroup *cgrp, bool may_sleep, unsigned long *flags)
{
	/* pairs with rstat_set(): every_cpus is set before yield_on */
	u64 every = smp_load_acquire(&yield_on) ? READ_ONCE(*every_cpus) : 0;
	unsigned int n = 0;
	bool yield;
	int cpu;

	for_each_possible_cpu(cpu) {
		flush_cpu(cgrp, cpu);
		yield = every && ++n % every == 0;
		if (may_sleep && (yield || need_resched() || spin_needbreak(rstat_lock))) {
		/* kmemctl-differs-end */
			spin_unlock_irq(rstat_lock);
			if (!cond_resched())
				cpu_relax();
			spin_lock_irq(rstat_lock);
		/* kmemctl-differs-begin: the irqsafe yield: flags restored, no sleeping */
		} else if (flags && yield) {
			spin_unlock_irqrestore(rstat_lock, *flags);
			cpu_relax();
			spin_lock_irqsave(rstat_lock, *flags);
		}
		/* kmemctl-differs-end */
	}
}

static void lp_cgroup_rstat_flush_locked(struct cgroup *cgrp, bool may_sleep)
{
	flush_cpus(cgrp, may_sleep, NULL);
}

/*
 * kmemctl-copy: rstat-yield kernel/cgroup/rstat.c cgroup_rstat_flush_irqsafe
 * rename: cgroup_rstat_flush_irqsafe -> lp_cgroup_rstat_flush_irqsafe
 * replace: "&cgroup_rstat_lock" -> "rstat_lock": found through kallsyms
 */
/* kmemctl-differs: not static in the kernel */
static void lp_cgroup_rstat_flush_irqsafe(struct cgroup *cgrp)
{
	unsigned long flags;

	spin_lock_irqsave(rstat_lock, flags);
	/* kmemctl-differs: the flush yields with the flags it was given */
	flush_cpus(cgrp, false, &flags);
	spin_unlock_irqrestore(rstat_lock, flags);
}

/*
 * kmemctl-copy: rstat-yield mm/memcontrol.c FLUSH_TIME
 * rename: FLUSH_TIME -> MEMCG_FLUSH_TIME
 */
#define MEMCG_FLUSH_TIME (2UL * HZ)

/*
 * kmemctl-copy: rstat-yield mm/memcontrol.c __mem_cgroup_flush_stats
 * rename: __mem_cgroup_flush_stats -> lp_mem_cgroup_flush_stats, FLUSH_TIME -> MEMCG_FLUSH_TIME,
 *   cgroup_rstat_flush_irqsafe -> lp_cgroup_rstat_flush_irqsafe, flag -> flags
 * replace: "&stats_flush_lock" -> "memcg_flush_lock": found through kallsyms
 * replace: "&stats_flush_threshold" -> "memcg_flush_threshold": found through kallsyms
 * replace: "root_mem_cgroup" -> "(*memcg_root)": found through kallsyms
 * replace: "flush_next_time = jiffies_64 + 2*MEMCG_FLUSH_TIME"
 *   -> "WRITE_ONCE(*memcg_flush_next, get_jiffies_64() + 2 * MEMCG_FLUSH_TIME)":
 *   found through kallsyms; jiffies_64 is read whole on 32-bit too
 */
static void lp_mem_cgroup_flush_stats(void)
{
	/* pairs with rstat_set(), as in flush_cpus() */
	/*
	 * kmemctl-differs-begin: with the mitigation on, stats_flush_lock is taken
	 * without disabling irqs, so they come back on between CPUs (see the top)
	 */
	bool irqs_on = smp_load_acquire(&yield_on);
	unsigned long flags = 0;

	if (irqs_on ? !spin_trylock(memcg_flush_lock) :
		      !spin_trylock_irqsave(memcg_flush_lock, flags))
		      /* kmemctl-differs-end */
		return;
	WRITE_ONCE(*memcg_flush_next, get_jiffies_64() + 2 * MEMCG_FLUSH_TIME);
	lp_cgroup_rstat_flush_irqsafe((*memcg_root)->css.cgroup);
	atomic_set(memcg_flush_threshold, 0);
	/* kmemctl-differs-begin: released as it was taken */
	if (irqs_on)
		spin_unlock(memcg_flush_lock);
	else
		spin_unlock_irqrestore(memcg_flush_lock, flags);
		/* kmemctl-differs-end */
}

/* The replacements proper: the copies, timed for the breaker while the mitigation is on. */
static void lp_cgroup_rstat_flush_locked_timed(struct cgroup *cgrp, bool may_sleep)
{
	struct kmem_call *call = kmem_call_begin(KMEMCTL_MIT_RSTAT_YIELD,
						 "cgroup_rstat_flush_locked");

	lp_cgroup_rstat_flush_locked(cgrp, may_sleep);
	kmem_call_end(call, KMEMCTL_MIT_RSTAT_YIELD);
}

static void lp_cgroup_rstat_flush_irqsafe_timed(struct cgroup *cgrp)
{
	struct kmem_call *call = kmem_call_begin(KMEMCTL_MIT_RSTAT_YIELD,
						 "cgroup_rstat_flush_irqsafe");

	lp_cgroup_rstat_flush_irqsafe(cgrp);
	kmem_call_end(call, KMEMCTL_MIT_RSTAT_YIELD);
}

static void lp_mem_cgroup_flush_stats_timed(void)
{
	struct kmem_call *call = kmem_call_begin(KMEMCTL_MIT_RSTAT_YIELD,
						 "__mem_cgroup_flush_stats");

	lp_mem_cgroup_flush_stats();
	kmem_call_end(call, KMEMCTL_MIT_RSTAT_YIELD);
}

/* what rstat_prepare() resolves, and the replaced flushes */
static const char *const rstat_symbols[] = {
	"cgroup_rstat_flush_locked", "cgroup_rstat_flush_irqsafe", "cgroup_rstat_lock",
	"cgroup_rstat_cpu_lock", "bpf_rstat_flush", "__mem_cgroup_flush_stats",
	"stats_flush_lock", "stats_flush_threshold", "flush_next_time", "root_mem_cgroup", NULL
};

static const struct kmem_lp_func rstat_funcs[] = {
	{ "cgroup_rstat_flush_locked", lp_cgroup_rstat_flush_locked_timed },
	{ "cgroup_rstat_flush_irqsafe", lp_cgroup_rstat_flush_irqsafe_timed },
	{ "__mem_cgroup_flush_stats", lp_mem_cgroup_flush_stats_timed },
	{}
};

/*
 * The replaced functions, then what 6.1 inlines into them and the copies
 * reproduce (a target that is its own symbol in this build is checked as
 * such; one the compiler inlined is checked as part of its caller).
 */
static const char *const rstat_targets[] = {
	"cgroup_rstat_flush_locked", "cgroup_rstat_flush_irqsafe", "__mem_cgroup_flush_stats",
	"cgroup_rstat_cpu_pop_updated", "cgroup_rstat_cpu", "cgroup_base_stat_flush",
	"cgroup_base_stat_add", "cgroup_base_stat_sub", NULL
};

static int rstat_prepare(void)
{
	rstat_lock = (spinlock_t *)kmem_symbol("cgroup_rstat_lock");
	rstat_cpu_lock = (raw_spinlock_t __percpu *)kmem_symbol("cgroup_rstat_cpu_lock");
	bpf_flush = (void *)kmem_symbol("bpf_rstat_flush");
	memcg_flush_lock = (spinlock_t *)kmem_symbol("stats_flush_lock");
	memcg_flush_threshold = (atomic_t *)kmem_symbol("stats_flush_threshold");
	memcg_flush_next = (u64 *)kmem_symbol("flush_next_time");
	memcg_root = (struct mem_cgroup **)kmem_symbol("root_mem_cgroup");
	if (!rstat_lock || !rstat_cpu_lock || !bpf_flush || !memcg_flush_lock ||
	    !memcg_flush_threshold || !memcg_flush_next || !memcg_root)
		return -ENOENT;
	return 0;
}

/* every_cpus is read at each flush. */
static void rstat_set(bool on, const u64 *params)
{
	WRITE_ONCE(every_cpus, &params[KMEMCTL_PARAM_RSTAT_YIELD_EVERY_CPUS]);
	/* pairs with flush_cpus(): a flush that sees yield_on sees every_cpus */
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

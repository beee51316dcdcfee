// SPDX-License-Identifier: GPL-2.0
/*
 * kasan-quarantine: generic KASAN holds freed slab objects in a quarantine
 * of up to 1/32 of RAM, and kasan_quarantine_reduce(), called on blocking
 * slab allocations, frees one batch of it at a time under a raw spinlock
 * with irqs off for the batch's detach, then frees its objects. Both the
 * fraction and the batch size are compiled in or computed. Here they are
 * the mitigation's params:
 *
 *   max_fraction	the quarantine may hold 1/max_fraction of RAM
 *   batch_bytes	one reduction frees at most this much; batches also
 *			close at this size when objects enter the quarantine
 *
 * Objects enter the global quarantine 1 MiB at a time (each CPU's queue),
 * so batches are never much smaller than 1 MiB; a batch_bytes below that
 * is honoured by freeing the front of the oldest batch, walking that many
 * bytes of its list under the quarantine lock.
 *
 * mm/kasan is built without ftrace and cannot be livepatched. While the
 * mitigation is on, a kprobe on kasan_quarantine_reduce()'s first
 * instruction sends the CPU to this file's copy of it instead; the copy
 * shares the kernel's quarantine (its head, tail, batches, lock and SRCU)
 * and frees through the kernel's own qlist_free_all(). The risks, and why
 * each is bounded, are in docs/mitigations.md. The copy follows
 * mm/kasan/quarantine.c, whose reduction 6.1 and 6.12 have alike, with
 * SLUB; the slab layouts it reads are each series' own (kasan_slab_6_1.h,
 * kasan_slab_6_12.h; compat.h: HAVE_KASAN_QUARANTINE).
 *
 * Quarantined objects are poisoned and the list runs through them, so this
 * file is built without KASAN instrumentation, as mm/kasan is.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kprobes.h>
#include <linux/mm.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/srcu.h>
#include <linux/sysfs.h>

#include "compat.h"
#include "kmem.h"

#ifdef HAVE_KASAN_QUARANTINE

#ifdef HAVE_KASAN_QUARANTINE_6_1
#include "kasan_slab_6_1.h"
#else
#include "kasan_slab_6_12.h"
#endif

/* mm/kasan/quarantine.c */
/*
 * kmemctl-copy: kasan-quarantine mm/kasan/quarantine.c QUARANTINE_PERCPU_SIZE
 *   QUARANTINE_BATCHES QUARANTINE_FRACTION
 * replace: "(1 << 20)" -> "SZ_1M": the same size
 */
#define QUARANTINE_PERCPU_SIZE SZ_1M
#define QUARANTINE_BATCHES (1024 > 4 * CONFIG_NR_CPUS ? 1024 : 4 * CONFIG_NR_CPUS)
#define QUARANTINE_FRACTION 32

/* mm/kasan/kasan.h */
/* kmemctl-copy: kasan-quarantine mm/kasan/kasan.h struct qlist_node */
struct qlist_node {
	struct qlist_node *next;
};

/* mm/kasan/quarantine.c */
/* kmemctl-copy: kasan-quarantine mm/kasan/quarantine.c struct qlist_head */
struct qlist_head {
	struct qlist_node *head;
	struct qlist_node *tail;
	size_t bytes;
	bool offline;
};

static struct qlist_head *batches;
static int *batch_head;
static unsigned long *held_bytes, *max_bytes, *batch_bytes;
static raw_spinlock_t *quarantine_lock;
static struct srcu_struct *remove_cache_srcu;
static void (*free_all)(struct qlist_head *q, struct kmem_cache *cache);
static const u64 *params;
static struct kprobe redirect_kp;
/*
 * Reductions of the copy that freed something, and the most one freed,
 * since mode on: what bounds a reduction is the bytes it frees, which the
 * tests compare with the kernel's batch instead of timing it.
 */
static unsigned long reductions, reduce_max_bytes;

/*
 * kmemctl-copy: kasan-quarantine mm/kasan/quarantine.c qlink_to_cache
 * rename: qlink_to_cache -> qlink_cache
 * replace: "virt_to_slab(qlink)" -> "((struct slab *)virt_to_folio(qlink))":
 *   virt_to_slab() is mm/slab.h's
 */
static struct kmem_cache *qlink_cache(struct qlist_node *qlink)
{
	return ((struct slab *)virt_to_folio(qlink))->slab_cache;
}

/*
 * Not a copy: kmemctl's own. kasan_quarantine_reduce() computes
 * this limit under quarantine_lock from QUARANTINE_FRACTION; here the
 * fraction is a param and the limit is computed before the lock.
 */
/* The most the quarantine may hold, and the RAM share it derives from. */
static unsigned long quarantine_limit(unsigned long fraction, size_t *share)
{
	size_t percpu = (size_t)QUARANTINE_PERCPU_SIZE * num_online_cpus();

	*share = (totalram_pages() << PAGE_SHIFT) / fraction;
	return *share < percpu ? 0 : *share - percpu;
}

/*
 * Not a copy: kmemctl's own. The kernel frees a whole batch at once
 * (qlist_move_all()); the batch_bytes param frees a batch's front instead.
 */
/* Moves the front of from to the empty to: at least one object, at most limit bytes. */
static void qlist_move_front(struct qlist_head *from, struct qlist_head *to, size_t limit)
{
	struct qlist_node *last = from->head;
	size_t bytes = qlink_cache(last)->size;

	while (last->next) {
		size_t next = qlink_cache(last->next)->size;

		if (bytes + next > limit)
			break;
		bytes += next;
		last = last->next;
	}
	to->head = from->head;
	to->tail = last;
	to->bytes = bytes;
	from->head = last->next;
	if (!from->head)
		from->tail = NULL;
	from->bytes -= bytes;
	last->next = NULL;
}

/* kmemctl-copy: kasan-quarantine mm/kasan/quarantine.c qlist_move_all */
static void qlist_move_all(struct qlist_head *from, struct qlist_head *to)
/*
 * kmemctl-differs-begin: to is always empty here, so the move is its first
 * case, with qlist_init() spelled out
 */
{
	to->head = from->head;
	to->tail = from->tail;
	to->bytes = from->bytes;
	from->head = NULL;
	from->tail = NULL;
	from->bytes = 0;
	/* kmemctl-differs-end */
}

/*
 * kasan_quarantine_reduce(), with the limit and the batch from params.
 * Only called from the kprobe below, in its caller's context.
 */
/*
 * kmemctl-copy: kasan-quarantine mm/kasan/quarantine.c kasan_quarantine_reduce
 * rename: kasan_quarantine_reduce -> kmem_quarantine_reduce, qlist_free_all -> free_all
 * replace: "&remove_cache_srcu" -> "remove_cache_srcu": found through kallsyms, as below
 * replace: "&quarantine_lock" -> "quarantine_lock": kallsyms
 */
/*
 * kmemctl-differs-begin: static, fraction and batch from params, the
 * limit computed before the lock by quarantine_limit()
 */
static void kmem_quarantine_reduce(void)
{
	u64 fraction = READ_ONCE(params[KMEMCTL_PARAM_KASAN_QUARANTINE_MAX_FRACTION]);
	u64 batch = READ_ONCE(params[KMEMCTL_PARAM_KASAN_QUARANTINE_BATCH_BYTES]);
	struct qlist_head to_free = {};
	struct qlist_head *oldest;
	unsigned long limit, flags;
	size_t share;
	int srcu_idx;

	limit = quarantine_limit(fraction, &share);
	if (likely(READ_ONCE(*held_bytes) <= limit))
		return;
	/* kmemctl-differs-end */

	/* kasan_quarantine_remove_cache() waits for to_free to be freed */
	srcu_idx = srcu_read_lock(remove_cache_srcu);
	raw_spin_lock_irqsave(quarantine_lock, flags);
	/*
	 * kmemctl-differs-begin: the limit and batch size from params; a batch
	 * over batch_bytes is freed from its front, batch_bytes at a time
	 */
	WRITE_ONCE(*max_bytes, limit);
	WRITE_ONCE(*batch_bytes, batch);
	if (likely(*held_bytes > limit)) {
		oldest = &batches[*batch_head];
		if (oldest->bytes <= batch || !oldest->head) {
			qlist_move_all(oldest, &to_free);
			if (++*batch_head == QUARANTINE_BATCHES)
				*batch_head = 0;
		} else {
			qlist_move_front(oldest, &to_free, batch);
		}
		WRITE_ONCE(*held_bytes, *held_bytes - to_free.bytes);
		WRITE_ONCE(reductions, reductions + 1);
		if (to_free.bytes > reduce_max_bytes)
			WRITE_ONCE(reduce_max_bytes, to_free.bytes);
	}
	/* kmemctl-differs-end */
	raw_spin_unlock_irqrestore(quarantine_lock, flags);

	/* kmemctl-differs: qlist_free_all() through kallsyms, only with work to do */
	if (to_free.head)
		free_all(&to_free, NULL);
	srcu_read_unlock(remove_cache_srcu, srcu_idx);
}

/* What the kprobe sends the CPU to: the copy, timed for the breaker. */
static void kmem_quarantine_reduce_timed(void)
{
	struct kmem_call *call = kmem_call_begin(KMEMCTL_MIT_KASAN_QUARANTINE,
						 "kasan_quarantine_reduce");

	kmem_quarantine_reduce();
	kmem_call_end(call, KMEMCTL_MIT_KASAN_QUARANTINE);
}

static int redirect_pre(struct kprobe *kp, struct pt_regs *regs)
{
	instruction_pointer_set(regs, (unsigned long)kmem_quarantine_reduce_timed);
	/* resume at the new ip, skipping the probed instruction */
	return 1;
}

/*
 * Never called, since redirect_pre() skips the single-step; a post handler
 * keeps the probe an int3, as an optimized probe's jump ignores the new ip.
 */
static void redirect_post(struct kprobe *kp, struct pt_regs *regs, unsigned long flags)
{
}

/* what quarantine_prepare() resolves, and the replaced reduce */
static const char *const quarantine_symbols[] = {
	"kasan_quarantine_reduce", "global_quarantine", "quarantine_head", "quarantine_size",
	"quarantine_max_size", "quarantine_batch_size", "quarantine_lock", "remove_cache_srcu",
	"qlist_free_all", NULL
};

/* The replaced reduction, and the helpers of mm/kasan/quarantine.c copied above. */
static const char *const quarantine_targets[] = {
	"kasan_quarantine_reduce", "qlist_move_all", "qlink_to_cache", NULL
};

static int quarantine_prepare(void)
{
	batches = (struct qlist_head *)kmem_symbol("global_quarantine");
	batch_head = (int *)kmem_symbol("quarantine_head");
	held_bytes = (unsigned long *)kmem_symbol("quarantine_size");
	max_bytes = (unsigned long *)kmem_symbol("quarantine_max_size");
	batch_bytes = (unsigned long *)kmem_symbol("quarantine_batch_size");
	quarantine_lock = (raw_spinlock_t *)kmem_symbol("quarantine_lock");
	remove_cache_srcu = (struct srcu_struct *)kmem_symbol("remove_cache_srcu");
	free_all = (void *)kmem_symbol("qlist_free_all");
	if (!batches || !batch_head || !held_bytes || !max_bytes ||
	    !batch_bytes || !quarantine_lock || !remove_cache_srcu || !free_all)
		return -ENOENT;
	return 0;
}

static int quarantine_enable(const u64 *values)
{
	int ret;

	params = values;
	reductions = 0;
	reduce_max_bytes = 0;
	kmem_kprobe_init(&redirect_kp, "kasan_quarantine_reduce", redirect_pre);
	redirect_kp.post_handler = redirect_post;
	ret = register_kprobe(&redirect_kp);
	if (ret)
		return ret;
	/* probes on one address run newest first: the timing probe must see the call */
	kmem_probe_reattach(&kmem_probe_kasan_reduce);
	return 0;
}

/* Puts back the limit and batch size the kernel's own reduction computes. */
static int quarantine_disable(void)
{
	unsigned long flags, limit;
	size_t share;

	unregister_kprobe(&redirect_kp);
	limit = quarantine_limit(QUARANTINE_FRACTION, &share);
	raw_spin_lock_irqsave(quarantine_lock, flags);
	WRITE_ONCE(*max_bytes, limit);
	WRITE_ONCE(*batch_bytes, max_t(size_t, QUARANTINE_PERCPU_SIZE,
				       2 * share / QUARANTINE_BATCHES));
	raw_spin_unlock_irqrestore(quarantine_lock, flags);
	return 0;
}

/* oldest_batch_bytes: what the kernel's own next reduction would free. */
static ssize_t quarantine_stats(char *buf, ssize_t len)
{
	return len + sysfs_emit_at(buf, len,
				   "held_bytes %lu\nmax_bytes %lu\nbatch_bytes %lu\noldest_batch_bytes %zu\nreductions %lu\nreduce_max_bytes %lu\nmissed %lu\n",
				   READ_ONCE(*held_bytes), READ_ONCE(*max_bytes),
				   READ_ONCE(*batch_bytes),
				   READ_ONCE(batches[READ_ONCE(*batch_head)].bytes),
				   READ_ONCE(reductions), READ_ONCE(reduce_max_bytes),
				   redirect_kp.nmissed);
}

const struct kmem_direct_fix kmem_kasan_quarantine = {
	.symbols = quarantine_symbols,
	.targets = quarantine_targets,
	.prepare = quarantine_prepare,
	.enable = quarantine_enable,
	.disable = quarantine_disable,
	.stats = quarantine_stats,
};

#endif

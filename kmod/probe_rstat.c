// SPDX-License-Identifier: GPL-2.0
/*
 * rstat-flush: how long each cgroup_rstat_flush_locked() runs, and the
 * longest stretch within it that cgroup_rstat_lock keeps irqs off.
 *
 * A flush may drop and retake the lock (to let another flusher in, or after
 * every CPU with upstream's fix) and may migrate meanwhile, so its state
 * lives in its kretprobe instance, found by task through a small table of
 * flushes in flight. A stretch starts at the flush's entry or, after the
 * flush dropped the lock, when it asks for the lock again (irqs go off
 * before it spins); it ends at _raw_spin_unlock_irq() or the flush's return.
 * The lock kprobes fire for every lock in the kernel and return at once
 * unless the lock is cgroup_rstat_lock. Flushes entered with irqs on (none
 * in 6.1 to 6.15) have no stretch to record.
 */
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/timekeeping.h>

#include "kmem.h"

/* More concurrent flushes than this are timed but not tracked for irqs-off. */
#define INFLIGHT 32

struct flush_data {
	u64 start;
	u64 stretch_start;
	u64 irqoff_max;
	bool tracked;
};

static struct kretprobe flush_rp;
static struct kprobe lock_kp, trylock_kp, unlock_kp;
static struct kprobe *lock_kps[] = { &lock_kp, &unlock_kp, &trylock_kp };
/*
 * _raw_spin_trylock() is hot everywhere: hooked, as the last of lock_kps,
 * only where the kernel's flush takes cgroup_rstat_lock with it (from 6.10).
 */
static int nlock_kps;

static unsigned long rstat_lock;

static DEFINE_RAW_SPINLOCK(inflight_lock);
static struct task_struct *inflight_task[INFLIGHT];
static struct flush_data *inflight_data[INFLIGHT];

/* Called with inflight_lock held. */
static struct flush_data *inflight_find(void)
{
	int i;

	for (i = 0; i < INFLIGHT; i++)
		if (inflight_task[i] == current)
			return inflight_data[i];
	return NULL;
}

static bool inflight_add(struct flush_data *d)
{
	unsigned long flags;
	int i;

	raw_spin_lock_irqsave(&inflight_lock, flags);
	for (i = 0; i < INFLIGHT && inflight_task[i]; i++)
		;
	if (i < INFLIGHT) {
		inflight_task[i] = current;
		inflight_data[i] = d;
	}
	raw_spin_unlock_irqrestore(&inflight_lock, flags);
	return i < INFLIGHT;
}

static void inflight_del(void)
{
	unsigned long flags;
	int i;

	raw_spin_lock_irqsave(&inflight_lock, flags);
	for (i = 0; i < INFLIGHT; i++)
		if (inflight_task[i] == current)
			inflight_task[i] = NULL;
	raw_spin_unlock_irqrestore(&inflight_lock, flags);
}

static void inflight_reset(void)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&inflight_lock, flags);
	memset(inflight_task, 0, sizeof(inflight_task));
	raw_spin_unlock_irqrestore(&inflight_lock, flags);
}

static void stretch_end(struct flush_data *d, u64 now)
{
	if (d->stretch_start)
		d->irqoff_max = max(d->irqoff_max, now - d->stretch_start);
	d->stretch_start = 0;
}

/* Starts or ends the current flush's stretch, if regs hold cgroup_rstat_lock. */
static void stretch_mark(struct pt_regs *regs, bool start)
{
	struct flush_data *d;
	unsigned long flags;

	if (regs_get_kernel_argument(regs, 0) != rstat_lock)
		return;
	raw_spin_lock_irqsave(&inflight_lock, flags);
	d = inflight_find();
	if (d && start)
		d->stretch_start = ktime_get_mono_fast_ns();
	else if (d)
		stretch_end(d, ktime_get_mono_fast_ns());
	raw_spin_unlock_irqrestore(&inflight_lock, flags);
}

/* _raw_spin_lock_irq() and _raw_spin_trylock() (spin_trylock_irq() from 6.10). */
static int lock_pre(struct kprobe *kp, struct pt_regs *regs)
{
	stretch_mark(regs, true);
	return 0;
}

static int unlock_pre(struct kprobe *kp, struct pt_regs *regs)
{
	stretch_mark(regs, false);
	return 0;
}

static int flush_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct flush_data *d = (struct flush_data *)ri->data;

	d->start = ktime_get_mono_fast_ns();
	d->stretch_start = d->start;
	d->irqoff_max = 0;
	d->tracked = regs_irqs_disabled(regs) && inflight_add(d);
	return 0;
}

static int flush_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct flush_data *d = (struct flush_data *)ri->data;
	u64 now = ktime_get_mono_fast_ns();

	if (d->tracked) {
		inflight_del();
		stretch_end(d, now);
		kmem_probe_record2(&kmem_probe_rstat_flush, d->irqoff_max);
	}
	kmem_probe_record(&kmem_probe_rstat_flush, now - d->start);
	return 0;
}

/* Whether the kernel's flush (or its __cgroup_rstat_lock() helper) calls the trylock. */
static bool flush_trylocks(void)
{
	unsigned long trylock = kmem_symbol("_raw_spin_trylock");

	const char *helper = "__cgroup_rstat_lock";

	return trylock && (kmem_calls_to("cgroup_rstat_flush", helper, trylock) > 0 ||
			   kmem_calls_to("cgroup_rstat_flush_locked", helper, trylock) > 0);
}

static int rstat_enable(struct kmem_probe *probe)
{
	rstat_lock = kmem_symbol("cgroup_rstat_lock");
	nlock_kps = ARRAY_SIZE(lock_kps) - !flush_trylocks();
	/*
	 * Flushes that returned while an earlier disable was under way left
	 * their entries; the lock kprobes that read them were gone first.
	 */
	inflight_reset();
	kmem_kprobe_init(&lock_kp, "_raw_spin_lock_irq", lock_pre);
	kmem_kprobe_init(&trylock_kp, "_raw_spin_trylock", lock_pre);
	kmem_kprobe_init(&unlock_kp, "_raw_spin_unlock_irq", unlock_pre);
	kmem_kretprobe_init(&flush_rp, "cgroup_rstat_flush_locked", flush_entry, flush_ret,
			    sizeof(struct flush_data));
	return kmem_probe_attach(lock_kps, nlock_kps, &flush_rp);
}

static void rstat_disable(struct kmem_probe *probe)
{
	kmem_probe_detach(lock_kps, nlock_kps, &flush_rp);
}

static unsigned long rstat_missed(struct kmem_probe *probe)
{
	return flush_rp.nmissed + flush_rp.kp.nmissed + lock_kp.nmissed + trylock_kp.nmissed +
	       unlock_kp.nmissed;
}

static const char *const rstat_symbols[] = {
	"cgroup_rstat_flush_locked", "cgroup_rstat_lock", NULL
};

struct kmem_probe kmem_probe_rstat_flush = {
	.id = KMEMCTL_PROBE_RSTAT_FLUSH,
	.symbols = rstat_symbols,
	.enable = rstat_enable,
	.disable = rstat_disable,
	.missed = rstat_missed,
};

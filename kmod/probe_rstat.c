// SPDX-License-Identifier: GPL-2.0
/*
 * rstat-flush: how long each cgroup_rstat_flush_locked() runs, and the
 * longest stretch within it that cgroup_rstat_lock keeps irqs off.
 *
 * The flush may drop and retake the lock, and may migrate while it does, so
 * per-flush state is global and only touched with cgroup_rstat_lock held
 * (one flusher at a time). A stretch starts at the flush's entry or, after
 * the flush dropped the lock, at _raw_spin_lock_irq() entry (it disables
 * irqs before it spins), stamped per CPU since nothing migrates with irqs
 * off; it ends at _raw_spin_unlock_irq() or at the flush's return. A
 * flush entered with irqs on (kernels carrying upstream's fix) has no such
 * stretch and records none.
 */
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/timekeeping.h>

#include "kmem.h"

static struct kretprobe flush_rp;
static struct kprobe lock_kp, unlock_kp;
static struct kprobe *lock_kps[] = { &lock_kp, &unlock_kp };
static unsigned long rstat_lock;

/* Under cgroup_rstat_lock. */
static struct task_struct *flush_owner;
static bool flush_irqoff;
static u64 flush_irqoff_max;

/* The last _raw_spin_lock_irq(&cgroup_rstat_lock) on this CPU, and by whom. */
static DEFINE_PER_CPU(u64, lock_ts);
static DEFINE_PER_CPU(struct task_struct *, lock_task);

struct flush_data {
	u64 start;
};

static bool is_rstat_lock(struct pt_regs *regs)
{
	return regs_get_kernel_argument(regs, 0) == rstat_lock;
}

static void stretch_end(u64 now)
{
	if (this_cpu_read(lock_task) == current)
		flush_irqoff_max = max(flush_irqoff_max, now - this_cpu_read(lock_ts));
}

static int lock_pre(struct kprobe *kp, struct pt_regs *regs)
{
	if (is_rstat_lock(regs)) {
		this_cpu_write(lock_ts, ktime_get_mono_fast_ns());
		this_cpu_write(lock_task, current);
	}
	return 0;
}

static int unlock_pre(struct kprobe *kp, struct pt_regs *regs)
{
	if (!is_rstat_lock(regs))
		return 0;
	if (READ_ONCE(flush_owner) == current && flush_irqoff)
		stretch_end(ktime_get_mono_fast_ns());
	this_cpu_write(lock_task, NULL);
	return 0;
}

static int flush_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct flush_data *d = (struct flush_data *)ri->data;

	d->start = ktime_get_mono_fast_ns();
	flush_irqoff = regs_irqs_disabled(regs);
	flush_irqoff_max = 0;
	/* Stretches are clipped to the flush: the first starts here. */
	this_cpu_write(lock_ts, d->start);
	this_cpu_write(lock_task, current);
	WRITE_ONCE(flush_owner, current);
	return 0;
}

static int flush_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct flush_data *d = (struct flush_data *)ri->data;
	u64 now = ktime_get_mono_fast_ns();

	if (READ_ONCE(flush_owner) == current) {
		if (flush_irqoff) {
			stretch_end(now);
			kmem_probe_record2(&kmem_probe_rstat_flush, flush_irqoff_max);
		}
		WRITE_ONCE(flush_owner, NULL);
	}
	kmem_probe_record(&kmem_probe_rstat_flush, now - d->start);
	return 0;
}

static int rstat_enable(struct kmem_probe *probe)
{
	rstat_lock = kmem_symbol("cgroup_rstat_lock");
	WRITE_ONCE(flush_owner, NULL);
	memset(&lock_kp, 0, sizeof(lock_kp));
	lock_kp.symbol_name = "_raw_spin_lock_irq";
	lock_kp.pre_handler = lock_pre;
	memset(&unlock_kp, 0, sizeof(unlock_kp));
	unlock_kp.symbol_name = "_raw_spin_unlock_irq";
	unlock_kp.pre_handler = unlock_pre;
	kmem_kretprobe_init(&flush_rp, "cgroup_rstat_flush_locked", flush_entry, flush_ret,
			    sizeof(struct flush_data));
	return kmem_probe_attach(lock_kps, ARRAY_SIZE(lock_kps), &flush_rp);
}

static void rstat_disable(struct kmem_probe *probe)
{
	kmem_probe_detach(lock_kps, ARRAY_SIZE(lock_kps), &flush_rp);
}

static unsigned long rstat_missed(struct kmem_probe *probe)
{
	return flush_rp.nmissed + lock_kp.nmissed + unlock_kp.nmissed;
}

static const char *const rstat_symbols[] = {
	"cgroup_rstat_flush_locked", "cgroup_rstat_lock", NULL
};

struct kmem_probe kmem_probe_rstat_flush = {
	.name = "rstat-flush",
	.id = KMEMCTL_PROBE_RSTAT_FLUSH,
	.second = "irqoff",
	.symbols = rstat_symbols,
	.enable = rstat_enable,
	.disable = rstat_disable,
	.missed = rstat_missed,
};

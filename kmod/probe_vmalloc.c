// SPDX-License-Identifier: GPL-2.0
/*
 * vmalloc probes.
 *
 * usercopy-vmalloc: time in find_vmap_area() when hardened usercopy calls
 * it to bound a copy from vmalloc memory. find_vmap_area() has other
 * callers, so the entry handler declines every call that does not return
 * into __check_object_size() (or check_heap_object() where that is not
 * inlined, or usercopy-fastpath's replacement, usercopy_fastpath.c), and only the
 * usercopy lookups pay for a return hook.
 *
 * vmap-purge: duration of each __purge_vmap_area_lazy() that purged
 * something, and how many flush_tlb_kernel_range() calls the purging task
 * made inside it. Purges
 * are serialized by vmap_purge_lock and may migrate, so the count is kept
 * for one owning task rather than per CPU. Flushes done by other tasks on
 * the purge's behalf (6.9+ per-node workers) are not counted.
 */
#include <linux/atomic.h>
#include <linux/sched.h>
#include <linux/timekeeping.h>

#include "kmem.h"

struct start_data {
	u64 start;
};

struct text_range {
	unsigned long start, end;
};

static struct kretprobe fva_rp;
static struct text_range checkers[3];

static bool called_from_check(unsigned long ret)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(checkers); i++)
		if (ret >= checkers[i].start && ret < checkers[i].end)
			return true;
	return false;
}

static int fva_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	unsigned long ret = *(unsigned long *)kernel_stack_pointer(regs);

	if (!called_from_check(ret))
		return 1;
	((struct start_data *)ri->data)->start = ktime_get_mono_fast_ns();
	return 0;
}

static int fva_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	u64 start = ((struct start_data *)ri->data)->start;

	kmem_probe_record(&kmem_probe_usercopy_vmalloc, ktime_get_mono_fast_ns() - start);
	return 0;
}

static int usercopy_enable(struct kmem_probe *probe)
{
	memset(checkers, 0, sizeof(checkers));
	if (!kmem_symbol_range("__check_object_size", &checkers[0].start, &checkers[0].end))
		return -ENOENT;
	kmem_symbol_range("check_heap_object", &checkers[1].start, &checkers[1].end);
	kmem_symbol_range("kmem_check_vmalloc_object", &checkers[2].start, &checkers[2].end);
	kmem_kretprobe_init(&fva_rp, "find_vmap_area", fva_entry, fva_ret,
			    sizeof(struct start_data));
	return register_kretprobe(&fva_rp);
}

static void usercopy_disable(struct kmem_probe *probe)
{
	unregister_kretprobe(&fva_rp);
}

static unsigned long usercopy_missed(struct kmem_probe *probe)
{
	return fva_rp.nmissed + fva_rp.kp.nmissed;
}

static const char *const usercopy_symbols[] = {
	"__check_object_size", "find_vmap_area", NULL
};

struct kmem_probe kmem_probe_usercopy_vmalloc = {
	.id = KMEMCTL_PROBE_USERCOPY_VMALLOC,
#ifndef CONFIG_HARDENED_USERCOPY
	.kconfig_missing = "CONFIG_HARDENED_USERCOPY is not set",
#endif
	.symbols = usercopy_symbols,
	.enable = usercopy_enable,
	.disable = usercopy_disable,
	.missed = usercopy_missed,
};

static struct kretprobe purge_rp;
static struct kprobe flush_kp;
static struct kprobe *flush_kps[] = { &flush_kp };
static struct task_struct *purge_owner;
static u64 purge_flushes;	/* written by purge_owner only */

struct purge_data {
	u64 start;
	bool counting;
};

static int flush_pre(struct kprobe *kp, struct pt_regs *regs)
{
	if (READ_ONCE(purge_owner) == current)
		purge_flushes++;
	return 0;
}

static int purge_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct purge_data *d = (struct purge_data *)ri->data;

	d->start = ktime_get_mono_fast_ns();
	d->counting = !cmpxchg(&purge_owner, NULL, current);
	if (d->counting)
		purge_flushes = 0;
	return 0;
}

static int purge_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct purge_data *d = (struct purge_data *)ri->data;
	bool purged = regs_return_value(regs);

	/* Returning false, it found nothing to purge and flushed nothing. */
	if (purged)
		kmem_probe_record(&kmem_probe_vmap_purge, ktime_get_mono_fast_ns() - d->start);
	if (d->counting) {
		if (purged)
			kmem_probe_record2(&kmem_probe_vmap_purge, purge_flushes);
		/* the count is read before the next purge may reset it */
		smp_store_release(&purge_owner, NULL);
	}
	return 0;
}

static int purge_enable(struct kmem_probe *probe)
{
	/* A purge cut short by an earlier disable never returned through us. */
	WRITE_ONCE(purge_owner, NULL);
	kmem_kprobe_init(&flush_kp, "flush_tlb_kernel_range", flush_pre);
	kmem_kretprobe_init(&purge_rp, "__purge_vmap_area_lazy", purge_entry, purge_ret,
			    sizeof(struct purge_data));
	return kmem_probe_attach(flush_kps, ARRAY_SIZE(flush_kps), &purge_rp);
}

static void purge_disable(struct kmem_probe *probe)
{
	kmem_probe_detach(flush_kps, ARRAY_SIZE(flush_kps), &purge_rp);
}

static unsigned long purge_missed(struct kmem_probe *probe)
{
	return purge_rp.nmissed + purge_rp.kp.nmissed + flush_kp.nmissed;
}

static const char *const purge_symbols[] = {
	"__purge_vmap_area_lazy", "flush_tlb_kernel_range", NULL
};

struct kmem_probe kmem_probe_vmap_purge = {
	.id = KMEMCTL_PROBE_VMAP_PURGE,
	.symbols = purge_symbols,
	.enable = purge_enable,
	.disable = purge_disable,
	.missed = purge_missed,
};

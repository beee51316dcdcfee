// SPDX-License-Identifier: GPL-2.0
/*
 * kasan-flush-batch: upstream's "mm/vmalloc: combine all TLB flush
 * operations of KASAN shadow virtual address into one operation" (6.13,
 * 6.12.4) for 6.1. With KASAN_VMALLOC, 6.1's __purge_vmap_area_lazy()
 * calls kasan_release_vmalloc() for every area it purges, and each call
 * ends in its own flush_tlb_kernel_range(): an IPI to every CPU per area,
 * thousands per purge, all under free_vmap_area_lock.
 *
 * The replacement, with the mitigation on, depopulates the shadow of every
 * area on the purge list first, then flushes the shadow of the list's
 * whole range once, and only then returns the areas to the free tree, so
 * no area can be reallocated while a stale shadow translation remains.
 * Like upstream, each area releases the shadow pages that lie wholly
 * inside it; a shadow page shared with a neighbour stays mapped, and is
 * reused when that range is allocated again. Off, it is 6.1's code.
 *
 * mm/kasan is built without ftrace, so only the vmalloc side is patched;
 * kasan_release_vmalloc()'s pieces are called through kallsyms. The free
 * tree's merge helpers are inlined into the purge, so they are copied from
 * mm/vmalloc.c (vmap_purge.h, shared with 6.12's purge; compat.h:
 * HAVE_LP_KASAN_PURGE_6_1).
 */
#include "compat.h"
#include "kmem.h"

#ifdef HAVE_LP_KASAN_PURGE_6_1

/* kmemctl-series: 6.1 */

#include "vmap_purge.h"

static spinlock_t *purge_lock;
static struct rb_root *purge_root;
static struct list_head *purge_list;

/* kmemctl-copy: kasan-flush-batch mm/vmalloc.c lazy_max_pages */
/* kmemctl-differs-begin: the same product in one expression */
static unsigned long lazy_max_pages(void)
{
	return fls(num_online_cpus()) * (32UL * 1024 * 1024 / PAGE_SIZE);
	/* kmemctl-differs-end */
}

/*
 * kmemctl-copy: kasan-flush-batch mm/vmalloc.c __purge_vmap_area_lazy
 * rename: __purge_vmap_area_lazy -> lp_purge_vmap_area_lazy,
 *   merge_or_add_vmap_area_augment -> merge_or_add, flush_tlb_kernel_range -> flush_kernel_range,
 *   is_vmalloc_or_module_addr -> vmalloc_or_module_addr, kasan_release_vmalloc -> release_shadow
 * replace: "&purge_vmap_area_lock" -> "purge_lock": found through kallsyms, as all below
 * replace: "purge_vmap_area_root" -> "*purge_root": kallsyms
 * replace: "&purge_vmap_area_list" -> "purge_list": kallsyms
 * replace: "&free_vmap_area_lock" -> "free_lock": kallsyms
 * replace: "&free_vmap_area_root" -> "free_root": kallsyms
 * replace: "&free_vmap_area_list" -> "free_list": kallsyms
 * replace: "&vmap_lazy_nr" -> "lazy_nr": kallsyms
 */
/*
 * kmemctl-differs-begin: the mode, read once per purge; first and last; no
 * lockdep assertion (vmap_purge_lock is not exported to modules)
 */
static bool lp_purge_vmap_area_lazy(unsigned long start, unsigned long end)
{
	/* pairs with purge_set() */
	bool batch = smp_load_acquire(&batch_on);
	unsigned long resched_threshold, first, last;
	struct list_head local_purge_list;
	struct vmap_area *va, *n_va;
	/* kmemctl-differs-end */

	spin_lock(purge_lock);
	*purge_root = RB_ROOT;
	list_replace_init(purge_list, &local_purge_list);
	spin_unlock(purge_lock);

	if (unlikely(list_empty(&local_purge_list)))
		return false;

	/*
	 * kmemctl-differs-begin: the purge list's range is kept in first and last,
	 * and with the mitigation on, every area's shadow is released here, before
	 * the areas are merged back
	 */
	first = list_first_entry(&local_purge_list, struct vmap_area, list)->va_start;
	last = list_last_entry(&local_purge_list, struct vmap_area, list)->va_end;
	flush_kernel_range(min(start, first), max(end, last));
	if (batch)
		release_list_shadow(&local_purge_list, first, last);
		/* kmemctl-differs-end */
	resched_threshold = lazy_max_pages() << 1;

	spin_lock(free_lock);
	list_for_each_entry_safe(va, n_va, &local_purge_list, list) {
		unsigned long nr = (va->va_end - va->va_start) >> PAGE_SHIFT;
		unsigned long orig_start = va->va_start;
		unsigned long orig_end = va->va_end;

		va = merge_or_add(va, free_root, free_list);
		if (!va)
			continue;
		/* kmemctl-differs: with the mitigation on, each area's shadow went above */
		if (!batch && vmalloc_or_module_addr((void *)orig_start))
			release_shadow(orig_start, orig_end, va->va_start, va->va_end);
		atomic_long_sub(nr, lazy_nr);
		if (atomic_long_read(lazy_nr) < resched_threshold)
			cond_resched_lock(free_lock);
	}
	spin_unlock(free_lock);
	return true;
}

/* The replacement proper: the copy, timed for the breaker while the mitigation is on. */
static bool lp_purge_vmap_area_lazy_timed(unsigned long start, unsigned long end)
{
	struct kmem_call *call = kmem_call_begin(KMEMCTL_MIT_KASAN_FLUSH_BATCH,
						 "__purge_vmap_area_lazy");
	bool ret;

	ret = lp_purge_vmap_area_lazy(start, end);
	kmem_call_end(call, KMEMCTL_MIT_KASAN_FLUSH_BATCH);
	return ret;
}

/* what purge_prepare() resolves, and the replaced purge */
static const char *const flush_batch_symbols[] = {
	"__purge_vmap_area_lazy", "purge_vmap_area_lock", "purge_vmap_area_root",
	"purge_vmap_area_list", "free_vmap_area_lock", "free_vmap_area_root",
	"free_vmap_area_list", "vmap_lazy_nr", "vmap_area_cachep", "init_mm",
	"flush_tlb_kernel_range", "is_vmalloc_or_module_addr", "kasan_release_vmalloc",
	"kasan_depopulate_vmalloc_pte", NULL
};

static const struct kmem_lp_func purge_funcs[] = {
	{ "__purge_vmap_area_lazy", lp_purge_vmap_area_lazy_timed },
	{}
};

/*
 * The replaced purge, the free tree's helpers its copies reproduce (the
 * augment callbacks are symbols; the merge and link helpers are always
 * inlined), and kasan_release_vmalloc(), whose shadow release
 * depopulate_shadow() stands in for.
 */
static const char *const purge_targets[] = {
	"__purge_vmap_area_lazy", "merge_or_add_vmap_area_augment", "find_va_links",
	"get_va_next_sibling", "link_va", "unlink_va", "free_vmap_area_rb_augment_cb_propagate",
	"free_vmap_area_rb_augment_cb_copy", "free_vmap_area_rb_augment_cb_rotate",
	"lazy_max_pages", "kasan_release_vmalloc", NULL
};

static int purge_prepare(void)
{
	purge_lock = (spinlock_t *)kmem_symbol("purge_vmap_area_lock");
	purge_root = (struct rb_root *)kmem_symbol("purge_vmap_area_root");
	purge_list = (struct list_head *)kmem_symbol("purge_vmap_area_list");
	if (!purge_lock || !purge_root || !purge_list)
		return -ENOENT;
	return vmap_purge_prepare();
}

const struct kmem_lp_fix kmem_lp_kasan_purge = {
	.symbols = flush_batch_symbols,
	.funcs = purge_funcs,
	.targets = purge_targets,
	.prepare = purge_prepare,
	.set = vmap_purge_set,
};

#endif

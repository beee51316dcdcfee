// SPDX-License-Identifier: GPL-2.0
/*
 * kasan-flush-batch for 6.9 to 6.12.3, before upstream's "mm/vmalloc:
 * combine all TLB flush operations of KASAN shadow virtual address into
 * one operation" (6.13, 6.12.4): each vmap node's purge, purge_vmap_node(),
 * calls kasan_release_vmalloc() for every area it purges, and each call
 * ends in its own flush_tlb_kernel_range(), an IPI to every CPU per area.
 *
 * The replacement of purge_vmap_node(), with the mitigation on, does what
 * the fix does: it depopulates the shadow of every area on the node's purge
 * list first, then flushes the shadow of the list's whole range once, and
 * only then returns the areas to the node's pools or the free tree, so no
 * area can be reused while a stale shadow translation remains. Off, it
 * releases and flushes each area in turn, as the kernel it replaces does.
 *
 * The copies are of 6.12's mm/vmalloc.c as Debian ships it, with the fix:
 * the release is declared as the difference. The node layout and the
 * helpers 6.12 inlines into the purge are copied for the headers this
 * module is built against (compat.h: HAVE_LP_KASAN_PURGE_6_12); the free
 * tree's merge is vmap_purge.h's, the same in 6.1 and 6.12.
 */
#include "compat.h"
#include "kmem.h"

#ifdef HAVE_LP_KASAN_PURGE_6_12

/* kmemctl-series: 6.12 */

#include <linux/workqueue.h>

#include "vmap_purge.h"

static unsigned int *nr_nodes;

/* kmemctl-copy: kasan-flush-batch mm/vmalloc.c struct rb_list */
struct rb_list {
	struct rb_root root;
	struct list_head head;
	spinlock_t lock;	/* the root and the list */
};

/* kmemctl-copy: kasan-flush-batch mm/vmalloc.c MAX_VA_SIZE_PAGES */
#define MAX_VA_SIZE_PAGES 256

/* kmemctl-copy: kasan-flush-batch mm/vmalloc.c struct vmap_pool */
struct vmap_pool {
	struct list_head head;
	unsigned long len;
};

/* kmemctl-copy: kasan-flush-batch mm/vmalloc.c struct vmap_node */
/* kmemctl-differs: the type alone, without the kernel's static instance */
struct vmap_node {
	/* Simple size segregated storage. */
	struct vmap_pool pool[MAX_VA_SIZE_PAGES];
	spinlock_t pool_lock;	/* the pools */
	bool skip_populate;

	/* Bookkeeping data of this node. */
	struct rb_list busy;
	struct rb_list lazy;

	/*
	 * Ready-to-free areas.
	 */
	struct list_head purge_list;
	struct work_struct purge_work;
	unsigned long nr_purged;
/* kmemctl-differs: the type alone, as above */
};

/*
 * kmemctl-copy: kasan-flush-batch mm/vmalloc.c decode_vn_id
 * replace: "nr_vmap_nodes" -> "*nr_nodes": found through kallsyms
 */
static unsigned int decode_vn_id(unsigned int val)
{
	unsigned int node_id = (val >> BITS_PER_BYTE) - 1;

	/* Can store U8_MAX [0:254] nodes. */
	if (node_id < *nr_nodes)
		return node_id;

	/* If it was _not_ zero, warn. */
	/* kmemctl-differs: %u for the unsigned id, as checkpatch wants */
	WARN_ONCE(node_id != UINT_MAX, "Decode wrong node id (%u)\n", node_id);

	return *nr_nodes;
}

/*
 * kmemctl-copy: kasan-flush-batch mm/vmalloc.c is_vn_id_valid
 * replace: "nr_vmap_nodes" -> "*nr_nodes": kallsyms
 */
static bool is_vn_id_valid(unsigned int node_id)
{
	/* kmemctl-differs-begin: the comparison returned, as checkpatch wants */
	return node_id < *nr_nodes;
	/* kmemctl-differs-end */
}

/* kmemctl-copy: kasan-flush-batch mm/vmalloc.c size_to_va_pool */
static struct vmap_pool *size_to_va_pool(struct vmap_node *vn, unsigned long size)
{
	unsigned int idx = (size - 1) / PAGE_SIZE;

	if (idx < MAX_VA_SIZE_PAGES)
		return &vn->pool[idx];

	return NULL;
}

/* kmemctl-copy: kasan-flush-batch mm/vmalloc.c node_pool_add_va */
static bool node_pool_add_va(struct vmap_node *n, struct vmap_area *va)
{
	struct vmap_pool *vp;

	vp = size_to_va_pool(n, va_size(va));
	if (!vp)
		return false;

	spin_lock(&n->pool_lock);
	list_add(&va->list, &vp->head);
	WRITE_ONCE(vp->len, vp->len + 1);
	spin_unlock(&n->pool_lock);

	return true;
}

/*
 * kmemctl-copy: kasan-flush-batch mm/vmalloc.c reclaim_list_global
 * rename: merge_or_add_vmap_area_augment -> merge_or_add
 * replace: "&free_vmap_area_lock" -> "free_lock": kallsyms, as all below
 * replace: "&free_vmap_area_root" -> "free_root": kallsyms
 * replace: "&free_vmap_area_list" -> "free_list": kallsyms
 */
static void reclaim_list_global(struct list_head *head)
{
	struct vmap_area *va, *n;

	if (list_empty(head))
		return;

	spin_lock(free_lock);
	list_for_each_entry_safe(va, n, head, list)
		merge_or_add(va, free_root, free_list);
	spin_unlock(free_lock);
}

/*
 * kmemctl-copy: kasan-flush-batch mm/vmalloc.c purge_vmap_node
 * rename: purge_vmap_node -> lp_purge_vmap_node
 * replace: "&vmap_lazy_nr" -> "lazy_nr": kallsyms
 */
static void lp_purge_vmap_node(struct work_struct *work)
{
	struct vmap_node *vn = container_of(work,
		struct vmap_node, purge_work);
	unsigned long nr_purged_pages = 0;
	struct vmap_area *va, *n_va;
	LIST_HEAD(local_list);
	/*
	 * kmemctl-differs-begin: the mode, read once per purge. On, the fix:
	 * every area's shadow, then one flush for the list's range, before any
	 * area goes back; off, each area in the loop below, as before it
	 */
	bool batch = smp_load_acquire(&batch_on);
	struct list_head *purge = &vn->purge_list;

	if (batch && !list_empty(purge))
		release_list_shadow(purge,
				    list_first_entry(purge, struct vmap_area, list)->va_start,
				    list_last_entry(purge, struct vmap_area, list)->va_end);
	/* kmemctl-differs-end */

	vn->nr_purged = 0;

	list_for_each_entry_safe(va, n_va, &vn->purge_list, list) {
		unsigned long nr = va_size(va) >> PAGE_SHIFT;
		unsigned int vn_id = decode_vn_id(va->flags);

		list_del_init(&va->list);

		/* kmemctl-differs-begin: off, the area's release and flush, as before the fix */
		if (!batch && vmalloc_or_module_addr((void *)va->va_start))
			release_shadow(va->va_start, va->va_end, va->va_start, va->va_end);
		/* kmemctl-differs-end */

		nr_purged_pages += nr;
		vn->nr_purged++;

		if (is_vn_id_valid(vn_id) && !vn->skip_populate)
			if (node_pool_add_va(vn, va))
				continue;

		/* Go back to global. */
		list_add(&va->list, &local_list);
	}

	atomic_long_sub(nr_purged_pages, lazy_nr);

	reclaim_list_global(&local_list);
}

/* The replacement proper: the copy, timed for the breaker while the mitigation is on. */
static void lp_purge_vmap_node_timed(struct work_struct *work)
{
	struct kmem_call *call = kmem_call_begin(KMEMCTL_MIT_KASAN_FLUSH_BATCH, "purge_vmap_node");

	lp_purge_vmap_node(work);
	kmem_call_end(call, KMEMCTL_MIT_KASAN_FLUSH_BATCH);
}

/* what purge_prepare() resolves, and the replaced purge */
static const char *const flush_batch_symbols[] = {
	"purge_vmap_node", "nr_vmap_nodes", "free_vmap_area_lock", "free_vmap_area_root",
	"free_vmap_area_list", "vmap_lazy_nr", "vmap_area_cachep", "init_mm",
	"flush_tlb_kernel_range", "is_vmalloc_or_module_addr", "kasan_release_vmalloc",
	"kasan_depopulate_vmalloc_pte", NULL
};

static const struct kmem_lp_func purge_funcs[] = {
	{ "purge_vmap_node", lp_purge_vmap_node_timed },
	{}
};

/*
 * The replaced purge, the helpers its copies reproduce (the augment
 * callbacks and, here, reclaim_list_global() are symbols; the rest are
 * inlined), and kasan_release_vmalloc(), whose shadow release
 * depopulate_shadow() stands in for.
 */
static const char *const purge_targets[] = {
	"purge_vmap_node", "decode_vn_id", "is_vn_id_valid", "size_to_va_pool",
	"node_pool_add_va", "reclaim_list_global", "merge_or_add_vmap_area_augment",
	"find_va_links", "get_va_next_sibling", "link_va", "unlink_va",
	"free_vmap_area_rb_augment_cb_propagate",
	"free_vmap_area_rb_augment_cb_copy", "free_vmap_area_rb_augment_cb_rotate",
	"kasan_release_vmalloc", NULL
};

static int purge_prepare(void)
{
	nr_nodes = (unsigned int *)kmem_symbol("nr_vmap_nodes");
	if (!nr_nodes)
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

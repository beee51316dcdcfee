/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What kasan-flush-batch's purges for 6.1 (lp_kasan_purge.c) and 6.12
 * (lp_kasan_purge_6_12.c) share: the free tree's merge, copied from
 * mm/vmalloc.c, which both series have alike, and kmemctl's batched
 * release of the purged areas' KASAN shadow. Included by one of them.
 */
#ifndef _KMEM_VMAP_PURGE_H
#define _KMEM_VMAP_PURGE_H

#include <linux/kasan.h>
#include <linux/mm.h>
#include <linux/rbtree_augmented.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/vmalloc.h>

/* mm/kasan/kasan.h: the memory one page of shadow describes */
#define SHADOW_PAGE_SPAN ((1UL << KASAN_SHADOW_SCALE_SHIFT) << PAGE_SHIFT)

/* what the purges resolve through kallsyms (vmap_purge_prepare()) */
static spinlock_t *free_lock;
static struct rb_root *free_root;
static struct list_head *free_list;
static atomic_long_t *lazy_nr;
static struct kmem_cache **area_cache;
static struct mm_struct *kernel_mm;
static void (*flush_kernel_range)(unsigned long start, unsigned long end);
static int (*vmalloc_or_module_addr)(const void *addr);
/* kasan_release_vmalloc() as it is before upstream's fix */
static void (*release_shadow)(unsigned long start, unsigned long end,
			      unsigned long free_start, unsigned long free_end);
static pte_fn_t depopulate_pte;
/* the mitigation is on; each purge reads it once */
static bool batch_on;

/* kmemctl-copy: kasan-flush-batch mm/vmalloc.c va_size */
static __always_inline unsigned long va_size(struct vmap_area *va)
{
	/* kmemctl-differs: without the parentheses around the difference */
	return va->va_end - va->va_start;
}

/*
 * kmemctl-copy: kasan-flush-batch mm/vmalloc.c
 *   RB_DECLARE_CALLBACKS_MAX(free_vmap_area_rb_augment_cb)
 * rename: free_vmap_area_rb_augment_cb -> free_area_augment_cb
 */
RB_DECLARE_CALLBACKS_MAX(static, free_area_augment_cb, struct vmap_area, rb_node,
			 unsigned long, subtree_max_size, va_size)

/* kmemctl-copy: kasan-flush-batch mm/vmalloc.c find_va_links */
/*
 * kmemctl-differs-begin: not __always_inline (no caller's constant to fold);
 * without "from": the purge always walks the free tree from its root
 */
static struct rb_node **find_va_links(struct vmap_area *va, struct rb_root *root,
				      struct rb_node **parent)
{
	struct vmap_area *tmp_va;
	struct rb_node **link = &root->rb_node;
	/* kmemctl-differs-end */

	/* kmemctl-differs-begin: a root, always */
	if (unlikely(!*link)) {
		*parent = NULL;
		return link;
	}
	/* kmemctl-differs-end */
	do {
		tmp_va = rb_entry(*link, struct vmap_area, rb_node);
		/* kmemctl-differs-begin: braces on every branch, as checkpatch wants */
		if (va->va_end <= tmp_va->va_start) {
			link = &(*link)->rb_left;
		} else if (va->va_start >= tmp_va->va_end) {
			link = &(*link)->rb_right;
		} else {
			WARN(1, "vmalloc bug: 0x%lx-0x%lx overlaps with 0x%lx-0x%lx\n",
			     va->va_start, va->va_end, tmp_va->va_start, tmp_va->va_end);
			return NULL;
		}
		/* kmemctl-differs-end */
	} while (*link);
	*parent = &tmp_va->rb_node;
	return link;
}

/* kmemctl-copy: kasan-flush-batch mm/vmalloc.c get_va_next_sibling */
/* kmemctl-differs: not __always_inline, as find_va_links() */
static struct list_head *get_va_next_sibling(struct rb_node *parent, struct rb_node **link)
{
	struct list_head *list;

	if (unlikely(!parent))
		return NULL;
	list = &rb_entry(parent, struct vmap_area, rb_node)->list;
	/* kmemctl-differs: without the parentheses around the result */
	return &parent->rb_right == link ? list->next : list;
}

/*
 * kmemctl-copy: kasan-flush-batch mm/vmalloc.c __link_va
 * rename: __link_va -> link_va, free_vmap_area_rb_augment_cb -> free_area_augment_cb
 */
/*
 * kmemctl-differs-begin: __link_va() with augment true, the only way the
 * free tree is linked
 */
static void link_va(struct vmap_area *va, struct rb_root *root, struct rb_node *parent,
		    struct rb_node **link, struct list_head *head)
		    /* kmemctl-differs-end */
{
	if (likely(parent)) {
		head = &rb_entry(parent, struct vmap_area, rb_node)->list;
		if (&parent->rb_right != link)
			head = head->prev;
	}
	rb_link_node(&va->rb_node, parent, link);
	/* kmemctl-differs-begin: the augment branch alone */
	/* propagation from the merged area fills it in */
	rb_insert_augmented(&va->rb_node, root, &free_area_augment_cb);
	va->subtree_max_size = 0;
	/* kmemctl-differs-end */
	list_add(&va->list, head);
}

/*
 * kmemctl-copy: kasan-flush-batch mm/vmalloc.c __unlink_va
 * rename: __unlink_va -> unlink_va, free_vmap_area_rb_augment_cb -> free_area_augment_cb
 */
/* kmemctl-differs: __unlink_va() with augment true, as link_va() */
static void unlink_va(struct vmap_area *va, struct rb_root *root)
{
	if (WARN_ON(RB_EMPTY_NODE(&va->rb_node)))
		return;
	/* kmemctl-differs: the augment branch alone */
	rb_erase_augmented(&va->rb_node, root, &free_area_augment_cb);
	list_del_init(&va->list);
	RB_CLEAR_NODE(&va->rb_node);
}

/* merge_or_add_vmap_area_augment(), for the free tree. */
/*
 * kmemctl-copy: kasan-flush-batch mm/vmalloc.c __merge_or_add_vmap_area
 * rename: __merge_or_add_vmap_area -> merge_or_add, __unlink_va -> unlink_va,
 *   __link_va -> link_va
 * replace: "find_va_links(va, root, NULL, &parent)" -> "find_va_links(va, root, &parent)":
 *   no "from", as find_va_links() above
 * replace: "vmap_area_cachep" -> "*area_cache": found through kallsyms
 * replace: "next == NULL" -> "!next": checkpatch's spelling
 */
/* kmemctl-differs-begin: with augment true, as link_va() */
static struct vmap_area *merge_or_add(struct vmap_area *va, struct rb_root *root,
				      struct list_head *head)
/* kmemctl-differs-end */
{
	struct vmap_area *sibling;
	struct list_head *next;
	struct rb_node **link;
	struct rb_node *parent;
	bool merged = false;

	link = find_va_links(va, root, &parent);
	if (!link)
		return NULL;
	next = get_va_next_sibling(parent, link);
	if (unlikely(!next))
		goto insert;
	if (next != head) {
		sibling = list_entry(next, struct vmap_area, list);
		if (sibling->va_start == va->va_end) {
			sibling->va_start = va->va_start;
			kmem_cache_free(*area_cache, va);
			va = sibling;
			merged = true;
		}
	}
	if (next->prev != head) {
		sibling = list_entry(next->prev, struct vmap_area, list);
		if (sibling->va_end == va->va_start) {
			/* unlink "next" before growing "previous", as the kernel does */
			if (merged)
				/* kmemctl-differs: augment true */
				unlink_va(va, root);
			sibling->va_end = va->va_end;
			kmem_cache_free(*area_cache, va);
			va = sibling;
			merged = true;
		}
	}
insert:
	if (!merged)
		/* kmemctl-differs: augment true */
		link_va(va, root, parent, link, head);
	/* kmemctl-differs: and merge_or_add_vmap_area_augment()'s propagation */
	free_area_augment_cb_propagate(&va->rb_node, NULL);
	return va;
}

/* The shadow pages wholly inside [start, end), as upstream's page-range release. */
static void depopulate_shadow(unsigned long start, unsigned long end)
{
	unsigned long first = ALIGN(start, SHADOW_PAGE_SPAN);
	unsigned long last = ALIGN_DOWN(end, SHADOW_PAGE_SPAN);
	unsigned long shadow_first, shadow_last;

	if (last <= first)
		return;
	shadow_first = (unsigned long)kasan_mem_to_shadow((void *)first);
	shadow_last = (unsigned long)kasan_mem_to_shadow((void *)last);
	apply_to_existing_page_range(kernel_mm, shadow_first, shadow_last - shadow_first,
				     depopulate_pte, NULL);
}

/* Every area's shadow, then one flush over the shadow of [start, end). */
static void release_list_shadow(struct list_head *list, unsigned long start, unsigned long end)
{
	unsigned long first = ALIGN(start, SHADOW_PAGE_SPAN);
	unsigned long last = ALIGN_DOWN(end, SHADOW_PAGE_SPAN);
	struct vmap_area *va;

	list_for_each_entry(va, list, list) {
		if (vmalloc_or_module_addr((void *)va->va_start))
			depopulate_shadow(va->va_start, va->va_end);
		/* the areas are this task's alone until they are merged */
		cond_resched();
	}
	if (last > first)
		flush_kernel_range((unsigned long)kasan_mem_to_shadow((void *)first),
				   (unsigned long)kasan_mem_to_shadow((void *)last));
}

/* What both purges resolve, and the pre-fix kasan_release_vmalloc(). */
static int vmap_purge_prepare(void)
{
	free_lock = (spinlock_t *)kmem_symbol("free_vmap_area_lock");
	free_root = (struct rb_root *)kmem_symbol("free_vmap_area_root");
	free_list = (struct list_head *)kmem_symbol("free_vmap_area_list");
	lazy_nr = (atomic_long_t *)kmem_symbol("vmap_lazy_nr");
	area_cache = (struct kmem_cache **)kmem_symbol("vmap_area_cachep");
	kernel_mm = (struct mm_struct *)kmem_symbol("init_mm");
	flush_kernel_range = (void *)kmem_symbol("flush_tlb_kernel_range");
	vmalloc_or_module_addr = (void *)kmem_symbol("is_vmalloc_or_module_addr");
	release_shadow = (void *)kmem_symbol("kasan_release_vmalloc");
	depopulate_pte = (pte_fn_t)kmem_symbol("kasan_depopulate_vmalloc_pte");
	if (!free_lock || !free_root || !free_list || !lazy_nr || !area_cache || !kernel_mm ||
	    !flush_kernel_range || !vmalloc_or_module_addr || !release_shadow || !depopulate_pte)
		return -ENOENT;
	return 0;
}

static void vmap_purge_set(bool on, const u64 *params)
{
	/* pairs with the purges: each reads it once */
	smp_store_release(&batch_on, on);
}

#endif

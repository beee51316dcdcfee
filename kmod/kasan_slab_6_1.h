/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The SLUB layouts of 6.1's mm/slab.h and <linux/slub_def.h> that
 * kasan_quarantine.c reads: an object's cache, and the cache's size.
 */
#ifndef _KMEM_KASAN_SLAB_6_1_H
#define _KMEM_KASAN_SLAB_6_1_H

/* kmemctl-series: 6.1 */

/*
 * mm/slab.h, SLUB: struct slab overlays the slab's struct page, and
 * <linux/slub_def.h>, which gives struct kmem_cache, needs it and
 * slab_address() defined first.
 */
/* kmemctl-copy: kasan-quarantine mm/slab.h struct slab */
struct slab {
	unsigned long __page_flags;
	/*
	 * kmemctl-differs-begin: SLUB's members alone (compat.h gates kasan_quarantine.c
	 * on CONFIG_SLUB), without the #if chain around them
	 */
	union {
		struct list_head slab_list;
		struct rcu_head rcu_head;
		/* kmemctl-differs-end */
#ifdef CONFIG_SLUB_CPU_PARTIAL
		struct {
			struct slab *next;
			int slabs;
		};
#endif
	};
	struct kmem_cache *slab_cache;
	void *freelist;
	union {
		unsigned long counters;
		struct {
			unsigned inuse:16;
			unsigned objects:15;
			unsigned frozen:1;
		};
	};
	unsigned int __unused;
	/* kmemctl-differs: SLUB's members end here */
	atomic_t __page_refcount;
#ifdef CONFIG_MEMCG
	unsigned long memcg_data;
#endif
};

/* mm/slab.h's own checks that the copy lines up with struct page */
static_assert(offsetof(struct page, flags) == offsetof(struct slab, __page_flags));
static_assert(offsetof(struct page, compound_head) == offsetof(struct slab, slab_list));
static_assert(offsetof(struct page, rcu_head) == offsetof(struct slab, rcu_head));
static_assert(offsetof(struct page, _refcount) == offsetof(struct slab, __page_refcount));
#ifdef CONFIG_MEMCG
static_assert(offsetof(struct page, memcg_data) == offsetof(struct slab, memcg_data));
#endif
static_assert(sizeof(struct slab) <= sizeof(struct page));

/* kmemctl-copy: kasan-quarantine mm/slab.h slab_address */
static inline void *slab_address(const struct slab *slab)
{
	/* kmemctl-differs: slab_folio() is mm/slab.h's; the cast is what it does */
	return folio_address((const struct folio *)slab);
}

#include <linux/slub_def.h>

#endif

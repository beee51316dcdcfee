/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The SLUB layouts of 6.12's mm/slab.h that kasan_quarantine.c reads: an
 * object's cache, and the cache's size. From 6.8 struct kmem_cache is
 * private to mm/, so its members up to size are copied here; the module
 * only reads them through the kernel's own caches.
 */
#ifndef _KMEM_KASAN_SLAB_6_12_H
#define _KMEM_KASAN_SLAB_6_12_H

/* kmemctl-series: 6.12 */

/* kmemctl-copy: kasan-quarantine mm/slab.h struct slab */
struct slab {
	unsigned long __page_flags;

	struct kmem_cache *slab_cache;
	union {
		struct {
			union {
				struct list_head slab_list;
#ifdef CONFIG_SLUB_CPU_PARTIAL
				struct {
					struct slab *next;
					int slabs;	/* Nr of slabs left */
				};
#endif
			};
			/* Double-word boundary */
			union {
				struct {
					void *freelist;		/* first free object */
					union {
						unsigned long counters;
						struct {
							unsigned inuse:16;
							unsigned objects:15;
							/*
							 * If slab debugging is enabled then the
							 * frozen bit can be reused to indicate
							 * that the slab was corrupted
							 */
							unsigned frozen:1;
						};
					};
				};
#ifdef system_has_freelist_aba
				freelist_aba_t freelist_counter;
#endif
			};
		};
		struct rcu_head rcu_head;
	};

	unsigned int __page_type;
	atomic_t __page_refcount;
#ifdef CONFIG_SLAB_OBJ_EXT
	unsigned long obj_exts;
#endif
};

/* mm/slab.h's own checks that the copy lines up with struct page */
static_assert(offsetof(struct page, flags) == offsetof(struct slab, __page_flags));
static_assert(offsetof(struct page, compound_head) == offsetof(struct slab, slab_cache));
static_assert(offsetof(struct page, _refcount) == offsetof(struct slab, __page_refcount));
static_assert(sizeof(struct slab) <= sizeof(struct page));

/* kmemctl-copy: kasan-quarantine mm/slab.h struct kmem_cache */
struct kmem_cache {
#ifndef CONFIG_SLUB_TINY
	struct kmem_cache_cpu __percpu *cpu_slab;
	struct lock_class_key lock_key;
#endif
	/* Used for retrieving partial slabs, etc. */
	slab_flags_t flags;
	unsigned long min_partial;
	unsigned int size;		/* Object size including metadata */
/* kmemctl-differs: the members the quarantine reads end here */
};

#endif

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every kernel-version decision of the module, as HAVE_* macros; .c files
 * test these and never LINUX_VERSION_CODE.
 *
 * HAVE_NATIVE_<FIX> is defined, to the text the mitigation's reason shows,
 * when this kernel already carries the upstream fix. Stable backports are
 * matched by sublevel within their series.
 */
#ifndef _KMEMCTL_COMPAT_H
#define _KMEMCTL_COMPAT_H

#include <linux/livepatch.h>
#include <linux/version.h>

#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 1, 0)
#error "kmemctl supports Linux 6.1 and later"
#endif

/* "x86/mm/tlb: avoid reading mm_tlb_gen when possible" */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 0, 0)
#define HAVE_NATIVE_TLB_GEN "fixed since 6.0"
#endif

/* "cgroup/rstat: avoid disabling irqs for O(num_cpu)" */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 15, 0) || \
	(LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 31) && \
	 LINUX_VERSION_CODE < KERNEL_VERSION(6, 13, 0))
#define HAVE_NATIVE_RSTAT_YIELD "fixed since 6.15 and 6.12.31"
#endif

/* "mm/vmalloc: combine all TLB flush operations of KASAN shadow ..." */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0) || \
	(LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 4) && \
	 LINUX_VERSION_CODE < KERNEL_VERSION(6, 13, 0))
#define HAVE_NATIVE_KASAN_FLUSH_BATCH "fixed since 6.13 and 6.12.4"
#endif

/*
 * "cgroup/rstat: add cgroup_rstat_lock helpers and tracepoints": from 6.10
 * the flush takes cgroup_rstat_lock with spin_trylock_irq() first.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 10, 0)
#define HAVE_RSTAT_LOCK_TRYLOCK
#endif

/* task_struct.patch_state values, renamed in 6.7 */
#ifdef KLP_TRANSITION_PATCHED
#define KMEM_KLP_PATCHED KLP_TRANSITION_PATCHED
#define KMEM_KLP_UNPATCHED KLP_TRANSITION_UNPATCHED
#else
#define KMEM_KLP_PATCHED KLP_PATCHED
#define KMEM_KLP_UNPATCHED KLP_UNPATCHED
#endif

/*
 * lp_rstat.c replaces 6.1's cgroup_rstat_flush_locked(); later series
 * restructured it (cgroup_rstat_updated_list() in 6.8).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 1, 0) && \
	LINUX_VERSION_CODE < KERNEL_VERSION(6, 2, 0) && defined(CONFIG_LIVEPATCH)
#define HAVE_LP_RSTAT_6_1
#endif

/*
 * usercopy_fastpath.c replaces 6.1's __check_object_size() with a copy of
 * 6.1's mm/usercopy.c, entered through an ftrace direct call (whose API
 * changed in 6.5); it is only built where that copy is known to match.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 1, 0) && \
	LINUX_VERSION_CODE < KERNEL_VERSION(6, 2, 0) && defined(CONFIG_X86_64) && \
	defined(CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS) && defined(CONFIG_HARDENED_USERCOPY)
#define HAVE_USERCOPY_FASTPATH_6_1
#endif

/*
 * lp_kasan_purge.c replaces 6.1's __purge_vmap_area_lazy() with a copy of
 * 6.1's purge and free-tree merge; later series restructured both
 * (purge_vmap_node() in 6.9).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 1, 0) && \
	LINUX_VERSION_CODE < KERNEL_VERSION(6, 2, 0) && defined(CONFIG_LIVEPATCH) && \
	defined(CONFIG_KASAN_VMALLOC)
#define HAVE_LP_KASAN_PURGE_6_1
#endif

/*
 * kasan_quarantine.c replaces 6.1's kasan_quarantine_reduce() with a copy
 * that shares the kernel's quarantine, whose layout it copies from 6.1's
 * mm/kasan, and reads each object's cache through SLUB's struct slab.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 1, 0) && \
	LINUX_VERSION_CODE < KERNEL_VERSION(6, 2, 0) && defined(CONFIG_KASAN_GENERIC) && \
	defined(CONFIG_SLUB) && defined(CONFIG_KPROBES)
#define HAVE_KASAN_QUARANTINE_6_1
#endif

#endif

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the compiler needs to know of the kernel's version, as HAVE_*
 * macros: APIs that changed and private layouts the copies reproduce.
 * .c files test these and never LINUX_VERSION_CODE. Whether the kernel
 * already has a fix is never decided here, but from its code (native.c);
 * whether a copy matches the kernel, by verify.c.
 */
#ifndef _KMEMCTL_COMPAT_H
#define _KMEMCTL_COMPAT_H

#include <linux/livepatch.h>
#include <linux/version.h>

#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 1, 0)
#error "kmemctl supports Linux 6.1 and later"
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
 * rstat-yield's copies, of 6.1's kernel/cgroup/rstat.c (lp_rstat.c) and of
 * 6.12's (lp_rstat_6_12.c): 6.8 restructured the flush around
 * cgroup_rstat_updated_list(), and the layouts the copies use differ.
 */
#if defined(CONFIG_LIVEPATCH) && LINUX_VERSION_CODE < KERNEL_VERSION(6, 2, 0)
#define HAVE_LP_RSTAT_6_1
#define HAVE_LP_RSTAT
#elif defined(CONFIG_LIVEPATCH) && LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0) && \
	LINUX_VERSION_CODE < KERNEL_VERSION(6, 13, 0)
#define HAVE_LP_RSTAT_6_12
#define HAVE_LP_RSTAT
#endif

/*
 * usercopy_fastpath.c replaces __check_object_size() with a copy of
 * mm/usercopy.c, the same in 6.1 and 6.12, entered through an ftrace direct
 * call; verify.c decides whether this kernel's code is what it copies.
 */
#if defined(CONFIG_X86_64) && defined(CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS) && \
	defined(CONFIG_HARDENED_USERCOPY)
#define HAVE_USERCOPY_FASTPATH
#endif

/*
 * "ftrace: Store direct called addresses in their ops" (6.5): a direct
 * call is registered through an ftrace_ops filtered to its function.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 5, 0)
#define HAVE_FTRACE_DIRECT_OPS
#endif

/*
 * kasan-flush-batch's copies, of 6.1's purge (lp_kasan_purge.c) and of
 * 6.12's per-node purge, purge_vmap_node() (lp_kasan_purge_6_12.c; 6.9
 * moved the purge there), for the layouts each series has.
 */
#if defined(CONFIG_LIVEPATCH) && defined(CONFIG_KASAN_VMALLOC)
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 2, 0)
#define HAVE_LP_KASAN_PURGE_6_1
#define HAVE_LP_KASAN_PURGE
#elif LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0) && \
	LINUX_VERSION_CODE < KERNEL_VERSION(6, 13, 0)
#define HAVE_LP_KASAN_PURGE_6_12
#define HAVE_LP_KASAN_PURGE
#endif
#endif

/*
 * kasan_quarantine.c replaces kasan_quarantine_reduce() with a copy that
 * shares the kernel's quarantine and reads each object's cache through
 * SLUB's struct slab, whose layout is each series' own (kasan_slab_*.h).
 */
#if defined(CONFIG_KASAN_GENERIC) && defined(CONFIG_SLUB) && defined(CONFIG_KPROBES)
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 2, 0)
#define HAVE_KASAN_QUARANTINE_6_1
#define HAVE_KASAN_QUARANTINE
#elif LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0) && \
	LINUX_VERSION_CODE < KERNEL_VERSION(6, 13, 0)
#define HAVE_KASAN_QUARANTINE
#endif
#endif

/*
 * Patch sites (sites.c): 6.3 made struct alt_instr's feature a word of
 * feature and flags (ALT_FLAG_NOT for the old inverted bit); 6.8 turned
 * paravirt sites into alternatives, dropping .parainstructions.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
#define HAVE_ALT_FT_FLAGS
#endif
#if defined(CONFIG_PARAVIRT) && LINUX_VERSION_CODE < KERNEL_VERSION(6, 8, 0)
#define HAVE_PV_SITES
#endif

#endif

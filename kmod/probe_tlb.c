// SPDX-License-Identifier: GPL-2.0
/*
 * tlb-shootdown: every native_flush_tlb_multi() call sends TLB-flush IPIs
 * to other CPUs and waits for them; the histogram is how long each took.
 * flush_tlb_multi() itself is inlined into its callers. KVM guests reach
 * the native function for the vCPUs that are running; Xen and Hyper-V
 * guests flush through their hypervisor and are not seen. Kernel-range
 * flushes (flush_tlb_kernel_range) go through on_each_cpu() and are
 * counted by vmap-purge.
 */
#include "kmem.h"

static const char *const multi_symbols[] = { "native_flush_tlb_multi", NULL };

struct kmem_probe kmem_probe_tlb_shootdown = {
	.id = KMEMCTL_PROBE_TLB_SHOOTDOWN,
	.symbols = multi_symbols,
	.timed = "native_flush_tlb_multi",
	.enable = kmem_probe_timed_enable,
	.disable = kmem_probe_timed_disable,
	.missed = kmem_probe_timed_missed,
};

// SPDX-License-Identifier: GPL-2.0
/*
 * kasan-reduce: duration of each KASAN quarantine reduction. Only generic
 * KASAN keeps a quarantine. mm/kasan is built without ftrace, so the
 * kretprobe sits on an int3 breakpoint rather than an ftrace call.
 */
#include "kmem.h"

static const char *const reduce_symbols[] = { "kasan_quarantine_reduce", NULL };

struct kmem_probe kmem_probe_kasan_reduce = {
	.id = KMEMCTL_PROBE_KASAN_REDUCE,
#ifndef CONFIG_KASAN_GENERIC
	.kconfig_missing = "CONFIG_KASAN_GENERIC is not set",
#endif
	.symbols = reduce_symbols,
	.timed = "kasan_quarantine_reduce",
	.enable = kmem_probe_timed_enable,
	.disable = kmem_probe_timed_disable,
	.missed = kmem_probe_timed_missed,
};

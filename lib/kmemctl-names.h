/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The names of the mitigation and probe numbers in /dev/kmemctl records
 * (kmod/uapi/kmemctl.h), as their sysfs directories are called. For the
 * agent and for the static test programs in tests/vm/progs, so header-only.
 */
#ifndef KMEMCTL_NAMES_H
#define KMEMCTL_NAMES_H

#include "uapi/kmemctl.h"

/* NULL for a number this build does not know (a newer module). */
static inline const char *kmemctl_mitigation_name(unsigned int source)
{
	static const char *const names[] = {
		[KMEMCTL_MIT_KASAN_FLUSH_BATCH] = "kasan-flush-batch",
		[KMEMCTL_MIT_TLB_GEN] = "tlb-gen",
		[KMEMCTL_MIT_RSTAT_YIELD] = "rstat-yield",
		[KMEMCTL_MIT_USERCOPY_FASTPATH] = "usercopy-fastpath",
		[KMEMCTL_MIT_KASAN_QUARANTINE] = "kasan-quarantine",
	};
	_Static_assert(sizeof(names) / sizeof(names[0]) == KMEMCTL_MIT_COUNT,
		       "a mitigation has no name");

	return source < KMEMCTL_MIT_COUNT ? names[source] : 0;
}

/* A mitigation parameter's range, as the module enforces it. */
struct kmemctl_param {
	const char *mitigation, *key;
	unsigned long long min, max;
};

/* NULL when this build's module has no such mitigation parameter. */
static inline const struct kmemctl_param *kmemctl_param_find(const char *mitigation,
							     const char *key)
{
	static const struct kmemctl_param params[] = {
		{ "rstat-yield", "every_cpus", KMEMCTL_RSTAT_EVERY_CPUS_MIN,
		  KMEMCTL_RSTAT_EVERY_CPUS_MAX },
		{ "kasan-quarantine", "batch_bytes", KMEMCTL_QUARANTINE_BATCH_BYTES_MIN,
		  KMEMCTL_QUARANTINE_BATCH_BYTES_MAX },
		{ "kasan-quarantine", "max_fraction", KMEMCTL_QUARANTINE_MAX_FRACTION_MIN,
		  KMEMCTL_QUARANTINE_MAX_FRACTION_MAX },
		{ "kasan-flush-batch", "trip_call_ms", KMEMCTL_TRIP_CALL_MS_MIN,
		  KMEMCTL_TRIP_CALL_MS_MAX },
		{ "rstat-yield", "trip_call_ms", KMEMCTL_TRIP_CALL_MS_MIN,
		  KMEMCTL_TRIP_CALL_MS_MAX },
		{ "usercopy-fastpath", "trip_call_ms", KMEMCTL_TRIP_CALL_MS_MIN,
		  KMEMCTL_TRIP_CALL_MS_MAX },
		{ "kasan-quarantine", "trip_call_ms", KMEMCTL_TRIP_CALL_MS_MIN,
		  KMEMCTL_TRIP_CALL_MS_MAX },
	};

	for (unsigned int i = 0; i < sizeof(params) / sizeof(params[0]); i++)
		if (!__builtin_strcmp(params[i].mitigation, mitigation) &&
		    !__builtin_strcmp(params[i].key, key))
			return &params[i];
	return 0;
}

static inline const char *kmemctl_probe_name(unsigned int source)
{
	static const char *const names[] = {
		[KMEMCTL_PROBE_RSTAT_FLUSH] = "rstat-flush",
		[KMEMCTL_PROBE_USERCOPY_VMALLOC] = "usercopy-vmalloc",
		[KMEMCTL_PROBE_VMAP_PURGE] = "vmap-purge",
		[KMEMCTL_PROBE_KASAN_REDUCE] = "kasan-reduce",
		[KMEMCTL_PROBE_TLB_SHOOTDOWN] = "tlb-shootdown",
	};
	_Static_assert(sizeof(names) / sizeof(names[0]) == KMEMCTL_PROBE_COUNT,
		       "a probe has no name");

	return source < KMEMCTL_PROBE_COUNT ? names[source] : 0;
}

#endif

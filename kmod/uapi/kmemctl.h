/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * kmemctl.ko userspace interface.
 *
 * sysfs, under /sys/kernel/kmemctl/:
 *
 *   version	module version, e.g. "0.1.0"
 *   abi	KMEMCTL_ABI below; the agent turns nothing on in, and tunes
 *		nothing of, a module whose ABI is not its own
 *   build	the running kernel build as the module sees it, computed at
 *		load before any probe or fix touches kernel text:
 *		  "build_id <hex>" (the kernel's GNU build id),
 *		  "release <uname -r>", "version <uname -v>",
 *		  then per function some mitigation's copied code stands in
 *		  for, "func <mitigation> <symbol> <size> <fingerprint>"
 *		  (size in bytes, fingerprint 16 hex digits; docs/kmod.md,
 *		  Verified builds)
 *   records	write: one build record (docs/kmod.md) to admit, in one
 *		write of at most a page; EINVAL if it is malformed or made
 *		for another kmemctl version, ENOSPC past 64 written, and
 *		the mitigations it verifies leave "unsupported: build ...
 *		not verified" for off. read: one line per admitted record
 *		("<build_id> <release> <source>"), then "... <n> more" if
 *		they do not fit in a page
 *
 *   mitigations/<id>/	one directory per mitigation, on every kernel:
 *     state	unsupported | native | off | on | tripped | transition
 *		transition: mode is on and livepatch is still switching tasks
 *		to the fix; the tasks already switched run it
 *		tripped: the module's breaker turned the mitigation off by
 *		itself (reason says why); mode is off, and "on" is refused
 *		with EBUSY until "1" is written to reset
 *     reason	one line saying why the state is what it is, e.g.
 *		"unsupported: CONFIG_KASAN_VMALLOC is not set",
 *		"native: fixed since 6.0" or "transition: livepatch switching
 *		tasks stalled for 10500 ms: 1 tasks not switched, first sh:93"
 *     mode	off | on; writing anything else fails with EINVAL. Writing
 *		"on" to a mitigation whose state is unsupported or native
 *		fails with EOPNOTSUPP. The old mode is kept on any error.
 *     params	"key=value" lines. A write carries one or more such lines
 *		(separated by newlines or spaces) and is all-or-nothing: an
 *		unknown key or a value out of range fails with EINVAL, keeps
 *		every old value and says why in dmesg.
 *     reset	write "1": a tripped mitigation goes back to off; in any
 *		other state the write does nothing
 *     stats	"key value" lines of counters: enables, disables (mode
 *		writes), trips, resets; kasan-quarantine adds the kernel's
 *		held_bytes, max_bytes, batch_bytes and oldest_batch_bytes,
 *		the copy's reductions and reduce_max_bytes (since mode on),
 *		and missed (redirects the kprobe missed)
 *
 *   probes/<id>/	one directory per probe, on every kernel:
 *     enabled	0 | 1; writing 1 to an unsupported probe fails with
 *		EOPNOTSUPP
 *     reason	"ok" or "unsupported: <why>"
 *     hist	lines "<upper_bound> <count>" of a log2 histogram: bucket b
 *		counts values v with 2^(b-1) < v <= 2^b (bucket 0: v <= 1);
 *		only non-empty buckets are listed, in increasing order
 *     count, sum_ns, max_ns	totals over all CPUs
 *     threshold_ns	0 (off) or a value; a sample above it queues a
 *		KMEMCTL_EV_THRESHOLD record on /dev/kmemctl
 *     reset	write 1 to zero hist, count, sum_ns, max_ns and the
 *		secondary histogram
 *   Some probes keep a secondary histogram of another quantity measured
 *   per event, as "<name>_hist" and "<name>_max" files in the same format:
 *     rstat-flush/irqoff_hist, irqoff_max	longest irqs-off stretch (ns)
 *					within each flush
 *     vmap-purge/flushes_hist, flushes_max	flush_tlb_kernel_range calls
 *					per purge
 *
 * /dev/kmemctl: a read-only stream of struct kmemctl_event records.
 *   Every open file has its own cursor, starting at the oldest record still
 *   held; read() returns whole records only (a buffer smaller than one
 *   record fails with EINVAL), blocks unless O_NONBLOCK (then EAGAIN), and
 *   poll() reports EPOLLIN while records are pending. The module holds the
 *   last KMEMCTL_EVENT_RING records; a reader that falls further behind
 *   skips to the oldest held one, and the jump in seq says how many it lost.
 *
 * Mitigation and probe numbers in records index the tables below; they and
 * the names are stable. Every incompatible change bumps KMEMCTL_ABI.
 */
#ifndef _UAPI_KMEMCTL_H
#define _UAPI_KMEMCTL_H

#include <linux/types.h>

#define KMEMCTL_ABI 5

#define KMEMCTL_EVENT_RING 1024

/*
 * The interface's ids, params, states and event kinds, written once: the
 * enums below, the module's sysfs tree, the agent's reading of it and of
 * /dev/kmemctl, kmemd's checks of policies and kmemctl's bash completion
 * all expand these lists (docs/kmod.md, Interface). An entry is only ever
 * added at the end of its list, so numbers stay stable.
 *
 * KMEMCTL_MITIGATIONS(X): X(ENUM, "id") for each mitigations/<id>/.
 */
#define KMEMCTL_MITIGATIONS(X)					\
	X(KASAN_FLUSH_BATCH, "kasan-flush-batch")		\
	X(TLB_GEN, "tlb-gen")					\
	X(RSTAT_YIELD, "rstat-yield")				\
	X(USERCOPY_FASTPATH, "usercopy-fastpath")		\
	X(KASAN_QUARANTINE, "kasan-quarantine")

/*
 * KMEMCTL_PARAMS(X): X(MITIGATION, PARAM, "key", default, min, max) for
 * each key of mitigations/<id>/params, in the order the file lists them.
 * The module refuses a write outside [min, max], kmemd a policy.
 *   every_cpus	rstat-yield drops cgroup_rstat_lock every this many CPUs;
 *		upstream's fix yields after every CPU, larger values trade
 *		latency for throughput
 *   batch_bytes, max_fraction	kasan-quarantine's largest reduction and
 *		the share of RAM the quarantine may hold (1/max_fraction), at
 *		upstream's defaults
 *   trip_call_ms	on every mitigation with a replacement: the breaker
 *		trips it when one call of its replacement runs longer,
 *		counting only the time the call ran (docs/kmod.md, Breaker).
 *		The defaults are far above what a healthy KASAN kernel under
 *		emulation runs; usercopy's check is a lookup on every copy,
 *		so its bound is lower.
 */
#define KMEMCTL_PARAMS(X)						\
	X(KASAN_FLUSH_BATCH, TRIP_CALL_MS, "trip_call_ms", 5000, 1, 600000) \
	X(RSTAT_YIELD, EVERY_CPUS, "every_cpus", 1, 1, 4096)		\
	X(RSTAT_YIELD, TRIP_CALL_MS, "trip_call_ms", 5000, 1, 600000)	\
	X(USERCOPY_FASTPATH, TRIP_CALL_MS, "trip_call_ms", 1000, 1, 600000) \
	X(KASAN_QUARANTINE, BATCH_BYTES, "batch_bytes", 1048576, 4096,	\
	  1073741824)							\
	X(KASAN_QUARANTINE, MAX_FRACTION, "max_fraction", 32, 4, 4096)	\
	X(KASAN_QUARANTINE, TRIP_CALL_MS, "trip_call_ms", 2000, 1, 600000)

/*
 * KMEMCTL_STATES(X): X(ENUM, "state") for what mitigations/<id>/state
 * shows (above).
 */
#define KMEMCTL_STATES(X)					\
	X(UNSUPPORTED, "unsupported")				\
	X(NATIVE, "native")					\
	X(OFF, "off")						\
	X(ON, "on")						\
	X(TRIPPED, "tripped")					\
	X(TRANSITION, "transition")

/*
 * KMEMCTL_PROBES(X): X(ENUM, "id", "second") for each probes/<id>/;
 * "second" names its secondary histogram (files <second>_hist and
 * <second>_max, series "<id>-<second>" in reports), "" for none:
 *   rstat-flush irqoff	longest irqs-off stretch (ns) within each flush
 *   vmap-purge flushes	flush_tlb_kernel_range calls per purge
 */
#define KMEMCTL_PROBES(X)					\
	X(RSTAT_FLUSH, "rstat-flush", "irqoff")			\
	X(USERCOPY_VMALLOC, "usercopy-vmalloc", "")		\
	X(VMAP_PURGE, "vmap-purge", "flushes")			\
	X(KASAN_REDUCE, "kasan-reduce", "")			\
	X(TLB_SHOOTDOWN, "tlb-shootdown", "")

/*
 * KMEMCTL_EVENTS(X): X(ENUM, type, SOURCE) for each record type on
 * /dev/kmemctl; SOURCE: what its source field numbers (enum
 * kmemctl_event_source).
 *   THRESHOLD	a probe sample above its threshold_ns
 *   TRIP	the breaker turned a mitigation off; flags: enum
 *		kmemctl_trip_cause
 *   SOFTLOCKUP	the soft-lockup watchdog fired; cpu is the stuck CPU
 *   RCU_STALL	an RCU CPU stall was reported; cpu is the reporting CPU
 *   LIVEPATCH_STALL	a livepatch transition has been under way for
 *		longer than the module's livepatch_stall_ms; source: the
 *		mitigation whose mode write started it; flags: 1 patching,
 *		0 removing
 */
#define KMEMCTL_EVENTS(X)					\
	X(THRESHOLD, 1, PROBE)					\
	X(TRIP, 2, MITIGATION)					\
	X(SOFTLOCKUP, 3, NONE)					\
	X(RCU_STALL, 4, NONE)					\
	X(LIVEPATCH_STALL, 5, MITIGATION)

/*
 * KMEMCTL_TRIP_CAUSES(X): X(ENUM, number, "name"), why the breaker
 * tripped a mitigation: the flags of a KMEMCTL_EV_TRIP record, and the
 * cause its reason names.
 *   SLOW_CALL	a replacement ran longer than its trip_call_ms
 *   LIVEPATCH_STALL	its transition stalled past livepatch_reverse_ms
 *		and was reversed
 */
#define KMEMCTL_TRIP_CAUSES(X)					\
	X(SOFTLOCKUP, 1, "soft lockup")				\
	X(HARDLOCKUP, 2, "hard lockup")				\
	X(RCU_STALL, 3, "RCU stall")				\
	X(HUNG_TASK, 4, "hung task")				\
	X(SLOW_CALL, 5, "slow call")				\
	X(LIVEPATCH_STALL, 6, "livepatch stall")

#define __KMEMCTL_MIT_ENUM(e, id) KMEMCTL_MIT_##e,
enum kmemctl_mitigation {
	KMEMCTL_MITIGATIONS(__KMEMCTL_MIT_ENUM)
	KMEMCTL_MIT_COUNT,
};

#define __KMEMCTL_PARAM_ENUM(mit, param, key, def, min, max) \
	KMEMCTL_PARAM_##mit##_##param,
enum kmemctl_param_id {
	KMEMCTL_PARAMS(__KMEMCTL_PARAM_ENUM)
	KMEMCTL_PARAM_COUNT,
};

#define __KMEMCTL_STATE_ENUM(e, name) KMEMCTL_STATE_##e,
enum kmemctl_state {
	KMEMCTL_STATES(__KMEMCTL_STATE_ENUM)
	KMEMCTL_STATE_COUNT,
};

#define __KMEMCTL_PROBE_ENUM(e, id, second) KMEMCTL_PROBE_##e,
enum kmemctl_probe {
	KMEMCTL_PROBES(__KMEMCTL_PROBE_ENUM)
	KMEMCTL_PROBE_COUNT,
};

enum kmemctl_event_source {
	KMEMCTL_SOURCE_NONE,
	KMEMCTL_SOURCE_MITIGATION,	/* enum kmemctl_mitigation */
	KMEMCTL_SOURCE_PROBE,		/* enum kmemctl_probe */
};

#define __KMEMCTL_EV_ENUM(e, type, source) KMEMCTL_EV_##e = (type),
enum kmemctl_event_type {
	KMEMCTL_EVENTS(__KMEMCTL_EV_ENUM)
};

#define __KMEMCTL_TRIP_ENUM(e, n, name) KMEMCTL_TRIP_##e = (n),
enum kmemctl_trip_cause {
	KMEMCTL_TRIP_CAUSES(__KMEMCTL_TRIP_ENUM)
};

/*
 * One event, 64 bytes, native endianness.
 *   seq	1 for the first event after load, then +1 per event
 *   time_ns	CLOCK_REALTIME when the event was queued
 *   value	THRESHOLD: the sample (ns); TRIP: how long the call or the
 *		transition that tripped it had run (ns), 0 for the kernel's
 *		own reports; LIVEPATCH_STALL: how long the transition has
 *		taken (ns); lockups: 0
 *   threshold	THRESHOLD: the probe's threshold_ns; TRIP: the limit it
 *		passed (ns), or 0; LIVEPATCH_STALL: livepatch_stall_ms in ns;
 *		otherwise 0
 *   pid, comm	the task running on cpu when the event was queued;
 *		LIVEPATCH_STALL: a task livepatch has yet to switch
 */
struct kmemctl_event {
	__u16 type;
	__u16 source;
	__u32 cpu;
	__u64 seq;
	__u64 time_ns;
	__u64 value;
	__u64 threshold;
	__u32 pid;
	__u32 flags;
	char comm[16];
};

/*
 * /sys/kernel/kmemctl/sites (write, binary): the running build's patch-site
 * tables, taken from its image by userspace (kmemctl build sites, the
 * agent), since the kernel frees them with init memory. A header, nsections
 * section entries, then their bytes; every number little-endian. build_id
 * must be the running kernel's; text_addr is where the image links _text,
 * so that addr - text_addr + the running _text is where a section's code
 * runs (KASLR). Beside the image's own sections, "kmemctl.orig" holds what
 * the image has at each alternative site before the kernel patched it: the
 * instrlen bytes of every .altinstructions entry (alt_size bytes each,
 * instrlen the second to last), one after another in the table's order.
 */
#define KMEMCTL_SITES_MAGIC "kmsites1"
#define KMEMCTL_SITES_MAX (4 << 20)
#define KMEMCTL_SITES_SECTIONS 8

struct kmemctl_sites_header {
	char magic[8];
	__u32 nsections;
	__u32 build_id_len;
	__u8 build_id[20];
	__u32 alt_size;		/* sizeof(struct alt_instr) in the image */
	__u64 text_addr;
};

struct kmemctl_sites_section {
	char name[24];		/* ".altinstructions", NUL-padded */
	__u64 addr;		/* link address */
	__u32 offset;		/* of its bytes, from the header's start */
	__u32 size;
};

#endif

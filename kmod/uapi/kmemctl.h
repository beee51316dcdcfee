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

#define KMEMCTL_ABI 4

#define KMEMCTL_EVENT_RING 1024

enum kmemctl_mitigation {
	KMEMCTL_MIT_KASAN_FLUSH_BATCH,	/* "kasan-flush-batch" */
	KMEMCTL_MIT_TLB_GEN,		/* "tlb-gen" */
	KMEMCTL_MIT_RSTAT_YIELD,	/* "rstat-yield" */
	KMEMCTL_MIT_USERCOPY_FASTPATH,	/* "usercopy-fastpath" */
	KMEMCTL_MIT_KASAN_QUARANTINE,	/* "kasan-quarantine" */
	KMEMCTL_MIT_COUNT,
};

/*
 * Mitigation parameters (sysfs mitigations/<id>/params/<key>): default,
 * minimum, maximum. kmemd refuses a policy outside them.
 */
#define KMEMCTL_RSTAT_EVERY_CPUS_DEF		1
#define KMEMCTL_RSTAT_EVERY_CPUS_MIN		1
#define KMEMCTL_RSTAT_EVERY_CPUS_MAX		4096
#define KMEMCTL_QUARANTINE_BATCH_BYTES_DEF	1048576
#define KMEMCTL_QUARANTINE_BATCH_BYTES_MIN	4096
#define KMEMCTL_QUARANTINE_BATCH_BYTES_MAX	1073741824
#define KMEMCTL_QUARANTINE_MAX_FRACTION_DEF	32
#define KMEMCTL_QUARANTINE_MAX_FRACTION_MIN	4
#define KMEMCTL_QUARANTINE_MAX_FRACTION_MAX	4096
/*
 * trip_call_ms, on every mitigation with a replacement: the breaker trips
 * it when one call of its replacement runs longer, counting only the time
 * the call ran (docs/kmod.md, Breaker). The defaults are far above what a
 * healthy KASAN kernel under emulation runs; usercopy's check is a lookup
 * on every copy, so its bound is lower.
 */
#define KMEMCTL_TRIP_CALL_MS_MIN		1
#define KMEMCTL_TRIP_CALL_MS_MAX		600000
#define KMEMCTL_FLUSH_BATCH_TRIP_CALL_MS_DEF	5000
#define KMEMCTL_RSTAT_TRIP_CALL_MS_DEF		5000
#define KMEMCTL_USERCOPY_TRIP_CALL_MS_DEF	1000
#define KMEMCTL_QUARANTINE_TRIP_CALL_MS_DEF	2000

/*
 * Why the breaker tripped a mitigation: the flags of a KMEMCTL_EV_TRIP
 * record, and the cause named in its reason.
 */
enum kmemctl_trip_cause {
	KMEMCTL_TRIP_SOFTLOCKUP = 1,	/* the soft-lockup watchdog fired */
	KMEMCTL_TRIP_HARDLOCKUP = 2,	/* the hard-lockup (NMI) watchdog fired */
	KMEMCTL_TRIP_RCU_STALL = 3,	/* an RCU CPU stall was reported */
	KMEMCTL_TRIP_HUNG_TASK = 4,	/* the hung-task detector reported a task */
	KMEMCTL_TRIP_SLOW_CALL = 5,	/* a replacement ran longer than trip_call_ms */
	/* its transition stalled past livepatch_reverse_ms and was reversed */
	KMEMCTL_TRIP_LIVEPATCH_STALL = 6,
};

enum kmemctl_probe {
	KMEMCTL_PROBE_RSTAT_FLUSH,	/* "rstat-flush" */
	KMEMCTL_PROBE_USERCOPY_VMALLOC,	/* "usercopy-vmalloc" */
	KMEMCTL_PROBE_VMAP_PURGE,	/* "vmap-purge" */
	KMEMCTL_PROBE_KASAN_REDUCE,	/* "kasan-reduce" */
	KMEMCTL_PROBE_TLB_SHOOTDOWN,	/* "tlb-shootdown" */
	KMEMCTL_PROBE_COUNT,
};

enum kmemctl_event_type {
	/* a probe sample above its threshold_ns; source: enum kmemctl_probe */
	KMEMCTL_EV_THRESHOLD = 1,
	/*
	 * the breaker turned a mitigation off; source: enum
	 * kmemctl_mitigation; flags: enum kmemctl_trip_cause
	 */
	KMEMCTL_EV_TRIP = 2,
	/* the soft-lockup watchdog fired; cpu is the stuck CPU */
	KMEMCTL_EV_SOFTLOCKUP = 3,
	/* an RCU CPU stall was reported; cpu is the reporting CPU */
	KMEMCTL_EV_RCU_STALL = 4,
	/*
	 * a livepatch transition has been under way for longer than the
	 * module's livepatch_stall_ms; source: the mitigation whose mode
	 * write started it; flags: 1 patching, 0 removing
	 */
	KMEMCTL_EV_LIVEPATCH_STALL = 5,
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

#endif

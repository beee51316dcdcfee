/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a Report may hold, checked once where kmemd decodes it: every
 * string well-formed UTF-8 without control characters and within its
 * length, every name of TEXT_NAME_CHARSET, every list within its count,
 * every number within what kmemd stores and adds up without overflow,
 * every histogram consistent. The agent keeps within these bounds on its
 * own (it escapes what the kernel or a local user put in a string), so a
 * report that fails was not made by an agent: kmemd refuses it whole,
 * with the reason, and stores nothing of it.
 *
 * Each bound is above what an agent sends (the limits in the agent's
 * headers), which the agent asserts where it builds a report.
 */
#ifndef KMEMCTL_REPORT_CHECK_H
#define KMEMCTL_REPORT_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "kmemctl/v1/report.pb-c.h"

#define REPORT_NAME_MAX 63 /* probes, mitigations, counters, params, kconfig, label keys */
#define REPORT_HOST_ID_MAX 64
#define REPORT_HOSTNAME_MAX 253
#define REPORT_SHORT_MAX 64 /* kernel release, versions, arch */
#define REPORT_TEXT_MAX 256 /* reasons, values, build ids */
#define REPORT_FRAME_MAX 128
#define REPORT_MESSAGE_MAX 512

#define REPORT_PROBES_MAX 64
#define REPORT_MITIGATIONS_MAX 32
#define REPORT_KV_MAX 32 /* params and counters of one mitigation */
#define REPORT_EVENTS_MAX 128
#define REPORT_FRAMES_MAX 16
#define REPORT_KCONFIG_MAX 64
#define REPORT_LABELS_MAX 64
#define REPORT_COLLECTORS_MAX 16

/*
 * Numbers kmemd keeps as SQL integers and adds up over hosts and hours:
 * a counter, a histogram's count and its sum, capped so that the sum over
 * a fleet of a million hosts still fits in 63 bits.
 */
#define REPORT_NUMBER_MAX (1ULL << 53)
/* 9999-12-31, in unix milliseconds: any later time is not one */
#define REPORT_TIME_MS_MAX 253402300799999LL
/* No probe fires more often than once a nanosecond on every CPU there can be. */
#define REPORT_CPUS_MAX (1U << 16)

/*
 * 0 when rep may be stored; -EINVAL with why (the field and the rule it
 * breaks) otherwise.
 */
int report_check(const Kmemctl__V1__Report *rep, char *why, size_t len);

/*
 * A probe sample's interval, checked against kmemd's clock and the host's
 * stored samples rather than taken on the host's word: the count bound of
 * report_check() holds per millisecond of an interval, so a host that
 * could place intervals anywhere could claim any count. A sample is left
 * out of the report when its interval
 * - is empty or backwards, or longer than REPORT_SPAN_MS_MAX (twice the
 *   agent's longest interval: one collection missed);
 * - ends after kmemd's now plus REPORT_SKEW_MS;
 * - ended before oldest_ms (what kmemd keeps raw: older ones would land
 *   beside rollups they could overlap unseen);
 * - starts before after_ms, the end of the host's last stored sample: an
 *   agent's intervals follow one another, each starting where the last
 *   ended, its resends included (kmemd knows them by seq and time first).
 * So a host's stored intervals never overlap and lie in kmemd's recent
 * past, and its counts over any window are bounded by the window's length.
 */
#define REPORT_SPAN_MS_MAX (2 * 3600 * 1000LL)
#define REPORT_SKEW_MS (5 * 60 * 1000LL)

struct report_span_bounds {
	int64_t now_ms, oldest_ms, after_ms; /* INT64_MIN: no bound */
};

/*
 * Leaves the samples out of rep that break b, keeping the others in
 * order; how many it left out, with why saying the first.
 */
size_t report_trim_samples(Kmemctl__V1__Report *rep, const struct report_span_bounds *b, char *why,
			   size_t len);

/*
 * A kernel event's time is checked against kmemd's clock, and the
 * lockups a host reports (soft, hard, RCU stalls: what the gates count)
 * against the time since its last stored report: a CPU reports a soft
 * lockup at most every 2 * watchdog_thresh, a hard one every
 * watchdog_thresh and an RCU stall every rcu_cpu_stall_timeout, each at
 * least 1 s (3 s for RCU), so no CPU can report more than
 * REPORT_LOCKUPS_PER_CPU_S a second. An event is left out when it
 * - is later than kmemd's now plus REPORT_SKEW_MS;
 * - is older than oldest_ms (what kmemd keeps of events);
 * - is a lockup past online_cpus * REPORT_LOCKUPS_PER_CPU_S a second
 *   from after_ms (the host's latest stored report) to the report's time
 *   (no later than kmemd's now plus REPORT_SKEW_MS); a report no later
 *   than the last one adds none. Resends are told apart first, by seq
 *   and time.
 * So the lockups a host adds over any window are bounded by the window's
 * length, whatever it sends.
 */
#define REPORT_LOCKUPS_PER_CPU_S 2

struct report_event_bounds {
	int64_t now_ms, oldest_ms; /* INT64_MIN: no bound */
	int64_t after_ms; /* INT64_MIN: lockups not bounded (none stored, or not asked) */
};

/* As report_trim_samples(), for rep's events. */
size_t report_trim_events(Kmemctl__V1__Report *rep, const struct report_event_bounds *b, char *why,
			  size_t len);

/* An enum value as kmemd keeps it: "EVENT_KIND_SOFT_LOCKUP" -> "soft-lockup". */
void report_enum_name(const ProtobufCEnumDescriptor *d, int value, const char *prefix, char *out,
		      size_t len);

#endif

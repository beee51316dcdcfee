// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "buildrec.h"
#include "macro.h"
#include "report-check.h"

/* A report as an agent sends it, in static storage the tests then spoil. */
struct fixture {
	Kmemctl__V1__Report rep;
	Kmemctl__V1__HostFacts facts;
	Kmemctl__V1__HostFacts__LabelsEntry label, label2, *labels[2];
	Kmemctl__V1__MitigationState mit, mit2, *mits[2];
	Kmemctl__V1__MitigationState__StatsEntry stat, *stats[1];
	Kmemctl__V1__ProbeSample probe, probe2, *probes[2];
	Kmemctl__V1__Histogram hist;
	uint64_t counts[3];
	Kmemctl__V1__KernelEvent ev, *evs[1];
	char *stack[2];
	Kmemctl__V1__Counters counters;
};

static struct fixture f;

static Kmemctl__V1__Report *good(void)
{
	memset(&f, 0, sizeof(f));
	kmemctl__v1__report__init(&f.rep);
	kmemctl__v1__host_facts__init(&f.facts);
	f.facts.host_id = "web-1";
	f.facts.hostname = "web-1.example.net";
	f.facts.kernel_release = "6.1.0-50-amd64";
	f.facts.possible_cpus = 64;
	f.facts.online_cpus = 2;
	kmemctl__v1__host_facts__labels_entry__init(&f.label);
	f.label.key = "role";
	f.label.value = "web";
	kmemctl__v1__host_facts__labels_entry__init(&f.label2);
	f.label2.key = "dc";
	f.label2.value = "fra 1";
	f.labels[0] = &f.label;
	f.labels[1] = &f.label2;
	f.facts.labels = f.labels;
	f.facts.n_labels = 2;
	kmemctl__v1__mitigation_state__init(&f.mit);
	f.mit.id = "rstat-yield";
	f.mit.reason = "the kernel lacks the fix";
	kmemctl__v1__mitigation_state__stats_entry__init(&f.stat);
	f.stat.key = "enables";
	f.stat.value = 3;
	f.stats[0] = &f.stat;
	f.mit.stats = f.stats;
	f.mit.n_stats = 1;
	kmemctl__v1__mitigation_state__init(&f.mit2);
	f.mit2.id = "usercopy-fastpath";
	f.mits[0] = &f.mit;
	f.mits[1] = &f.mit2;
	f.rep.mitigations = f.mits;
	f.rep.n_mitigations = 2;
	kmemctl__v1__histogram__init(&f.hist);
	f.counts[0] = 5;
	f.counts[2] = 1;
	f.hist.first_bucket = 10;
	f.hist.counts = f.counts;
	f.hist.n_counts = 3;
	f.hist.count = 6;
	f.hist.sum_ns = 8000;
	f.hist.max_ns = 4000;
	kmemctl__v1__probe_sample__init(&f.probe);
	f.probe.probe = "rstat-flush";
	f.probe.start_unix_ms = 1700000000000;
	f.probe.end_unix_ms = 1700000060000;
	f.probe.hist = &f.hist;
	kmemctl__v1__probe_sample__init(&f.probe2);
	f.probe2.probe = "vmap-purge-flushes";
	f.probes[0] = &f.probe;
	f.probes[1] = &f.probe2;
	f.rep.probes = f.probes;
	f.rep.n_probes = 2;
	kmemctl__v1__kernel_event__init(&f.ev);
	f.ev.kind = KMEMCTL__V1__EVENT_KIND__EVENT_KIND_SOFT_LOCKUP;
	f.ev.unix_ms = 1700000030000;
	f.ev.cpu = 1;
	f.ev.comm = "kworker/1:2";
	f.ev.pid = 42;
	f.stack[0] = "__purge_vmap_area_lazy+0x1a/0x40";
	f.stack[1] = "drain_vmap_area_work+0x2f/0x50";
	f.ev.stack_top = f.stack;
	f.ev.n_stack_top = 2;
	f.ev.message = "watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [kworker/1:2:42]";
	f.evs[0] = &f.ev;
	f.rep.events = f.evs;
	f.rep.n_events = 1;
	kmemctl__v1__counters__init(&f.counters);
	f.counters.soft_lockups = 1;
	f.counters.tlb_shootdowns = 123456789;
	f.rep.counters = &f.counters;
	f.rep.facts = &f.facts;
	f.rep.seq = 7;
	f.rep.unix_ms = 1700000060000;
	f.rep.policy_name = "web";
	f.rep.policy_version = 3;
	return &f.rep;
}

/* rep is refused, and why names field. */
static void refused(const Kmemctl__V1__Report *rep, const char *field)
{
	char why[256] = "";

	if (report_check(rep, why, sizeof(why)) != -EINVAL)
		fail_msg("a report with a bad %s was taken", field);
	if (!strstr(why, field))
		fail_msg("the refusal '%s' does not name %s", why, field);
}

static void test_good(void **state)
{
	char why[256] = "";

	(void)state;
	assert_int_equal(report_check(good(), why, sizeof(why)), 0);
	assert_string_equal(why, "");
	/* unknown enum values are a newer agent's, not an attack */
	good()->events[0]->kind = 99;
	assert_int_equal(report_check(&f.rep, why, sizeof(why)), 0);
}

static void test_strings(void **state)
{
	char long_host[REPORT_HOSTNAME_MAX + 2];

	(void)state;
	good()->facts->hostname = "bad\xff";
	refused(&f.rep, "facts.hostname");
	good()->facts->hostname = "two\nlines";
	refused(&f.rep, "facts.hostname");
	memset(long_host, 'h', sizeof(long_host) - 1);
	long_host[sizeof(long_host) - 1] = '\0';
	good()->facts->hostname = long_host;
	refused(&f.rep, "facts.hostname");
	good()->facts->kernel_release = "6.1\xc0\xaf";
	refused(&f.rep, "facts.kernel_release");
	good()->mitigations[0]->reason = "\x1b[2J";
	refused(&f.rep, "mitigations.reason");
	good()->events[0]->comm = "\xed\xa0\x80";
	refused(&f.rep, "events.comm");
	good()->events[0]->message = "forged\nkmemd: line";
	refused(&f.rep, "events.message");
	good()->events[0]->stack_top[1] = "f\xff";
	refused(&f.rep, "events.stack_top");
	good()->facts->labels[1]->value = "\x7f";
	refused(&f.rep, "facts.labels value");
}

static void test_names(void **state)
{
	(void)state;
	good()->facts->host_id = "web 1";
	refused(&f.rep, "facts.host_id");
	good()->probes[1]->probe = "probe/../x";
	refused(&f.rep, "probes.probe");
	good()->mitigations[1]->id = "";
	refused(&f.rep, "mitigations.id");
	good()->mitigations[0]->stats[0]->key = "en ables";
	refused(&f.rep, "mitigations.stats key");
	good()->facts->labels[0]->key = "r\xc3\xb4le";
	refused(&f.rep, "facts.labels key");
	good()->events[0]->mitigation = "a b";
	refused(&f.rep, "events.mitigation");
	good()->policy_name = "web policy";
	refused(&f.rep, "policy_name");
	good()->probes[1]->probe = "rstat-flush";
	refused(&f.rep, "rstat-flush");
	good()->mitigations[1]->id = "rstat-yield";
	refused(&f.rep, "rstat-yield");
	good()->facts->labels[1]->key = "role";
	refused(&f.rep, "role");
}

static void test_counts(void **state)
{
	Kmemctl__V1__ProbeSample *many[REPORT_PROBES_MAX + 1];

	(void)state;
	good();
	for (size_t i = 0; i < REPORT_PROBES_MAX + 1; i++)
		many[i] = &f.probe2;
	f.rep.probes = many;
	f.rep.n_probes = REPORT_PROBES_MAX + 1;
	refused(&f.rep, "probes");
	good()->n_events = REPORT_EVENTS_MAX + 1;
	refused(&f.rep, "events");
	good()->events[0]->n_stack_top = REPORT_FRAMES_MAX + 1;
	refused(&f.rep, "events.stack_top");
	good()->n_mitigations = REPORT_MITIGATIONS_MAX + 1;
	refused(&f.rep, "mitigations");
}

/* What the module waits for, by its own names, once each; its build file within 16 KiB. */
static void test_waiting(void **state)
{
	static char *waiting[REPORT_MITIGATIONS_MAX + 1];
	static char file[BUILDREC_MAX + 2];
	char why[256] = "";

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(waiting); i++)
		waiting[i] = "usercopy-fastpath";
	memset(file, 'a', sizeof(file) - 1);
	good()->waiting_for_record = waiting;
	f.rep.n_waiting_for_record = 1;
	f.rep.build_file = file + 2;
	assert_int_equal(report_check(&f.rep, why, sizeof(why)), 0);
	f.rep.build_file = file;
	refused(&f.rep, "build_file");
	f.rep.build_file = "";
	f.rep.n_waiting_for_record = 2;
	refused(&f.rep, "twice");
	f.rep.n_waiting_for_record = REPORT_MITIGATIONS_MAX + 1;
	refused(&f.rep, "waiting_for_record");
	waiting[0] = "usercopy fastpath";
	f.rep.n_waiting_for_record = 1;
	refused(&f.rep, "waiting_for_record");
}

static void test_numbers(void **state)
{
	(void)state;
	good()->counters->soft_lockups = REPORT_NUMBER_MAX + 1;
	refused(&f.rep, "counters.soft_lockups");
	good()->counters->uptime_ms = UINT64_MAX;
	refused(&f.rep, "counters.uptime_ms");
	good()->seq = UINT64_MAX;
	refused(&f.rep, "seq");
	good()->unix_ms = -1;
	refused(&f.rep, "unix_ms");
	good()->probes[0]->end_unix_ms = INT64_MAX;
	refused(&f.rep, "probes.end_unix_ms");
	good()->events[0]->cpu = -2;
	refused(&f.rep, "events.cpu");
	good()->policy_version = (uint64_t)INT64_MAX + 1;
	refused(&f.rep, "policy_version");
	good()->mitigations[0]->stats[0]->value = UINT64_MAX;
	refused(&f.rep, "mitigations.stats value");
	good()->facts->mem_total_bytes = UINT64_MAX;
	refused(&f.rep, "facts.mem_total_bytes");
}

static void test_histograms(void **state)
{
	(void)state;
	/* counts that do not add up to the count */
	good()->probes[0]->hist->count = 7;
	refused(&f.rep, "probes.hist");
	/* counts whose sum wraps to the count */
	good()->probes[0]->hist->counts[0] = UINT64_MAX;
	f.counts[2] = 7;
	f.hist.count = 6;
	refused(&f.rep, "probes.hist");
	/* buckets past the last */
	good()->probes[0]->hist->first_bucket = 62;
	refused(&f.rep, "probes.hist");
	/* more values in a minute than 64 CPUs record at one a nanosecond */
	good();
	f.counts[0] = 64ULL * 60 * 1000000000 + 1;
	f.counts[2] = 0;
	f.hist.count = f.counts[0];
	f.hist.max_ns = 1024;
	refused(&f.rep, "probes.hist");
	good()->probes[0]->hist->sum_ns = UINT64_MAX;
	refused(&f.rep, "probes.hist");
	/* a millisecond's interval holds a millisecond's values, not a second's */
	good();
	f.probe.start_unix_ms = f.probe.end_unix_ms - 1;
	f.counts[0] = 64ULL * 1000000 + 1;
	f.counts[2] = 0;
	f.hist.count = f.counts[0];
	f.hist.sum_ns = f.counts[0] * 1024;
	f.hist.max_ns = 1024;
	refused(&f.rep, "probes.hist");
	f.counts[0] = f.hist.count = 64ULL * 1000000;
	f.hist.sum_ns = f.counts[0] * 1024;
	assert_int_equal(report_check(&f.rep, NULL, 0), 0);
}

/* The probes left in rep, by name, comma-separated. */
static const char *left(const Kmemctl__V1__Report *rep)
{
	static char out[128];

	out[0] = '\0';
	for (size_t i = 0; i < rep->n_probes; i++)
		snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%s", i ? "," : "",
			 rep->probes[i]->probe);
	return out;
}

static void test_spans(void **state)
{
	const int64_t now = 1700000060000;
	struct report_span_bounds b = { .now_ms = now,
					.oldest_ms = now - 3600000,
					.after_ms = now - 60000 };
	char why[256] = "";

	(void)state;
	/* an agent's: the interval after the last one, ending now */
	good();
	f.probe2.hist = &f.hist;
	f.probe2.start_unix_ms = f.probe.start_unix_ms;
	f.probe2.end_unix_ms = f.probe.end_unix_ms;
	assert_int_equal(report_trim_samples(&f.rep, &b, why, sizeof(why)), 0);
	assert_string_equal(left(&f.rep), "rstat-flush,vmap-purge-flushes");
	assert_string_equal(why, "");
	/* starting before the host's last sample ended: left out, the other kept */
	b.after_ms = now - 30000;
	assert_int_equal(report_trim_samples(&f.rep, &b, why, sizeof(why)), 2);
	assert_string_equal(left(&f.rep), "");
	assert_non_null(strstr(why, "2 probe samples left out: 'rstat-flush'"));
	assert_non_null(strstr(why, "starts before the host's last stored sample ended"));
	good();
	f.probe2.hist = &f.hist;
	f.probe2.start_unix_ms = now - 30000;
	f.probe2.end_unix_ms = now;
	assert_int_equal(report_trim_samples(&f.rep, &b, why, sizeof(why)), 1);
	assert_string_equal(left(&f.rep), "vmap-purge-flushes");
	/* resent as it was, every sample starts before what is stored: all left out */
	b.after_ms = now;
	assert_int_equal(report_trim_samples(&f.rep, &b, why, sizeof(why)), 1);
	b.after_ms = INT64_MIN;
	/* in the future of kmemd's clock past the skew; within it */
	good()->probes[0]->end_unix_ms = now + REPORT_SKEW_MS + 1;
	f.probe.start_unix_ms = now;
	assert_int_equal(report_trim_samples(&f.rep, &b, why, sizeof(why)), 1);
	assert_non_null(strstr(why, "in the future"));
	good()->probes[0]->end_unix_ms = now + REPORT_SKEW_MS;
	f.probe.start_unix_ms = now;
	assert_int_equal(report_trim_samples(&f.rep, &b, why, sizeof(why)), 0);
	/* older than what kmemd keeps raw */
	good()->probes[0]->end_unix_ms = now - 3600001;
	f.probe.start_unix_ms = now - 3660000;
	assert_int_equal(report_trim_samples(&f.rep, &b, why, sizeof(why)), 1);
	assert_non_null(strstr(why, "raw_retention"));
	/* empty, backwards, longer than an agent's longest interval */
	good()->probes[0]->start_unix_ms = now;
	assert_int_equal(report_trim_samples(&f.rep, &b, why, sizeof(why)), 1);
	good()->probes[0]->start_unix_ms = now + 1;
	assert_int_equal(report_trim_samples(&f.rep, &b, why, sizeof(why)), 1);
	assert_non_null(strstr(why, "ends before it starts"));
	good()->probes[0]->start_unix_ms = now - REPORT_SPAN_MS_MAX - 1;
	assert_int_equal(report_trim_samples(&f.rep, &b, why, sizeof(why)), 1);
	good()->probes[0]->start_unix_ms = now - REPORT_SPAN_MS_MAX;
	assert_int_equal(report_trim_samples(&f.rep, &b, why, sizeof(why)), 0);
	/* unbounded where the caller does not know */
	b = (struct report_span_bounds){ INT64_MIN, INT64_MIN, INT64_MIN };
	good()->probes[0]->end_unix_ms = now + 86400000;
	f.probe.start_unix_ms = now + 86400000 - 1000;
	assert_int_equal(report_trim_samples(&f.rep, &b, why, sizeof(why)), 0);
}

/* A report of n events of kind k, at times from t, a millisecond apart, in static storage. */
static Kmemctl__V1__Report *events(size_t n, Kmemctl__V1__EventKind k, int64_t t)
{
	static Kmemctl__V1__KernelEvent ev[REPORT_EVENTS_MAX], *evs[REPORT_EVENTS_MAX];

	good();
	for (size_t i = 0; i < n; i++) {
		kmemctl__v1__kernel_event__init(&ev[i]);
		ev[i].kind = k;
		ev[i].unix_ms = t + (int64_t)i;
		evs[i] = &ev[i];
	}
	f.rep.events = evs;
	f.rep.n_events = n;
	f.rep.unix_ms = t + (int64_t)n;
	return &f.rep;
}

static void test_events(void **state)
{
	const int64_t now = 1700000060000;
	struct report_event_bounds b = { .now_ms = now,
					 .oldest_ms = now - 86400000,
					 .after_ms = INT64_MIN };
	char why[256] = "";
	Kmemctl__V1__Report *rep;

	(void)state;
	/* times: the future past the skew, older than kept; the others kept in order */
	rep = events(4, KMEMCTL__V1__EVENT_KIND__EVENT_KIND_TRIP, now - 2);
	rep->events[0]->unix_ms = now + REPORT_SKEW_MS + 1;
	rep->events[2]->unix_ms = now - 86400001;
	assert_int_equal(report_trim_events(rep, &b, why, sizeof(why)), 2);
	assert_int_equal(rep->n_events, 2);
	assert_true(rep->events[0]->unix_ms == now - 1 && rep->events[1]->unix_ms == now + 1);
	assert_non_null(strstr(why, "2 events left out: trip at unix ms"));
	assert_non_null(strstr(why, "in the future of kmemd's clock"));
	rep = events(1, KMEMCTL__V1__EVENT_KIND__EVENT_KIND_SOFT_LOCKUP, now + REPORT_SKEW_MS);
	assert_int_equal(report_trim_events(rep, &b, why, sizeof(why)), 0);
	/* a host's first report: its lockups are not bounded by a last one */
	rep = events(REPORT_EVENTS_MAX, KMEMCTL__V1__EVENT_KIND__EVENT_KIND_SOFT_LOCKUP, now - 200);
	assert_int_equal(report_trim_events(rep, &b, why, sizeof(why)), 0);
	/* 2 CPUs, 10 s since the last report: 40 lockups of any of the three kinds, not 41 */
	b.after_ms = now - 10000;
	rep = events(45, KMEMCTL__V1__EVENT_KIND__EVENT_KIND_HARD_LOCKUP, now - 100);
	rep->unix_ms = now;
	rep->events[0]->kind = KMEMCTL__V1__EVENT_KIND__EVENT_KIND_RCU_STALL;
	rep->events[1]->kind = KMEMCTL__V1__EVENT_KIND__EVENT_KIND_SOFT_LOCKUP;
	/* other kinds are not lockups */
	rep->events[2]->kind = KMEMCTL__V1__EVENT_KIND__EVENT_KIND_HUNG_TASK;
	assert_int_equal(report_trim_events(rep, &b, why, sizeof(why)), 4);
	assert_int_equal(rep->n_events, 41);
	assert_true(rep->events[40]->unix_ms == now - 100 + 40);
	assert_non_null(strstr(why, "4 events left out: hard-lockup at unix ms 1700000059941 is "
				    "past the lockups a host's CPUs can report since its last "
				    "report, ms: 10000"));
	/* a report time past kmemd's clock buys no more */
	rep = events(45, KMEMCTL__V1__EVENT_KIND__EVENT_KIND_HARD_LOCKUP, now - 100);
	rep->unix_ms = now + 86400000;
	b.after_ms = now + REPORT_SKEW_MS - 10000;
	assert_int_equal(report_trim_events(rep, &b, why, sizeof(why)), 5);
	/* a report no later than the host's last one adds no lockup, a trip still */
	rep = events(2, KMEMCTL__V1__EVENT_KIND__EVENT_KIND_SOFT_LOCKUP, now - 100);
	rep->events[1]->kind = KMEMCTL__V1__EVENT_KIND__EVENT_KIND_TRIP;
	b.after_ms = rep->unix_ms;
	assert_int_equal(report_trim_events(rep, &b, why, sizeof(why)), 1);
	assert_int_equal(rep->events[0]->kind, KMEMCTL__V1__EVENT_KIND__EVENT_KIND_TRIP);
	/* the most CPUs for the longest time: the bound saturates, nothing wraps */
	rep = events(3, KMEMCTL__V1__EVENT_KIND__EVENT_KIND_SOFT_LOCKUP, 0);
	rep->facts->online_cpus = REPORT_CPUS_MAX;
	rep->unix_ms = REPORT_TIME_MS_MAX;
	b = (struct report_event_bounds){ INT64_MIN, INT64_MIN, -REPORT_TIME_MS_MAX };
	assert_int_equal(report_trim_events(rep, &b, why, sizeof(why)), 0);
	/* no CPUs said: one */
	rep = events(3, KMEMCTL__V1__EVENT_KIND__EVENT_KIND_SOFT_LOCKUP, 0);
	rep->facts->online_cpus = 0;
	rep->unix_ms = 1000;
	b.after_ms = 0;
	assert_int_equal(report_trim_events(rep, &b, why, sizeof(why)), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),	   cmocka_unit_test(test_strings),
		cmocka_unit_test(test_names),	   cmocka_unit_test(test_counts),
		cmocka_unit_test(test_waiting),	   cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_histograms), cmocka_unit_test(test_spans),
		cmocka_unit_test(test_events),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

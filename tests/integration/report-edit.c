// SPDX-License-Identifier: GPL-2.0
/*
 * report-edit IN OUT EDIT...: a real report changed into one that decodes
 * fine but no agent sends, for kmemd's checks to refuse or bound; with OUT
 * "-", one report a line of standard input, "OUT EDIT...". Each EDIT is
 * KEY=VALUE, the value taken byte for byte:
 *   probe=NAME	the probe samples become one sample named NAME
 *   count=N	its histogram's count (one value in bucket 20): not 1 does not add up
 *   probes=N	the probe samples become N samples named p0, p1, ...
 *   seq=N	the report's seq
 *   host=TEXT, hostname=TEXT, kernel=TEXT	facts
 *   reason=TEXT	the first mitigation's reason
 *   message=TEXT, comm=TEXT	an event (a soft lockup) with that message or comm
 *   soft_lockups=N	the counter
 *   lockups=N	N soft lockup events (at most REPORT_EVENTS_MAX), a millisecond
 *		apart up to the report's time, on its CPUs in turn: for the
 *		edits before it
 *   span=MS	the samples' interval length (default 1000), for the edits after it
 *   time=MS	the report's time, and every sample's interval ends then
 *   values=N	every sample's histogram N values of about 1 us (bucket 10)
 *   max=1	every sample's histogram counts as many values as report_check()
 *		lets the host's CPUs record in its interval (one bucket, the
 *		largest sum), the samples named as before
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kmemctl/v1/report.pb-c.h"
#include "report-check.h"

#define PROBES_MAX 4096

static Kmemctl__V1__ProbeSample sample[PROBES_MAX], *samples[PROBES_MAX];
static Kmemctl__V1__Histogram hist = KMEMCTL__V1__HISTOGRAM__INIT;
static Kmemctl__V1__KernelEvent event = KMEMCTL__V1__KERNEL_EVENT__INIT, *events[1] = { &event };
static Kmemctl__V1__KernelEvent lockup[REPORT_EVENTS_MAX], *lockups[REPORT_EVENTS_MAX];
static Kmemctl__V1__Counters counters = KMEMCTL__V1__COUNTERS__INIT;
static char names[PROBES_MAX][24];
static uint64_t one = 1, most;
static int64_t span_ms = 1000;

/* n samples, named name (one) or p0... (several), sharing one histogram. */
static void set_probes(Kmemctl__V1__Report *rep, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++) {
		kmemctl__v1__probe_sample__init(&sample[i]);
		snprintf(names[i], sizeof(names[i]), "p%zu", i);
		sample[i].probe = name ? (char *)name : names[i];
		sample[i].start_unix_ms = rep->unix_ms - span_ms;
		sample[i].end_unix_ms = rep->unix_ms;
		sample[i].hist = &hist;
		samples[i] = &sample[i];
	}
	rep->probes = samples;
	rep->n_probes = n;
}

static void set_event(Kmemctl__V1__Report *rep)
{
	event.kind = KMEMCTL__V1__EVENT_KIND__EVENT_KIND_SOFT_LOCKUP;
	event.unix_ms = rep->unix_ms;
	rep->events = events;
	rep->n_events = 1;
}

static void set_lockups(Kmemctl__V1__Report *rep, size_t n)
{
	uint32_t cpus = rep->facts->online_cpus ?: 1;

	for (size_t i = 0; i < n; i++) {
		kmemctl__v1__kernel_event__init(&lockup[i]);
		lockup[i].kind = KMEMCTL__V1__EVENT_KIND__EVENT_KIND_SOFT_LOCKUP;
		lockup[i].unix_ms = rep->unix_ms - (int64_t)(n - i);
		lockup[i].cpu = (int32_t)(i % cpus);
		lockup[i].message = "watchdog: BUG: soft lockup - CPU#0 stuck for 23s!";
		lockups[i] = &lockup[i];
	}
	rep->events = lockups;
	rep->n_events = n;
}

/* Each sample a new interval ending at rep's time, its histogram what max= asks. */
static void set_times(Kmemctl__V1__Report *rep)
{
	for (size_t i = 0; i < rep->n_probes; i++) {
		sample[i] = *rep->probes[i];
		sample[i].start_unix_ms = rep->unix_ms - span_ms;
		sample[i].end_unix_ms = rep->unix_ms;
		if (most)
			sample[i].hist = &hist;
		samples[i] = &sample[i];
	}
	rep->probes = samples;
}

/* The most values report_check() lets the host's CPUs record in span_ms. */
static void set_most(Kmemctl__V1__Report *rep)
{
	uint64_t cpus = rep->facts->possible_cpus ?: 1;

	most = cpus * (uint64_t)span_ms * 1000000;
	if (most > REPORT_NUMBER_MAX)
		most = REPORT_NUMBER_MAX;
	hist.first_bucket = 20;
	hist.counts = &most;
	hist.count = most;
	hist.sum_ns = INT64_MAX;
	hist.max_ns = 1 << 20;
	set_times(rep);
}

static void set_values(Kmemctl__V1__Report *rep, uint64_t n)
{
	most = n;
	hist.first_bucket = 10;
	hist.counts = &most;
	hist.count = n;
	hist.sum_ns = n * 1000;
	hist.max_ns = 1000;
	set_times(rep);
}

static int edit(Kmemctl__V1__Report *rep, const char *key, char *value)
{
	if (!strcmp(key, "probe"))
		set_probes(rep, 1, value);
	else if (!strcmp(key, "probes") && strtoul(value, NULL, 10) <= PROBES_MAX)
		set_probes(rep, strtoul(value, NULL, 10), NULL);
	else if (!strcmp(key, "count"))
		hist.count = strtoull(value, NULL, 10);
	else if (!strcmp(key, "seq"))
		rep->seq = strtoull(value, NULL, 10);
	else if (!strcmp(key, "host"))
		rep->facts->host_id = value;
	else if (!strcmp(key, "hostname"))
		rep->facts->hostname = value;
	else if (!strcmp(key, "kernel"))
		rep->facts->kernel_release = value;
	else if (!strcmp(key, "reason") && rep->n_mitigations)
		rep->mitigations[0]->reason = value;
	else if (!strcmp(key, "message"))
		set_event(rep), event.message = value;
	else if (!strcmp(key, "comm"))
		set_event(rep), event.comm = value;
	else if (!strcmp(key, "span"))
		span_ms = strtoll(value, NULL, 10);
	else if (!strcmp(key, "time"))
		rep->unix_ms = strtoll(value, NULL, 10), set_times(rep);
	else if (!strcmp(key, "max"))
		set_most(rep);
	else if (!strcmp(key, "values"))
		set_values(rep, strtoull(value, NULL, 10));
	else if (!strcmp(key, "lockups") && strtoul(value, NULL, 10) <= REPORT_EVENTS_MAX)
		set_lockups(rep, strtoul(value, NULL, 10));
	else if (!strcmp(key, "soft_lockups"))
		rep->counters = &counters, counters.soft_lockups = strtoull(value, NULL, 10);
	else
		return -1;
	return 0;
}

/* rep with the edits, written to out; 0, 1 (I/O), 2 (a bad edit). */
static int write_one(const Kmemctl__V1__Report *rep, const char *out, int nedits, char **edits)
{
	static uint8_t buf[4 << 20];
	static Kmemctl__V1__HostFacts facts;
	static Kmemctl__V1__MitigationState first;
	Kmemctl__V1__MitigationState **mits;
	Kmemctl__V1__Report copy;
	size_t len;
	FILE *f;

	span_ms = 1000;
	most = 0;
	hist = (Kmemctl__V1__Histogram)KMEMCTL__V1__HISTOGRAM__INIT;
	event = (Kmemctl__V1__KernelEvent)KMEMCTL__V1__KERNEL_EVENT__INIT;
	counters = (Kmemctl__V1__Counters)KMEMCTL__V1__COUNTERS__INIT;
	hist.first_bucket = 20;
	hist.n_counts = 1;
	hist.counts = &one;
	hist.count = 1;
	hist.max_ns = 1 << 20;
	/* edits point into static storage and their text: they go to a copy of what they change */
	copy = *rep;
	facts = *rep->facts;
	copy.facts = &facts;
	mits = calloc(rep->n_mitigations + 1, sizeof(*mits));
	if (!mits)
		return 1;
	for (size_t i = 0; i < rep->n_mitigations; i++)
		mits[i] = rep->mitigations[i];
	if (rep->n_mitigations) {
		first = *rep->mitigations[0];
		mits[0] = &first;
	}
	copy.mitigations = mits;
	for (int i = 0; i < nedits; i++) {
		char *eq = strchr(edits[i], '=');

		if (eq)
			*eq = '\0';
		if (!eq || edit(&copy, edits[i], eq + 1) < 0) {
			fprintf(stderr, "report-edit: unknown edit '%s'\n", edits[i]);
			free(mits);
			return 2;
		}
	}
	len = kmemctl__v1__report__pack(&copy, buf);
	free(mits);
	f = fopen(out, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f)) {
		fprintf(stderr, "report-edit: cannot write '%s'\n", out);
		return 1;
	}
	return 0;
}

/* Lines of "OUT EDIT...", words apart by blanks: many reports from one process. */
static int write_many(const Kmemctl__V1__Report *rep)
{
	char line[8192], *words[256], *save, *w;
	int n, r = 0;

	while (r == 0 && fgets(line, sizeof(line), stdin)) {
		n = 0;
		for (w = strtok_r(line, " \t\n", &save); w && n < 256;
		     w = strtok_r(NULL, " \t\n", &save))
			words[n++] = w;
		if (n)
			r = write_one(rep, words[0], n - 1, words + 1);
	}
	return r;
}

int main(int argc, char **argv)
{
	static uint8_t buf[4 << 20];
	Kmemctl__V1__Report *rep;
	size_t len;
	FILE *f;
	int r;

	if (argc < 3) {
		fprintf(stderr,
			"usage: report-edit IN OUT KEY=VALUE... | report-edit IN - <LINES\n");
		return 2;
	}
	f = fopen(argv[1], "rb");
	len = f ? fread(buf, 1, sizeof(buf), f) : 0;
	if (f)
		fclose(f);
	rep = kmemctl__v1__report__unpack(NULL, len, buf);
	if (!rep || !rep->facts) {
		fprintf(stderr, "report-edit: '%s' is not a report\n", argv[1]);
		return 1;
	}
	r = strcmp(argv[2], "-") ? write_one(rep, argv[2], argc - 3, argv + 3) : write_many(rep);
	kmemctl__v1__report__free_unpacked(rep, NULL);
	return r;
}

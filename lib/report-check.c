// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "buildrec.h"
#include "hist.h"
#include "macro.h"
#include "policydoc.h"
#include "report-check.h"
#include "text.h"

#define TEXT_RULE "well-formed UTF-8 without control characters"
#define NAME_RULE TEXT_NAME_CHARSET

static int check_text(const char *field, const char *s, size_t max, char *why, size_t len)
{
	if (text_valid(s, max))
		return 0;
	return text_refuse(why, len, "%s is not " TEXT_RULE " of at most %zu bytes", field, max);
}

static int check_name(const char *field, const char *s, size_t max, char *why, size_t len)
{
	if (text_name_valid(s, max))
		return 0;
	return text_refuse(why, len, "%s is not 1 to %zu of " NAME_RULE, field, max);
}

/* Empty, or a name. */
static int check_opt_name(const char *field, const char *s, char *why, size_t len)
{
	return !s || !s[0] ? 0 : check_name(field, s, REPORT_NAME_MAX, why, len);
}

static int check_count(const char *field, size_t n, size_t max, char *why, size_t len)
{
	if (n <= max)
		return 0;
	return text_refuse(why, len, "%s has %zu entries, more than %zu", field, n, max);
}

static int check_number(const char *field, uint64_t v, uint64_t max, char *why, size_t len)
{
	if (v <= max)
		return 0;
	return text_refuse(why, len, "%s is %llu, more than %llu", field, (unsigned long long)v,
			   (unsigned long long)max);
}

static int check_time(const char *field, int64_t ms, char *why, size_t len)
{
	if (ms >= 0 && ms <= REPORT_TIME_MS_MAX)
		return 0;
	return text_refuse(why, len, "%s is %lld, not a time in unix milliseconds", field,
			   (long long)ms);
}

/*
 * Consistent (hist_from_pb), and no more values than CPUs can record in
 * the sample's interval (at least a millisecond), one a nanosecond: a
 * count past that is not a measurement. The interval itself is checked
 * where kmemd knows its clock and the host's earlier samples
 * (report_trim_samples()).
 */
static int check_hist(const char *field, const Kmemctl__V1__Histogram *pb, int64_t span_ms,
		      uint32_t cpus, char *why, size_t len)
{
	uint64_t s = span_ms > 1 ? (uint64_t)span_ms : 1, max;
	struct hist h;

	if (hist_from_pb(&h, pb) < 0)
		return text_refuse(
			why, len,
			"%s is inconsistent (buckets out of range or counts that do not add "
			"up to its count)",
			field);
	if (__builtin_mul_overflow(s, (uint64_t)(cpus ? cpus : 1) * 1000000ULL, &max) ||
	    max > REPORT_NUMBER_MAX)
		max = REPORT_NUMBER_MAX;
	if (h.count > max)
		return text_refuse(why, len,
				   "%s counts %llu values, more than %llu CPUs could record", field,
				   (unsigned long long)h.count, (unsigned long long)(cpus ?: 1));
	return check_number(field, h.sum_ns, INT64_MAX, why, len);
}

static int check_facts(const Kmemctl__V1__HostFacts *f, char *why, size_t len)
{
	size_t i, j;
	int r;

	r = text_host_id_valid(f->host_id, REPORT_HOST_ID_MAX) ?
		    0 :
		    text_refuse(why, len, "facts.host_id is not 1 to %d of " TEXT_HOST_ID_GRAMMAR,
				REPORT_HOST_ID_MAX);
	if (r == 0)
		r = check_text("facts.hostname", f->hostname, REPORT_HOSTNAME_MAX, why, len);
	if (r == 0)
		r = check_text("facts.kernel_release", f->kernel_release, REPORT_SHORT_MAX, why,
			       len);
	if (r == 0)
		r = check_text("facts.kernel_build_id", f->kernel_build_id, REPORT_TEXT_MAX, why,
			       len);
	if (r == 0)
		r = check_text("facts.module_version", f->module_version, REPORT_SHORT_MAX, why,
			       len);
	if (r == 0)
		r = check_text("facts.agent_version", f->agent_version, REPORT_SHORT_MAX, why, len);
	if (r == 0)
		r = check_text("facts.arch", f->arch, REPORT_SHORT_MAX, why, len);
	if (r == 0)
		r = check_number("facts.mem_total_bytes", f->mem_total_bytes, INT64_MAX, why, len);
	if (r == 0)
		r = check_number("facts.online_cpus", f->online_cpus, REPORT_CPUS_MAX, why, len);
	if (r == 0)
		r = check_number("facts.possible_cpus", f->possible_cpus, REPORT_CPUS_MAX, why,
				 len);
	if (r == 0)
		r = check_count("facts.kconfig", f->n_kconfig, REPORT_KCONFIG_MAX, why, len);
	for (i = 0; r == 0 && i < f->n_kconfig; i++) {
		r = check_name("facts.kconfig name", f->kconfig[i]->name, REPORT_NAME_MAX, why,
			       len);
		if (r == 0)
			r = check_text("facts.kconfig value", f->kconfig[i]->value, REPORT_TEXT_MAX,
				       why, len);
	}
	if (r == 0)
		r = check_count("facts.labels", f->n_labels, REPORT_LABELS_MAX, why, len);
	for (i = 0; r == 0 && i < f->n_labels; i++) {
		r = check_name("facts.labels key", f->labels[i]->key, REPORT_NAME_MAX, why, len);
		if (r == 0)
			r = check_text("facts.labels value", f->labels[i]->value, REPORT_TEXT_MAX,
				       why, len);
		for (j = 0; r == 0 && j < i; j++)
			if (!strcmp(f->labels[i]->key, f->labels[j]->key))
				r = text_refuse(why, len, "facts.labels has the key '%s' twice",
						f->labels[i]->key);
	}
	return r;
}

static int check_mitigation(const Kmemctl__V1__MitigationState *m, char *why, size_t len)
{
	size_t i;
	int r;

	r = check_name("mitigations.id", m->id, REPORT_NAME_MAX, why, len);
	if (r == 0)
		r = check_text("mitigations.reason", m->reason, REPORT_TEXT_MAX, why, len);
	if (r == 0)
		r = check_count("mitigations.params", m->n_params, REPORT_KV_MAX, why, len);
	for (i = 0; r == 0 && i < m->n_params; i++) {
		r = check_name("mitigations.params key", m->params[i]->key, REPORT_NAME_MAX, why,
			       len);
		if (r == 0)
			r = check_text("mitigations.params value", m->params[i]->value,
				       REPORT_TEXT_MAX, why, len);
	}
	if (r == 0)
		r = check_count("mitigations.stats", m->n_stats, REPORT_KV_MAX, why, len);
	for (i = 0; r == 0 && i < m->n_stats; i++) {
		r = check_name("mitigations.stats key", m->stats[i]->key, REPORT_NAME_MAX, why,
			       len);
		if (r == 0)
			r = check_number("mitigations.stats value", m->stats[i]->value,
					 REPORT_NUMBER_MAX, why, len);
	}
	return r;
}

static int check_mitigations(const Kmemctl__V1__Report *rep, char *why, size_t len)
{
	size_t i, j;
	int r = check_count("mitigations", rep->n_mitigations, REPORT_MITIGATIONS_MAX, why, len);

	for (i = 0; r == 0 && i < rep->n_mitigations; i++) {
		r = check_mitigation(rep->mitigations[i], why, len);
		for (j = 0; r == 0 && j < i; j++)
			if (!strcmp(rep->mitigations[i]->id, rep->mitigations[j]->id))
				r = text_refuse(why, len, "mitigation '%s' is reported twice",
						rep->mitigations[i]->id);
	}
	return r;
}

static int check_probe(const Kmemctl__V1__ProbeSample *p, uint32_t cpus, char *why, size_t len)
{
	int r = check_name("probes.probe", p->probe, REPORT_NAME_MAX, why, len);

	if (r == 0)
		r = check_time("probes.start_unix_ms", p->start_unix_ms, why, len);
	if (r == 0)
		r = check_time("probes.end_unix_ms", p->end_unix_ms, why, len);
	if (r == 0 && p->hist)
		r = check_hist("probes.hist", p->hist, p->end_unix_ms - p->start_unix_ms, cpus, why,
			       len);
	return r;
}

static int check_probes(const Kmemctl__V1__Report *rep, char *why, size_t len)
{
	uint32_t cpus = rep->facts->possible_cpus;
	size_t i, j;
	int r = check_count("probes", rep->n_probes, REPORT_PROBES_MAX, why, len);

	for (i = 0; r == 0 && i < rep->n_probes; i++) {
		r = check_probe(rep->probes[i], cpus, why, len);
		for (j = 0; r == 0 && j < i; j++)
			if (!strcmp(rep->probes[i]->probe, rep->probes[j]->probe))
				r = text_refuse(why, len, "probe '%s' is reported twice",
						rep->probes[i]->probe);
	}
	return r;
}

static int check_event(const Kmemctl__V1__KernelEvent *e, char *why, size_t len)
{
	size_t i;
	int r = check_time("events.unix_ms", e->unix_ms, why, len);

	if (r == 0 && (e->cpu < -1 || e->cpu >= (int32_t)REPORT_CPUS_MAX))
		r = text_refuse(why, len, "events.cpu is %d, not a CPU", e->cpu);
	if (r == 0 && e->pid < -1)
		r = text_refuse(why, len, "events.pid is %d, not a pid", e->pid);
	if (r == 0)
		r = check_number("events.duration_ns", e->duration_ns, INT64_MAX, why, len);
	if (r == 0)
		r = check_text("events.comm", e->comm, REPORT_SHORT_MAX, why, len);
	if (r == 0)
		r = check_opt_name("events.mitigation", e->mitigation, why, len);
	if (r == 0)
		r = check_opt_name("events.probe", e->probe, why, len);
	if (r == 0)
		r = check_text("events.message", e->message, REPORT_MESSAGE_MAX, why, len);
	if (r == 0)
		r = check_count("events.stack_top", e->n_stack_top, REPORT_FRAMES_MAX, why, len);
	for (i = 0; r == 0 && i < e->n_stack_top; i++)
		r = check_text("events.stack_top", e->stack_top[i], REPORT_FRAME_MAX, why, len);
	return r;
}

static int check_counters(const Kmemctl__V1__Counters *c, char *why, size_t len)
{
	const struct {
		const char *field;
		uint64_t v;
	} n[] = {
		{ "counters.soft_lockups", c->soft_lockups },
		{ "counters.hard_lockups", c->hard_lockups },
		{ "counters.rcu_stalls", c->rcu_stalls },
		{ "counters.hung_tasks", c->hung_tasks },
		{ "counters.tlb_shootdowns", c->tlb_shootdowns },
		{ "counters.mitigation_trips", c->mitigation_trips },
		{ "counters.events_dropped", c->events_dropped },
		{ "counters.reports_dropped", c->reports_dropped },
		{ "counters.uptime_ms", c->uptime_ms },
	};
	int r = 0;

	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(n); i++)
		r = check_number(n[i].field, n[i].v, REPORT_NUMBER_MAX, why, len);
	return r;
}

static int check_rest(const Kmemctl__V1__Report *rep, char *why, size_t len)
{
	size_t i;
	int r = check_number("seq", rep->seq, INT64_MAX, why, len);

	if (r == 0)
		r = check_time("unix_ms", rep->unix_ms, why, len);
	if (r == 0 && rep->policy_name && rep->policy_name[0] &&
	    !policy_name_valid(rep->policy_name))
		r = text_refuse(why, len, "policy_name is not " POLICY_NAME_RULE);
	if (r == 0)
		r = check_number("policy_version", rep->policy_version, INT64_MAX, why, len);
	if (r == 0 && rep->counters)
		r = check_counters(rep->counters, why, len);
	if (r == 0 && rep->memstat_read)
		r = check_hist("memstat_read", rep->memstat_read, 0, 1, why, len);
	if (r == 0)
		r = check_count("collectors_failed", rep->n_collectors_failed,
				REPORT_COLLECTORS_MAX, why, len);
	for (i = 0; r == 0 && i < rep->n_collectors_failed; i++)
		r = check_text("collectors_failed", rep->collectors_failed[i], REPORT_TEXT_MAX, why,
			       len);
	if (r == 0)
		r = check_count("events", rep->n_events, REPORT_EVENTS_MAX, why, len);
	for (i = 0; r == 0 && i < rep->n_events; i++)
		r = check_event(rep->events[i], why, len);
	return r;
}

/*
 * What the module waits for (its own names) and its build file: parsed by
 * kmemd apart, which stores a malformed one's report without it.
 */
static int check_waiting(const Kmemctl__V1__Report *rep, char *why, size_t len)
{
	size_t i, j;
	int r = check_count("waiting_for_record", rep->n_waiting_for_record, REPORT_MITIGATIONS_MAX,
			    why, len);

	for (i = 0; r == 0 && i < rep->n_waiting_for_record; i++) {
		r = check_name("waiting_for_record", rep->waiting_for_record[i], REPORT_NAME_MAX,
			       why, len);
		for (j = 0; r == 0 && j < i; j++)
			if (!strcmp(rep->waiting_for_record[i], rep->waiting_for_record[j]))
				r = text_refuse(why, len, "waiting_for_record names '%s' twice",
						rep->waiting_for_record[i]);
	}
	if (r == 0 && rep->build_file && strlen(rep->build_file) > BUILDREC_MAX)
		r = text_refuse(why, len, "build_file is longer than %d bytes", BUILDREC_MAX);
	return r;
}

int report_check(const Kmemctl__V1__Report *rep, char *why, size_t len)
{
	int r;

	if (!rep->facts)
		return text_refuse(why, len, "facts are missing");
	r = check_facts(rep->facts, why, len);
	if (r == 0)
		r = check_mitigations(rep, why, len);
	if (r == 0)
		r = check_probes(rep, why, len);
	if (r == 0)
		r = check_rest(rep, why, len);
	if (r == 0)
		r = check_waiting(rep, why, len);
	return r;
}

/* NULL when p keeps within b, else the rule it breaks and the bound it names (0: none). */
static const char *span_breaks(const Kmemctl__V1__ProbeSample *p,
			       const struct report_span_bounds *b, int64_t *bound)
{
	*bound = 0;
	if (p->end_unix_ms <= p->start_unix_ms)
		return "is empty or ends before it starts";
	if (p->end_unix_ms - p->start_unix_ms > REPORT_SPAN_MS_MAX) {
		*bound = REPORT_SPAN_MS_MAX;
		return "is longer than an agent's longest interval, in ms:";
	}
	if (b->now_ms != INT64_MIN && p->end_unix_ms > b->now_ms + REPORT_SKEW_MS) {
		*bound = b->now_ms;
		return "ends in the future of kmemd's clock, unix ms";
	}
	if (b->oldest_ms != INT64_MIN && p->end_unix_ms < b->oldest_ms) {
		*bound = b->oldest_ms;
		return "ended before what kmemd keeps raw ([store] raw_retention), from unix ms";
	}
	if (b->after_ms != INT64_MIN && p->start_unix_ms < b->after_ms) {
		*bound = b->after_ms;
		return "starts before the host's last stored sample ended, at unix ms";
	}
	return NULL;
}

size_t report_trim_samples(Kmemctl__V1__Report *rep, const struct report_span_bounds *b, char *why,
			   size_t len)
{
	const Kmemctl__V1__ProbeSample *first = NULL;
	const char *rule = NULL, *r;
	int64_t bound = 0, at;
	size_t i, kept = 0, out = 0;

	for (i = 0; i < rep->n_probes; i++) {
		/* without a histogram it stores nothing */
		r = rep->probes[i]->hist ? span_breaks(rep->probes[i], b, &at) : NULL;
		if (!r) {
			rep->probes[kept++] = rep->probes[i];
			continue;
		}
		if (!out++) {
			first = rep->probes[i];
			rule = r;
			bound = at;
		}
	}
	rep->n_probes = kept;
	if (!out)
		return 0;
	if (bound)
		snprintf(why, len, "%zu probe sample%s left out: '%s' [%lld, %lld) %s %lld", out,
			 out == 1 ? "" : "s", first->probe, (long long)first->start_unix_ms,
			 (long long)first->end_unix_ms, rule, (long long)bound);
	else
		snprintf(why, len, "%zu probe sample%s left out: '%s' [%lld, %lld) %s", out,
			 out == 1 ? "" : "s", first->probe, (long long)first->start_unix_ms,
			 (long long)first->end_unix_ms, rule);
	return out;
}

void report_enum_name(const ProtobufCEnumDescriptor *d, int value, const char *prefix, char *out,
		      size_t len)
{
	const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(d, value);
	size_t n = strlen(prefix), i;
	const char *name = v ? v->name : "UNSPECIFIED";

	if (!strncmp(name, prefix, n))
		name += n;
	snprintf(out, len, "%s", name);
	for (i = 0; out[i]; i++)
		out[i] = out[i] == '_' ? '-' : (char)(out[i] | 0x20);
}

static bool lockup(const Kmemctl__V1__KernelEvent *e)
{
	return e->kind == KMEMCTL__V1__EVENT_KIND__EVENT_KIND_SOFT_LOCKUP ||
	       e->kind == KMEMCTL__V1__EVENT_KIND__EVENT_KIND_HARD_LOCKUP ||
	       e->kind == KMEMCTL__V1__EVENT_KIND__EVENT_KIND_RCU_STALL;
}

/* The lockups rep may add: REPORT_LOCKUPS_PER_CPU_S a CPU-second since b->after_ms. */
static uint64_t lockup_budget(const Kmemctl__V1__Report *rep, const struct report_event_bounds *b,
			      int64_t *since_ms)
{
	int64_t t = rep->unix_ms;
	uint64_t n;

	if (b->now_ms != INT64_MIN && t > b->now_ms + REPORT_SKEW_MS)
		t = b->now_ms + REPORT_SKEW_MS;
	*since_ms = t > b->after_ms ? t - b->after_ms : 0;
	if (__builtin_mul_overflow(
		    (uint64_t)*since_ms,
		    (uint64_t)(rep->facts->online_cpus ?: 1) * REPORT_LOCKUPS_PER_CPU_S, &n))
		return UINT64_MAX;
	return n / 1000;
}

size_t report_trim_events(Kmemctl__V1__Report *rep, const struct report_event_bounds *b, char *why,
			  size_t len)
{
	const Kmemctl__V1__KernelEvent *first = NULL;
	uint64_t budget = UINT64_MAX, lockups = 0;
	const char *rule = NULL, *r;
	int64_t since = 0, bound = 0;
	size_t i, kept = 0, out = 0;
	char kind[48];

	if (b->after_ms != INT64_MIN)
		budget = lockup_budget(rep, b, &since);
	for (i = 0; i < rep->n_events; i++) {
		const Kmemctl__V1__KernelEvent *e = rep->events[i];
		int64_t at = 0;

		r = NULL;
		if (b->now_ms != INT64_MIN && e->unix_ms > b->now_ms + REPORT_SKEW_MS) {
			r = "is in the future of kmemd's clock, unix ms";
			at = b->now_ms;
		} else if (b->oldest_ms != INT64_MIN && e->unix_ms < b->oldest_ms) {
			r = "is older than what kmemd keeps ([store] retention), from unix ms";
			at = b->oldest_ms;
		} else if (lockup(e) && ++lockups > budget) {
			r = "is past the lockups a host's CPUs can report since its last report, ms:";
			at = since;
		}
		if (!r) {
			rep->events[kept++] = rep->events[i];
			continue;
		}
		if (!out++) {
			first = e;
			rule = r;
			bound = at;
		}
	}
	rep->n_events = kept;
	if (!out)
		return 0;
	report_enum_name(&kmemctl__v1__event_kind__descriptor, first->kind, "EVENT_KIND_", kind,
			 sizeof(kind));
	snprintf(why, len, "%zu event%s left out: %s at unix ms %lld %s %lld", out,
		 out == 1 ? "" : "s", kind, (long long)first->unix_ms, rule, (long long)bound);
	return out;
}

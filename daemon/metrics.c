// SPDX-License-Identifier: GPL-2.0
/*
 * GET /metrics (Prometheus text format 0.0.4) and GET /v1/telemetry.
 *
 * /metrics carries no per-host label: a fleet of 100,000 hosts would make
 * 100,000 series per metric. Per-host numbers are in /v1/telemetry.
 * Probe histograms are per probe and policy, summed in memory from the
 * reports committed since kmemd started (totals.c).
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conn.h"
#include "json-text.h"
#include "kmemctl-names.h"
#include "log.h"
#include "notify.h"
#include "macro.h"
#include "rollout.h"
#include "names.h"
#include "report-check.h"
#include "requests.h"
#include "server.h"
#include "store.h"
#include "text.h"

/* A sample named "<probe>-flushes" counts flushes; every other one is in ns. */
static bool counts_events(const char *probe)
{
	size_t n = strlen(probe);

	return n > 8 && !strcmp(probe + n - 8, "-flushes");
}

/* Cumulative buckets up to the last non-empty one, then +Inf. */
static void histogram(struct evbuffer *b, const char *metric, const char *labels,
		      const struct hist *h, double scale)
{
	uint64_t cum = 0;
	int last = -1, i;

	for (i = 0; i < HIST_BUCKETS; i++)
		if (h->buckets[i])
			last = i;
	for (i = 0; i <= last; i++) {
		cum += h->buckets[i];
		evbuffer_add_printf(b, "%s_bucket{%s%sle=\"%.9g\"} %llu\n", metric, labels,
				    labels[0] ? "," : "", (double)hist_upper((unsigned)i) * scale,
				    (unsigned long long)cum);
	}
	evbuffer_add_printf(b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", metric, labels,
			    labels[0] ? "," : "", (unsigned long long)h->count);
	evbuffer_add_printf(b, "%s_sum%s%s%s %.9g\n", metric, labels[0] ? "{" : "", labels,
			    labels[0] ? "}" : "", (double)h->sum_ns * scale);
	evbuffer_add_printf(b, "%s_count%s%s%s %llu\n", metric, labels[0] ? "{" : "", labels,
			    labels[0] ? "}" : "", (unsigned long long)h->count);
}

/*
 * A family from the store is cut at this many series: a store filled
 * before kmemd bounded names must not make /metrics unbounded.
 */
#define METRICS_FAMILY_MAX 4096

struct tally_out {
	struct evbuffer *b;
	const char *metric, *label_a, *label_b;
	size_t n;
	uint64_t *dropped;
};

/* s as a Prometheus label value: UTF-8, with backslash, quote and newline escaped. */
static const char *label_value(const char *s, char *out, size_t size)
{
	_cleanup_free_ char *clean = text_sanitize(s, strlen(s));
	size_t o = 0;

	for (const char *p = clean ? clean : ""; *p && o + 2 < size; p++) {
		if (*p == '\\' || *p == '"' || *p == '\n') {
			out[o++] = '\\';
			out[o++] = *p == '\n' ? 'n' : *p;
		} else {
			out[o++] = *p;
		}
	}
	out[o] = '\0';
	return out;
}

static int tally_line(void *arg, const char *a, const char *b, uint64_t n)
{
	struct tally_out *t = arg;
	char va[256], vb[256];

	if (t->n++ >= METRICS_FAMILY_MAX) {
		++*t->dropped;
		return 0;
	}
	if (!t->label_a)
		evbuffer_add_printf(t->b, "%s %llu\n", t->metric, (unsigned long long)n);
	else if (!t->label_b)
		evbuffer_add_printf(t->b, "%s{%s=\"%s\"} %llu\n", t->metric, t->label_a,
				    label_value(a, va, sizeof(va)), (unsigned long long)n);
	else
		evbuffer_add_printf(t->b, "%s{%s=\"%s\",%s=\"%s\"} %llu\n", t->metric, t->label_a,
				    label_value(a, va, sizeof(va)), t->label_b,
				    label_value(b, vb, sizeof(vb)), (unsigned long long)n);
	return 0;
}

static int tally(struct kmemd *k, struct evbuffer *b, enum store_tally which, const char *metric,
		 const char *type, const char *help, const char *la, const char *lb,
		 uint64_t *dropped)
{
	struct tally_out t = { b, metric, la, lb, 0, dropped };

	evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n", metric, help, metric, type);
	return k->store->ops->tally(k->store, which, tally_line, &t);
}

/* Hosts waiting for a build record, per mitigation: the module's always, 0 when none waits. */
struct waiting_out {
	struct tally_out t;
	uint64_t n[KMEMCTL_MIT_COUNT];
};

static int waiting_line(void *arg, const char *m, const char *unused, uint64_t n)
{
	struct waiting_out *w = arg;

	for (unsigned i = 0; i < KMEMCTL_MIT_COUNT; i++)
		if (!strcmp(kmemctl_mitigation_name(i), m)) {
			w->n[i] = n;
			return 0;
		}
	/* a name of a newer module's: bounded as names.h bounds them */
	return tally_line(&w->t, m, unused, n);
}

static int waiting(struct kmemd *k, struct evbuffer *b, uint64_t *dropped)
{
	static const char metric[] = "kmemd_build_record_waiting_hosts";
	struct waiting_out w = { .t = { b, metric, "mitigation", NULL, 0, dropped } };
	int r;

	evbuffer_add_printf(b,
			    "# HELP %s Hosts whose module holds the mitigation until a build "
			    "record vouches for their build (kmemctl build list).\n"
			    "# TYPE %s gauge\n",
			    metric, metric);
	r = k->store->ops->tally(k->store, STORE_TALLY_WAITING, waiting_line, &w);
	for (unsigned i = 0; r == 0 && i < KMEMCTL_MIT_COUNT; i++)
		r = tally_line(&w.t, kmemctl_mitigation_name(i), NULL, w.n[i]);
	return r;
}

/* A certificate not seen for this long is no longer in use, whatever its expiry. */
#define OPERATOR_IN_USE_MS (30LL * 86400 * 1000)
/* A host that has not reported here for this long no longer counts. */
#define HOST_IN_USE_MS (86400LL * 1000)

struct expiry {
	int64_t now_ms, earliest_ms;
};

static int operator_expiry(void *arg, const struct store_operator *o)
{
	struct expiry *e = arg;

	if (o->revoked_ms == STORE_NULL && o->not_after_ms != STORE_NULL &&
	    o->not_after_ms > e->now_ms && o->last_seen_ms != STORE_NULL &&
	    o->last_seen_ms > e->now_ms - OPERATOR_IN_USE_MS &&
	    (!e->earliest_ms || o->not_after_ms < e->earliest_ms))
		e->earliest_ms = o->not_after_ms;
	return 0;
}

/* The host certificates of the reports this kmemd took in a day. */
static void host_certs(struct kmemd *k, struct evbuffer *b)
{
	size_t n;
	int64_t earliest = cert_expiry_earliest(&k->host_certs, kmemd_now_ms(), HOST_IN_USE_MS, &n);

	evbuffer_add_printf(b,
			    "# HELP kmemd_host_certificates Hosts that reported to this kmemd in "
			    "a day, by the certificate each last used.\n"
			    "# TYPE kmemd_host_certificates gauge\n"
			    "kmemd_host_certificates %zu\n",
			    n);
	if (earliest)
		evbuffer_add_printf(b,
				    "# HELP kmemd_host_certificate_expiry_timestamp_seconds When "
				    "the first of those certificates expires.\n"
				    "# TYPE kmemd_host_certificate_expiry_timestamp_seconds gauge\n"
				    "kmemd_host_certificate_expiry_timestamp_seconds %lld\n",
				    (long long)earliest);
}

/* Operator certificates: refusals of revoked ones here, and the next to expire of those in use. */
static int operators(struct kmemd *k, struct evbuffer *b)
{
	struct expiry e = { .now_ms = kmemd_now_ms() };
	int r = k->store->ops->operators(k->store, operator_expiry, &e);
	struct notify_stats ns;

	notify_stats(k->notify, &ns);
	evbuffer_add_printf(b,
			    "# HELP kmemd_operator_requests_refused_total Requests this kmemd "
			    "refused because their operator certificate is revoked.\n"
			    "# TYPE kmemd_operator_requests_refused_total counter\n"
			    "kmemd_operator_requests_refused_total %llu\n"
			    "# HELP kmemd_webhook_posts_total Posts to [notify] webhook by "
			    "outcome: sent (2xx), failed (no answer in 5 s, or another status), "
			    "dropped (64 under way already).\n"
			    "# TYPE kmemd_webhook_posts_total counter\n"
			    "kmemd_webhook_posts_total{outcome=\"sent\"} %llu\n"
			    "kmemd_webhook_posts_total{outcome=\"failed\"} %llu\n"
			    "kmemd_webhook_posts_total{outcome=\"dropped\"} %llu\n"
			    "# HELP kmemd_fleet_stopped 1 while the fleet stop holds (kmemctl "
			    "fleet stop), as this kmemd last read it.\n"
			    "# TYPE kmemd_fleet_stopped gauge\n"
			    "kmemd_fleet_stopped %d\n",
			    (unsigned long long)k->operators_refused, (unsigned long long)ns.sent,
			    (unsigned long long)ns.failed, (unsigned long long)ns.dropped,
			    k->fleet_stop.stopped);
	if (r < 0)
		return r;
	host_certs(k, b);
	if (!e.earliest_ms)
		return 0;
	evbuffer_add_printf(b,
			    "# HELP kmemd_operator_certificate_expiry_timestamp_seconds When the "
			    "first of the operator certificates in use (seen in 30 days, not "
			    "revoked) expires.\n"
			    "# TYPE kmemd_operator_certificate_expiry_timestamp_seconds gauge\n"
			    "kmemd_operator_certificate_expiry_timestamp_seconds %lld\n",
			    (long long)(e.earliest_ms / 1000));
	return 0;
}

/* Connections by phase, and why kmemd closed some itself (daemon/conn.h). */
static void connections(struct evbuffer *b)
{
	struct conn_stats cs;

	conns_stats(&cs);
	evbuffer_add_printf(
		b,
		"# HELP kmemd_connections Client connections open.\n"
		"# TYPE kmemd_connections gauge\n"
		"kmemd_connections %llu\n"
		"# HELP kmemd_handshakes TLS handshakes in progress.\n"
		"# TYPE kmemd_handshakes gauge\n"
		"kmemd_handshakes %llu\n"
		"# HELP kmemd_handshakes_completed_total TLS handshakes completed; near "
		"the reports' rate, hosts reconnect for every report.\n"
		"# TYPE kmemd_handshakes_completed_total counter\n"
		"kmemd_handshakes_completed_total %llu\n"
		"# HELP kmemd_connections_anonymous Connections past their handshake "
		"without a client certificate, or waiting to be refused.\n"
		"# TYPE kmemd_connections_anonymous gauge\n"
		"kmemd_connections_anonymous %llu\n"
		"# HELP kmemd_connections_operators Connections with an observer's or "
		"operator's certificate (max_operators).\n"
		"# TYPE kmemd_connections_operators gauge\n"
		"kmemd_connections_operators %llu\n"
		"# HELP kmemd_connections_hosts Connections with a host's certificate "
		"(max_connections).\n"
		"# TYPE kmemd_connections_hosts gauge\n"
		"kmemd_connections_hosts %llu\n"
		"# HELP kmemd_request_body_bytes Bytes of request bodies being read "
		"(max_bodies).\n"
		"# TYPE kmemd_request_body_bytes gauge\n"
		"kmemd_request_body_bytes %llu\n"
		"# HELP kmemd_request_bodies_refused_total Requests refused 503 for "
		"max_bodies.\n"
		"# TYPE kmemd_request_bodies_refused_total counter\n"
		"kmemd_request_bodies_refused_total %llu\n"
		"# HELP kmemd_accept_errors_total Connections accept() could not take "
		"(descriptors or memory short).\n"
		"# TYPE kmemd_accept_errors_total counter\n"
		"kmemd_accept_errors_total %llu\n"
		"# HELP kmemd_connections_closed_total Connections kmemd closed itself, "
		"by reason.\n"
		"# TYPE kmemd_connections_closed_total counter\n",
		(unsigned long long)cs.open, (unsigned long long)cs.handshakes,
		(unsigned long long)cs.handshaken, (unsigned long long)cs.anonymous,
		(unsigned long long)cs.operators, (unsigned long long)cs.authenticated,
		(unsigned long long)cs.bodies, (unsigned long long)cs.bodies_refused,
		(unsigned long long)cs.accept_errors);
	for (int i = 0; i < CLOSE_KINDS; i++)
		evbuffer_add_printf(b, "kmemd_connections_closed_total{reason=\"%s\"} %llu\n",
				    conn_close_name(i), (unsigned long long)cs.closed[i]);
}

/* The names hosts brought in beyond the module's, and what their bounds left out. */
static void names(struct evbuffer *b, const struct names *n)
{
	uint64_t known[NAME_KINDS], dropped[NAME_KINDS];
	int k;

	for (k = 0; k < NAME_KINDS; k++)
		names_counts(n, k, &known[k], &dropped[k]);
	evbuffer_add_printf(b, "# HELP kmemd_names Probe and mitigation names hosts brought in "
			       "beyond the module's own.\n"
			       "# TYPE kmemd_names gauge\n");
	for (k = 0; k < NAME_KINDS; k++)
		evbuffer_add_printf(b, "kmemd_names{kind=\"%s\"} %llu\n", names_kind_name(k),
				    (unsigned long long)known[k]);
	evbuffer_add_printf(b, "# HELP kmemd_names_dropped_total Samples, states and event names "
			       "left out of reports: new names past [limits].\n"
			       "# TYPE kmemd_names_dropped_total counter\n");
	for (k = 0; k < NAME_KINDS; k++)
		evbuffer_add_printf(b, "kmemd_names_dropped_total{kind=\"%s\"} %llu\n",
				    names_kind_name(k), (unsigned long long)dropped[k]);
}

/* What the process holds: the memory connections and the store cost. */
static void process(struct evbuffer *b)
{
	struct mallinfo2 mi = mallinfo2();
	unsigned long long size, rss = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	if (!f || fscanf(f, "%llu %llu", &size, &rss) != 2)
		rss = 0;
	if (f)
		fclose(f);
	evbuffer_add_printf(b,
			    "# HELP kmemd_heap_bytes Heap memory allocated and not freed.\n"
			    "# TYPE kmemd_heap_bytes gauge\n"
			    "kmemd_heap_bytes %zu\n"
			    "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
			    "# TYPE process_resident_memory_bytes gauge\n"
			    "process_resident_memory_bytes %llu\n",
			    mi.uordblks + mi.hblkhd,
			    rss * (unsigned long long)sysconf(_SC_PAGESIZE));
}

/* Finished rollouts stay on /metrics this long, for dashboards to show how they ended. */
#define ROLLOUT_SHOWN_MS (24 * 3600 * 1000LL)

/* The rollout families; each is one group in the exposition, as the format wants. */
static const struct {
	const char *name, *help;
} rollout_families[] = {
	{ "kmemd_rollout_info", "A rollout with its policy and state (1)." },
	{ "kmemd_rollout_wave", "The wave a rollout runs (1-based)." },
	{ "kmemd_rollout_waves", "A rollout's waves." },
	{ "kmemd_rollout_hosts", "A rollout's hosts: members, reached by its waves, running its "
				 "policy." },
	{ "kmemd_rollout_verdicts", "Verdicts stored for a rollout, by verdict." },
	{ "kmemd_rollout_gate_lockups", "Lockups and stalls the last verdict counted, canaries "
					"and baselines." },
	{ "kmemd_rollout_gate_exposure_seconds", "Host-seconds of reports behind the last "
						 "verdict, canaries and baselines." },
	{ "kmemd_rollout_gate_lockup_p", "The last verdict's lockup rate test p-value." },
	{ "kmemd_rollout_expected_canary_lockups", "Canary lockups expected at the fleet's rate "
						   "by the last verdict, over its waves so far." },
	{ "kmemd_rollout_needed_canary_lockups", "Expected canary lockups the last verdict needed "
						 "to detect the declared ratio with its power." },
	{ "kmemd_rollout_detectable_ratio", "The smallest lockup rate ratio the last verdict could "
					    "detect with the declared power." },
	{ "kmemd_rollout_sequential_lr", "The sequential lockup test's likelihood ratio at the "
					 "last verdict; it fails at 1/alpha_seq." },
};

struct families {
	struct evbuffer *b[ARRAY_SIZE(rollout_families)]; /* each family's lines */
	struct rollout_spec *spec; /* room to read a rollout's document in */
};

/* A rollout's lines of family f. */
static void rollout_family(const struct families *fm, size_t f,
			   const struct store_rollout_gauges *g)
{
	static const char *const verdicts[] = { "pass", "fail", "inconclusive" };
	static const char *const phases[] = { "members", "reached", "running" };
	static const char *const sides[] = { "canary", "baseline" };
	const char *m = rollout_families[f].name, *n = g->name;
	struct evbuffer *b = fm->b[f];
	uint64_t hosts[] = { g->members, g->reached, g->running };
	double evidence[] = { g->expected_lockups, g->needed_lockups, g->detectable_ratio,
			      g->sequential_lr };
	char why[320];
	size_t i;

	switch (f) {
	case 0:
		evbuffer_add_printf(b, "%s{rollout=\"%s\",policy=\"%s\",state=\"%s\"} 1\n", m, n,
				    g->policy, rollout_state_name(g->state));
		break;
	case 1:
		evbuffer_add_printf(b, "%s{rollout=\"%s\"} %u\n", m, n, g->wave + 1);
		break;
	case 2:
		/* the waves kmemd runs: the document's and the release wave the parser adds */
		if (rollout_spec_parse(g->spec_json, strlen(g->spec_json), fm->spec, why,
				       sizeof(why)) == 0)
			evbuffer_add_printf(b, "%s{rollout=\"%s\"} %zu\n", m, n, fm->spec->nwaves);
		break;
	case 3:
		for (i = 0; i < 3; i++)
			evbuffer_add_printf(b, "%s{rollout=\"%s\",phase=\"%s\"} %llu\n", m, n,
					    phases[i], (unsigned long long)hosts[i]);
		break;
	case 4:
		for (i = 0; i < 3; i++)
			evbuffer_add_printf(b, "%s{rollout=\"%s\",verdict=\"%s\"} %llu\n", m, n,
					    verdicts[i], (unsigned long long)g->verdicts[i]);
		break;
	case 5:
	case 6:
		for (i = 0; g->judged && i < 2; i++)
			evbuffer_add_printf(
				b, "%s{rollout=\"%s\",side=\"%s\"} %.6g\n", m, n, sides[i],
				f == 5 ? (double)(i ? g->baseline_lockups : g->canary_lockups) :
					 3600 * (i ? g->baseline_hours : g->canary_hours));
		break;
	case 7:
		if (g->judged && g->lockup_p >= 0)
			evbuffer_add_printf(b, "%s{rollout=\"%s\"} %.6g\n", m, n, g->lockup_p);
		break;
	default:
		/* a verdict without the number, or with none up to 1000x, has no line */
		if (isfinite(evidence[f - 8]))
			evbuffer_add_printf(b, "%s{rollout=\"%s\"} %.6g\n", m, n, evidence[f - 8]);
	}
}

/* A rollout's line in every family. */
static int rollout_lines(void *arg, const struct store_rollout_gauges *g)
{
	for (size_t f = 0; f < ARRAY_SIZE(rollout_families); f++)
		rollout_family(arg, f, g);
	return 0;
}

/* Rollout progress and gate inputs: one store pass, each family's lines gathered apart. */
static int rollout_metrics(struct kmemd *k, struct evbuffer *b)
{
	int64_t since = kmemd_now_ms() - ROLLOUT_SHOWN_MS;
	struct families fm = { .spec = malloc(sizeof(*fm.spec)) };
	size_t f;
	int r = fm.spec ? 0 : -ENOMEM;

	for (f = 0; r == 0 && f < ARRAY_SIZE(rollout_families); f++)
		if (!(fm.b[f] = evbuffer_new()))
			r = -ENOMEM;
	if (r == 0)
		r = k->store->ops->rollout_gauges(k->store, since, rollout_lines, &fm);
	for (f = 0; r == 0 && f < ARRAY_SIZE(rollout_families); f++) {
		evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s gauge\n", rollout_families[f].name,
				    rollout_families[f].help, rollout_families[f].name);
		evbuffer_add_buffer(b, fm.b[f]);
	}
	for (f = 0; f < ARRAY_SIZE(rollout_families); f++)
		if (fm.b[f])
			evbuffer_free(fm.b[f]);
	free(fm.spec);
	return r;
}

/*
 * A counter only grows: events committed since kmemd started, every kind
 * present from the start so that rate() and increase() see the first one.
 */
static void event_counters(struct evbuffer *b, const struct kmemd_stats *st)
{
	const ProtobufCEnumDescriptor *d = &kmemctl__v1__event_kind__descriptor;
	char kind[48];
	unsigned int i;

	evbuffer_add_printf(b, "# HELP kmemd_kernel_events_total Events the agents reported since "
			       "kmemd started, by kind (lockups, stalls, trips, ...).\n"
			       "# TYPE kmemd_kernel_events_total counter\n");
	for (i = 0; i < d->n_values; i++) {
		if (d->values[i].value <= 0 || d->values[i].value >= KMEMD_EVENT_KINDS)
			continue;
		report_enum_name(d, d->values[i].value, "EVENT_KIND_", kind, sizeof(kind));
		evbuffer_add_printf(b, "kmemd_kernel_events_total{kind=\"%s\"} %llu\n", kind,
				    (unsigned long long)st->events[d->values[i].value]);
	}
}

void handle_metrics(struct http_request *req, struct kmemd *k, const struct tls_identity *peer)
{
	_cleanup_evbuffer_ struct evbuffer *b = evbuffer_new();
	const struct kmemd_stats *st = &k->stats;
	const struct probe_totals *t = &st->probes;
	char labels[256];
	uint64_t dropped = 0;
	size_t i;
	int r;

	(void)peer;
	if (!b) {
		reply_buffer(req, HTTP_INTERNAL, NULL, NULL, NULL);
		return;
	}
	r = tally(k, b, STORE_TALLY_HOSTS, "kmemd_hosts", "gauge", "Hosts that have reported.",
		  NULL, NULL, &dropped);
	if (r == 0)
		r = tally(k, b, STORE_TALLY_SILENT, "kmemd_hosts_silent", "gauge",
			  "Hosts (not revoked) whose last report is older than the label says.",
			  "for", NULL, &dropped);
	if (r == 0)
		r = tally(k, b, STORE_TALLY_STATES, "kmemd_mitigation_hosts", "gauge",
			  "Hosts by mitigation and state, as each last reported.", "mitigation",
			  "state", &dropped);
	if (r == 0)
		r = tally(k, b, STORE_TALLY_EVENTS, "kmemd_kernel_events_stored", "gauge",
			  "Events in the store by kind; retention deletes old ones.", "kind", NULL,
			  &dropped);
	if (r == 0)
		r = waiting(k, b, &dropped);
	if (r == 0) {
		event_counters(b, st);
		r = rollout_metrics(k, b);
	}
	if (r == 0)
		r = operators(k, b);
	if (r < 0) {
		log_error("metrics: the store failed: %s", k->store->ops->error(k->store));
		reply_error(req, HTTP_INTERNAL, "Internal Server Error", "the store failed");
		return;
	}
	evbuffer_add_printf(b, "# HELP kmemd_probe_seconds What the probes of kmemctl.ko "
			       "measured, by the policy the hosts ran.\n"
			       "# TYPE kmemd_probe_seconds histogram\n");
	for (i = 0; i < t->n; i++) {
		if (counts_events(t->s[i]->probe))
			continue;
		snprintf(labels, sizeof(labels), "probe=\"%s\",policy=\"%s\"", t->s[i]->probe,
			 t->s[i]->policy);
		histogram(b, "kmemd_probe_seconds", labels, &t->s[i]->h, 1e-9);
	}
	evbuffer_add_printf(b, "# HELP kmemd_probe_events Counts per probe event (TLB flushes "
			       "per purge), by the policy the hosts ran.\n"
			       "# TYPE kmemd_probe_events histogram\n");
	for (i = 0; i < t->n; i++) {
		if (!counts_events(t->s[i]->probe))
			continue;
		snprintf(labels, sizeof(labels), "probe=\"%s\",policy=\"%s\"", t->s[i]->probe,
			 t->s[i]->policy);
		histogram(b, "kmemd_probe_events", labels, &t->s[i]->h, 1);
	}
	evbuffer_add_printf(b,
			    "# HELP kmemd_reports_total Agent reports by outcome.\n"
			    "# TYPE kmemd_reports_total counter\n"
			    "kmemd_reports_total{outcome=\"stored\"} %llu\n"
			    "kmemd_reports_total{outcome=\"resent\"} %llu\n"
			    "kmemd_reports_total{outcome=\"refused\"} %llu\n"
			    "kmemd_reports_total{outcome=\"failed\"} %llu\n"
			    "# HELP kmemd_store_ingest_seconds Time to store one report.\n"
			    "# TYPE kmemd_store_ingest_seconds histogram\n",
			    (unsigned long long)st->reports_stored,
			    (unsigned long long)st->reports_resent,
			    (unsigned long long)st->reports_refused,
			    (unsigned long long)st->reports_failed);
	histogram(b, "kmemd_store_ingest_seconds", "", &st->ingest_ns, 1e-9);
	evbuffer_add_printf(b,
			    "# HELP kmemd_reports_trimmed_total Reports stored without the parts "
			    "whose names were past [limits].\n"
			    "# TYPE kmemd_reports_trimmed_total counter\n"
			    "kmemd_reports_trimmed_total %llu\n"
			    "# HELP kmemd_probe_samples_left_out_total Probe samples left out of "
			    "stored reports: their interval overlapped the host's earlier ones, "
			    "was in the future or too old, empty or too long.\n"
			    "# TYPE kmemd_probe_samples_left_out_total counter\n"
			    "kmemd_probe_samples_left_out_total %llu\n"
			    "# HELP kmemd_events_left_out_total Kernel events left out of stored "
			    "reports: in the future or too old, or lockups past what the host's "
			    "CPUs could report since its last report.\n"
			    "# TYPE kmemd_events_left_out_total counter\n"
			    "kmemd_events_left_out_total %llu\n"
			    "# HELP kmemd_probe_samples_weighed_total Probe samples scaled down in "
			    "kmemd_probe_seconds and kmemd_probe_events: their host's total would "
			    "pass ten times the median host's.\n"
			    "# TYPE kmemd_probe_samples_weighed_total counter\n"
			    "kmemd_probe_samples_weighed_total %llu\n"
			    "# HELP kmemd_build_files_malformed_total Reports stored without their "
			    "build file, which did not parse.\n"
			    "# TYPE kmemd_build_files_malformed_total counter\n"
			    "kmemd_build_files_malformed_total %llu\n"
			    "# HELP kmemd_metrics_series_dropped Series this scrape left out: past "
			    "%d in a family.\n"
			    "# TYPE kmemd_metrics_series_dropped gauge\n"
			    "kmemd_metrics_series_dropped %llu\n",
			    (unsigned long long)st->reports_trimmed,
			    (unsigned long long)st->samples_left_out,
			    (unsigned long long)st->events_left_out,
			    (unsigned long long)st->samples_weighed,
			    (unsigned long long)st->build_files_malformed, METRICS_FAMILY_MAX,
			    (unsigned long long)dropped);
	connections(b);
	evbuffer_add_printf(b,
			    "# HELP kmemd_engine_leader 1 when this kmemd holds the rollout "
			    "engine's lease and judges rollouts; 0 when another does.\n"
			    "# TYPE kmemd_engine_leader gauge\n"
			    "kmemd_engine_leader %d\n"
			    "# HELP kmemd_engine_pass_seconds The rollout engine's passes on this "
			    "kmemd: each judges every active rollout once (a tick).\n"
			    "# TYPE kmemd_engine_pass_seconds summary\n"
			    "kmemd_engine_pass_seconds_sum %.6f\n"
			    "kmemd_engine_pass_seconds_count %llu\n"
			    "# HELP kmemd_engine_pass_max_seconds The longest of those passes.\n"
			    "# TYPE kmemd_engine_pass_max_seconds gauge\n"
			    "kmemd_engine_pass_max_seconds %.6f\n",
			    k->engine_leader, k->engine_passes.sum_s,
			    (unsigned long long)k->engine_passes.n, k->engine_passes.max_s);
	names(b, k->names);
	process(b);
	reply_buffer(req, HTTP_OK, "OK", "text/plain; version=0.0.4; charset=utf-8", TAKE_PTR(b));
}

/* Each host's rows merged apart, for hist_merge_hosts(). */
struct merged {
	json_t *index; /* host id: its place in h */
	struct hist *h;
	size_t n, cap, samples;
};

static int merge(void *arg, const struct store_sample *x)
{
	struct merged *m = arg;
	json_t *at = json_object_get(m->index, x->host_id);
	struct hist *h;
	size_t i;

	if (!at) {
		if (m->n == m->cap) {
			h = reallocarray(m->h, m->cap ? m->cap * 2 : 64, sizeof(*h));
			if (!h)
				return -ENOMEM;
			m->h = h;
			m->cap = m->cap ? m->cap * 2 : 64;
		}
		memset(&m->h[m->n], 0, sizeof(m->h[0]));
		at = json_integer((json_int_t)m->n++);
		if (json_object_set_new(m->index, x->host_id, at) < 0)
			return -ENOMEM;
	}
	i = (size_t)json_integer_value(at);
	hist_merge(&m->h[i], &x->h);
	m->samples += x->samples;
	return 0;
}

/*
 * GET /v1/telemetry?probe=P[&from=MS][&to=MS][&host=H][&label=K:V]: one
 * histogram merged over the matching hosts and time, with its quantiles;
 * no host weighs more than HIST_HOST_WEIGHT_MAX median hosts
 * (hist_merge_hosts(): "hosts_scaled" says how many were scaled down).
 */
void handle_telemetry_get(struct http_request *req, struct kmemd *k,
			  const struct tls_identity *peer)
{
	_cleanup_query_ struct evkeyvalq q = { 0 };
	_cleanup_json_ json_t *index = json_object();
	struct merged m = { .index = index };
	struct store_filter f = { 0 };
	struct hist fleet;
	size_t scaled;
	char label[256], *colon;
	json_t *buckets;
	const char *v;
	int r, i;

	(void)peer;
	if (!request_query(req, &q, "want ?probe=NAME[&from=MS&to=MS][&host=ID][&label=KEY:VALUE]"))
		return;
	f.probe = evhttp_find_header(&q, "probe");
	f.host = evhttp_find_header(&q, "host");
	v = evhttp_find_header(&q, "label");
	if (v) {
		snprintf(label, sizeof(label), "%s", v);
		colon = strchr(label, ':');
		if (!colon || colon == label) {
			reply_error(req, HTTP_BADREQUEST, "Bad Request", "label must be KEY:VALUE");
			return;
		}
		*colon = '\0';
		f.label_key = label;
		f.label_value = colon + 1;
	}
	/* a label key goes into a JSON path: a name, or the path would not parse */
	if (!text_name_valid(f.probe, REPORT_NAME_MAX) ||
	    (f.host && !text_name_valid(f.host, REPORT_HOST_ID_MAX)) ||
	    (f.label_key && (!text_name_valid(f.label_key, REPORT_NAME_MAX) ||
			     !text_valid(f.label_value, REPORT_TEXT_MAX))) ||
	    query_number(evhttp_find_header(&q, "from"), QUERY_MS_MAX, &f.from_ms) < 0 ||
	    query_number(evhttp_find_header(&q, "to"), QUERY_MS_MAX, &f.to_ms) < 0) {
		reply_error(
			req, HTTP_BADREQUEST, "Bad Request",
			"probe is required; probe, host and label keys are names of " TEXT_NAME_CHARSET
			"; from and to are unix milliseconds");
		return;
	}
	r = index ? k->store->ops->samples(k->store, &f, merge, &m) : -ENOMEM;
	if (r < 0) {
		free(m.h);
		reply_store_failed(req, k);
		return;
	}
	scaled = hist_merge_hosts(&fleet, m.h, m.n);
	free(m.h);
	buckets = json_array();
	for (i = 0; i < HIST_BUCKETS; i++)
		if (fleet.buckets[i])
			json_array_append_new(
				buckets, json_pack("[I, I]", json_count(hist_upper((unsigned)i)),
						   json_count(fleet.buckets[i])));
	reply_json(req, HTTP_OK, "OK",
		   json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}", "probe",
			     f.probe, "hosts", (json_int_t)m.n, "hosts_scaled", (json_int_t)scaled,
			     "samples", json_count(m.samples), "count", json_count(fleet.count),
			     "sum_ns", json_count(fleet.sum_ns), "p50_ns",
			     json_count(hist_quantile(&fleet, 0.5)), "p90_ns",
			     json_count(hist_quantile(&fleet, 0.9)), "p99_ns",
			     json_count(hist_quantile(&fleet, 0.99)), "max_ns",
			     json_count(fleet.max_ns), "buckets", buckets));
}

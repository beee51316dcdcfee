// SPDX-License-Identifier: GPL-2.0
/* POST /v1/agent/report: decode, validate, hand to the ingest writer, acknowledge. */
#include <errno.h>
#include <event2/event.h>
#include <event2/http.h>
#include <stdlib.h>
#include <string.h>

#include "builds.h"
#include "cert-expiry.h"
#include "conn.h"
#include "desired.h"
#include "ingest-worker.h"
#include "kmemctl/v1/report.pb-c.h"
#include "log.h"
#include "notify.h"
#include "names.h"
#include "pb-arena.h"
#include "pbstrings.h"
#include "report-check.h"
#include "server.h"
#include "store.h"

void handle_health(struct http_request *req, struct kmemd *k, const struct tls_identity *peer)
{
	(void)k;
	(void)peer;
	reply_text(req, HTTP_OK, "OK", "ok");
}

static void refuse(struct http_request *req, int code, const char *reason,
		   Kmemctl__V1__Status status, const char *why)
{
	Kmemctl__V1__ReportReply rr = KMEMCTL__V1__REPORT_REPLY__INIT;

	rr.status = status;
	rr.reason = (char *)why;
	reply_message(req, code, reason, &rr.base);
}

/*
 * The bundle the host should run, when it runs another. A host that runs a
 * newer version of the same policy (from its own file) is left alone.
 */
static Kmemctl__V1__SignedPolicy *policy_for(struct kmemd *k, const Kmemctl__V1__Report *rep)
{
	Kmemctl__V1__SignedPolicy *sp = NULL;
	struct store_policy p;
	char name[STORE_ID_MAX];
	uint64_t version;

	if (desired_policy(k->desired, rep->facts, name, &version) < 0)
		return NULL;
	if (!strcmp(name, rep->policy_name) && version <= rep->policy_version)
		return NULL;
	if (k->store->ops->policy_get(k->store, name, version, &p) < 0)
		return NULL;
	if (p.bundle)
		sp = kmemctl__v1__signed_policy__unpack(NULL, p.bundle_len, p.bundle);
	store_policy_clear(&p);
	return sp;
}

/*
 * 1 when the host is revoked. A connection's host found not revoked is
 * asked about again only once k->revocations moves: a revocation here
 * moves it at once, one by another kmemd within an engine tick.
 */
static int revoked(struct http_request *req, struct kmemd *k, const struct tls_identity *peer)
{
	uint64_t *seen = conn_not_revoked_at(req);
	int r;

	if (seen && *seen == k->revocations)
		return 0;
	r = k->store->ops->revoked(k->store, peer->cn);
	if (r == 0 && seen)
		*seen = k->revocations;
	return r;
}

/*
 * A report with the ingest writer (ingest-worker.h), and what answering
 * it takes once its batch is back: it is acknowledged only once its batch
 * committed. A batch that failed answers all of its reports 503, and their
 * agents send them again. The request stays valid meanwhile: when its
 * connection closes, the request outlives it, and the reply frees it.
 */
/* A report with its reply, waiting for its batch: all of it in the report's arena. */
struct pending {
	struct ingest_job job;
	struct http_request *req;
	struct pb_arena *arena;
	Kmemctl__V1__Report *rep;
	uint8_t *reply;
	size_t len;
};

static void pending_free(struct pending *p)
{
	pb_arena_free(p->arena);
}

/*
 * On the writer: the report's probe histograms, each host weighed
 * (probe_shares_weigh()), and its events, for /metrics once committed.
 */
static void count(void *arg, struct ingest_batch *b, const Kmemctl__V1__Report *rep)
{
	struct kmemd *k = arg;
	char policy[96] = "none";
	struct hist h;
	size_t i;
	int r;

	if (rep->policy_name && rep->policy_name[0])
		snprintf(policy, sizeof(policy), "%s@%llu", rep->policy_name,
			 (unsigned long long)rep->policy_version);
	for (i = 0; i < rep->n_probes; i++) {
		const Kmemctl__V1__ProbeSample *p = rep->probes[i];

		if (!p->hist || hist_from_pb(&h, p->hist) < 0)
			continue;
		r = probe_shares_weigh(&k->probe_shares, rep->facts->host_id, p->probe, &h);
		b->weighed += r == 1;
		if (r < 0 || probe_totals_add(&b->probes, p->probe, policy, &h) < 0)
			log_warning("out of memory: a probe histogram is missing from /metrics");
	}
	for (i = 0; i < rep->n_events; i++)
		if (rep->events[i]->kind > 0 && rep->events[i]->kind < KMEMD_EVENT_KINDS)
			b->events[rep->events[i]->kind]++;
}

/*
 * The writer left samples or events out of p: counted, logged, and said
 * in its reply's reason (after any the loop gave), for the agent's log.
 */
static void left_out(struct kmemd *k, struct pending *p, const struct ingest_job *j)
{
	const char *why = j->why;
	Kmemctl__V1__ReportReply *rr;
	char reason[1200];
	uint8_t *buf;
	size_t len;

	k->stats.samples_left_out += j->samples_left_out;
	k->stats.events_left_out += j->events_left_out;
	log_ratelimited(&k->stats.report_log, LOG_WARNING, "report %llu from '%s': %s",
			(unsigned long long)p->rep->seq, p->rep->facts->host_id, why);
	rr = kmemctl__v1__report_reply__unpack(pb_arena_allocator(p->arena), p->len, p->reply);
	if (!rr)
		return;
	snprintf(reason, sizeof(reason), "%s%s%s", rr->reason ?: "",
		 rr->reason && rr->reason[0] ? "; " : "", why);
	rr->reason = reason;
	len = protobuf_c_message_get_packed_size(&rr->base);
	buf = pb_arena_alloc(p->arena, len);
	if (buf) { /* else the reply as it was, without the reason */
		p->len = protobuf_c_message_pack(&rr->base, buf);
		p->reply = buf;
	}
}

/* A batch back from the writer: its reports answered, counted and freed. */
static void batch_done(void *arg, struct ingest_batch *b)
{
	struct kmemd *k = arg;
	struct ingest_job *j = b->jobs, *next;
	int r = b->r; /* b is in a job freed below */
	size_t i;

	if (b->failed) {
		log_error("storing report %llu from '%s' failed: %s",
			  (unsigned long long)b->failed->rep->seq, b->failed->rep->facts->host_id,
			  b->store_error);
		if (b->n > 1)
			log_error("dropping the %zu other reports of its batch", b->n - 1);
	} else if (r < 0) {
		log_error("committing %zu reports failed: %s", b->n, b->store_error);
	}
	if (r == 0 && probe_totals_merge(&k->stats.probes, &b->probes) < 0)
		log_warning("out of memory: some probe histograms are missing from /metrics");
	for (i = 0; r == 0 && i < KMEMD_EVENT_KINDS; i++)
		k->stats.events[i] += b->events[i];
	if (r == 0)
		k->stats.samples_weighed += b->weighed;
	probe_totals_free(&b->probes);
	for (; j; j = next) {
		struct pending *p = (struct pending *)j;

		next = j->next;
		if (j->ingest_ns)
			hist_record(&k->stats.ingest_ns, j->ingest_ns);
		if (r < 0) {
			k->stats.reports_failed++;
			refuse(p->req, 503, "Service Unavailable",
			       KMEMCTL__V1__STATUS__STATUS_UNAVAILABLE,
			       "the store failed; keep the report and send it again");
		} else {
			if (j->r == 0 && (j->samples_left_out || j->events_left_out))
				left_out(k, p, j);
			if (j->r == 1) {
				k->stats.reports_resent++;
				log_debug(
					"resent report %llu of '%s': acknowledged, not stored twice",
					(unsigned long long)p->rep->seq, p->rep->facts->host_id);
			} else {
				k->stats.reports_stored++;
			}
			reply_bytes(p->req, HTTP_OK, "OK", PROTOBUF_TYPE, p->reply, p->len);
		}
		pending_free(p);
	}
}

int reports_start(struct kmemd *k, char *err, size_t errlen)
{
	return ingest_worker_new(k->base, k->store, k->cfg->batch_wait_ms, count, batch_done, k,
				 &k->ingest, err, errlen);
}

void reports_stop(struct kmemd *k)
{
	ingest_worker_free(k->ingest);
	k->ingest = NULL;
	probe_shares_free(&k->probe_shares);
}

/* The report's mitigation trips, each to the webhook. */
static void notify_trips(struct kmemd *k, const Kmemctl__V1__Report *rep)
{
	for (size_t i = 0; k->notify && i < rep->n_events; i++) {
		const Kmemctl__V1__KernelEvent *e = rep->events[i];

		if (e->kind != KMEMCTL__V1__EVENT_KIND__EVENT_KIND_TRIP)
			continue;
		notify_post(k->notify,
			    json_pack("{s:s, s:s, s:s?, s:s?, s:I}", "kind", "trip", "host",
				      rep->facts->host_id, "mitigation",
				      e->mitigation && *e->mitigation ? e->mitigation : NULL,
				      "message", e->message && *e->message ? e->message : NULL,
				      "unix_ms", (json_int_t)e->unix_ms));
	}
}

/*
 * The report's samples and events whose times kmemd's clock rules out,
 * left out (report_trim_samples(), report_trim_events(); the writer
 * checks them against the host's stored reports). reason: what the reply
 * says, after earlier (NULL: none).
 */
static size_t trim_by_clock(struct kmemd *k, Kmemctl__V1__Report *rep, const char *earlier,
			    char *reason, size_t len)
{
	int64_t now = kmemd_now_ms();
	struct report_span_bounds sb = { .now_ms = now,
					 .oldest_ms = now - (int64_t)k->cfg->raw_retention_ms,
					 .after_ms = INT64_MIN };
	struct report_event_bounds eb = { .now_ms = now,
					  .oldest_ms = now - (int64_t)k->cfg->retention_ms,
					  .after_ms = INT64_MIN };
	char samples[256], events[256];
	size_t ns = report_trim_samples(rep, &sb, samples, sizeof(samples));
	size_t ne = report_trim_events(rep, &eb, events, sizeof(events));

	k->stats.samples_left_out += ns;
	k->stats.events_left_out += ne;
	if (ns)
		log_ratelimited(&k->stats.report_log, LOG_WARNING, "report %llu from '%s': %s",
				(unsigned long long)rep->seq, rep->facts->host_id, samples);
	if (ne)
		log_ratelimited(&k->stats.report_log, LOG_WARNING, "report %llu from '%s': %s",
				(unsigned long long)rep->seq, rep->facts->host_id, events);
	snprintf(reason, len, "%s%s%s%s%s", earlier ?: "", earlier && ns + ne ? "; " : "",
		 ns ? samples : "", ns && ne ? "; " : "", ne ? events : "");
	return ns + ne;
}

void handle_report(struct http_request *req, struct kmemd *k, const struct tls_identity *peer)
{
	Kmemctl__V1__ReportReply rr = KMEMCTL__V1__REPORT_REPLY__INIT;
	Kmemctl__V1__Report *rep = NULL;
	const struct store_build *build;
	struct pb_arena *arena;
	struct pending *p;
	size_t len;
	int r, left_out = 0;
	char why[320], why2[900];

	if (!content_type_is(req, PROTOBUF_TYPE)) {
		reply_text(req, 415, "Unsupported Media Type",
			   "content type must be " PROTOBUF_TYPE);
		return;
	}
	arena = pb_arena_for(req->body_len);
	if (arena)
		rep = (Kmemctl__V1__Report *)request_message_in(
			req, &kmemctl__v1__report__descriptor, pb_arena_allocator(arena));
	if (!rep || !rep->facts || !rep->facts->host_id || !rep->facts->host_id[0]) {
		log_ratelimited(&k->stats.report_log, LOG_WARNING, "report from '%s' is malformed",
				peer->cn);
		k->stats.reports_refused++;
		r = pb_strings_check(&kmemctl__v1__report__descriptor, req->body, req->body_len,
				     why, sizeof(why) - 32);
		if (r == -EINVAL)
			strcat(why, " holds a NUL byte");
		refuse(req, HTTP_BADREQUEST, "Bad Request", KMEMCTL__V1__STATUS__STATUS_MALFORMED,
		       r == -EINVAL ? why : "report does not decode or has no host id");
		goto out;
	}
	if (strcmp(rep->facts->host_id, peer->cn) != 0) {
		log_ratelimited(&k->stats.report_log, LOG_WARNING,
				"certificate of host '%s' tried to report as '%s'", peer->cn,
				rep->facts->host_id);
		k->stats.reports_refused++;
		refuse(req, 403, "Forbidden", KMEMCTL__V1__STATUS__STATUS_WRONG_HOST,
		       "certificate is for another host");
		goto out;
	}
	if (report_check(rep, why, sizeof(why)) < 0) {
		log_ratelimited(&k->stats.report_log, LOG_WARNING,
				"report %llu from '%s' refused: %s", (unsigned long long)rep->seq,
				peer->cn, why);
		k->stats.reports_refused++;
		refuse(req, HTTP_BADREQUEST, "Bad Request", KMEMCTL__V1__STATUS__STATUS_MALFORMED,
		       why);
		goto out;
	}
	log_debug("report %llu from '%s' (kernel '%s', %u cpus)", (unsigned long long)rep->seq,
		  peer->cn, rep->facts->kernel_release, rep->facts->online_cpus);
	r = revoked(req, k, peer);
	if (r == 1) {
		log_ratelimited(&k->stats.report_log, LOG_WARNING,
				"report from revoked host '%s' refused", peer->cn);
		k->stats.reports_refused++;
		refuse(req, 403, "Forbidden", KMEMCTL__V1__STATUS__STATUS_REVOKED,
		       CONN_TEXT_REVOKED_HOST);
		goto out;
	}
	if (r == 0)
		notify_trips(k, rep);
	/* a table too full to grow misses one host's expiry, not its report */
	if (r == 0 && cert_expiry_note(&k->host_certs, peer->cn, (int64_t)peer->not_after,
				       kmemd_now_ms()) < 0)
		log_ratelimited(&k->stats.report_log, LOG_WARNING,
				"the expiry of '%s''s certificate is not counted: out of memory",
				peer->cn);
	if (r == 0)
		r = left_out = names_admit(k->names, rep, kmemd_now_ms(), why, sizeof(why));
	if (r > 0) {
		k->stats.reports_trimmed++;
		log_ratelimited(&k->stats.report_log, LOG_WARNING, "report %llu from '%s': %s",
				(unsigned long long)rep->seq, peer->cn, why);
		r = 0;
	}
	if (r == 0 && trim_by_clock(k, rep, left_out ? why : NULL, why2, sizeof(why2)) > 0)
		left_out = 1;
	if (r < 0) {
		k->stats.reports_failed++;
		log_error("storing report %llu from '%s' failed: %s", (unsigned long long)rep->seq,
			  peer->cn, k->store->ops->error(k->store));
		refuse(req, 503, "Service Unavailable", KMEMCTL__V1__STATUS__STATUS_UNAVAILABLE,
		       "the store failed; keep the report and send it again");
		goto out;
	}
	rr.status = KMEMCTL__V1__STATUS__STATUS_OK;
	rr.acked_seq = rep->seq;
	/* stored, but not all of it: the agent logs why */
	rr.reason = left_out > 0 ? why2 : NULL;
	rr.policy = policy_for(k, rep);
	rr.fleet_stop = k->fleet_stop.stopped;
	build = rep->build_file && rep->build_file[0] ? builds_report(k, rep, arena, &rr) : NULL;
	len = protobuf_c_message_get_packed_size(&rr.base);
	p = pb_arena_alloc(arena, sizeof(*p));
	if (p)
		*p = (struct pending){
			.job = { .rep = rep, .build = build, .now_ms = kmemd_now_ms() },
			.req = req,
			.arena = arena,
			.rep = rep,
			.reply = pb_arena_alloc(arena, len ?: 1),
			.len = len
		};
	if (p && p->reply)
		protobuf_c_message_pack(&rr.base, p->reply);
	if (rr.policy)
		kmemctl__v1__signed_policy__free_unpacked(rr.policy, NULL);
	if (!p || !p->reply) {
		reply_buffer(req, HTTP_INTERNAL, NULL, NULL, NULL);
		goto out;
	}
	/* the report is the writer's until its batch is back; the reply waits for the commit */
	ingest_worker_submit(k->ingest, &p->job);
	return;
out:
	pb_arena_free(arena);
}

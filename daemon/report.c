// SPDX-License-Identifier: GPL-2.0
/* POST /v1/agent/report: decode, validate, acknowledge. */
#include <errno.h>
#include <event2/event.h>
#include <event2/http.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conn.h"
#include "desired.h"
#include "kmemctl/v1/report.pb-c.h"
#include "log.h"
#include "names.h"
#include "report-check.h"
#include "server.h"
#include "store.h"

void handle_health(struct evhttp_request *req, struct kmemd *k, const struct tls_identity *peer)
{
	(void)k;
	(void)peer;
	reply_text(req, HTTP_OK, "OK", "ok");
}

static void refuse(struct evhttp_request *req, int code, const char *reason,
		   Kmemctl__V1__Status status, const char *why)
{
	Kmemctl__V1__ReportReply rr = KMEMCTL__V1__REPORT_REPLY__INIT;

	rr.status = status;
	rr.reason = (char *)why;
	reply_message(req, code, reason, &rr.base);
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
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
static int revoked(struct evhttp_request *req, struct kmemd *k, const struct tls_identity *peer)
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
 * Group commit: reports are stored in one open batch and acknowledged
 * only once it commits, at most batch_wait later or when the batch is
 * full. An agent never hears "acknowledged" for a report that is not on
 * disk; a batch that fails to commit answers all of its reports 503, and
 * their agents send them again.
 */
struct batch {
	struct kmemd *k;
	struct event *timer;
	bool open;
	size_t n;
	struct {
		struct evhttp_request *req;
		uint8_t *reply;
		size_t len;
		bool stored; /* not a resend: counted as stored until the commit fails */
	} p[BATCH_MAX];
	struct probe_totals pending; /* the batch's probe histograms, for /metrics once committed */
	uint64_t events[KMEMD_EVENT_KINDS]; /* and its events, by kind */
};

/* Commits the batch and answers its reports; undo: rolls it back and answers them 503. */
static void batch_end(struct batch *b, bool undo)
{
	struct kmemd *k = b->k;
	size_t i;
	int r = -EIO;

	if (!b->open)
		return;
	evtimer_del(b->timer);
	if (undo)
		k->store->ops->rollback(k->store);
	else
		r = k->store->ops->commit(k->store);
	b->open = false;
	if (r < 0 && !undo)
		log_error("committing %zu reports failed: %s", b->n,
			  k->store->ops->error(k->store));
	if (r == 0 && probe_totals_merge(&k->stats.probes, &b->pending) < 0)
		log_warning("out of memory: some probe histograms are missing from /metrics");
	for (i = 0; r == 0 && i < KMEMD_EVENT_KINDS; i++)
		k->stats.events[i] += b->events[i];
	memset(b->events, 0, sizeof(b->events));
	probe_totals_clear(&b->pending);
	for (i = 0; i < b->n; i++) {
		if (r < 0) {
			k->stats.reports_failed++;
			k->stats.reports_stored -= b->p[i].stored;
		}
		if (r < 0) {
			refuse(b->p[i].req, 503, "Service Unavailable",
			       KMEMCTL__V1__STATUS__STATUS_UNAVAILABLE,
			       "the store failed; keep the report and send it again");
		} else {
			reply_bytes(b->p[i].req, HTTP_OK, "OK", PROTOBUF_TYPE, b->p[i].reply,
				    b->p[i].len);
		}
		free(b->p[i].reply);
	}
	b->n = 0;
}

static void batch_flush(struct batch *b)
{
	batch_end(b, false);
}

static void on_batch_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	batch_flush(arg);
}

int batch_new(struct kmemd *k)
{
	struct batch *b = calloc(1, sizeof(*b));

	if (!b)
		return -ENOMEM;
	b->k = k;
	b->timer = evtimer_new(k->base, on_batch_timer, b);
	if (!b->timer) {
		free(b);
		return -ENOMEM;
	}
	k->batch = b;
	return 0;
}

void batch_free(struct kmemd *k)
{
	if (!k->batch)
		return;
	batch_flush(k->batch);
	event_free(k->batch->timer);
	probe_totals_free(&k->batch->pending);
	free(k->batch);
	k->batch = NULL;
}

static int batch_join(struct batch *b)
{
	struct timeval tv = { .tv_sec = (time_t)(b->k->cfg->batch_wait_ms / 1000),
			      .tv_usec = (suseconds_t)(b->k->cfg->batch_wait_ms % 1000) * 1000 };
	int r;

	if (b->open)
		return 0;
	r = b->k->store->ops->begin(b->k->store);
	if (r < 0)
		return r;
	b->open = true;
	evtimer_add(b->timer, &tv);
	return 0;
}

void batch_commit(struct kmemd *k)
{
	if (k->batch)
		batch_flush(k->batch);
}

/* The report's probe histograms and events, counted for /metrics when the batch commits. */
static void batch_count(struct batch *b, const Kmemctl__V1__Report *rep)
{
	char policy[96] = "none";
	struct hist h;
	size_t i;

	if (rep->policy_name && rep->policy_name[0])
		snprintf(policy, sizeof(policy), "%s@%llu", rep->policy_name,
			 (unsigned long long)rep->policy_version);
	for (i = 0; i < rep->n_probes; i++)
		if (rep->probes[i]->hist && hist_from_pb(&h, rep->probes[i]->hist) == 0 &&
		    probe_totals_add(&b->pending, rep->probes[i]->probe, policy, &h) < 0)
			log_warning("out of memory: a probe histogram is missing from /metrics");
	for (i = 0; i < rep->n_events; i++)
		if (rep->events[i]->kind > 0 && rep->events[i]->kind < KMEMD_EVENT_KINDS)
			b->events[rep->events[i]->kind]++;
}

/* The reply waits for the batch's commit; it takes rr's encoding. */
static void batch_reply(struct batch *b, struct evhttp_request *req, Kmemctl__V1__ReportReply *rr,
			bool stored)
{
	size_t len;
	uint8_t *buf = pack_message(&rr->base, &len);

	if (!buf) {
		reply_buffer(req, HTTP_INTERNAL, NULL, NULL, NULL);
		return;
	}
	b->p[b->n].req = req;
	b->p[b->n].reply = buf;
	b->p[b->n].len = len;
	b->p[b->n].stored = stored;
	if (++b->n == BATCH_MAX)
		batch_flush(b);
}

void handle_report(struct evhttp_request *req, struct kmemd *k, const struct tls_identity *peer)
{
	Kmemctl__V1__ReportReply rr = KMEMCTL__V1__REPORT_REPLY__INIT;
	Kmemctl__V1__Report *rep;
	struct names_cut cut = { 0 };
	int r, left_out = 0;
	char why[320];

	if (!content_type_is(req, PROTOBUF_TYPE)) {
		reply_text(req, 415, "Unsupported Media Type",
			   "content type must be " PROTOBUF_TYPE);
		return;
	}
	rep = (Kmemctl__V1__Report *)request_message(req, &kmemctl__v1__report__descriptor);
	if (rep)
		cut = (struct names_cut){ rep->n_probes, rep->n_mitigations };
	if (!rep || !rep->facts || !rep->facts->host_id || !rep->facts->host_id[0]) {
		log_ratelimited(&k->stats.report_log, LOG_WARNING, "report from '%s' is malformed",
				peer->cn);
		k->stats.reports_refused++;
		refuse(req, HTTP_BADREQUEST, "Bad Request", KMEMCTL__V1__STATUS__STATUS_MALFORMED,
		       "report does not decode or has no host id");
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
		       "this host id is revoked");
		goto out;
	}
	if (r == 0)
		r = batch_join(k->batch);
	if (r == 0)
		r = left_out = names_admit(k->names, rep, kmemd_now_ms(), &cut, why, sizeof(why));
	if (r > 0) {
		k->stats.reports_trimmed++;
		log_ratelimited(&k->stats.report_log, LOG_WARNING, "report %llu from '%s': %s",
				(unsigned long long)rep->seq, peer->cn, why);
		r = 0;
	}
	if (r == 0) {
		int64_t t0 = mono_ns();

		r = k->store->ops->ingest(k->store, rep, kmemd_now_ms());
		hist_record(&k->stats.ingest_ns, (uint64_t)(mono_ns() - t0));
	}
	if (r < 0)
		k->stats.reports_failed++;
	else if (r == 1)
		k->stats.reports_resent++;
	else
		k->stats.reports_stored++;
	if (r < 0) {
		log_error("storing report %llu from '%s' failed: %s", (unsigned long long)rep->seq,
			  peer->cn, k->store->ops->error(k->store));
		/* part of it may be in the batch: the batch goes, and its agents send again */
		if (k->batch->open) {
			log_error("dropping the %zu reports of its batch", k->batch->n);
			batch_end(k->batch, true);
		}
		refuse(req, 503, "Service Unavailable", KMEMCTL__V1__STATUS__STATUS_UNAVAILABLE,
		       "the store failed; keep the report and send it again");
		goto out;
	}
	if (r == 1)
		log_debug("resent report %llu of '%s': acknowledged, not stored twice",
			  (unsigned long long)rep->seq, peer->cn);
	rr.status = KMEMCTL__V1__STATUS__STATUS_OK;
	rr.acked_seq = rep->seq;
	/* stored, but not all of it: the agent logs why */
	rr.reason = left_out > 0 ? why : NULL;
	rr.policy = policy_for(k, rep);
	if (r == 0)
		batch_count(k->batch, rep);
	batch_reply(k->batch, req, &rr, r == 0);
	if (rr.policy)
		kmemctl__v1__signed_policy__free_unpacked(rr.policy, NULL);
out:
	if (rep) {
		names_restore(rep, &cut);
		kmemctl__v1__report__free_unpacked(rep, NULL);
	}
}

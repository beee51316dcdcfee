// SPDX-License-Identifier: GPL-2.0
/* POST /v1/agent/report: decode, validate, acknowledge. */
#include <event2/buffer.h>
#include <event2/http.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kmemctl/v1/report.pb-c.h"
#include "log.h"
#include "server.h"
#include "store.h"

void handle_health(struct evhttp_request *req, struct kmemd *k, const struct tls_identity *peer)
{
	(void)k;
	(void)peer;
	reply_text(req, HTTP_OK, "OK", "ok");
}

static void send_reply(struct evhttp_request *req, int code, const char *reason,
		       Kmemctl__V1__ReportReply *rr)
{
	size_t len = kmemctl__v1__report_reply__get_packed_size(rr);
	uint8_t *buf = malloc(len ? len : 1);
	struct evbuffer *b = evbuffer_new();

	if (!buf || !b) {
		free(buf);
		if (b)
			evbuffer_free(b);
		evhttp_send_error(req, HTTP_INTERNAL, NULL);
		return;
	}
	kmemctl__v1__report_reply__pack(rr, buf);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", PROTOBUF_TYPE);
	evbuffer_add(b, buf, len);
	evhttp_send_reply(req, code, reason, b);
	evbuffer_free(b);
	free(buf);
}

static void refuse(struct evhttp_request *req, int code, const char *reason,
		   Kmemctl__V1__Status status, const char *why)
{
	Kmemctl__V1__ReportReply rr = KMEMCTL__V1__REPORT_REPLY__INIT;

	rr.status = status;
	rr.reason = (char *)why;
	send_reply(req, code, reason, &rr);
}

/* The body as one contiguous buffer; evhttp already bounded its size. */
static Kmemctl__V1__Report *decode_body(struct evhttp_request *req)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	size_t len = evbuffer_get_length(in);
	const uint8_t *data = evbuffer_pullup(in, -1);

	if (!data && len)
		return NULL;
	return kmemctl__v1__report__unpack(NULL, len, data);
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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

	if (desired_policy(k, rep->facts, name, sizeof(name), &version) < 0)
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

void handle_report(struct evhttp_request *req, struct kmemd *k, const struct tls_identity *peer)
{
	const char *type =
		evhttp_find_header(evhttp_request_get_input_headers(req), "Content-Type");
	Kmemctl__V1__ReportReply rr = KMEMCTL__V1__REPORT_REPLY__INIT;
	Kmemctl__V1__Report *rep;
	int r;

	if (!type || strcmp(type, PROTOBUF_TYPE) != 0) {
		reply_text(req, 415, "Unsupported Media Type",
			   "content type must be " PROTOBUF_TYPE);
		return;
	}
	rep = decode_body(req);
	if (!rep || !rep->facts || !rep->facts->host_id || !rep->facts->host_id[0]) {
		log_warning("report from '%s' is malformed", peer->cn);
		k->stats.reports_refused++;
		refuse(req, HTTP_BADREQUEST, "Bad Request", KMEMCTL__V1__STATUS__STATUS_MALFORMED,
		       "report does not decode or has no host id");
		goto out;
	}
	if (strcmp(rep->facts->host_id, peer->cn) != 0) {
		log_warning("certificate of host '%s' tried to report as '%s'", peer->cn,
			    rep->facts->host_id);
		k->stats.reports_refused++;
		refuse(req, 403, "Forbidden", KMEMCTL__V1__STATUS__STATUS_WRONG_HOST,
		       "certificate is for another host");
		goto out;
	}
	log_debug("report %llu from '%s' (kernel '%s', %u cpus)", (unsigned long long)rep->seq,
		  peer->cn, rep->facts->kernel_release, rep->facts->online_cpus);
	r = k->store->ops->revoked(k->store, peer->cn);
	if (r == 1) {
		log_warning("report from revoked host '%s' refused", peer->cn);
		k->stats.reports_refused++;
		refuse(req, 403, "Forbidden", KMEMCTL__V1__STATUS__STATUS_REVOKED,
		       "this host id is revoked");
		goto out;
	}
	if (r == 0) {
		int64_t t0 = mono_ns();

		r = k->store->ops->ingest(k->store, rep, now_ms());
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
		refuse(req, 503, "Service Unavailable", KMEMCTL__V1__STATUS__STATUS_UNAVAILABLE,
		       "the store failed; keep the report and send it again");
		goto out;
	}
	if (r == 1)
		log_debug("resent report %llu of '%s': acknowledged, not stored twice",
			  (unsigned long long)rep->seq, peer->cn);
	rr.status = KMEMCTL__V1__STATUS__STATUS_OK;
	rr.acked_seq = rep->seq;
	rr.policy = policy_for(k, rep);
	send_reply(req, HTTP_OK, "OK", &rr);
	if (rr.policy)
		kmemctl__v1__signed_policy__free_unpacked(rr.policy, NULL);
out:
	if (rep)
		kmemctl__v1__report__free_unpacked(rep, NULL);
}

// SPDX-License-Identifier: GPL-2.0
/* POST /v1/agent/report: decode, validate, acknowledge. */
#include <event2/buffer.h>
#include <event2/http.h>
#include <stdlib.h>
#include <string.h>

#include "kmemctl/v1/report.pb-c.h"
#include "log.h"
#include "server.h"

#define PROTOBUF_TYPE "application/x-protobuf"

void handle_health(struct evhttp_request *req, const struct kmemd_config *cfg,
		   const struct tls_identity *peer)
{
	(void)cfg;
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

void handle_report(struct evhttp_request *req, const struct kmemd_config *cfg,
		   const struct tls_identity *peer)
{
	const char *type =
		evhttp_find_header(evhttp_request_get_input_headers(req), "Content-Type");
	Kmemctl__V1__ReportReply rr = KMEMCTL__V1__REPORT_REPLY__INIT;
	Kmemctl__V1__Report *rep;

	(void)cfg;
	if (!type || strcmp(type, PROTOBUF_TYPE) != 0) {
		reply_text(req, 415, "Unsupported Media Type",
			   "content type must be " PROTOBUF_TYPE);
		return;
	}
	rep = decode_body(req);
	if (!rep || !rep->facts || !rep->facts->host_id || !rep->facts->host_id[0]) {
		log_warning("report from '%s' is malformed", peer->cn);
		refuse(req, HTTP_BADREQUEST, "Bad Request", KMEMCTL__V1__STATUS__STATUS_MALFORMED,
		       "report does not decode or has no host id");
		goto out;
	}
	if (strcmp(rep->facts->host_id, peer->cn) != 0) {
		log_warning("certificate of host '%s' tried to report as '%s'", peer->cn,
			    rep->facts->host_id);
		refuse(req, 403, "Forbidden", KMEMCTL__V1__STATUS__STATUS_WRONG_HOST,
		       "certificate is for another host");
		goto out;
	}
	log_debug("report %llu from '%s' (kernel '%s', %u cpus)", (unsigned long long)rep->seq,
		  peer->cn, rep->facts->kernel_release, rep->facts->online_cpus);
	rr.status = KMEMCTL__V1__STATUS__STATUS_OK;
	rr.acked_seq = rep->seq;
	send_reply(req, HTTP_OK, "OK", &rr);
out:
	if (rep)
		kmemctl__v1__report__free_unpacked(rep, NULL);
}

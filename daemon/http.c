// SPDX-License-Identifier: GPL-2.0
/* Request and reply helpers (http.h). */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_struct.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audit.h"
#include "conn.h"
#include "evloop.h"
#include "http.h"
#include "kmemd.h"
#include "log.h"
#include "store.h"
#include "text.h"

/*
 * A reply written in this turn of the loop, not once epoll says the socket
 * is writable (it almost always is): the write event its bufferevent arms
 * and disarms once written then cancel out in the loop's change list, and
 * cost no epoll_ctl() each. A reply's connection is past its handshake,
 * so its write event waits for nothing but room in the socket.
 */
static void write_now(struct evhttp_connection *evcon)
{
	struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;

	if (bev && event_pending(&bev->ev_write, EV_WRITE, NULL))
		event_active(&bev->ev_write, EV_WRITE, 1);
}

void reply_buffer(struct evhttp_request *req, int code, const char *reason, const char *type,
		  struct evbuffer *b)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);

	if (!b) {
		audit_answered(req, HTTP_INTERNAL);
		evhttp_send_error(req, HTTP_INTERNAL, NULL);
		return;
	}
	if (type)
		evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", type);
	/* a change is in the audit log before anyone hears it was made */
	audit_answered(req, code);
	evhttp_send_reply(req, code, reason, b);
	evbuffer_free(b);
	http_one_record(evcon);
	write_now(evcon);
}

void reply_text(struct evhttp_request *req, int code, const char *reason, const char *text)
{
	struct evbuffer *b = evbuffer_new();

	if (b && evbuffer_add_printf(b, "%s\n", text) < 0) {
		evbuffer_free(b);
		b = NULL;
	}
	reply_buffer(req, code, reason, "text/plain; charset=utf-8", b);
}

void reply_bytes(struct evhttp_request *req, int code, const char *reason, const char *type,
		 const void *data, size_t len)
{
	struct evbuffer *b = evbuffer_new();

	if (b && evbuffer_add(b, data, len) < 0) {
		evbuffer_free(b);
		b = NULL;
	}
	reply_buffer(req, code, reason, type, b);
}

uint8_t *pack_message(const ProtobufCMessage *m, size_t *len)
{
	uint8_t *buf;

	*len = protobuf_c_message_get_packed_size(m);
	buf = malloc(*len ? *len : 1);
	if (buf)
		protobuf_c_message_pack(m, buf);
	return buf;
}

void reply_message(struct evhttp_request *req, int code, const char *reason,
		   const ProtobufCMessage *m)
{
	size_t len;
	_cleanup_free_ uint8_t *buf = pack_message(m, &len);

	if (!buf) {
		reply_buffer(req, HTTP_INTERNAL, NULL, NULL, NULL);
		return;
	}
	reply_bytes(req, code, reason, PROTOBUF_TYPE, buf, len);
}

void reply_json(struct evhttp_request *req, int code, const char *reason, json_t *o)
{
	_cleanup_free_ char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	struct evbuffer *b = text ? evbuffer_new() : NULL;

	json_decref(o);
	if (b && (evbuffer_add(b, text, strlen(text)) < 0 || evbuffer_add(b, "\n", 1) < 0)) {
		evbuffer_free(b);
		b = NULL;
	}
	reply_buffer(req, code, reason, JSON_TYPE, b);
}

void reply_error(struct evhttp_request *req, int code, const char *reason, const char *why)
{
	reply_json(req, code, reason, json_pack("{s:s}", "error", why));
}

void reply_store_failed(struct evhttp_request *req, struct kmemd *k)
{
	log_error("store query failed: %s", k->store->ops->error(k->store));
	reply_error(req, HTTP_INTERNAL, "Internal Server Error", "the store failed");
}

bool content_type_is(struct evhttp_request *req, const char *type)
{
	const char *t = evhttp_find_header(evhttp_request_get_input_headers(req), "Content-Type");
	size_t n = strlen(type);

	return t && !strncmp(t, type, n) && (t[n] == '\0' || t[n] == ';');
}

const uint8_t *request_body(struct evhttp_request *req, size_t *len)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);

	*len = evbuffer_get_length(in);
	return *len ? evbuffer_pullup(in, -1) : NULL;
}

const uint8_t *request_json(struct evhttp_request *req, size_t *len)
{
	const uint8_t *body = request_body(req, len);

	if (!content_type_is(req, JSON_TYPE) || !body) {
		reply_error(req, 415, "Unsupported Media Type", "send JSON");
		return NULL;
	}
	return body;
}

json_t *request_json_unpack(struct evhttp_request *req, const char *want, bool why_detail,
			    const char *fmt, ...)
{
	const uint8_t *body;
	json_error_t je = { .text = "" };
	char near[4 * JSON_ERROR_TEXT_LENGTH]; /* jansson quotes the input, control bytes too */
	char why[512];
	va_list ap;
	json_t *o;
	size_t len;
	int r = -1;

	body = request_json(req, &len);
	if (!body)
		return NULL;
	o = json_loadb((const char *)body, len, JSON_REJECT_DUPLICATES, &je);
	if (o) {
		va_start(ap, fmt);
		r = json_vunpack_ex(o, &je, JSON_STRICT, fmt, ap);
		va_end(ap);
	}
	if (r == 0)
		return o;
	json_decref(o);
	snprintf(why, sizeof(why), "%s%s%s", want, why_detail ? ": " : "",
		 why_detail ? text_escape(je.text, near, sizeof(near)) : "");
	reply_error(req, HTTP_BADREQUEST, "Bad Request", why);
	return NULL;
}

ProtobufCMessage *request_message_in(struct evhttp_request *req,
				     const ProtobufCMessageDescriptor *desc, ProtobufCAllocator *a)
{
	size_t len;
	const uint8_t *body = request_body(req, &len);

	if (!content_type_is(req, PROTOBUF_TYPE) || (!body && len))
		return NULL;
	/* an empty body is a message with every field unset */
	return protobuf_c_message_unpack(desc, a, len, body);
}

ProtobufCMessage *request_message(struct evhttp_request *req,
				  const ProtobufCMessageDescriptor *desc)
{
	return request_message_in(req, desc, NULL);
}

bool request_query(struct evhttp_request *req, struct evkeyvalq *q, const char *want)
{
	const char *s = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));

	if (evhttp_parse_query_str(s ?: "", q) == 0)
		return true;
	reply_error(req, HTTP_BADREQUEST, "Bad Request", want);
	return false;
}

void kmemd_request_peer(struct evhttp_request *req, char *addr, size_t addrlen, char *key,
			size_t keylen)
{
	struct evhttp_connection *conn = evhttp_request_get_connection(req);
	const struct sockaddr *sa = conn ? evhttp_connection_get_addr(conn) : NULL;
	char *host = NULL;
	ev_uint16_t port;

	if (conn)
		evhttp_connection_get_peer(conn, &host, &port);
	snprintf(addr, addrlen, "%s", host ? host : "?");
	if (sa)
		conn_addr_key(sa, key, keylen);
	else
		snprintf(key, keylen, "%s", addr);
}

int64_t kmemd_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

// SPDX-License-Identifier: GPL-2.0
/* Request and reply helpers (http.h). */
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audit.h"
#include "conn.h"
#include "http.h"
#include "kmemd.h"
#include "log.h"
#include "pbstrings.h"
#include "store.h"
#include "text.h"

void reply_buffer(struct http_request *req, int code, const char *reason, const char *type,
		  struct evbuffer *b)
{
	static const char failed[] = "the reply could not be made\n";

	if (!b) {
		audit_answered(req, HTTP_INTERNAL);
		conn_reply(req, HTTP_INTERNAL, NULL, "text/plain; charset=utf-8", NULL, failed,
			   strlen(failed));
		return;
	}
	/* a change is in the audit log before anyone hears it was made */
	audit_answered(req, code);
	conn_reply(req, code, reason, type, b, NULL, 0);
	evbuffer_free(b);
}

void reply_text(struct http_request *req, int code, const char *reason, const char *text)
{
	struct evbuffer *b = evbuffer_new();

	if (b && evbuffer_add_printf(b, "%s\n", text) < 0) {
		evbuffer_free(b);
		b = NULL;
	}
	reply_buffer(req, code, reason, "text/plain; charset=utf-8", b);
}

/* Not through an evbuffer: the agents' replies are these. */
void reply_bytes(struct http_request *req, int code, const char *reason, const char *type,
		 const void *data, size_t len)
{
	audit_answered(req, code);
	conn_reply(req, code, reason, type, NULL, data, len);
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

void reply_message(struct http_request *req, int code, const char *reason,
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

void reply_json(struct http_request *req, int code, const char *reason, json_t *o)
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

void reply_error(struct http_request *req, int code, const char *reason, const char *why)
{
	reply_json(req, code, reason, json_pack("{s:s}", "error", why));
}

void reply_store_failed(struct http_request *req, struct kmemd *k)
{
	log_error("store query failed: %s", k->store->ops->error(k->store));
	reply_error(req, HTTP_INTERNAL, "Internal Server Error", "the store failed");
}

bool content_type_is(struct http_request *req, const char *type)
{
	const char *t = req->content_type;
	size_t n = strlen(type);

	return !strncmp(t, type, n) && (t[n] == '\0' || t[n] == ';');
}

const uint8_t *request_body(struct http_request *req, size_t *len)
{
	*len = req->body_len;
	return *len ? req->body : NULL;
}

const uint8_t *request_json(struct http_request *req, size_t *len)
{
	const uint8_t *body = request_body(req, len);

	if (!content_type_is(req, JSON_TYPE) || !body) {
		reply_error(req, 415, "Unsupported Media Type", "send JSON");
		return NULL;
	}
	return body;
}

json_t *request_json_unpack(struct http_request *req, const char *want, bool why_detail,
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

ProtobufCMessage *request_message_in(struct http_request *req,
				     const ProtobufCMessageDescriptor *desc, ProtobufCAllocator *a)
{
	size_t len;
	const uint8_t *body = request_body(req, &len);

	char field[128];

	if (!content_type_is(req, PROTOBUF_TYPE) || (!body && len))
		return NULL;
	if (pb_strings_check(desc, body, len, field, sizeof(field)) < 0)
		return NULL;
	/* an empty body is a message with every field unset */
	return protobuf_c_message_unpack(desc, a, len, body);
}

ProtobufCMessage *request_message(struct http_request *req, const ProtobufCMessageDescriptor *desc)
{
	return request_message_in(req, desc, NULL);
}

bool request_query(struct http_request *req, struct evkeyvalq *q, const char *want)
{
	if (evhttp_parse_query_str(req->query ?: "", q) == 0)
		return true;
	reply_error(req, HTTP_BADREQUEST, "Bad Request", want);
	return false;
}

int64_t kmemd_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

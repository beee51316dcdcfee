/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmemd's request and reply helpers: every handler reads its body and
 * query and answers through these, so each kind of refusal (415 for the
 * wrong type, 400 for a body that does not parse) and each reply's
 * headers are written once. Every 2xx answer passes the audit layer
 * (audit.h) before it is sent.
 */
#ifndef KMEMD_HTTP_H
#define KMEMD_HTTP_H

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "http1.h"
#include "macro.h"

#define PROTOBUF_TYPE "application/x-protobuf"
#define JSON_TYPE "application/json"

/*
 * Scope-bound cleanup of what handlers hold, as lib/macro.h's for memory
 * and descriptors (json_decrefp() is jansson's).
 */
static inline void evbuffer_freep(struct evbuffer **b)
{
	if (*b)
		evbuffer_free(*b);
}

/* Any unpacked protobuf message: its descriptor says how to free it. */
static inline void pb_freep(void *p)
{
	ProtobufCMessage *m = *(ProtobufCMessage **)p;

	if (m)
		protobuf_c_message_free_unpacked(m, NULL);
}

#define _cleanup_json_ _cleanup_(json_decrefp)
#define _cleanup_evbuffer_ _cleanup_(evbuffer_freep)
#define _cleanup_pb_ _cleanup_(pb_freep)
#define _cleanup_query_ _cleanup_(evhttp_clear_headers)

/* b (taken: freed here) answered with code and Content-Type type (NULL: none). */
void reply_buffer(struct http_request *req, int code, const char *reason, const char *type,
		  struct evbuffer *b);
void reply_text(struct http_request *req, int code, const char *reason, const char *text);
void reply_bytes(struct http_request *req, int code, const char *reason, const char *type,
		 const void *data, size_t len);
/* m encoded in a buffer of its own (malloc'ed); NULL when out of memory. */
uint8_t *pack_message(const ProtobufCMessage *m, size_t *len);
/* m encoded, as application/x-protobuf. */
void reply_message(struct http_request *req, int code, const char *reason,
		   const ProtobufCMessage *m);
/* Sends o (stolen) as application/json. */
void reply_json(struct http_request *req, int code, const char *reason, json_t *o);
/* {"error": why} with code. */
void reply_error(struct http_request *req, int code, const char *reason, const char *why);
/* 500 {"error": "the store failed"}, the store's own words to the log. */
struct kmemd;
void reply_store_failed(struct http_request *req, struct kmemd *k);

/* The Content-Type is exactly type (parameters after ';' ignored). */
bool content_type_is(struct http_request *req, const char *type);
/* The request body (max_request bounded its size); NULL when empty. */
const uint8_t *request_body(struct http_request *req, size_t *len);
/* The body of a JSON request; NULL, with 415 sent, when it is not one. */
const uint8_t *request_json(struct http_request *req, size_t *len);
/*
 * A JSON body unpacked strictly by fmt (json_unpack_ex's) into the
 * varargs; the document, to json_decref() once the values are used. NULL
 * with 415 sent when the body is not JSON, or 400 with want (and, with
 * why_detail, jansson's reason after ": ") when it does not unpack.
 */
json_t *request_json_unpack(struct http_request *req, const char *want, bool why_detail,
			    const char *fmt, ...);
/*
 * A protobuf body decoded as desc says (free it with
 * protobuf_c_message_free_unpacked()); NULL when the type is not
 * application/x-protobuf, the body does not decode, or a string of it
 * holds a NUL byte (pbstrings.h): the caller answers in its own reply
 * message.
 */
ProtobufCMessage *request_message(struct http_request *req, const ProtobufCMessageDescriptor *desc);
/* The same, unpacked with allocator a (NULL: malloc) and freed with it. */
ProtobufCMessage *request_message_in(struct http_request *req,
				     const ProtobufCMessageDescriptor *desc, ProtobufCAllocator *a);
/* The query parsed into q (evhttp_clear_headers() after); false with 400 want sent. */
bool request_query(struct http_request *req, struct evkeyvalq *q, const char *want);

int64_t kmemd_now_ms(void);

#endif

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * HTTP/1.1 on one of kmemd's connections, without the I/O: the requests a
 * client's bytes make (http_parser does the syntax) and the head of each
 * reply. conn.c moves the bytes; handlers see struct http_request through
 * http.h's helpers.
 *
 * A request is read whole before anyone sees it, within limits: a body
 * of at most max_body bytes (413), a request line and headers of at most
 * max_header_bytes (431). A body's buffer grows as its bytes arrive, not
 * to its Content-Length at the headers, each growth granted by the
 * connection first (503 when it is not). Bytes that are not HTTP/1 are refused (400, or
 * 505 for another version), and so is HTTP/1.1 that RFC 9112 says to reject,
 * not repair: whatever a stricter reader in front of kmemd could frame
 * otherwise (400), a transfer coding kmemd does not decode (501). Each
 * refusal ends the connection: what follows cannot be trusted to start a
 * request.
 */
#ifndef KMEMD_HTTP1_H
#define KMEMD_HTTP1_H

#include <http_parser.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HTTP1_CONTENT_TYPE_MAX 128
/* the longest Host kmemd reads: a DNS name (253 bytes) and a port */
#define HTTP1_HOST_MAX 260
#define HTTP1_EXTRA_HEADERS_MAX 512
/* A reply's status line and headers fit this. */
#define HTTP1_HEAD_MAX (HTTP1_EXTRA_HEADERS_MAX + HTTP1_CONTENT_TYPE_MAX + 256)

struct conn;

struct http_request {
	struct conn *conn; /* its connection; NULL once that has gone */
	enum http_method method;
	const char *path; /* the target's path, not decoded; NULL: the target has none */
	const char *query; /* after '?', not decoded; NULL: none */
	char content_type[HTTP1_CONTENT_TYPE_MAX]; /* "": none, or too long to be one kmemd takes */
	uint8_t *body;
	size_t body_len;
	bool keep_alive; /* the client may send another request after this one */
	bool http10;
	/* the reply: headers a handler adds, and whether the connection ends after it */
	char extra[HTTP1_EXTRA_HEADERS_MAX];
	size_t extra_len;
	bool close;
	/* private to http1.c */
	char *target;
	size_t target_len, body_cap;
};

struct http1_limits {
	size_t max_body, max_header_bytes;
	/*
	 * A client without a certificate may send a body of at most
	 * anonymous_max_body, to POST anonymous_path only (enrollment):
	 * any other is refused at its headers (401), before a byte of it is
	 * kept.
	 */
	const char *anonymous_path;
	size_t anonymous_max_body;
};

enum http1_state {
	HTTP1_IDLE, /* between requests */
	HTTP1_READING, /* a request has begun: its deadline runs */
	HTTP1_COMPLETE, /* http1_take() it */
	HTTP1_REFUSED, /* answer status and close */
};

/* One connection's reader. */
struct http1 {
	http_parser p;
	const struct http1_limits *lim;
	struct http_request *req;
	enum http1_state state;
	int status; /* HTTP1_REFUSED: 400, 401, 413, 431, 501, 503, 505, 500, or refusal */
	bool continue_due; /* the client waits for "100 Continue" before its body */
	/* the header being read: as much of its name and value as kmemd compares */
	char name[sizeof("transfer-encoding")], value[HTTP1_HOST_MAX];
	size_t name_len, value_len, header_bytes;
	bool in_value, ct_seen, expect;
	/* the request's framing and host as its headers said them */
	bool length_seen, te_seen, te_last_chunked;
	unsigned te_chunked, te_other, hosts;
	/* how far its bytes are framed as RFC 9112 has it (http1.c) */
	uint8_t frame, version_at;
	uint64_t chunk_left;
	bool anonymous; /* the client has no certificate (http1_limits) */
	int refusal; /* non-zero: every request is refused with it at its headers */
	size_t body_expect; /* the body's Content-Length; 0: chunked, or none */
	/* asked before a body's buffer grows by more bytes: 0, or it is refused */
	int (*grow)(void *arg, size_t more);
	void *grow_arg;
};

void http1_init(struct http1 *h, const struct http1_limits *lim);
/* What a connection holds when it goes: the request being read. */
void http1_release(struct http1 *h);

/*
 * Reads from data until a request is complete or refused: returns how
 * many of the n bytes it took. The rest waits for http1_take().
 */
size_t http1_feed(struct http1 *h, const char *data, size_t n);

/* The complete request, now the caller's (http1_request_free()); the reader is idle again. */
struct http_request *http1_take(struct http1 *h);
void http1_request_free(struct http_request *req);

/* name: value added to req's reply; -ENOSPC when it does not fit. */
int http1_add_header(struct http_request *req, const char *name, const char *value);

/*
 * The status line and headers of a reply to req (NULL: to a request that
 * was refused) of body_len bytes of type (NULL: none), into buf of
 * HTTP1_HEAD_MAX; its length. close says the connection ends after it.
 */
size_t http1_head(char *buf, const struct http_request *req, int code, const char *reason,
		  const char *type, size_t body_len, bool close);

/* "100 Continue", for a reader with continue_due. */
extern const char http1_continue[];

#endif

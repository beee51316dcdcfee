// SPDX-License-Identifier: GPL-2.0
/* HTTP/1.1 requests read and replies' heads written (http1.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "http1.h"

const char http1_continue[] = "HTTP/1.1 100 Continue\r\n\r\n";

enum header { HEADER_OTHER, HEADER_CONTENT_TYPE, HEADER_EXPECT };

static struct http1 *reader(http_parser *p)
{
	return p->data;
}

/* Refused with status: http_parser stops at the callback's error. */
static int refuse(struct http1 *h, int status)
{
	h->status = status;
	return -1;
}

/* The request line and headers count against max_header_bytes. */
static int count(struct http1 *h, size_t len)
{
	h->header_bytes += len;
	return h->header_bytes > h->lim->max_header_bytes ? refuse(h, 431) : 0;
}

static int on_message_begin(http_parser *p)
{
	struct http1 *h = reader(p);

	h->req = calloc(1, sizeof(*h->req));
	if (!h->req)
		return refuse(h, 500);
	h->state = HTTP1_READING;
	h->header_bytes = h->name_len = h->value_len = 0;
	h->in_value = h->ct_seen = h->expect = false;
	return 0;
}

/* data appended to *buf of *len bytes, one byte left for a NUL. */
static int append(char **buf, size_t *len, const char *data, size_t n)
{
	char *b = realloc(*buf, *len + n + 1);

	if (!b)
		return -ENOMEM;
	memcpy(b + *len, data, n);
	*len += n;
	b[*len] = '\0';
	*buf = b;
	return 0;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
	struct http1 *h = reader(p);

	if (count(h, len) < 0)
		return -1;
	return append(&h->req->target, &h->req->target_len, at, len) < 0 ? refuse(h, 500) : 0;
}

static enum header header_of(const struct http1 *h)
{
	if (h->name_len == strlen("content-type") &&
	    !strncasecmp(h->name, "content-type", h->name_len))
		return HEADER_CONTENT_TYPE;
	if (h->name_len == strlen("expect") && !strncasecmp(h->name, "expect", h->name_len))
		return HEADER_EXPECT;
	return HEADER_OTHER;
}

/* A header's value is whole: what kmemd reads of it is kept. */
static void header_done(struct http1 *h)
{
	struct http_request *req = h->req;
	size_t n = h->value_len;

	if (!h->in_value)
		return;
	h->in_value = false;
	/* longer than kept: no value kmemd takes */
	if (n > sizeof(h->value))
		n = SIZE_MAX;
	while (n && n != SIZE_MAX && (h->value[n - 1] == ' ' || h->value[n - 1] == '\t'))
		n--;
	switch (header_of(h)) {
	case HEADER_CONTENT_TYPE:
		/* two are no type: which one the client meant is a guess */
		if (!h->ct_seen && n < sizeof(req->content_type)) {
			memcpy(req->content_type, h->value, n);
			req->content_type[n] = '\0';
		} else {
			req->content_type[0] = '\0';
		}
		h->ct_seen = true;
		break;
	case HEADER_EXPECT:
		h->expect = n == strlen("100-continue") &&
			    !strncasecmp(h->value, "100-continue", n);
		break;
	case HEADER_OTHER:
		break;
	}
}

/* Names and values come in pieces; only as much as kmemd compares is kept. */
static void keep(char *buf, size_t size, size_t *len, const char *at, size_t n)
{
	if (*len < size)
		memcpy(buf + *len, at, *len + n <= size ? n : size - *len);
	*len += n;
}

static int on_header_field(http_parser *p, const char *at, size_t len)
{
	struct http1 *h = reader(p);

	if (h->in_value) {
		header_done(h);
		h->name_len = 0;
	}
	keep(h->name, sizeof(h->name), &h->name_len, at, len);
	return count(h, len);
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
	struct http1 *h = reader(p);

	if (!h->in_value) {
		h->in_value = true;
		h->value_len = 0;
	}
	if (header_of(h) != HEADER_OTHER)
		keep(h->value, sizeof(h->value), &h->value_len, at, len);
	return count(h, len);
}

/* The target split into path and query, each NUL-terminated in place. */
static void split_target(struct http_request *req)
{
	struct http_parser_url u;
	char *t = req->target;

	http_parser_url_init(&u);
	if (!t || http_parser_parse_url(t, req->target_len, req->method == HTTP_CONNECT, &u))
		return;
	if (u.field_set & (1 << UF_QUERY)) {
		req->query = t + u.field_data[UF_QUERY].off;
		t[u.field_data[UF_QUERY].off + u.field_data[UF_QUERY].len] = '\0';
	}
	if (u.field_set & (1 << UF_PATH)) {
		req->path = t + u.field_data[UF_PATH].off;
		t[u.field_data[UF_PATH].off + u.field_data[UF_PATH].len] = '\0';
	}
}

/* The largest body this request may have. */
static size_t body_max(const struct http1 *h)
{
	return h->anonymous ? h->lim->anonymous_max_body : h->lim->max_body;
}

/* An anonymous client's body goes to the one route that takes it, or nowhere. */
static bool anonymous_body_ok(const struct http1 *h)
{
	const struct http_request *req = h->req;

	return !h->anonymous || (h->lim->anonymous_path && req->method == HTTP_POST && req->path &&
				 !strcmp(req->path, h->lim->anonymous_path));
}

static int on_headers_complete(http_parser *p)
{
	struct http1 *h = reader(p);
	struct http_request *req = h->req;
	bool has_length = p->flags & F_CONTENTLENGTH;
	bool has_body = (has_length && p->content_length) || (p->flags & F_CHUNKED);

	header_done(h);
	if (p->http_major != 1)
		return refuse(h, 505);
	req->method = p->method;
	req->http10 = p->http_major == 1 && p->http_minor == 0;
	req->keep_alive = http_should_keep_alive(p) && !p->upgrade;
	split_target(req);
	if (h->refusal)
		return refuse(h, h->refusal);
	if (has_body && !anonymous_body_ok(h))
		return refuse(h, 401);
	if (has_length && p->content_length > body_max(h))
		return refuse(h, 413);
	h->body_expect = has_length ? (size_t)p->content_length : 0;
	h->continue_due = h->expect && !req->http10 && has_body;
	return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
	struct http1 *h = reader(p);
	struct http_request *req = h->req;
	size_t cap = req->body_cap, max = body_max(h);
	uint8_t *b;

	if (len > max - req->body_len)
		return refuse(h, 413);
	if (req->body_len + len > cap) {
		/* doubled as bytes arrive, to at most the length it said, or the limit */
		while (cap < req->body_len + len)
			cap = cap ? cap * 2 : 4096;
		if (h->body_expect && cap > h->body_expect)
			cap = h->body_expect;
		if (cap > max)
			cap = max;
		if (h->grow && h->grow(h->grow_arg, cap - req->body_cap) < 0)
			return refuse(h, 503);
		b = realloc(req->body, cap);
		if (!b)
			return refuse(h, 500);
		req->body = b;
		req->body_cap = cap;
	}
	memcpy(req->body + req->body_len, at, len);
	req->body_len += len;
	return 0;
}

static int on_message_complete(http_parser *p)
{
	struct http1 *h = reader(p);

	h->state = HTTP1_COMPLETE;
	h->continue_due = false;
	/* the next request waits until this one is answered */
	http_parser_pause(p, 1);
	return 0;
}

static const http_parser_settings settings = {
	.on_message_begin = on_message_begin,
	.on_url = on_url,
	.on_header_field = on_header_field,
	.on_header_value = on_header_value,
	.on_headers_complete = on_headers_complete,
	.on_body = on_body,
	.on_message_complete = on_message_complete,
};

void http1_init(struct http1 *h, const struct http1_limits *lim)
{
	*h = (struct http1){ .lim = lim };
	http_parser_init(&h->p, HTTP_REQUEST);
	h->p.data = h;
}

void http1_request_free(struct http_request *req)
{
	if (!req)
		return;
	free(req->target);
	free(req->body);
	free(req);
}

void http1_release(struct http1 *h)
{
	http1_request_free(h->req);
	h->req = NULL;
}

size_t http1_feed(struct http1 *h, const char *data, size_t n)
{
	size_t used;

	if (h->state == HTTP1_COMPLETE || h->state == HTTP1_REFUSED)
		return 0;
	used = http_parser_execute(&h->p, &settings, data, n);
	switch (HTTP_PARSER_ERRNO(&h->p)) {
	case HPE_OK:
	case HPE_PAUSED:
		break;
	default:
		h->state = HTTP1_REFUSED;
		if (!h->status)
			h->status = 400;
		http1_release(h);
	}
	return used;
}

struct http_request *http1_take(struct http1 *h)
{
	struct http_request *req = h->req;

	if (h->state != HTTP1_COMPLETE)
		return NULL;
	h->req = NULL;
	h->state = HTTP1_IDLE;
	http_parser_pause(&h->p, 0);
	return req;
}

int http1_add_header(struct http_request *req, const char *name, const char *value)
{
	size_t room = sizeof(req->extra) - req->extra_len;
	int n = snprintf(req->extra + req->extra_len, room, "%s: %s\r\n", name, value);

	if (n < 0 || (size_t)n >= room) {
		req->extra[req->extra_len] = '\0';
		return -ENOSPC;
	}
	req->extra_len += (size_t)n;
	return 0;
}

/* The Date header's value, made once a second. */
static const char *date_now(void)
{
	static _Thread_local char text[40];
	static _Thread_local time_t made;
	time_t now = time(NULL);
	struct tm tm;

	if (now != made && gmtime_r(&now, &tm)) {
		strftime(text, sizeof(text), "%a, %d %b %Y %H:%M:%S GMT", &tm);
		made = now;
	}
	return text;
}

size_t http1_head(char *buf, const struct http_request *req, int code, const char *reason,
		  const char *type, size_t body_len, bool close)
{
	bool keep_alive_10 = req && req->http10 && !close;
	int n;

	if (!reason)
		reason = http_status_str((enum http_status)code);
	n = snprintf(buf, HTTP1_HEAD_MAX,
		     "HTTP/1.1 %d %s\r\nDate: %s\r\nContent-Length: %zu\r\n%s%s%s%s%s%s\r\n", code,
		     reason, date_now(), body_len, type ? "Content-Type: " : "", type ?: "",
		     type ? "\r\n" : "", req ? req->extra : "",
		     close ? "Connection: close\r\n" : "",
		     keep_alive_10 ? "Connection: keep-alive\r\n" : "");
	return n > 0 && n < HTTP1_HEAD_MAX ? (size_t)n : 0;
}

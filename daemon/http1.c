// SPDX-License-Identifier: GPL-2.0
/* HTTP/1.1 requests read and replies' heads written (http1.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "http1.h"
#include "macro.h"

const char http1_continue[] = "HTTP/1.1 100 Continue\r\n\r\n";

enum header {
	HEADER_OTHER,
	HEADER_CONTENT_TYPE,
	HEADER_EXPECT,
	HEADER_CONTENT_LENGTH,
	HEADER_TRANSFER_ENCODING,
	HEADER_HOST,
};

static const char *const header_names[] = {
	[HEADER_CONTENT_TYPE] = "content-type",
	[HEADER_EXPECT] = "expect",
	[HEADER_CONTENT_LENGTH] = "content-length",
	[HEADER_TRANSFER_ENCODING] = "transfer-encoding",
	[HEADER_HOST] = "host",
};

/*
 * How far a request's bytes are framed (struct http1's frame). Debian's
 * http-parser is built lenient: it takes a bare LF for CRLF, any two bytes
 * for the CRLF after a chunk, whitespace in a target, before a colon or
 * folding a line. So each byte is checked against RFC 9112 here before
 * the parser sees it, and the parser reads only what any strict reader
 * would frame the same way.
 */
enum frame {
	/* the request line */
	FRAME_START, /* empty lines before it (CRLF only) let by, RFC 9112 §2.2 */
	FRAME_START_LF,
	FRAME_METHOD,
	FRAME_TARGET_START,
	FRAME_TARGET,
	FRAME_VERSION,
	/* field lines, of the headers or of a chunked body's trailers */
	FRAME_LF,
	FRAME_FIELD,
	FRAME_NAME,
	FRAME_VALUE,
	FRAME_END_LF,
	/* the body */
	FRAME_CHUNK_START,
	FRAME_CHUNK_SIZE,
	FRAME_CHUNK_BWS,
	FRAME_CHUNK_EXT,
	FRAME_CHUNK_LF,
	FRAME_DATA_CR,
	FRAME_DATA_LF,
	FRAME_DATA, /* chunk_left bytes of a chunk */
	FRAME_BODY, /* Content-Length's bytes, or none: the parser counts them */
	FRAME_WAIT, /* the headers or the trailers ended: the parser's turn */
	FRAME_BAD,
};

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

/* tchar, RFC 9110 §5.6.2: what a method and a field name are made of */
static bool tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* a request target's bytes: no control, whitespace or non-ASCII */
static bool vchar(unsigned char c)
{
	return c > ' ' && c < 0x7f;
}

/* a field value's or a chunk extension's bytes: no CTL but HTAB; obs-text is opaque data */
static bool field_char(unsigned char c)
{
	return c == '\t' || (c >= ' ' && c != 0x7f);
}

static int hex(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* method SP request-target SP HTTP-version CRLF, each exactly */
static enum frame request_line(struct http1 *h, unsigned char c)
{
	static const char version[] = "HTTP/#.#";

	switch (h->frame) {
	case FRAME_START:
		return c == '\r' ? FRAME_START_LF : tchar(c) ? FRAME_METHOD : FRAME_BAD;
	case FRAME_START_LF:
		return c == '\n' ? FRAME_START : FRAME_BAD;
	case FRAME_METHOD:
		return c == ' ' ? FRAME_TARGET_START : tchar(c) ? FRAME_METHOD : FRAME_BAD;
	case FRAME_TARGET_START:
		return vchar(c) ? FRAME_TARGET : FRAME_BAD;
	case FRAME_TARGET:
		if (c != ' ')
			return vchar(c) ? FRAME_TARGET : FRAME_BAD;
		h->version_at = 0;
		return FRAME_VERSION;
	default:
		if (h->version_at == sizeof(version) - 1)
			return c == '\r' ? FRAME_LF : FRAME_BAD;
		if (version[h->version_at] == '#' ? c < '0' || c > '9' :
						    c != version[h->version_at])
			return FRAME_BAD;
		h->version_at++;
		return FRAME_VERSION;
	}
}

/* field-name ":" OWS field-value OWS CRLF, and the empty line after the last */
static enum frame field_line(struct http1 *h, unsigned char c)
{
	switch (h->frame) {
	case FRAME_LF:
		return c == '\n' ? FRAME_FIELD : FRAME_BAD;
	case FRAME_FIELD:
		/*
		 * whitespace first is obs-fold, or whitespace after the request
		 * line: refused, not joined to a line (RFC 9112 §5.2, §2.2)
		 */
		return c == '\r' ? FRAME_END_LF : tchar(c) ? FRAME_NAME : FRAME_BAD;
	case FRAME_NAME:
		/* no whitespace before the colon (§5.1) */
		return c == ':' ? FRAME_VALUE : tchar(c) ? FRAME_NAME : FRAME_BAD;
	case FRAME_VALUE:
		/* no NUL, bare CR or LF, or other CTL (RFC 9110 §5.5) */
		return c == '\r' ? FRAME_LF : field_char(c) ? FRAME_VALUE : FRAME_BAD;
	default:
		return c == '\n' ? FRAME_WAIT : FRAME_BAD;
	}
}

/* chunk-size [ chunk-ext ] CRLF chunk-data CRLF (§7.1); after the last chunk, trailers */
static enum frame chunk_line(struct http1 *h, unsigned char c)
{
	int x = hex(c);

	switch (h->frame) {
	case FRAME_CHUNK_START:
		if (x < 0)
			return FRAME_BAD;
		h->chunk_left = (uint64_t)x;
		return FRAME_CHUNK_SIZE;
	case FRAME_CHUNK_SIZE:
		if (x >= 0 && h->chunk_left <= UINT64_MAX >> 4) {
			h->chunk_left = h->chunk_left << 4 | (uint64_t)x;
			return FRAME_CHUNK_SIZE;
		}
		if (c == ' ' || c == '\t')
			return FRAME_CHUNK_BWS;
		return c == ';' ? FRAME_CHUNK_EXT : c == '\r' ? FRAME_CHUNK_LF : FRAME_BAD;
	case FRAME_CHUNK_BWS:
		if (c == ' ' || c == '\t')
			return FRAME_CHUNK_BWS;
		return c == ';' ? FRAME_CHUNK_EXT : FRAME_BAD;
	case FRAME_CHUNK_EXT:
		/* kmemd reads no extension: only that none hides a line's end */
		return c == '\r' ? FRAME_CHUNK_LF : field_char(c) ? FRAME_CHUNK_EXT : FRAME_BAD;
	case FRAME_CHUNK_LF:
		if (c != '\n')
			return FRAME_BAD;
		return h->chunk_left ? FRAME_DATA : FRAME_FIELD;
	case FRAME_DATA_CR:
		return c == '\r' ? FRAME_DATA_LF : FRAME_BAD;
	default:
		return c == '\n' ? FRAME_CHUNK_START : FRAME_BAD;
	}
}

/*
 * How many of data's n bytes frame the request: up to the end of its
 * headers or of its chunked body, where the parser decides what comes
 * next; to the first byte RFC 9112 says to reject (frame is FRAME_BAD).
 */
static size_t frame(struct http1 *h, const char *data, size_t n)
{
	size_t i = 0, k;

	if (h->frame == FRAME_BODY)
		return n;
	while (i < n && h->frame != FRAME_WAIT && h->frame != FRAME_BAD) {
		if (h->frame == FRAME_DATA) {
			k = n - i < h->chunk_left ? n - i : (size_t)h->chunk_left;
			i += k;
			h->chunk_left -= k;
			if (!h->chunk_left)
				h->frame = FRAME_DATA_CR;
			continue;
		}
		if (h->frame < FRAME_LF)
			h->frame = request_line(h, (unsigned char)data[i]);
		else if (h->frame < FRAME_CHUNK_START)
			h->frame = field_line(h, (unsigned char)data[i]);
		else
			h->frame = chunk_line(h, (unsigned char)data[i]);
		if (h->frame != FRAME_BAD)
			i++;
	}
	return i;
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
	h->length_seen = h->te_seen = h->te_last_chunked = false;
	h->te_chunked = h->te_other = h->hosts = 0;
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
	for (size_t i = HEADER_CONTENT_TYPE; i < ARRAY_SIZE(header_names); i++)
		if (h->name_len == strlen(header_names[i]) &&
		    !strncasecmp(h->name, header_names[i], h->name_len))
			return (enum header)i;
	return HEADER_OTHER;
}

/* 1*DIGIT, within 64 bits: no sign, list or space that two readers may read apart */
static bool length_ok(const char *v, size_t n)
{
	uint64_t len = 0;

	if (!n || n == SIZE_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9' || len > (UINT64_MAX - (uint64_t)(v[i] - '0')) / 10)
			return false;
		len = len * 10 + (uint64_t)(v[i] - '0');
	}
	return true;
}

/* The codings of a Transfer-Encoding line, in order; an empty list element is none. */
static void codings(struct http1 *h, const char *v, size_t n)
{
	size_t b, e, i = 0;
	bool chunked;

	h->te_seen = true;
	if (n == SIZE_MAX) {
		/* longer than kept: not one kmemd decodes */
		h->te_other++;
		h->te_last_chunked = false;
		return;
	}
	while (i <= n) {
		for (b = i; i < n && v[i] != ','; i++)
			;
		for (e = i++; b < e && (v[b] == ' ' || v[b] == '\t'); b++)
			;
		while (e > b && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		if (b == e)
			continue;
		chunked = e - b == strlen("chunked") && !strncasecmp(v + b, "chunked", e - b);
		h->te_chunked += chunked;
		h->te_other += !chunked;
		h->te_last_chunked = chunked;
	}
}

static bool host_char(unsigned char c)
{
	return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') ||
	       (c && strchr("-._~!$&'()*+,;=%", c));
}

/*
 * uri-host [ ":" port ] (RFC 9110 §7.2): an IP-literal in brackets, or a
 * reg-name or IPv4 address; RFC 3986's characters, not their grammar.
 */
static bool host_ok(const char *v, size_t n)
{
	size_t i = 0;

	if (n == SIZE_MAX)
		return false;
	if (n && v[0] == '[') {
		for (i = 1; i < n && v[i] != ']'; i++) {
			if (!host_char((unsigned char)v[i]) && v[i] != ':')
				return false;
		}
		if (i++ == n)
			return false;
	} else {
		while (i < n && host_char((unsigned char)v[i]))
			i++;
	}
	if (i < n && v[i++] != ':')
		return false;
	while (i < n && v[i] >= '0' && v[i] <= '9')
		i++;
	return i == n;
}

/* A header's value is whole: what kmemd reads of it is kept, or it is refused. */
static int header_done(struct http1 *h)
{
	struct http_request *req = h->req;
	size_t n = h->value_len;

	if (!h->in_value)
		return 0;
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
	case HEADER_CONTENT_LENGTH:
		/* a second, even the same, is refused: one length, read one way */
		if (h->length_seen || !length_ok(h->value, n))
			return refuse(h, 400);
		h->length_seen = true;
		break;
	case HEADER_TRANSFER_ENCODING:
		codings(h, h->value, n);
		break;
	case HEADER_HOST:
		/* RFC 9112 §3.2: one Host, a valid one */
		if (h->hosts++ || !host_ok(h->value, n))
			return refuse(h, 400);
		break;
	case HEADER_OTHER:
		break;
	}
	return 0;
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

	/* a chunked body's trailers count, but say nothing of the request */
	if (p->flags & F_TRAILING)
		return count(h, len);
	if (h->in_value) {
		if (header_done(h) < 0)
			return -1;
		h->name_len = 0;
	}
	keep(h->name, sizeof(h->name), &h->name_len, at, len);
	return count(h, len);
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
	struct http1 *h = reader(p);

	if (p->flags & F_TRAILING)
		return count(h, len);
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

/*
 * RFC 9112 §6: a body framed one way only, or refused. Transfer-Encoding
 * with Content-Length, in HTTP/1.0, or with a last coding not chunked
 * leaves its length to a guess (400); a coding under chunked is one
 * kmemd does not decode (501).
 */
static int framing(struct http1 *h)
{
	if (!h->te_seen)
		return 0;
	if (h->length_seen || h->req->http10 || !h->te_last_chunked || h->te_chunked > 1)
		return refuse(h, 400);
	return h->te_other ? refuse(h, 501) : 0;
}

static int on_headers_complete(http_parser *p)
{
	struct http1 *h = reader(p);
	struct http_request *req = h->req;
	bool has_length = p->flags & F_CONTENTLENGTH;
	bool has_body = (has_length && p->content_length) || (p->flags & F_CHUNKED);

	if (header_done(h) < 0)
		return -1;
	if (p->http_major != 1)
		return refuse(h, 505);
	req->method = p->method;
	req->http10 = p->http_major == 1 && p->http_minor == 0;
	req->keep_alive = http_should_keep_alive(p) && !p->upgrade;
	split_target(req);
	if (h->refusal)
		return refuse(h, h->refusal);
	if (framing(h) < 0)
		return -1;
	/* RFC 9112 §3.2: HTTP/1.1 names its host */
	if (!req->http10 && !h->hosts)
		return refuse(h, 400);
	if (has_body && !anonymous_body_ok(h))
		return refuse(h, 401);
	if (has_length && p->content_length > body_max(h))
		return refuse(h, 413);
	h->body_expect = has_length ? (size_t)p->content_length : 0;
	h->continue_due = h->expect && !req->http10 && has_body;
	h->frame = p->flags & F_CHUNKED ? FRAME_CHUNK_START : FRAME_BODY;
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
	h->frame = FRAME_START;
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

/*
 * The parser refused the request, or the framing did, or the two
 * disagree on where it ends: the parser stopped short of what was
 * framed other than at its end, or nothing could be framed.
 */
static bool misread(const struct http1 *h, size_t took, size_t framed)
{
	enum http_errno e = HTTP_PARSER_ERRNO(&h->p);

	if (e != HPE_OK && e != HPE_PAUSED)
		return true;
	return h->frame == FRAME_BAD || !took || (took < framed && h->state != HTTP1_COMPLETE);
}

size_t http1_feed(struct http1 *h, const char *data, size_t n)
{
	size_t used = 0, framed, took;

	while (used < n && (h->state == HTTP1_IDLE || h->state == HTTP1_READING)) {
		framed = frame(h, data + used, n - used);
		/* none framed is no input, not the parser's end of input */
		took = framed ? http_parser_execute(&h->p, &settings, data + used, framed) : 0;
		used += took;
		if (misread(h, took, framed)) {
			h->state = HTTP1_REFUSED;
			if (!h->status)
				h->status = 400;
			http1_release(h);
		}
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

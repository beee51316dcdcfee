// SPDX-License-Identifier: GPL-2.0
/*
 * kmemd's HTTP/1.1 reader (daemon/http1.h): requests read whole however
 * their bytes are split, the limits refused with their status, what RFC
 * 9112 says to reject refused with its status, and the heads of replies.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "http1.h"

static const struct http1_limits lim = { .max_body = 64, .max_header_bytes = 256 };

/* the Host field HTTP/1.1 requests must have */
#define HOST "Host: k\r\n"

/* n bytes of text fed in pieces of step bytes: the bytes the reader took */
static size_t feed_n(struct http1 *h, const char *text, size_t n, size_t step)
{
	size_t off = 0, k, used;

	while (off < n && h->state != HTTP1_COMPLETE && h->state != HTTP1_REFUSED) {
		k = n - off < step ? n - off : step;
		used = http1_feed(h, text + off, k);
		off += used;
		if (used < k)
			break;
	}
	return off;
}

static size_t feed_by(struct http1 *h, const char *text, size_t step)
{
	return feed_n(h, text, strlen(text), step);
}

static struct http_request *read_one(const char *text, size_t step)
{
	struct http1 h;
	struct http_request *req;

	http1_init(&h, &lim);
	assert_int_equal(feed_by(&h, text, step), strlen(text));
	assert_int_equal(h.state, HTTP1_COMPLETE);
	req = http1_take(&h);
	assert_non_null(req);
	assert_int_equal(h.state, HTTP1_IDLE);
	http1_release(&h);
	return req;
}

static void test_get(void **state)
{
	struct http_request *req;

	(void)state;
	req = read_one("GET /v1/hosts/detail?id=h1&x=%20 HTTP/1.1\r\nHost: k\r\n\r\n", 4096);
	assert_int_equal(req->method, HTTP_GET);
	assert_string_equal(req->path, "/v1/hosts/detail");
	assert_string_equal(req->query, "id=h1&x=%20");
	assert_string_equal(req->content_type, "");
	assert_null(req->body);
	assert_int_equal(req->body_len, 0);
	assert_true(req->keep_alive);
	http1_request_free(req);

	/* absolute form: the path and query of the URL */
	req = read_one("GET http://k:1/metrics?a#f HTTP/1.1\r\n" HOST "\r\n", 4096);
	assert_string_equal(req->path, "/metrics");
	assert_string_equal(req->query, "a");
	http1_request_free(req);

	/* the asterisk form: a path no route has */
	req = read_one("OPTIONS * HTTP/1.1\r\n" HOST "\r\n", 4096);
	assert_int_equal(req->method, HTTP_OPTIONS);
	assert_string_equal(req->path, "*");
	assert_null(req->query);
	http1_request_free(req);
}

/* A byte at a time or all at once, the same request. */
static void test_post_split(void **state)
{
	static const char text[] = "POST /v1/agent/report HTTP/1.1\r\n" HOST
				   "content-TYPE:  application/x-protobuf \t\r\n"
				   "Content-Length: 5\r\n\r\nab\0de";
	char whole[sizeof(text)];
	struct http_request *req;
	size_t steps[] = { 1, 2, 7, 4096 };
	size_t n = sizeof(text) - 1;

	(void)state;
	memcpy(whole, text, sizeof(text));
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		struct http1 h;
		size_t off = 0, k;

		http1_init(&h, &lim);
		while (off < n && h.state != HTTP1_COMPLETE) {
			k = n - off < steps[i] ? n - off : steps[i];
			off += http1_feed(&h, whole + off, k);
			if (off < n && h.state != HTTP1_COMPLETE)
				assert_int_equal(h.state, HTTP1_READING);
		}
		assert_int_equal(off, n);
		req = http1_take(&h);
		assert_non_null(req);
		assert_int_equal(req->method, HTTP_POST);
		assert_string_equal(req->content_type, "application/x-protobuf");
		assert_int_equal(req->body_len, 5);
		assert_memory_equal(req->body, "ab\0de", 5);
		http1_request_free(req);
		http1_release(&h);
	}
}

/* Pipelined: the reader stops after each request until it is taken. */
static void test_pipelined(void **state)
{
	static const char text[] = "GET /a HTTP/1.1\r\n" HOST "\r\nPOST /b HTTP/1.1\r\n" HOST
				   "Content-Length: 2\r\n\r\nhi";
	struct http1 h;
	struct http_request *a, *b;
	size_t first = strlen("GET /a HTTP/1.1\r\n" HOST "\r\n"), used;

	(void)state;
	http1_init(&h, &lim);
	used = http1_feed(&h, text, strlen(text));
	assert_int_equal(used, first);
	assert_int_equal(h.state, HTTP1_COMPLETE);
	/* nothing more is read before the first is taken */
	assert_int_equal(http1_feed(&h, text + used, strlen(text) - used), 0);
	a = http1_take(&h);
	assert_string_equal(a->path, "/a");
	assert_int_equal(http1_feed(&h, text + used, strlen(text) - used), strlen(text) - used);
	b = http1_take(&h);
	assert_non_null(b);
	assert_string_equal(b->path, "/b");
	assert_memory_equal(b->body, "hi", 2);
	http1_request_free(a);
	http1_request_free(b);
	http1_release(&h);
}

static void test_chunked(void **state)
{
	struct http_request *req;

	(void)state;
	req = read_one("POST /v1/rollouts HTTP/1.1\r\n" HOST "Transfer-Encoding: chunked\r\n"
		       "Content-Type: application/json\r\n\r\n"
		       "3\r\n{\"a\r\n4\r\n\":1}\r\n0\r\n\r\n",
		       3);
	assert_int_equal(req->body_len, 7);
	assert_memory_equal(req->body, "{\"a\":1}", 7);
	assert_string_equal(req->content_type, "application/json");
	http1_request_free(req);
}

static void expect_refused_n(const char *text, size_t n, size_t step, int status)
{
	struct http1 h;

	http1_init(&h, &lim);
	feed_n(&h, text, n, step);
	assert_int_equal(h.state, HTTP1_REFUSED);
	assert_int_equal(h.status, status);
	assert_null(http1_take(&h));
	/* a refused reader reads nothing more */
	assert_int_equal(http1_feed(&h, "GET / HTTP/1.1\r\n\r\n", 18), 0);
	http1_release(&h);
}

static void expect_refused(const char *text, size_t step, int status)
{
	expect_refused_n(text, strlen(text), step, status);
}

/* Refused with status however its bytes come: all at once, or one at a time. */
static void expect_status(const char *text, int status)
{
	expect_refused(text, 4096, status);
	expect_refused(text, 1, status);
}

/* Read whole, however its bytes come. */
static void expect_read(const char *text)
{
	http1_request_free(read_one(text, 4096));
	http1_request_free(read_one(text, 1));
}

static void test_limits(void **state)
{
	char big[512];

	(void)state;
	/* a length over max_body: refused before any of the body comes */
	expect_refused("POST / HTTP/1.1\r\n" HOST "Content-Length: 65\r\n\r\n", 4096, 413);
	/* a chunked body that grows past it */
	expect_refused("POST / HTTP/1.1\r\n" HOST "Transfer-Encoding: chunked\r\n\r\n"
		       "20\r\n0123456789abcdef0123456789abcdef\r\n"
		       "21\r\n0123456789abcdef0123456789abcdef!\r\n0\r\n\r\n",
		       5, 413);
	/* headers past max_header_bytes, however they trickle */
	snprintf(big, sizeof(big), "GET / HTTP/1.1\r\nX-Pad: %0300d\r\n\r\n", 0);
	expect_refused(big, 1, 431);
	expect_refused(big, 4096, 431);
	snprintf(big, sizeof(big), "GET /%0300d HTTP/1.1\r\n\r\n", 0);
	expect_refused(big, 4096, 431);
	/* exactly max_body is read */
	http1_request_free(
		read_one("POST / HTTP/1.1\r\n" HOST "Content-Length: 64\r\n\r\n"
			 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			 9));
}

/* A grow callback that grants up to budget bytes in all, counting what it granted. */
struct budget {
	size_t granted, budget;
};

static int grant(void *arg, size_t more)
{
	struct budget *b = arg;

	if (b->granted + more > b->budget)
		return -ENOBUFS;
	b->granted += more;
	return 0;
}

/* A reader whose bodies grow within b's budget of budget bytes. */
static void reader_within(struct http1 *h, struct budget *b, size_t budget)
{
	*b = (struct budget){ .budget = budget };
	http1_init(h, &lim);
	h->grow = grant;
	h->grow_arg = b;
}

static void test_body_grows(void **state)
{
	static const char head[] = "POST / HTTP/1.1\r\n" HOST "Content-Length: 64\r\n\r\n";
	static const char chunked[] = "POST / HTTP/1.1\r\n" HOST
				      "Transfer-Encoding: chunked\r\n\r\n"
				      "20\r\n0123456789abcdef0123456789abcdef\r\n0\r\n\r\n";
	struct budget b;
	struct http1 h;
	struct http_request *req;

	(void)state;
	/* the headers alone hold nothing of a body they announce */
	reader_within(&h, &b, 64);
	assert_int_equal(http1_feed(&h, head, strlen(head)), strlen(head));
	assert_int_equal(h.state, HTTP1_READING);
	assert_int_equal(b.granted, 0);
	assert_null(h.req->body);
	/* a byte of it: its buffer, no larger than the length said */
	assert_int_equal(http1_feed(&h, "x", 1), 1);
	assert_int_equal(b.granted, 64);
	assert_int_equal(h.req->body_cap, 64);
	http1_release(&h);

	/* a budget too small for it: 503 at the growth, nothing more read */
	reader_within(&h, &b, 16);
	feed_by(&h, chunked, 7);
	assert_int_equal(h.state, HTTP1_REFUSED);
	assert_int_equal(h.status, 503);
	assert_int_equal(b.granted, 0);
	http1_release(&h);

	/* chunked within the budget: granted as it doubles, all of it read */
	reader_within(&h, &b, 64);
	feed_by(&h, chunked, 3);
	assert_int_equal(h.state, HTTP1_COMPLETE);
	req = http1_take(&h);
	assert_int_equal(req->body_len, 32);
	assert_int_equal(b.granted, req->body_cap);
	assert_true(b.granted >= 32 && b.granted <= 64);
	http1_request_free(req);
	http1_release(&h);
}

static void expect_anonymous(const char *text, int status)
{
	static const struct http1_limits anon = { .max_body = 64,
						  .max_header_bytes = 256,
						  .anonymous_path = "/v1/enroll",
						  .anonymous_max_body = 16 };
	struct http1 h;
	struct http_request *req;

	http1_init(&h, &anon);
	h.anonymous = true;
	feed_by(&h, text, 5);
	if (!status) {
		assert_int_equal(h.state, HTTP1_COMPLETE);
		req = http1_take(&h);
		http1_request_free(req);
	} else {
		assert_int_equal(h.state, HTTP1_REFUSED);
		assert_int_equal(h.status, status);
	}
	http1_release(&h);
}

static void test_anonymous_bodies(void **state)
{
	(void)state;
	/* without a certificate: a body to enrollment only, and a small one */
	expect_anonymous("POST /v1/enroll HTTP/1.1\r\n" HOST "Content-Length: 16\r\n\r\n"
			 "0123456789abcdef",
			 0);
	expect_anonymous("POST /v1/enroll HTTP/1.1\r\n" HOST "Content-Length: 17\r\n\r\n", 413);
	expect_anonymous("POST /v1/enroll HTTP/1.1\r\n" HOST "Transfer-Encoding: chunked\r\n\r\n"
			 "11\r\n0123456789abcdef!\r\n0\r\n\r\n",
			 413);
	expect_anonymous("POST /v1/agent/report HTTP/1.1\r\n" HOST "Content-Length: 4\r\n\r\n",
			 401);
	expect_anonymous("PUT /v1/enroll HTTP/1.1\r\n" HOST "Content-Length: 4\r\n\r\n", 401);
	expect_anonymous("POST /v1/enroll/secrets HTTP/1.1\r\n" HOST "Content-Length: 4\r\n\r\n",
			 401);
	expect_anonymous("POST /v1/policies HTTP/1.1\r\n" HOST "Transfer-Encoding: chunked\r\n\r\n",
			 401);
	/* no body: anywhere, the routes decide */
	expect_anonymous("GET /v1/health HTTP/1.1\r\n" HOST "\r\n", 0);
	expect_anonymous("POST /v1/policies HTTP/1.1\r\n" HOST "Content-Length: 0\r\n\r\n", 0);
}

static void test_not_http(void **state)
{
	static const char *const bad[] = {
		"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
		"BREW /pot HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\n" HOST "Content-Length: 1x\r\n\r\n",
		"GET / HTTP/1.1\r\n" HOST "Content-Length: 1\r\nContent-Length: 2\r\n\r\n",
		"POST / HTTP/1.1\r\n" HOST "Transfer-Encoding: chunked\r\n\r\nzz\r\n",
		"GET /\x01 HTTP/1.1\r\n\r\n",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		expect_refused(bad[i], 4096, 400);
		expect_refused(bad[i], 1, 400);
	}
	expect_refused("GET / HTTP/2.0\r\n\r\n", 4096, 505);
}

/* RFC 9112 §3: method SP request-target SP HTTP-version CRLF, nothing more or less. */
static void test_request_line(void **state)
{
	static const char *const bad[] = {
		" GET / HTTP/1.1\r\n" HOST "\r\n", /* leading space */
		"GET  / HTTP/1.1\r\n" HOST "\r\n", /* two spaces */
		"GET /  HTTP/1.1\r\n" HOST "\r\n",
		"GET / HTTP/1.1 \r\n" HOST "\r\n", /* trailing space */
		"GET\t/ HTTP/1.1\r\n" HOST "\r\n",
		"GE(T / HTTP/1.1\r\n" HOST "\r\n", /* a method not a token */
		"GET /a\tb HTTP/1.1\r\n" HOST "\r\n", /* whitespace in the target */
		"GET /\xc3\xa9 HTTP/1.1\r\n" HOST "\r\n", /* non-ASCII */
		"GET /\x7f HTTP/1.1\r\n" HOST "\r\n",
		"GET /\r\n" HOST "\r\n", /* no version */
		"GET / http/1.1\r\n" HOST "\r\n",
		"GET / HTTP/1.10\r\n" HOST "\r\n",
		"GET / HTTP/11\r\n" HOST "\r\n",
		"GET / HTTP/1.x\r\n" HOST "\r\n",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_status(bad[i], 400);
	/* another major version, in HTTP/1's syntax */
	expect_status("GET / HTTP/2.0\r\n" HOST "\r\n", 505);
	expect_status("GET / HTTP/0.9\r\n\r\n", 505);
	/* an empty line before it is let by (§2.2) */
	expect_read("\r\nGET / HTTP/1.1\r\n" HOST "\r\n");
	/* a minor version kmemd lacks is read as 1.1 (RFC 9110 §2.5) */
	expect_read("GET / HTTP/1.2\r\n" HOST "\r\n");
}

/* RFC 9112 §2.2: CRLF ends each line; a bare CR or LF is refused, not read as one. */
static void test_line_endings(void **state)
{
	static const char *const bad[] = {
		/* a bare LF: after the request line, a field, the headers, before all */
		"GET / HTTP/1.1\n" HOST "\r\n",
		"GET / HTTP/1.1\r\nHost: k\n\r\n",
		"GET / HTTP/1.1\r\n" HOST "\n",
		"\nGET / HTTP/1.1\r\n" HOST "\r\n",
		/* a bare CR: the same places, and inside a value */
		"GET / HTTP/1.1\r" HOST "\r\n",
		"GET / HTTP/1.1\r\nHost: k\rX: y\r\n\r\n",
		"GET / HTTP/1.1\r\n" HOST "\r\r\n",
		"GET / HTTP/1.1\r\nX: a\rb\r\n" HOST "\r\n",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_status(bad[i], 400);
}

/* RFC 9110 §5.5: no NUL or other CTL in a value; obs-text is let by, as opaque data. */
static void test_field_values(void **state)
{
	static const char nul[] = "GET / HTTP/1.1\r\n" HOST "X: a\0b\r\n\r\n";
	static const char *const bad[] = {
		"GET / HTTP/1.1\r\n" HOST "X: a\001b\r\n\r\n",
		"GET / HTTP/1.1\r\n" HOST "X: a\x0b\r\n\r\n",
		"GET / HTTP/1.1\r\n" HOST "X: \x1b[0m\r\n\r\n",
		"GET / HTTP/1.1\r\n" HOST "X: a\x7f\r\n\r\n",
	};
	struct http_request *req;

	(void)state;
	expect_refused_n(nul, sizeof(nul) - 1, 4096, 400);
	expect_refused_n(nul, sizeof(nul) - 1, 1, 400);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_status(bad[i], 400);
	expect_read("GET / HTTP/1.1\r\n" HOST "User-Agent: caf\xc3\xa9\r\n\r\n");
	/* spaces and tabs inside a value, and an empty one */
	expect_read("GET / HTTP/1.1\r\n" HOST "X: a \t b\r\nY:\r\nZ: \r\n\r\n");
	req = read_one(
		"POST / HTTP/1.1\r\n" HOST "Content-Type: text/plain;  charset=utf-8\r\n\r\n", 3);
	assert_string_equal(req->content_type, "text/plain;  charset=utf-8");
	http1_request_free(req);
}

/* RFC 9112 §5.1: a field name is a token, and no whitespace comes before its colon. */
static void test_field_names(void **state)
{
	static const char *const bad[] = {
		"GET / HTTP/1.1\r\nHost : k\r\n\r\n",
		"GET / HTTP/1.1\r\nHost\t: k\r\n\r\n",
		"GET / HTTP/1.1\r\n" HOST "X-A : b\r\n\r\n",
		"GET / HTTP/1.1\r\n" HOST "X(y): a\r\n\r\n",
		"GET / HTTP/1.1\r\n" HOST "X y: a\r\n\r\n",
		"GET / HTTP/1.1\r\n" HOST ": a\r\n\r\n",
		"GET / HTTP/1.1\r\n" HOST "X\xc3\xa9: a\r\n\r\n",
		"GET / HTTP/1.1\r\n" HOST "X-No-Colon\r\n\r\n",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_status(bad[i], 400);
	expect_read("GET / HTTP/1.1\r\n" HOST "X-!#$%&'*+-.^_`|~09az: a\r\n\r\n");
}

/* RFC 9112 §5.2: obs-fold in a request is refused (and §2.2: whitespace after the request line). */
static void test_obs_fold(void **state)
{
	(void)state;
	expect_status("GET / HTTP/1.1\r\n" HOST "X: a\r\n b\r\n\r\n", 400);
	expect_status("GET / HTTP/1.1\r\n" HOST "X: a\r\n\tb\r\n\r\n", 400);
	expect_status("GET / HTTP/1.1\r\n " HOST "\r\n", 400);
	/* folded into Content-Length, a length two readers read apart */
	expect_status("POST / HTTP/1.1\r\n" HOST "Content-Length: 1\r\n 0\r\n\r\n0123456789", 400);
}

/* RFC 9112 §6.3: one Content-Length, of digits only. */
static void test_content_length(void **state)
{
	static const char *const bad[] = {
		"Content-Length: 1, 2\r\n",
		"Content-Length: 1,1\r\n",
		"Content-Length: 1 1\r\n",
		"Content-Length: +1\r\n",
		"Content-Length: -1\r\n",
		"Content-Length: 0x1\r\n",
		"Content-Length: 1x\r\n",
		"Content-Length:\r\n",
		"Content-Length: 99999999999999999999999\r\n",
		"Content-Length: 1\r\nContent-Length: 2\r\n",
		/* the same twice: RFC 9110 lets it by, kmemd does not */
		"Content-Length: 1\r\nContent-Length: 1\r\n",
	};
	char text[256];
	struct http_request *req;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "POST / HTTP/1.1\r\n" HOST "%s\r\nx", bad[i]);
		expect_status(text, 400);
	}
	req = read_one("POST / HTTP/1.1\r\n" HOST "Content-Length: 0\r\n\r\n", 1);
	assert_int_equal(req->body_len, 0);
	http1_request_free(req);
	req = read_one("POST / HTTP/1.1\r\n" HOST "Content-Length: 002 \r\n\r\nok", 4096);
	assert_memory_equal(req->body, "ok", 2);
	http1_request_free(req);
}

/*
 * RFC 9112 §6.1: Transfer-Encoding is chunked, once, last; with a length,
 * in HTTP/1.0 or not ending in chunked, 400; another coding kmemd does
 * not decode, 501.
 */
static void test_transfer_encoding(void **state)
{
	static const char *const bad[] = {
		"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
		"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
		"Transfer-Encoding: gzip\r\n",
		"Transfer-Encoding: identity\r\n",
		"Transfer-Encoding: chunked, gzip\r\n",
		"Transfer-Encoding: chunked, chunked\r\n",
		"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
		"Transfer-Encoding: chunked;q=1\r\n",
		"Transfer-Encoding:\r\n",
		"Transfer-Encoding: xchunked\r\n",
	};
	char text[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "POST / HTTP/1.1\r\n" HOST "%s\r\n0\r\n\r\n", bad[i]);
		expect_status(text, 400);
	}
	expect_status("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400);
	expect_status("POST / HTTP/1.1\r\n" HOST "Transfer-Encoding: gzip, chunked\r\n\r\n"
		      "0\r\n\r\n",
		      501);
	expect_status("POST / HTTP/1.1\r\n" HOST "Transfer-Encoding: gzip\r\n"
		      "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		      501);
	/* chunked in any case, with whitespace around it */
	expect_read("POST / HTTP/1.1\r\n" HOST "Transfer-Encoding: Chunked\r\n\r\n0\r\n\r\n");
	expect_read("POST / HTTP/1.1\r\n" HOST "Transfer-Encoding:\t chunked \r\n\r\n0\r\n\r\n");
}

/* RFC 9112 §7.1: each chunk's size line and data end in CRLF, and so do trailers. */
static void test_chunked_framing(void **state)
{
	static const char *const bad[] = {
		"3\r\nabcXX0\r\n\r\n", /* two bytes other than CRLF after a chunk */
		"3\r\nabc\n0\r\n\r\n",
		"3\nabc\r\n0\r\n\r\n",
		"3\rabc\r\n0\r\n\r\n",
		"3;a\x01\r\nabc\r\n0\r\n\r\n", /* a CTL in an extension */
		"3;a\nabc\r\n0\r\n\r\n",
		"3 x\r\nabc\r\n0\r\n\r\n",
		"-3\r\nabc\r\n0\r\n\r\n",
		"\r\n3\r\nabc\r\n0\r\n\r\n",
		"10000000000000000\r\n",
		"0\r\nX: y\n\r\n", /* trailers as strict as headers */
		"0\r\nX: y\r\n z\r\n\r\n",
		"0\r\nX : y\r\n\r\n",
		"0\r\n\n",
	};
	static const char ok[] = "POST /a HTTP/1.1\r\n" HOST "Transfer-Encoding: chunked\r\n\r\n"
				 "3;name=\"v\"\r\nabc\r\n2 ; x\r\nde\r\n0\r\nX-Sum: 1\r\n\r\n"
				 "GET /b HTTP/1.1\r\n" HOST "\r\n";
	char text[256];
	struct http1 h;
	struct http_request *req;
	size_t used;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text),
			 "POST / HTTP/1.1\r\n" HOST "Transfer-Encoding: chunked\r\n\r\n%s", bad[i]);
		expect_status(text, 400);
	}
	/* extensions and trailers let by, and the next request read after */
	http1_init(&h, &lim);
	used = feed_by(&h, ok, 4096);
	req = http1_take(&h);
	assert_non_null(req);
	assert_int_equal(req->body_len, 5);
	assert_memory_equal(req->body, "abcde", 5);
	http1_request_free(req);
	assert_int_equal(http1_feed(&h, ok + used, strlen(ok) - used), strlen(ok) - used);
	req = http1_take(&h);
	assert_non_null(req);
	assert_string_equal(req->path, "/b");
	http1_request_free(req);
	http1_release(&h);
}

/* RFC 9112 §3.2: one Host, a valid one; HTTP/1.1 must send it. */
static void test_host(void **state)
{
	static const char *const bad[] = {
		"GET / HTTP/1.1\r\n\r\n",
		"GET http://k/ HTTP/1.1\r\n\r\n",
		"OPTIONS * HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: k\r\nHost: k\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: k\r\nHost: j\r\n\r\n",
		"GET / HTTP/1.0\r\nHost: k\r\nHost: k\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: k/x\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: u@k\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: k:44x\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: k:1:2\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: [::1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: [::1]x\r\n\r\n",
	};
	static const struct http1_limits roomy = { .max_body = 64, .max_header_bytes = 1024 };
	char text[512];
	struct http1 h;
	struct http_request *req;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_status(bad[i], 400);
	/* a DNS name's length and a port are read, a longer name is none */
	snprintf(text, sizeof(text), "GET / HTTP/1.1\r\nHost: %0253d:8443\r\n\r\n", 0);
	http1_init(&h, &roomy);
	assert_int_equal(feed_by(&h, text, 4096), strlen(text));
	req = http1_take(&h);
	assert_non_null(req);
	http1_request_free(req);
	snprintf(text, sizeof(text), "GET / HTTP/1.1\r\nHost: %0270d\r\n\r\n", 0);
	feed_by(&h, text, 4096);
	assert_int_equal(h.state, HTTP1_REFUSED);
	assert_int_equal(h.status, 400);
	http1_release(&h);
	expect_read("GET / HTTP/1.1\r\nhost: kmemd.example.com:8443\r\n\r\n");
	expect_read("GET / HTTP/1.1\r\nHost: [::1]:8443\r\n\r\n");
	expect_read("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
	expect_read("GET / HTTP/1.1\r\nHost:\r\nX: y\r\n\r\n");
	/* HTTP/1.0 need not name one */
	expect_read("GET / HTTP/1.0\r\n\r\n");
}

/* Content-Type as kmemd compares it: one, short, or none. */
static void test_content_type(void **state)
{
	char text[512];
	struct http_request *req;

	(void)state;
	req = read_one("POST / HTTP/1.1\r\n" HOST "Content-Type: application/json\r\n"
		       "Content-Type: application/x-protobuf\r\n\r\n",
		       4096);
	assert_string_equal(req->content_type, "");
	http1_request_free(req);
	snprintf(text, sizeof(text),
		 "POST / HTTP/1.1\r\n" HOST "Content-Type: application/json%0130d\r\n\r\n", 0);
	req = read_one(text, 4096);
	assert_string_equal(req->content_type, "");
	http1_request_free(req);
	/* a long header of another name is no content type */
	req = read_one("POST / HTTP/1.1\r\n" HOST "Content-Type-Options: json\r\n\r\n", 3);
	assert_string_equal(req->content_type, "");
	http1_request_free(req);
	req = read_one("POST / HTTP/1.1\r\n" HOST
		       "Content-Type: application/json; charset=utf-8\r\n\r\n",
		       2);
	assert_string_equal(req->content_type, "application/json; charset=utf-8");
	http1_request_free(req);
}

static void test_expect_continue(void **state)
{
	static const char head[] = "POST / HTTP/1.1\r\n" HOST "Expect: 100-Continue\r\n"
				   "Content-Length: 2\r\n\r\n";
	struct http1 h;
	struct http_request *req;

	(void)state;
	http1_init(&h, &lim);
	assert_int_equal(http1_feed(&h, head, strlen(head)), strlen(head));
	assert_true(h.continue_due);
	assert_int_equal(http1_feed(&h, "ok", 2), 2);
	assert_false(h.continue_due);
	req = http1_take(&h);
	assert_memory_equal(req->body, "ok", 2);
	http1_request_free(req);
	/* the body came with the headers: no one waits */
	assert_int_equal(http1_feed(&h,
				    "POST / HTTP/1.1\r\n" HOST "Expect: 100-continue\r\n"
				    "Content-Length: 1\r\n\r\nx",
				    strlen("POST / HTTP/1.1\r\n" HOST "Expect: 100-continue\r\n"
					   "Content-Length: 1\r\n\r\nx")),
			 strlen("POST / HTTP/1.1\r\n" HOST "Expect: 100-continue\r\n"
				"Content-Length: 1\r\n\r\nx"));
	assert_false(h.continue_due);
	http1_request_free(http1_take(&h));
	http1_release(&h);
}

static void test_keep_alive(void **state)
{
	struct http_request *req;

	(void)state;
	req = read_one("GET / HTTP/1.0\r\n\r\n", 4096);
	assert_false(req->keep_alive);
	assert_true(req->http10);
	http1_request_free(req);
	req = read_one("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 4096);
	assert_true(req->keep_alive);
	http1_request_free(req);
	req = read_one("GET / HTTP/1.1\r\n" HOST "Connection: close\r\n\r\n", 4096);
	assert_false(req->keep_alive);
	http1_request_free(req);
	req = read_one("GET / HTTP/1.1\r\n" HOST "Connection: Upgrade\r\nUpgrade: h2c\r\n\r\n",
		       4096);
	assert_false(req->keep_alive);
	http1_request_free(req);
}

/* A reader let go mid-request frees what it read (the sanitizer build checks). */
static void test_release(void **state)
{
	struct http1 h;

	(void)state;
	http1_init(&h, &lim);
	http1_feed(&h, "POST /x HTTP/1.1\r\n" HOST "Content-Length: 9\r\n\r\nabc",
		   strlen("POST /x HTTP/1.1\r\n" HOST "Content-Length: 9\r\n\r\nabc"));
	assert_int_equal(h.state, HTTP1_READING);
	http1_release(&h);
}

static void test_head(void **state)
{
	struct http_request req = { .keep_alive = true };
	char buf[HTTP1_HEAD_MAX];
	size_t n;

	(void)state;
	assert_int_equal(http1_add_header(&req, "Cache-Control", "no-cache"), 0);
	n = http1_head(buf, &req, 200, "OK", "application/json", 12, false);
	assert_int_equal(n, strlen(buf));
	assert_memory_equal(buf, "HTTP/1.1 200 OK\r\nDate: ", 23);
	assert_non_null(strstr(buf, "\r\nContent-Length: 12\r\nContent-Type: application/json\r\n"
				    "Cache-Control: no-cache\r\n\r\n"));
	assert_null(strstr(buf, "Connection"));
	/* a refusal of what could not be read: no request, the reason from the code */
	n = http1_head(buf, NULL, 431, NULL, NULL, 0, true);
	assert_memory_equal(buf, "HTTP/1.1 431 Request Header Fields Too Large\r\n", 46);
	assert_non_null(strstr(buf, "Content-Length: 0\r\nConnection: close\r\n\r\n"));
	assert_null(strstr(buf, "Content-Type"));
	/* an HTTP/1.0 client that keeps the connection is told it is kept */
	req.http10 = true;
	http1_head(buf, &req, 204, "No Content", NULL, 0, false);
	assert_non_null(strstr(buf, "Connection: keep-alive\r\n\r\n"));
}

static void test_add_header_full(void **state)
{
	struct http_request req = { 0 };
	char value[HTTP1_EXTRA_HEADERS_MAX];

	(void)state;
	memset(value, 'v', sizeof(value) - 1);
	value[sizeof(value) - 1] = '\0';
	assert_int_equal(http1_add_header(&req, "A", "1"), 0);
	assert_int_equal(http1_add_header(&req, "B", value), -ENOSPC);
	/* what was added before stays whole */
	assert_string_equal(req.extra, "A: 1\r\n");
	assert_int_equal(req.extra_len, 6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_get),
		cmocka_unit_test(test_post_split),
		cmocka_unit_test(test_pipelined),
		cmocka_unit_test(test_chunked),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_not_http),
		cmocka_unit_test(test_body_grows),
		cmocka_unit_test(test_anonymous_bodies),
		cmocka_unit_test(test_content_type),
		cmocka_unit_test(test_expect_continue),
		cmocka_unit_test(test_keep_alive),
		cmocka_unit_test(test_release),
		cmocka_unit_test(test_head),
		cmocka_unit_test(test_add_header_full),
		cmocka_unit_test(test_request_line),
		cmocka_unit_test(test_line_endings),
		cmocka_unit_test(test_field_values),
		cmocka_unit_test(test_field_names),
		cmocka_unit_test(test_obs_fold),
		cmocka_unit_test(test_content_length),
		cmocka_unit_test(test_transfer_encoding),
		cmocka_unit_test(test_chunked_framing),
		cmocka_unit_test(test_host),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

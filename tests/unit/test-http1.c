// SPDX-License-Identifier: GPL-2.0
/*
 * kmemd's HTTP/1.1 reader (daemon/http1.h): requests read whole however
 * their bytes are split, the limits refused with their status, and the
 * heads of replies.
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

/* text fed in pieces of step bytes: the reader's state after, and the bytes it took */
static size_t feed_by(struct http1 *h, const char *text, size_t step)
{
	size_t n = strlen(text), off = 0, k, used;

	while (off < n && h->state != HTTP1_COMPLETE && h->state != HTTP1_REFUSED) {
		k = n - off < step ? n - off : step;
		used = http1_feed(h, text + off, k);
		off += used;
		if (used < k)
			break;
	}
	return off;
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
	req = read_one("GET http://k:1/metrics?a#f HTTP/1.1\r\n\r\n", 4096);
	assert_string_equal(req->path, "/metrics");
	assert_string_equal(req->query, "a");
	http1_request_free(req);

	/* the asterisk form: a path no route has */
	req = read_one("OPTIONS * HTTP/1.1\r\n\r\n", 4096);
	assert_int_equal(req->method, HTTP_OPTIONS);
	assert_string_equal(req->path, "*");
	assert_null(req->query);
	http1_request_free(req);
}

/* A byte at a time or all at once, the same request. */
static void test_post_split(void **state)
{
	static const char text[] = "POST /v1/agent/report HTTP/1.1\r\n"
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
	static const char text[] = "GET /a HTTP/1.1\r\n\r\nPOST /b HTTP/1.1\r\n"
				   "Content-Length: 2\r\n\r\nhi";
	struct http1 h;
	struct http_request *a, *b;
	size_t first = strlen("GET /a HTTP/1.1\r\n\r\n"), used;

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
	req = read_one("POST /v1/rollouts HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
		       "Content-Type: application/json\r\n\r\n"
		       "3\r\n{\"a\r\n4\r\n\":1}\r\n0\r\n\r\n",
		       3);
	assert_int_equal(req->body_len, 7);
	assert_memory_equal(req->body, "{\"a\":1}", 7);
	assert_string_equal(req->content_type, "application/json");
	http1_request_free(req);
}

static void expect_refused(const char *text, size_t step, int status)
{
	struct http1 h;

	http1_init(&h, &lim);
	feed_by(&h, text, step);
	assert_int_equal(h.state, HTTP1_REFUSED);
	assert_int_equal(h.status, status);
	assert_null(http1_take(&h));
	/* a refused reader reads nothing more */
	assert_int_equal(http1_feed(&h, "GET / HTTP/1.1\r\n\r\n", 18), 0);
	http1_release(&h);
}

static void test_limits(void **state)
{
	char big[512];

	(void)state;
	/* a length over max_body: refused before any of the body comes */
	expect_refused("POST / HTTP/1.1\r\nContent-Length: 65\r\n\r\n", 4096, 413);
	/* a chunked body that grows past it */
	expect_refused("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
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
		read_one("POST / HTTP/1.1\r\nContent-Length: 64\r\n\r\n"
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
	static const char head[] = "POST / HTTP/1.1\r\nContent-Length: 64\r\n\r\n";
	static const char chunked[] = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
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
	expect_anonymous("POST /v1/enroll HTTP/1.1\r\nContent-Length: 16\r\n\r\n"
			 "0123456789abcdef",
			 0);
	expect_anonymous("POST /v1/enroll HTTP/1.1\r\nContent-Length: 17\r\n\r\n", 413);
	expect_anonymous("POST /v1/enroll HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
			 "11\r\n0123456789abcdef!\r\n0\r\n\r\n",
			 413);
	expect_anonymous("POST /v1/agent/report HTTP/1.1\r\nContent-Length: 4\r\n\r\n", 401);
	expect_anonymous("PUT /v1/enroll HTTP/1.1\r\nContent-Length: 4\r\n\r\n", 401);
	expect_anonymous("POST /v1/enroll/secrets HTTP/1.1\r\nContent-Length: 4\r\n\r\n", 401);
	expect_anonymous("POST /v1/policies HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 401);
	/* no body: anywhere, the routes decide */
	expect_anonymous("GET /v1/health HTTP/1.1\r\n\r\n", 0);
	expect_anonymous("POST /v1/policies HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 0);
}

static void test_not_http(void **state)
{
	static const char *const bad[] = {
		"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
		"BREW /pot HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n",
		"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
		"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"GET /\x01 HTTP/1.1\r\n\r\n",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		expect_refused(bad[i], 4096, 400);
		expect_refused(bad[i], 1, 400);
	}
	expect_refused("GET / HTTP/2.0\r\n\r\n", 4096, 505);
}

/* Content-Type as kmemd compares it: one, short, or none. */
static void test_content_type(void **state)
{
	char text[512];
	struct http_request *req;

	(void)state;
	req = read_one("POST / HTTP/1.1\r\nContent-Type: application/json\r\n"
		       "Content-Type: application/x-protobuf\r\n\r\n",
		       4096);
	assert_string_equal(req->content_type, "");
	http1_request_free(req);
	snprintf(text, sizeof(text),
		 "POST / HTTP/1.1\r\nContent-Type: application/json%0130d\r\n\r\n", 0);
	req = read_one(text, 4096);
	assert_string_equal(req->content_type, "");
	http1_request_free(req);
	/* a long header of another name is no content type */
	req = read_one("POST / HTTP/1.1\r\nContent-Type-Options: json\r\n\r\n", 3);
	assert_string_equal(req->content_type, "");
	http1_request_free(req);
	req = read_one("POST / HTTP/1.1\r\nContent-Type: application/json; charset=utf-8\r\n\r\n",
		       2);
	assert_string_equal(req->content_type, "application/json; charset=utf-8");
	http1_request_free(req);
}

static void test_expect_continue(void **state)
{
	static const char head[] = "POST / HTTP/1.1\r\nExpect: 100-Continue\r\n"
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
				    "POST / HTTP/1.1\r\nExpect: 100-continue\r\n"
				    "Content-Length: 1\r\n\r\nx",
				    strlen("POST / HTTP/1.1\r\nExpect: 100-continue\r\n"
					   "Content-Length: 1\r\n\r\nx")),
			 strlen("POST / HTTP/1.1\r\nExpect: 100-continue\r\n"
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
	req = read_one("GET / HTTP/1.1\r\nConnection: close\r\n\r\n", 4096);
	assert_false(req->keep_alive);
	http1_request_free(req);
	req = read_one("GET / HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n", 4096);
	assert_false(req->keep_alive);
	http1_request_free(req);
}

/* A reader let go mid-request frees what it read (the sanitizer build checks). */
static void test_release(void **state)
{
	struct http1 h;

	(void)state;
	http1_init(&h, &lim);
	http1_feed(&h, "POST /x HTTP/1.1\r\nContent-Length: 9\r\n\r\nabc", 43);
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
		cmocka_unit_test(test_get),	     cmocka_unit_test(test_post_split),
		cmocka_unit_test(test_pipelined),    cmocka_unit_test(test_chunked),
		cmocka_unit_test(test_limits),	     cmocka_unit_test(test_not_http),
		cmocka_unit_test(test_body_grows),   cmocka_unit_test(test_anonymous_bodies),
		cmocka_unit_test(test_content_type), cmocka_unit_test(test_expect_continue),
		cmocka_unit_test(test_keep_alive),   cmocka_unit_test(test_release),
		cmocka_unit_test(test_head),	     cmocka_unit_test(test_add_header_full),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

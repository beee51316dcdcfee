// SPDX-License-Identifier: GPL-2.0
/*
 * What a client sends kmemd's HTTP/1.1 reader (daemon/http1.h), the first
 * byte saying whether the client is anonymous (its top bit) and how the
 * rest is split into reads (1 to 128 bytes each). Each request read whole
 * is within the limits, its path and query inside its target, its body's
 * buffer exactly what the connection granted, and an anonymous client's
 * body enrollment's; a refusal is one of the statuses the reader gives,
 * and the reader takes nothing after it.
 */
#include <errno.h>

#include "fuzz.h"
#include "http1.h"

static const struct http1_limits lim = { .max_body = 4096,
					 .max_header_bytes = 1024,
					 .anonymous_path = "/v1/enroll",
					 .anonymous_max_body = 256 };

/* bytes granted for the request being read, of a budget that a large body exceeds */
static size_t granted;

static int grant(void *arg, size_t more)
{
	(void)arg;
	if (granted + more > 3000)
		return -ENOBUFS;
	granted += more;
	return 0;
}

static void check(const struct http_request *req, bool anonymous)
{
	FUZZ_CHECK(req->body_len <= (anonymous ? lim.anonymous_max_body : lim.max_body));
	FUZZ_CHECK(req->body_cap == granted);
	if (anonymous && req->body_len)
		FUZZ_CHECK(req->method == HTTP_POST && req->path &&
			   !strcmp(req->path, "/v1/enroll"));
	FUZZ_CHECK(!req->body_len || req->body);
	FUZZ_CHECK(strlen(req->content_type) < sizeof(req->content_type));
	FUZZ_CHECK(req->target_len <= lim.max_header_bytes);
	if (req->path)
		FUZZ_CHECK(req->path >= req->target && req->path < req->target + req->target_len);
	if (req->query)
		FUZZ_CHECK(req->query >= req->target &&
			   req->query <= req->target + req->target_len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http1 h;
	struct http_request *req;
	size_t step, off = 1, k, used;

	if (!size)
		return 0;
	step = (size_t)(data[0] & 0x7f) + 1;
	http1_init(&h, &lim);
	h.anonymous = data[0] & 0x80;
	h.grow = grant;
	granted = 0;
	while (off < size) {
		k = size - off < step ? size - off : step;
		used = http1_feed(&h, (const char *)data + off, k);
		FUZZ_CHECK(used <= k);
		off += used;
		if (h.state == HTTP1_REFUSED) {
			FUZZ_CHECK(h.status == 400 || h.status == 401 || h.status == 413 ||
				   h.status == 431 || h.status == 501 || h.status == 503 ||
				   h.status == 505 || h.status == 500);
			FUZZ_CHECK(http1_feed(&h, (const char *)data + off, size - off) == 0);
			break;
		}
		req = http1_take(&h);
		if (req) {
			check(req, h.anonymous);
			granted = 0;
			http1_request_free(req);
		} else {
			FUZZ_CHECK(used == k);
		}
	}
	http1_release(&h);
	return 0;
}

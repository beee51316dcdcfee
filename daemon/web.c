// SPDX-License-Identifier: GPL-2.0
/*
 * The dashboard's files (docs/dashboard.md), for operator certificates:
 * GET / is index.html, GET /static/NAME any other file of [server]
 * web_root. Only plain names of known types are served, so no request
 * reaches outside the directory; pages talk to the same admin API.
 */
#include <errno.h>
#include <event2/http.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "server.h"

#define WEB_FILE_MAX (4 << 20)

static const struct {
	const char *ext, *type;
} types[] = {
	{ ".html", "text/html; charset=utf-8" },
	{ ".js", "text/javascript; charset=utf-8" },
	{ ".css", "text/css; charset=utf-8" },
	{ ".svg", "image/svg+xml" },
};

/* The content type of a plain name ([a-z0-9._-], no leading dot); NULL for anything else. */
static const char *type_of(const char *name)
{
	size_t n = strlen(name), i;
	const char *dot = strrchr(name, '.');

	if (!n || n > 64 || name[0] == '.' ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789._-") != n || !dot)
		return NULL;
	for (i = 0; i < ARRAY_SIZE(types); i++)
		if (!strcmp(dot, types[i].ext))
			return types[i].type;
	return NULL;
}

static void send_file(struct http_request *req, struct kmemd *k, const char *name)
{
	const char *type = type_of(name);
	_cleanup_evbuffer_ struct evbuffer *b = NULL;
	_cleanup_close_ int dir = -1, fd = -1;
	struct stat st;

	if (!type) {
		reply_text(req, HTTP_NOTFOUND, "Not Found", "no such file");
		return;
	}
	dir = open(k->cfg->web_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	fd = dir < 0 ? -1 : openat(dir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > WEB_FILE_MAX) {
		if (errno != ENOENT)
			log_warning("dashboard file '%s/%s' unreadable", k->cfg->web_root, name);
		reply_text(req, HTTP_NOTFOUND, "Not Found", "no such file");
		return;
	}
	b = evbuffer_new();
	if (!b || evbuffer_add_file(b, fd, 0, st.st_size) < 0) {
		reply_text(req, HTTP_INTERNAL, "Internal Server Error", "out of memory");
		return;
	}
	/* the buffer owns fd now */
	fd = -1;
	if (http1_add_header(req, "Cache-Control", "no-cache") < 0 ||
	    http1_add_header(req, "X-Content-Type-Options", "nosniff") < 0 ||
	    http1_add_header(req, "Content-Security-Policy",
			     "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'") <
		    0) {
		reply_text(req, HTTP_INTERNAL, "Internal Server Error", "headers too long");
		return;
	}
	reply_buffer(req, HTTP_OK, "OK", type, TAKE_PTR(b));
}

void handle_web_index(struct http_request *req, struct kmemd *k, const struct tls_identity *peer)
{
	(void)peer;
	send_file(req, k, "index.html");
}

void handle_web_static(struct http_request *req, struct kmemd *k, const struct tls_identity *peer)
{
	(void)peer;
	send_file(req, k, req->path + strlen("/static/"));
}

// SPDX-License-Identifier: GPL-2.0
/* The webhook (notify.h). */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <openssl/err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "notify.h"
#include "tls.h"

#define NOTIFY_TIMEOUT_S 5

struct notify {
	struct event_base *base;
	char host[256], path[1024], hostport[300];
	int port;
	SSL_CTX *ctx; /* https */
	char name[128]; /* this kmemd, for the receiver to tell several apart */
	unsigned in_flight;
	struct notify_stats st;
	struct log_ratelimit rl;
};

int notify_new(struct event_base *base, const char *url, const char *ca, struct notify **out,
	       char *err, size_t errlen)
{
	struct evhttp_uri *u = evhttp_uri_parse(url);
	struct tls_config tc = { .ca = ca, .client_auth = TLS_CLIENT_NONE };
	const char *scheme = u ? evhttp_uri_get_scheme(u) : NULL;
	const char *host = u ? evhttp_uri_get_host(u) : NULL;
	const char *path = u ? evhttp_uri_get_path(u) : NULL;
	struct notify *n;
	bool https;
	int r = 0;

	*out = NULL;
	https = scheme && !strcmp(scheme, "https");
	if (!scheme || (!https && strcmp(scheme, "http")) || !host || !*host ||
	    evhttp_uri_get_userinfo(u)) {
		snprintf(err, errlen,
			 "[notify] webhook is not an http:// or https:// URL with a host");
		evhttp_uri_free(u);
		return -EINVAL;
	}
	if (https && !ca) {
		snprintf(err, errlen,
			 "[notify] webhook is https: [notify] ca names the CA to trust");
		evhttp_uri_free(u);
		return -EINVAL;
	}
	n = calloc(1, sizeof(*n));
	if (!n) {
		evhttp_uri_free(u);
		return -ENOMEM;
	}
	n->base = base;
	snprintf(n->host, sizeof(n->host), "%s", host);
	n->port = evhttp_uri_get_port(u) > 0 ? evhttp_uri_get_port(u) : https ? 443 : 80;
	snprintf(n->path, sizeof(n->path), "%s%s%s", path && *path ? path : "/",
		 evhttp_uri_get_query(u) ? "?" : "", evhttp_uri_get_query(u) ?: "");
	snprintf(n->hostport, sizeof(n->hostport), strchr(n->host, ':') ? "[%s]:%d" : "%s:%d",
		 n->host, n->port);
	evhttp_uri_free(u);
	if (https)
		r = tls_client_ctx(&tc, &n->ctx);
	if (r < 0) {
		snprintf(err, errlen, "[notify] ca '%s' cannot be read as PEM", ca);
		free(n);
		return r;
	}
	gethostname(n->name, sizeof(n->name) - 1);
	n->rl = (struct log_ratelimit){ .interval_ms = 60000, .burst = 3 };
	*out = n;
	return 0;
}

void notify_free(struct notify *n)
{
	if (!n)
		return;
	SSL_CTX_free(n->ctx);
	free(n);
}

struct post {
	struct notify *n;
	struct evhttp_connection *conn;
};

static void free_conn(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	evhttp_connection_free(arg);
}

static void on_done(struct evhttp_request *req, void *arg)
{
	struct post *p = arg;
	int code = req ? evhttp_request_get_response_code(req) : 0;

	p->n->in_flight--;
	if (code >= 200 && code < 300) {
		p->n->st.sent++;
	} else {
		p->n->st.failed++;
		log_ratelimited(&p->n->rl, LOG_WARNING, "the webhook at %s%s answered %d",
				p->n->hostport, p->n->path, code);
	}
	ERR_clear_error();
	/* not from inside its own callback */
	event_base_once(p->n->base, -1, EV_TIMEOUT, free_conn, p->conn, NULL);
	free(p);
}

/* A connection of its own for each post: few, and none waits for another. */
static struct evhttp_connection *connect_to(struct notify *n)
{
	struct bufferevent *bev;
	SSL *ssl;

	if (!n->ctx)
		return evhttp_connection_base_new(n->base, NULL, n->host, (unsigned short)n->port);
	if (tls_client_ssl(n->ctx, n->host, &ssl) < 0)
		return NULL;
	bev = bufferevent_openssl_socket_new(n->base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
					     BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	if (!bev) {
		SSL_free(ssl);
		return NULL;
	}
	return evhttp_connection_base_bufferevent_new(n->base, NULL, bev, n->host,
						      (unsigned short)n->port);
}

void notify_post(struct notify *n, json_t *body)
{
	struct evhttp_request *req = NULL;
	struct post *p = NULL;
	char *text = NULL;

	if (!n) {
		json_decref(body);
		return;
	}
	if (n->in_flight >= NOTIFY_IN_FLIGHT) {
		n->st.dropped++;
		json_decref(body);
		return;
	}
	json_object_set_new(body, "kmemd", json_string(n->name));
	text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	p = text ? calloc(1, sizeof(*p)) : NULL;
	if (p) {
		p->n = n;
		p->conn = connect_to(n);
	}
	if (p && p->conn) {
		evhttp_connection_set_timeout(p->conn, NOTIFY_TIMEOUT_S);
		req = evhttp_request_new(on_done, p);
	}
	if (!req) {
		n->st.failed++;
		if (p && p->conn)
			evhttp_connection_free(p->conn);
		free(p);
		free(text);
		return;
	}
	evhttp_add_header(evhttp_request_get_output_headers(req), "Host", n->hostport);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
			  "application/json");
	evbuffer_add(evhttp_request_get_output_buffer(req), text, strlen(text));
	free(text);
	if (evhttp_make_request(p->conn, req, EVHTTP_REQ_POST, n->path) < 0) {
		n->st.failed++;
		evhttp_connection_free(p->conn);
		free(p);
		return;
	}
	n->in_flight++;
}

void notify_stats(const struct notify *n, struct notify_stats *st)
{
	*st = n ? n->st : (struct notify_stats){ 0 };
}

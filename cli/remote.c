// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/keyvalq_struct.h>
#include <netdb.h>
#include <openssl/err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fileio.h"
#include "hostport.h"
#include "ini.h"
#include "json-text.h"
#include "kmemctl.h"
#include "macro.h"
#include "output.h"
#include "remote.h"
#include "text.h"
#include "tls.h"

#define TIMEOUT_S 15
#define REPLY_MAX (64 << 20)

struct remote_config {
	char *server, *ca, *cert, *key;
};

#define OPT(key, type, field)                                                   \
	{                                                                       \
		"kmemd", key, type, offsetof(struct remote_config, field), 0, 0 \
	}

static const struct ini_option options[] = {
	OPT("server", INI_STRING, server),
	OPT("ca", INI_PATH, ca),
	OPT("cert", INI_PATH, cert),
	OPT("key", INI_PATH, key),
};

/* The config file's values under the flags'; EXIT_OK or why not (said). */
static int load_config(struct remote_config *rc)
{
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	struct ini_errors errs = { 0 };
	char path[4096];
	int r;

	if (cli.config)
		snprintf(path, sizeof(path), "%s", cli.config);
	else if (xdg && xdg[0])
		snprintf(path, sizeof(path), "%s/kmemctl/config", xdg);
	else
		snprintf(path, sizeof(path), "%s/.config/kmemctl/config", home ? home : "");
	r = ini_load_file(options, ARRAY_SIZE(options), rc, path, &errs);
	/* no file where none was asked for: the flags say it all */
	if (r == -ENOENT && !cli.config) {
		r = 0;
		ini_errors_free(&errs);
	}
	for (size_t i = 0; i < errs.n; i++)
		fprintf(stderr, "kmemctl: %s\n", errs.msgs[i]);
	ini_errors_free(&errs);
	if (r < 0)
		return EXIT_USAGE;
#define FLAG(f)                                \
	do {                                   \
		if (cli.f) {                   \
			free(rc->f);           \
			rc->f = strdup(cli.f); \
		}                              \
	} while (0)
	FLAG(server);
	FLAG(ca);
	FLAG(cert);
	FLAG(key);
#undef FLAG
	if (!rc->server || !rc->ca || !rc->cert || !rc->key) {
		fprintf(stderr,
			"kmemctl: no %s for kmemd: give --server, --ca, --cert and --key, or "
			"[kmemd] server, ca, cert and key in '%s'\n",
			!rc->server ? "server" :
			!rc->ca	    ? "CA" :
				      "certificate",
			path);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

struct call {
	struct event_base *base;
	int code;
	struct evbuffer *body;
	bool failed, why_set;
	enum evhttp_request_error why;
};

static void on_reply(struct evhttp_request *req, void *arg)
{
	struct call *c = arg;

	if (req && evhttp_request_get_response_code(req)) {
		c->code = evhttp_request_get_response_code(req);
		evbuffer_add_buffer(c->body, evhttp_request_get_input_buffer(req));
	} else {
		c->failed = true;
	}
	event_base_loopexit(c->base, NULL);
}

static void on_error(enum evhttp_request_error why, void *arg)
{
	struct call *c = arg;

	c->failed = true;
	c->why = why;
	c->why_set = true;
}

/* Why a connection fails, found by connecting again without TLS; NULL if it does not. */
static const char *tcp_error(const char *host, uint16_t port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	struct timeval tv = { .tv_sec = TIMEOUT_S };
	const char *why = NULL;
	char serv[8];
	int fd, r;

	snprintf(serv, sizeof(serv), "%u", port);
	r = getaddrinfo(host, serv, &hints, &ai);
	if (r)
		return gai_strerror(r);
	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
	if (fd < 0) {
		why = strerror(errno);
	} else {
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0)
			why = strerror(errno);
		close(fd);
	}
	freeaddrinfo(ai);
	return why;
}

/*
 * A request that got no answer: no connection (EXIT_UNREACHABLE), or one
 * that TLS ended (EXIT_REFUSED). kmemd's alert naming why is not always
 * read: a server that closes with our request unread resets the connection.
 */
static int say_failure(const struct call *c, struct bufferevent *bev, const char *host,
		       uint16_t port, bool *no_connection)
{
	unsigned long e = bufferevent_get_openssl_error(bev) ?: ERR_peek_error();
	const char *why = NULL;
	char err[256] = "";

	if (c->why_set && c->why == EVREQ_HTTP_TIMEOUT)
		why = "timed out";
	else
		why = tcp_error(host, port);
	*no_connection = why && !(c->why_set && c->why == EVREQ_HTTP_TIMEOUT);
	if (e && ERR_GET_LIB(e) == ERR_LIB_SSL)
		ERR_error_string_n(e, err, sizeof(err));
	if (why) {
		fprintf(stderr, "kmemctl: kmemd at %s:%u is not reachable: %s\n", host, port, why);
		return EXIT_UNREACHABLE;
	}
	fprintf(stderr, "kmemctl: kmemd at %s:%u ended the connection in TLS: %s\n", host, port,
		err[0] ? err : "closed before answering");
	return EXIT_REFUSED;
}

/* kmemd's {"error": ...} if it sent one, else the start of its body. */
static void say_refusal(int code, const char *body)
{
	json_t *o = json_loads(body, 0, NULL);
	const char *e = json_string_value(json_object_get(o, "error"));
	const char *why = e ?: body;
	char raw[512], line[512];

	snprintf(raw, sizeof(raw), "%.*s", (int)strcspn(why, "\r\n"), why);
	text_escape(raw, line, sizeof(line));
	if (line[0])
		fprintf(stderr, "kmemctl: kmemd answered %d: %s\n", code, line);
	else
		fprintf(stderr, "kmemctl: kmemd answered %d without a reason\n", code);
	json_decref(o);
}

/* One request to the kmemd at host:port; *no_connection when none could be made. */
static int request_one(const struct remote_target *t, const char *host, uint16_t port,
		       enum evhttp_cmd_type method, const char *path, const char *ctype,
		       const void *body, size_t len, int *code, uint8_t **reply, size_t *reply_len,
		       bool *no_connection)
{
	struct tls_config tc = { .cert = t->cert, .key = t->key, .ca = t->ca };
	struct call c = { 0 };
	struct evhttp_connection *conn = NULL;
	struct evhttp_request *req;
	struct bufferevent *bev;
	SSL_CTX *ctx = NULL;
	SSL *ssl = NULL;
	char hostport[300], err[256];
	int ret = EXIT_USAGE;

	*reply = NULL;
	if (tls_client_ctx(&tc, &ctx) < 0 || tls_client_ssl(ctx, host, &ssl) < 0) {
		fprintf(stderr, "kmemctl: certificate '%s', key '%s' or CA '%s' unusable: %s\n",
			t->cert ?: "(none)", t->key ?: "(none)", t->ca,
			tls_error_string(err, sizeof(err)));
		goto out;
	}
	ret = EXIT_ERROR;
	c.base = event_base_new();
	c.body = evbuffer_new();
	bev = c.base ? bufferevent_openssl_socket_new(c.base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
						      BEV_OPT_CLOSE_ON_FREE) :
		       NULL;
	if (!bev) {
		SSL_free(ssl);
		goto out;
	}
	conn = evhttp_connection_base_bufferevent_new(c.base, NULL, bev, host, port);
	if (!conn) {
		bufferevent_free(bev);
		goto out;
	}
	req = c.body ? evhttp_request_new(on_reply, &c) : NULL;
	if (!req)
		goto out;
	evhttp_connection_set_timeout(conn, TIMEOUT_S);
	evhttp_connection_set_max_body_size(conn, REPLY_MAX);
	evhttp_request_set_error_cb(req, on_error);
	/* an IPv6 address in brackets, as in a URL */
	snprintf(hostport, sizeof(hostport), strchr(host, ':') ? "[%.255s]:%u" : "%.255s:%u", host,
		 port);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Host", hostport);
	if (ctype) {
		evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", ctype);
		evbuffer_add(evhttp_request_get_output_buffer(req), body, len);
	}
	if (evhttp_make_request(conn, req, method, path) < 0)
		goto out;
	event_base_dispatch(c.base);
	if (c.failed || !c.code) {
		ret = say_failure(&c, bev, host, port, no_connection);
		goto out;
	}
	/* a NUL after the body, for callers that read it as text */
	*reply_len = evbuffer_get_length(c.body);
	*reply = malloc(*reply_len + 1);
	if (!*reply)
		goto out;
	evbuffer_remove(c.body, *reply, *reply_len);
	(*reply)[*reply_len] = '\0';
	*code = c.code;
	ret = EXIT_OK;
out:
	if (conn)
		evhttp_connection_free(conn);
	if (c.body)
		evbuffer_free(c.body);
	if (c.base)
		event_base_free(c.base);
	SSL_CTX_free(ctx);
	return ret;
}

/*
 * To each of the server's addresses in turn until one answers: past one
 * that no connection could be made to, and, for a GET, past one that made
 * none in time; a change sent to a kmemd that took it and did not answer
 * is not sent again.
 */
int remote_request(const struct remote_target *t, enum evhttp_cmd_type method, const char *path,
		   const char *ctype, const void *body, size_t len, int *code, uint8_t **reply,
		   size_t *reply_len)
{
	struct hostport hp[HOSTPORT_LIST_MAX];
	bool no_connection;
	size_t n;
	int ret = EXIT_USAGE;

	*reply = NULL;
	if (hostport_list(t->server, hp, HOSTPORT_LIST_MAX, &n) < 0) {
		fprintf(stderr,
			"kmemctl: server '%s' is not HOST:PORT, or up to %d of them separated by "
			"commas, each once\n",
			t->server, HOSTPORT_LIST_MAX);
		return ret;
	}
	for (size_t i = 0; i < n; i++) {
		no_connection = false;
		ret = request_one(t, hp[i].host, hp[i].port, method, path, ctype, body, len, code,
				  reply, reply_len, &no_connection);
		if (ret != EXIT_UNREACHABLE || (!no_connection && method != EVHTTP_REQ_GET))
			break;
		if (i + 1 < n)
			fprintf(stderr, "kmemctl: trying kmemd at %s:%u\n", hp[i + 1].host,
				hp[i + 1].port);
	}
	return ret;
}

int remote_call_raw(enum evhttp_cmd_type method, const char *path, const char *ctype,
		    const void *body, size_t len, uint8_t **reply, size_t *reply_len)
{
	struct remote_config rc = { 0 };
	uint8_t *text = NULL;
	size_t n = 0;
	int code = 0, ret = load_config(&rc);

	*reply = NULL;
	if (ret == EXIT_OK)
		ret = remote_request(&(struct remote_target){ rc.server, rc.ca, rc.cert, rc.key },
				     method, path, ctype, body, len, &code, &text, &n);
	if (ret == EXIT_OK && code / 100 != 2) {
		say_refusal(code, (const char *)text);
		ret = code / 100 == 4 ? EXIT_REFUSED : EXIT_ERROR;
	} else if (ret == EXIT_OK) {
		*reply = TAKE_PTR(text);
		*reply_len = n;
	}
	free(text);
	ini_free(options, ARRAY_SIZE(options), &rc);
	return ret;
}

int remote_call(enum evhttp_cmd_type method, const char *path, const char *ctype, const void *body,
		size_t len, json_t **reply)
{
	uint8_t *text = NULL;
	size_t n;
	int ret = remote_call_raw(method, path, ctype, body, len, &text, &n);

	*reply = NULL;
	if (ret == EXIT_OK) {
		*reply = json_loads((const char *)text, 0, NULL);
		if (!cli.json)
			json_escape_strings(*reply);
	}
	free(text);
	return ret;
}

int remote_json(enum evhttp_cmd_type method, const char *path, json_t *body, json_t **reply)
{
	char *text = json_dumps(body, JSON_COMPACT);
	int r;

	json_decref(body);
	if (!text)
		return EXIT_ERROR;
	r = remote_call(method, path, "application/json", text, strlen(text), reply);
	free(text);
	return r;
}

int remote_get(const char *path, json_t **reply)
{
	int r = remote_call(EVHTTP_REQ_GET, path, NULL, NULL, 0, reply);

	if (r == EXIT_OK && cli.json) {
		out_json(*reply, cli.pretty);
		*reply = NULL;
	}
	return r;
}

int remote_post_file(int argc, char **argv, const char *usage, const char *path, const char *ctype,
		     json_t **reply)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	*reply = NULL;
	if (argc != 2) {
		fprintf(stderr, "usage: %s\n", usage);
		return EXIT_USAGE;
	}
	r = read_file_max(argv[1], REMOTE_FILE_MAX, &buf, &len);
	if (r < 0) {
		fprintf(stderr, "kmemctl: reading '%s' failed: %s\n", argv[1], strerror(-r));
		return EXIT_ERROR;
	}
	r = remote_call(EVHTTP_REQ_POST, path, ctype, buf, len, reply);
	if (r == EXIT_OK && cli.json) {
		out_json(*reply, cli.pretty);
		*reply = NULL;
	}
	return r;
}

int remote_show(int argc, const char *usage, const char *path, json_t **reply)
{
	*reply = NULL;
	if (argc != 1) {
		fprintf(stderr, "usage: %s\n", usage);
		return EXIT_USAGE;
	}
	return remote_get(path, reply);
}

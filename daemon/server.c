// SPDX-License-Identifier: GPL-2.0
/*
 * kmemd's HTTPS front: one evhttp over TLS 1.3 with client certificates,
 * a route table that states per route which certificate role may call it,
 * and the handlers' common plumbing (identity, body, replies).
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "conn.h"
#include "hostport.h"
#include "kmemd.h"
#include "log.h"
#include "macro.h"
#include "message-ids.h"
#include "server.h"
#include "store.h"
#include "tls.h"

struct server {
	struct event_base *base;
	struct evhttp *http;
	struct evhttp_bound_socket *sock;
	SSL_CTX *ctx;
	STACK_OF(X509) * admin_cas; /* [server] admin_ca; NULL: the OU names operators */
	const struct kmemd_config *cfg;
	struct kmemd *k;
};

static const struct route routes[] = {
	{ EVHTTP_REQ_GET, "/v1/health", ROLE_ANY, handle_health },
	{ EVHTTP_REQ_GET, "/", ROLE_ADMIN, handle_web_index },
	/* a path ending in '/' (other than "/") takes every path under it */
	{ EVHTTP_REQ_GET, "/static/", ROLE_ADMIN, handle_web_static },
	{ EVHTTP_REQ_POST, "/v1/agent/report", ROLE_HOST, handle_report },
	{ EVHTTP_REQ_GET, "/v1/policies", ROLE_ADMIN, handle_policies_get },
	{ EVHTTP_REQ_POST, "/v1/policies", ROLE_ADMIN, handle_policies_post },
	{ EVHTTP_REQ_POST, "/v1/assignments", ROLE_ADMIN, handle_assignments_post },
	{ EVHTTP_REQ_GET, "/v1/hosts", ROLE_ADMIN, handle_hosts_get },
	{ EVHTTP_REQ_GET, "/v1/hosts/detail", ROLE_ADMIN, handle_host_detail },
	{ EVHTTP_REQ_GET, "/v1/fleet", ROLE_ADMIN, handle_fleet_get },
	{ EVHTTP_REQ_POST, "/v1/hosts/revoke", ROLE_ADMIN, handle_revoke_post },
	{ EVHTTP_REQ_POST, "/v1/hosts/reenroll", ROLE_ADMIN, handle_reenroll_post },
	{ EVHTTP_REQ_GET, "/v1/telemetry", ROLE_ADMIN, handle_telemetry_get },
	{ EVHTTP_REQ_POST, "/v1/enroll", ROLE_ANY, handle_enroll },
	{ EVHTTP_REQ_POST, "/v1/enroll/secrets", ROLE_ADMIN, handle_secret_post },
	{ EVHTTP_REQ_POST, "/v1/enroll/secrets/revoke", ROLE_ADMIN, handle_secret_revoke },
	{ EVHTTP_REQ_GET, "/metrics", ROLE_ADMIN, handle_metrics },
	{ EVHTTP_REQ_POST, "/v1/rollouts", ROLE_ADMIN, handle_rollouts_post },
	{ EVHTTP_REQ_GET, "/v1/rollouts", ROLE_ADMIN, handle_rollouts_get },
	{ EVHTTP_REQ_GET, "/v1/rollouts/status", ROLE_ADMIN, handle_rollout_status },
	{ EVHTTP_REQ_GET, "/v1/rollouts/series", ROLE_ADMIN, handle_rollout_series },
	{ EVHTTP_REQ_POST, "/v1/rollouts/action", ROLE_ADMIN, handle_rollout_action },
};

static struct bufferevent *ssl_bev(struct event_base *base, void *arg)
{
	struct server *s = arg;

	return conn_new(base, s->ctx);
}

void kmemd_request_peer(struct evhttp_request *req, char *addr, size_t addrlen, char *key,
			size_t keylen)
{
	struct evhttp_connection *conn = evhttp_request_get_connection(req);
	const struct sockaddr *sa = conn ? evhttp_connection_get_addr(conn) : NULL;
	char *host = NULL;
	ev_uint16_t port;

	if (conn)
		evhttp_connection_get_peer(conn, &host, &port);
	snprintf(addr, addrlen, "%s", host ? host : "?");
	if (sa)
		conn_addr_key(sa, key, keylen);
	else
		snprintf(key, keylen, "%s", addr);
}

static SSL *request_ssl(struct evhttp_request *req)
{
	struct evhttp_connection *conn = evhttp_request_get_connection(req);
	struct bufferevent *bev = conn ? evhttp_connection_get_bufferevent(conn) : NULL;

	return bev ? bufferevent_openssl_get_ssl(bev) : NULL;
}

void reply_text(struct evhttp_request *req, int code, const char *reason, const char *text)
{
	struct evbuffer *b = evbuffer_new();

	if (!b) {
		evhttp_send_error(req, HTTP_INTERNAL, NULL);
		return;
	}
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
			  "text/plain; charset=utf-8");
	evbuffer_add_printf(b, "%s\n", text);
	evhttp_send_reply(req, code, reason, b);
	evbuffer_free(b);
}

void reply_bytes(struct evhttp_request *req, int code, const char *reason, const char *type,
		 const void *data, size_t len)
{
	struct evbuffer *b = evbuffer_new();

	if (!b) {
		evhttp_send_error(req, HTTP_INTERNAL, NULL);
		return;
	}
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", type);
	evbuffer_add(b, data, len);
	evhttp_send_reply(req, code, reason, b);
	evbuffer_free(b);
}

uint8_t *pack_message(const ProtobufCMessage *m, size_t *len)
{
	uint8_t *buf;

	*len = protobuf_c_message_get_packed_size(m);
	buf = malloc(*len ? *len : 1);
	if (buf)
		protobuf_c_message_pack(m, buf);
	return buf;
}

void reply_message(struct evhttp_request *req, int code, const char *reason,
		   const ProtobufCMessage *m)
{
	size_t len;
	uint8_t *buf = pack_message(m, &len);

	if (!buf) {
		evhttp_send_error(req, HTTP_INTERNAL, NULL);
		return;
	}
	reply_bytes(req, code, reason, PROTOBUF_TYPE, buf, len);
	free(buf);
}

int64_t kmemd_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void kmemd_audit(struct kmemd *k, const char *message_id, const char *actor, const char *action,
		 const char *host, const char *detail)
{
	char f_actor[96], f_action[64], f_detail[1100], f_host[96];
	const char *fields[] = { f_actor, f_action, f_detail, host ? f_host : NULL, NULL };

	snprintf(f_actor, sizeof(f_actor), "ACTOR=%s", actor);
	snprintf(f_action, sizeof(f_action), "ACTION=%s", action);
	snprintf(f_detail, sizeof(f_detail), "DETAIL=%s", detail);
	snprintf(f_host, sizeof(f_host), "HOST_ID=%s", host ? host : "");
	/* the change is made: a lost audit row still leaves the journal's */
	if (k->store->ops->audit(k->store, kmemd_now_ms(), actor, action, detail) < 0)
		log_error("the audit row for %s by '%s' (%s) was not stored: %s", action, actor,
			  detail, k->store->ops->error(k->store));
	log_event(LOG_NOTICE, message_id, fields, "%s by '%s': %s", action, actor, detail);
}

void reply_json(struct evhttp_request *req, int code, const char *reason, json_t *o)
{
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	struct evbuffer *b = evbuffer_new();

	json_decref(o);
	if (!text || !b) {
		free(text);
		if (b)
			evbuffer_free(b);
		evhttp_send_error(req, HTTP_INTERNAL, NULL);
		return;
	}
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", JSON_TYPE);
	evbuffer_add(b, text, strlen(text));
	evbuffer_add(b, "\n", 1);
	evhttp_send_reply(req, code, reason, b);
	evbuffer_free(b);
	free(text);
}

void reply_error(struct evhttp_request *req, int code, const char *reason, const char *why)
{
	reply_json(req, code, reason, json_pack("{s:s}", "error", why));
}

const uint8_t *request_body(struct evhttp_request *req, size_t *len)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);

	*len = evbuffer_get_length(in);
	return *len ? evbuffer_pullup(in, -1) : NULL;
}

const uint8_t *request_json(struct evhttp_request *req, size_t *len)
{
	const uint8_t *body = request_body(req, len);

	if (!content_type_is(req, JSON_TYPE) || !body) {
		reply_error(req, 415, "Unsupported Media Type", "send JSON");
		return NULL;
	}
	return body;
}

bool content_type_is(struct evhttp_request *req, const char *type)
{
	const char *t = evhttp_find_header(evhttp_request_get_input_headers(req), "Content-Type");
	size_t n = strlen(type);

	return t && !strncmp(t, type, n) && (t[n] == '\0' || t[n] == ';');
}

/*
 * With a separate admin CA, operators are whoever it vouches for and no
 * one else: the fleet CA, whose key kmemd keeps online for enrollment,
 * cannot make an operator, and the admin CA cannot make a host. Without
 * one, the OU ("host", "admin") of a fleet CA certificate says.
 */
static bool role_allows(const struct server *s, enum route_role role, SSL *ssl,
			const struct tls_identity *id, int id_result)
{
	bool by_admin_ca = s->admin_cas && ssl && tls_peer_anchored_in(ssl, s->admin_cas);

	switch (role) {
	case ROLE_ANY:
		return true;
	case ROLE_HOST:
		return id_result == 0 && !by_admin_ca && strcmp(id->ou, "host") == 0;
	case ROLE_ADMIN:
		return id_result == 0 &&
		       (s->admin_cas ? by_admin_ca : strcmp(id->ou, "admin") == 0);
	}
	return false;
}

static void dispatch(struct evhttp_request *req, void *arg)
{
	struct server *s = arg;
	const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
	enum evhttp_cmd_type method = evhttp_request_get_command(req);
	const struct tls_identity *id = NULL;
	bool path_known = false;
	int id_result;

	if (!path) {
		reply_text(req, HTTP_BADREQUEST, "Bad Request", "bad request target");
		return;
	}
	if (!conn_request_read(req)) {
		evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
		reply_text(req, 503, "Service Unavailable",
			   "kmemd is at max_connections; try again later");
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(routes); i++) {
		size_t n = strlen(routes[i].path);
		bool prefix = n > 1 && routes[i].path[n - 1] == '/';

		if (prefix ? strncmp(routes[i].path, path, n) != 0 :
			     strcmp(routes[i].path, path) != 0)
			continue;
		path_known = true;
		if (routes[i].method != method)
			continue;
		id_result = conn_peer_identity(req, &id);
		if (routes[i].role != ROLE_ANY && id_result < 0) {
			reply_text(req, 401, "Unauthorized", "a client certificate is required");
			return;
		}
		if (!role_allows(s, routes[i].role, request_ssl(req), id, id_result)) {
			reply_text(req, 403, "Forbidden",
				   "certificate role may not call this route");
			return;
		}
		/* an admin write never rides, unanswered, in the reports' batch */
		if (routes[i].handler != handle_report)
			batch_commit(s->k);
		routes[i].handler(req, s->k, id_result == 0 ? id : NULL);
		return;
	}
	if (path_known) {
		reply_text(req, HTTP_BADMETHOD, "Method Not Allowed", "method not allowed");
		return;
	}
	reply_text(req, HTTP_NOTFOUND, "Not Found", "no such route");
}

/* Some certificate is in both bundles. */
static bool overlap(STACK_OF(X509) * a, STACK_OF(X509) * b)
{
	for (int i = 0; i < sk_X509_num(a); i++)
		for (int j = 0; j < sk_X509_num(b); j++)
			if (!X509_cmp(sk_X509_value(a, i), sk_X509_value(b, j)))
				return true;
	return false;
}

/* The admin CA's certificates; one that is also a fleet CA would make every host an operator. */
static int admin_cas(const struct kmemd_config *cfg, STACK_OF(X509) * *out)
{
	STACK_OF(X509) *fleet = NULL, *admin = NULL;
	int r;

	*out = NULL;
	if (!cfg->admin_ca)
		return 0;
	r = tls_read_certs(cfg->admin_ca, &admin);
	if (r < 0)
		return log_error_errno(r, "admin_ca '%s' holds no PEM certificate", cfg->admin_ca);
	r = tls_read_certs(cfg->ca, &fleet);
	if (r == 0 && overlap(fleet, admin))
		r = log_error_errno(-EINVAL, "admin_ca '%s' must be another CA than ca '%s'",
				    cfg->admin_ca, cfg->ca);
	sk_X509_pop_free(fleet, X509_free);
	if (r < 0) {
		sk_X509_pop_free(admin, X509_free);
		return r;
	}
	*out = admin;
	return 0;
}

/* The TLS context and the admin CA, as server_new() and server_reload() set them. */
static int server_tls(const struct kmemd_config *cfg, SSL_CTX **ctx, STACK_OF(X509) * *admin)
{
	struct tls_config tc = { cfg->cert, cfg->key, cfg->ca, TLS_CLIENT_OPTIONAL, cfg->admin_ca };
	char err[256];
	int r = admin_cas(cfg, admin);

	if (r < 0)
		return r;
	r = tls_server_ctx(&tc, ctx);
	if (r < 0) {
		log_error_errno(r, "TLS setup with cert '%s', key '%s', ca '%s'%s%s failed: %s",
				cfg->cert ? cfg->cert : "(unset)", cfg->key ? cfg->key : "(unset)",
				cfg->ca ? cfg->ca : "(unset)", cfg->admin_ca ? ", admin_ca " : "",
				cfg->admin_ca ?: "", tls_error_string(err, sizeof(err)));
		sk_X509_pop_free(*admin, X509_free);
		*admin = NULL;
	}
	return r;
}

static void conn_limits(const struct kmemd_config *cfg, struct conn_limits *lim)
{
	*lim = (struct conn_limits){
		.max_connections = cfg->max_connections,
		.max_handshakes = cfg->max_handshakes,
		.max_anonymous = cfg->max_anonymous,
		.max_per_address = cfg->max_per_address,
		.handshake_timeout_ms = cfg->handshake_timeout_ms,
		.request_timeout_ms = cfg->request_timeout_ms,
	};
}

/* evhttp's idle timeout: between requests, and for a peer that stops reading a reply. */
static void server_limits(struct server *s)
{
	struct conn_limits lim;

	evhttp_set_max_body_size(s->http, (ev_ssize_t)s->cfg->max_request);
	evhttp_set_max_headers_size(s->http, (ev_ssize_t)(s->cfg->max_headers * 256));
	evhttp_set_timeout_tv(
		s->http,
		&(struct timeval){ .tv_sec = (time_t)(s->cfg->io_timeout_ms / 1000),
				   .tv_usec = (suseconds_t)(s->cfg->io_timeout_ms % 1000) * 1000 });
	conn_limits(s->cfg, &lim);
	conns_set_limits(&lim);
}

/*
 * Not evhttp_bind_socket(): its backlog of 128 drops the SYNs of a fleet
 * reconnecting at once, and each dropped host waits a second to retry.
 */
static int listen_socket(const char *host, uint16_t port)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	struct addrinfo *ai;
	char serv[8];
	int fd, r;

	snprintf(serv, sizeof(serv), "%u", port);
	r = getaddrinfo(host[0] ? host : NULL, serv, &hints, &ai);
	if (r)
		return r == EAI_SYSTEM ? negative_errno() : -EADDRNOTAVAIL;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto err;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &(int){ 1 }, sizeof(int));
	/* accepted connections inherit it: a reply never waits on a delayed ACK */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, SOMAXCONN) < 0)
		goto err;
	freeaddrinfo(ai);
	return fd;
err:
	r = negative_errno();
	if (fd >= 0)
		close(fd);
	freeaddrinfo(ai);
	return r;
}

static int setup_http(struct server *s)
{
	char host[256];
	uint16_t port;
	int fd, r;

	r = hostport_split(s->cfg->listen, host, sizeof(host), &port, true);
	if (r < 0)
		return log_error_errno(r, "listen address '%s' is not host:port", s->cfg->listen);
	s->http = evhttp_new(s->base);
	if (!s->http)
		return -ENOMEM;
	evhttp_set_bevcb(s->http, ssl_bev, s);
	server_limits(s);
	evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT |
						    EVHTTP_REQ_DELETE);
	evhttp_set_gencb(s->http, dispatch, s);
	fd = listen_socket(host, port);
	if (fd < 0)
		return log_error_errno(fd, "cannot listen on '%s': %m", s->cfg->listen);
	s->sock = evhttp_accept_socket_with_handle(s->http, fd);
	if (!s->sock) {
		close(fd);
		return -ENOMEM;
	}
	conns_set_listener(evhttp_bound_socket_get_listener(s->sock));
	return 0;
}

int server_new(struct event_base *base, struct kmemd *k, struct server **out)
{
	struct server *s = calloc(1, sizeof(*s));
	struct conn_limits lim;
	int r;

	if (!s)
		return -ENOMEM;
	s->base = base;
	s->cfg = k->cfg;
	s->k = k;
	conn_limits(k->cfg, &lim);
	r = conns_init(base, &lim);
	if (r == 0)
		r = server_tls(k->cfg, &s->ctx, &s->admin_cas);
	if (r < 0)
		goto err;
	r = setup_http(s);
	if (r < 0)
		goto err;
	*out = s;
	return 0;
err:
	server_free(s);
	return r;
}

int server_reload(struct server *s, const struct kmemd_config *cfg)
{
	STACK_OF(X509) * admin;
	SSL_CTX *ctx;
	int r = server_tls(cfg, &ctx, &admin);

	if (r < 0)
		return r;
	/* each open connection's SSL holds its own reference to the old context */
	SSL_CTX_free(s->ctx);
	s->ctx = ctx;
	sk_X509_pop_free(s->admin_cas, X509_free);
	s->admin_cas = admin;
	s->cfg = cfg;
	server_limits(s);
	return 0;
}

int server_port(const struct server *s)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	evutil_socket_t fd = evhttp_bound_socket_get_fd(s->sock);
	char serv[16];

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return negative_errno();
	if (getnameinfo((struct sockaddr *)&ss, len, NULL, 0, serv, sizeof(serv), NI_NUMERICSERV))
		return -EINVAL;
	return atoi(serv);
}

void server_free(struct server *s)
{
	if (!s)
		return;
	conns_set_listener(NULL);
	if (s->http)
		evhttp_free(s->http);
	conns_free();
	SSL_CTX_free(s->ctx);
	sk_X509_pop_free(s->admin_cas, X509_free);
	free(s);
}

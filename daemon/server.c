// SPDX-License-Identifier: GPL-2.0
/*
 * kmemd's listener and its TLS 1.3 context with client certificates;
 * what each connection accepted may do is conn.c's, and each request it
 * reads whole goes to the router (router.h).
 */
#include <errno.h>
#include <event2/event.h>
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
#include "http.h"
#include "kmemd.h"
#include "log.h"
#include "macro.h"
#include "revocations.h"
#include "router.h"
#include "tls.h"

struct server {
	struct event_base *base;
	struct evconnlistener *listener;
	SSL_CTX *ctx;
	STACK_OF(X509) * admin_cas; /* [server] admin_ca; NULL: the OU names operators */
	const struct kmemd_config *cfg;
	struct kmemd *k;
};

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
		      void *arg)
{
	struct server *s = arg;

	(void)l;
	conn_new(s->ctx, fd, sa, (socklen_t)salen);
}

static void on_request(struct http_request *req, void *arg)
{
	struct server *s = arg;

	router_dispatch(req, s->k, s->admin_cas);
}

/* A host by its id, an observer or operator by its fingerprint: revoked, or its role's pool. */
static enum conn_class classify(SSL *ssl, const struct tls_identity *id, void *arg)
{
	struct server *s = arg;
	enum route_role role = router_role(
		s->admin_cas, s->admin_cas && tls_peer_anchored_in(ssl, s->admin_cas), id);

	switch (role) {
	case ROLE_OBSERVER:
	case ROLE_OPERATOR:
		if (revocations_operator(s->k->revoked, id->fingerprint))
			return CONN_REVOKED_OPERATOR;
		return role == ROLE_OPERATOR ? CONN_OPERATOR : CONN_OBSERVER;
	case ROLE_HOST:
		if (revocations_host(s->k->revoked, id->cn))
			return CONN_REVOKED_HOST;
		/*
		 * its first use is an enrollment (enroll_allowed()): an id issued
		 * offline is taken before its first report; a full table misses it
		 */
		cert_expiry_note(&s->k->host_certs, id->cn, (int64_t)id->not_after, kmemd_now_ms());
		return CONN_HOST;
	default:
		return CONN_HOST;
	}
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
		.max_operators = cfg->max_operators,
		.max_handshakes = cfg->max_handshakes,
		.max_anonymous = cfg->max_anonymous,
		.max_per_address = cfg->max_per_address,
		.handshake_timeout_ms = cfg->handshake_timeout_ms,
		.request_timeout_ms = cfg->request_timeout_ms,
		.io_timeout_ms = cfg->io_timeout_ms,
		.max_body = cfg->max_request,
		.max_header_bytes = cfg->max_headers * 256,
		.max_bodies = cfg->max_bodies,
	};
}

/*
 * A backlog of SOMAXCONN, not libevent's 128: that drops the SYNs of a
 * fleet reconnecting at once, and each dropped host waits a second to retry.
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

static int setup_listener(struct server *s)
{
	char host[256];
	uint16_t port;
	int fd, r;

	r = hostport_split(s->cfg->listen, host, sizeof(host), &port, true);
	if (r < 0)
		return log_error_errno(r, "listen address '%s' is not host:port", s->cfg->listen);
	fd = listen_socket(host, port);
	if (fd < 0)
		return log_error_errno(fd, "cannot listen on '%s': %m", s->cfg->listen);
	/* 0: listening already; libevent's -1 would listen() again with 128 */
	s->listener = evconnlistener_new(s->base, on_accept, s,
					 LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, fd);
	if (!s->listener) {
		close(fd);
		return -ENOMEM;
	}
	conns_set_listener(s->listener);
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
	r = conns_init(base, &lim, on_request, classify, s);
	if (r == 0)
		r = server_tls(k->cfg, &s->ctx, &s->admin_cas);
	if (r < 0)
		goto err;
	r = setup_listener(s);
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
	struct conn_limits lim;
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
	conn_limits(cfg, &lim);
	conns_set_limits(&lim);
	return 0;
}

int server_port(const struct server *s)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	evutil_socket_t fd = evconnlistener_get_fd(s->listener);
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
	if (s->listener)
		evconnlistener_free(s->listener);
	conns_free();
	SSL_CTX_free(s->ctx);
	sk_X509_pop_free(s->admin_cas, X509_free);
	free(s);
}

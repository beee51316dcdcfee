/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmemd's connections from accept to close: TLS on the socket, HTTP/1.1
 * requests read whole (http1.h) and handed to the router one at a time,
 * their replies written; and what each connection may cost and for how
 * long, so that no client can starve the others.
 *
 * - Deadlines, not idle timers: a TLS handshake must end within
 *   handshake_timeout of the accept, and a request (headers and body)
 *   within request_timeout of its first byte, however the bytes trickle
 *   in. Between requests a connection may idle for io_timeout, and a
 *   reply may wait that long for a client to read it.
 * - Unauthenticated work is bounded and shared between client networks
 *   (an IPv4 address, an IPv6 /64): connections in their handshake
 *   (max_handshakes) and those past it without a client certificate
 *   (max_anonymous, enrollment and health only). A network holds at most
 *   max_per_address of them. At a bound, the network holding the most
 *   gives up its oldest connection if it is older than a second, or than
 *   100 ms when it has not sent its ClientHello (a client sends it as it
 *   connects); a bound reached by young handshakes only (a fleet
 *   reconnecting at once) pauses accept instead, and the kernel's backlog
 *   holds the rest. So does a burst of connections closed and not yet
 *   freed: memory is bounded by the pools, not by how many clients wait.
 * - max_connections bounds connections with a host's certificate, and
 *   max_operators those with an observer's or operator's. Operators have
 *   their own bound so that a fleet filling kmemd (its hosts moving over
 *   from a kmemd that died) never locks out the operators and Prometheus.
 *   Within a full bound each identity (a host id, an operator's or
 *   observer's name) has its share: a newcomer takes the place of a
 *   connection of the identity holding the most, if that holds at least
 *   two more than the newcomer's own does (an observer counting one more
 *   against an operator, so that operators' control always gets in);
 *   otherwise it is answered 503 and closed at its first request. One
 *   certificate cannot keep the others out, and a fleet larger than the
 *   pool does not churn.
 * - A revoked certificate (the classify callback) holds no host's or
 *   operator's slot: it waits, as anonymous connections do, to be
 *   answered 403 and closed. conns_revisit() closes the open connections
 *   of what was revoked since (one whose request is with its handler
 *   once it is answered).
 * - Request bodies being read hold at most max_bodies bytes in all, each
 *   buffer growing as its bytes arrive. A growth past it closes the
 *   largest body of the identity or network holding the most body bytes,
 *   if that holds more than the grower's would; otherwise the grower's
 *   request is refused 503. A client without a certificate sends a body
 *   to enrollment only (http1.h), of at most 16 KiB.
 * - A client that sends requests faster than it reads replies is not
 *   read until it has read them; one that pipelines waits for each answer.
 * - When accept() fails for want of descriptors, accepting stops for a
 *   while and the failure is logged once per interval.
 *
 * A connection closed is freed in a later turn of the loop, never under
 * the feet of the callback that closed it; a request still with its
 * handler then outlives it, and its reply goes nowhere.
 */
#ifndef KMEMD_CONN_H
#define KMEMD_CONN_H

#include <event2/event.h>
#include <event2/listener.h>
#include <openssl/ssl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "http1.h"
#include "tls.h"

struct evbuffer;

struct conn_limits {
	uint64_t max_connections, max_operators, max_handshakes, max_anonymous, max_per_address;
	uint64_t handshake_timeout_ms, request_timeout_ms, io_timeout_ms;
	uint64_t max_body, max_header_bytes, max_bodies;
};

/* What a revoked certificate is told, at its connection and on the routes alike. */
#define CONN_TEXT_REVOKED_HOST "this host id is revoked"
#define CONN_TEXT_REVOKED_OPERATOR "this operator certificate is revoked: ask for a new one"

/* The route a client without a certificate may send a body to, and that body's bound. */
#define CONN_ANONYMOUS_PATH "/v1/enroll"
#define CONN_ANONYMOUS_MAX_BODY 16384

/* Why kmemd closed connections itself, counted since start. */
enum conn_close {
	CLOSE_HANDSHAKE_TIMEOUT,
	CLOSE_REQUEST_TIMEOUT,
	CLOSE_EVICTED, /* made room for another network's */
	CLOSE_PER_ADDRESS, /* its network held its share */
	CLOSE_ANONYMOUS_FULL, /* max_anonymous held by young connections */
	CLOSE_OVER_LIMIT, /* past max_connections or max_operators */
	CLOSE_SHARE, /* made room for another identity's */
	CLOSE_REVOKED, /* its certificate is revoked */
	CLOSE_BODIES, /* its body made room for another identity's, within max_bodies */
	CLOSE_KINDS,
};

struct conn_stats {
	uint64_t open, handshakes, anonymous, authenticated, operators;
	uint64_t closed[CLOSE_KINDS];
	uint64_t accept_errors; /* accept() out of descriptors or memory */
	uint64_t handshaken; /* TLS handshakes completed, ever */
	uint64_t bodies; /* bytes of request bodies being read */
	uint64_t bodies_refused; /* requests refused 503 for max_bodies */
};

/* A request read whole, on a connection within its bound: answer it with conn_reply(). */
typedef void (*conn_request_fn)(struct http_request *req, void *arg);

/* What a verified client certificate makes of its connection: its pool, or refused. */
enum conn_class {
	CONN_HOST, /* max_connections: a host's, or one with no role */
	CONN_OBSERVER, /* max_operators */
	CONN_OPERATOR, /* max_operators */
	CONN_REVOKED_HOST,
	CONN_REVOKED_OPERATOR, /* an observer's or operator's */
};
typedef enum conn_class (*conn_classify_fn)(SSL *ssl, const struct tls_identity *id, void *arg);

int conns_init(struct event_base *base, const struct conn_limits *lim, conn_request_fn on_request,
	       conn_classify_fn classify, void *arg);
void conns_set_limits(const struct conn_limits *lim);
/* The listener to pace; NULL when the server goes away. */
void conns_set_listener(struct evconnlistener *l);
/* Every connection closed and freed. */
void conns_free(void);
/* Each open connection with a certificate classed again: the revoked ones close. */
void conns_revisit(void);

/* A connection accepted on fd (now the connection's), its TLS with ctx. */
void conn_new(SSL_CTX *ctx, evutil_socket_t fd, const struct sockaddr *sa, socklen_t salen);

/*
 * The reply to req: its head, then body (b, emptied; NULL: data of len).
 * req is freed, now or once its handler returns.
 */
void conn_reply(struct http_request *req, int code, const char *reason, const char *type,
		struct evbuffer *b, const void *data, size_t len);

/*
 * The identity of the request's client certificate (tls_peer_identity()'s
 * result), read once per connection. *id is valid while the connection
 * is, and only when 0 is returned.
 */
int conn_peer_identity(struct http_request *req, const struct tls_identity **id);
/* Whether a certificate in the client's chain is one of cas. */
bool conn_peer_anchored_in(struct http_request *req, STACK_OF(X509) * cas);

/*
 * The revocation generation (struct kmemd's revocations) at which the
 * connection's host was last found not revoked; NULL: no connection.
 */
uint64_t *conn_not_revoked_at(struct http_request *req);
/* The client's address, and its network's key; "?" for both once it has gone. */
void conn_peer(struct http_request *req, char *addr, size_t addrlen, char *key, size_t keylen);

void conns_stats(struct conn_stats *out);
const char *conn_close_name(enum conn_close why);

#endif

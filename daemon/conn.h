/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmemd's connections from accept to close: what each may cost and for
 * how long, so that no client can starve the others.
 *
 * - Deadlines, not idle timers: a TLS handshake must end within
 *   handshake_timeout of the accept, and a request (headers and body)
 *   within request_timeout of its first byte, however the bytes trickle
 *   in. Between requests a connection may idle for io_timeout (evhttp's).
 * - Unauthenticated work is bounded and shared between client networks
 *   (an IPv4 address, an IPv6 /64): connections in their handshake
 *   (max_handshakes) and those past it without a client certificate
 *   (max_anonymous, enrollment and health only). A network holds at most
 *   max_per_address of them. At a bound, the network holding the most
 *   gives up its oldest connection if it is older than a second, or than
 *   100 ms when it has not sent its ClientHello (a client sends it as it
 *   connects); a bound reached by young handshakes only (a fleet
 *   reconnecting at once) pauses accept instead, and the kernel's backlog
 *   holds the rest. So does a burst of connections accepted and not yet
 *   admitted, or closed and not yet freed: memory is bounded by the pools,
 *   not by how many clients wait.
 * - max_connections bounds connections with a client certificate: one
 *   beyond it is answered 503 and closed at its first request.
 * - When accept() fails for want of descriptors, accepting stops for a
 *   while and the failure is logged once per interval.
 *
 * A connection is closed by shutting its socket down: evhttp then sees
 * the end of the stream and frees it as any other, so nothing is freed
 * under evhttp's feet.
 */
#ifndef KMEMD_CONN_H
#define KMEMD_CONN_H

#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <openssl/ssl.h>
#include <stdbool.h>
#include <stdint.h>

#include "tls.h"

struct conn_limits {
	uint64_t max_connections, max_handshakes, max_anonymous, max_per_address;
	uint64_t handshake_timeout_ms, request_timeout_ms;
};

/* Why kmemd closed connections itself, counted since start. */
enum conn_close {
	CLOSE_HANDSHAKE_TIMEOUT,
	CLOSE_REQUEST_TIMEOUT,
	CLOSE_EVICTED, /* made room for another network's */
	CLOSE_PER_ADDRESS, /* its network held its share */
	CLOSE_ANONYMOUS_FULL, /* max_anonymous held by young connections */
	CLOSE_OVER_LIMIT, /* past max_connections */
	CLOSE_KINDS,
};

struct conn_stats {
	uint64_t open, handshakes, anonymous, authenticated;
	uint64_t closed[CLOSE_KINDS];
	uint64_t accept_errors; /* accept() out of descriptors or memory */
};

int conns_init(struct event_base *base, const struct conn_limits *lim);
void conns_set_limits(const struct conn_limits *lim);
/* The listener to pace; NULL when the server goes away. */
void conns_set_listener(struct evconnlistener *l);
void conns_free(void);

/* evhttp's bevcb: a TLS bufferevent for a connection just accepted, and its accounting. */
struct bufferevent *conn_new(struct event_base *base, SSL_CTX *ctx);

/*
 * A request was read whole: its deadline is over. false when the
 * connection is past max_connections (503 and close it).
 */
bool conn_request_read(struct evhttp_request *req);

/*
 * The identity of the request's client certificate (tls_peer_identity()'s
 * result), read once per connection. *id is valid while the connection
 * is, and only when 0 is returned.
 */
int conn_peer_identity(struct evhttp_request *req, const struct tls_identity **id);

/*
 * The revocation generation (struct kmemd's revocations) at which the
 * connection's host was last found not revoked; NULL: no connection.
 */
uint64_t *conn_not_revoked_at(struct evhttp_request *req);
void conns_stats(struct conn_stats *out);
const char *conn_close_name(enum conn_close why);

/* A client network's key: an IPv4 address, or the /64 of an IPv6 one. */
void conn_addr_key(const struct sockaddr *sa, char *key, size_t len);

/*
 * A timeout of ms that every connection shares: libevent keeps the events
 * of one such timeout in a queue, not in its heap, so arming and disarming
 * them per request costs O(1), not O(log connections).
 */
struct timeval conn_shared_tv(struct event_base *base, uint64_t ms);

#endif

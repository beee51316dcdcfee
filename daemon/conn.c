// SPDX-License-Identifier: GPL-2.0
/*
 * Connections: TLS and HTTP/1.1 on the socket, admission, pools and
 * deadlines (conn.h).
 *
 * A reply is written as the handler gives it, in one TLS record when it
 * fits one, and a connection's read event stays armed from its handshake
 * to its close: a report costs the loop no epoll_ctl() of its own.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <malloc.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/lhash.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "conn.h"
#include "log.h"
#include "macro.h"
#include "tls.h"

/*
 * A handshake is not evicted while it moves: one whose state advanced
 * within EVICT_MS, or whose client's bytes wait to be read, is a host
 * that kmemd keeps waiting (a fleet reconnecting to a busy kmemd), and
 * evicting it would only make it handshake again. A client sends its
 * ClientHello as it connects; one that has not after HELLO_MS is no TLS
 * client, or no hurried one. Past their handshake, a connection younger
 * than EVICT_MS is not evicted.
 */
#define EVICT_MS 1000
#define HELLO_MS 100
/*
 * Connections closed and not yet freed, at most: one accept burst could
 * otherwise take thousands of connections (each an SSL and its buffers)
 * before those it evicts are freed.
 */
#define IN_FLIGHT_MAX 256
#define BACKOFF_MS 250
#define ACCEPT_LOG_MS 10000
/* TLS's largest record: what one SSL_read() gives and one SSL_write() sends at most */
#define RECORD_MAX 16384
#define OVER_HOSTS "kmemd is at max_connections; try again later\n"
#define OVER_OPERATORS "kmemd is at max_operators; try again later\n"
#define REVOKED_HOST CONN_TEXT_REVOKED_HOST "\n"
#define REVOKED_OPERATOR CONN_TEXT_REVOKED_OPERATOR "\n"

enum phase { PHASE_HANDSHAKE, PHASE_ANONYMOUS, PHASE_AUTHED, PHASE_OPERATOR };

struct share;

struct conn {
	evutil_socket_t fd;
	SSL *ssl;
	struct event *rd, *wr, *deadline;
	struct share *share; /* while unauthenticated */
	struct conn *prev, *next; /* in share's list, oldest first */
	struct conn *all_prev, *all_next; /* every open connection */
	struct conn *reap_next; /* closed, to free */
	uint64_t since_ms, request_end_ms;
	uint64_t advanced_ms; /* its handshake's last step */
	enum phase phase;
	bool counted; /* in its phase's count */
	bool hello, closing, in_request;
	/* answered this (503 or 403) at its first request's headers, and closed */
	int refusal;
	const char *refusal_text;
	size_t body_bytes; /* of max_bodies, held by the request being read */
	bool at_request_end; /* its deadline timer is the request's, not io_timeout's */
	bool rd_off; /* its read event is off: a reply waits for room, or a request for its answer */
	bool dispatching; /* in the router: its reply frees the request after */
	bool close_after; /* once its reply is written */
	struct http1 h;
	struct http_request *req; /* with its handler */
	struct http_request *answered; /* answered while dispatching: freed after */
	/* bytes read past a request that is still with its handler */
	char *pending;
	size_t pending_len;
	/* a reply not yet written whole; wlen: the record SSL_write() must be given again */
	struct evbuffer *out;
	size_t wlen;
	union {
		struct sockaddr sa;
		struct sockaddr_in in;
		struct sockaddr_in6 in6;
	} addr;
	/*
	 * The client certificate's identity, read at the first request: TLS
	 * 1.3 without post-handshake authentication (kmemd asks for none)
	 * never changes a connection's certificate, and reading it (its
	 * digest, names, serial) was a good part of a report's TLS cost.
	 */
	bool peer_read;
	int peer_result; /* tls_peer_identity()'s */
	struct tls_identity peer;
	uint64_t not_revoked_at; /* conn_not_revoked_at() */
};

/*
 * A client network's unauthenticated connections (keyed by its address),
 * or an identity's in its pool (by role letter, a space and its name).
 */
struct share {
	char key[72];
	unsigned n;
	bool observer; /* an observer's: it counts one more against an operator */
	enum phase pool; /* an identity's: PHASE_AUTHED or PHASE_OPERATOR */
	uint64_t body_bytes; /* its connections' body_bytes */
	struct conn *oldest, *newest;
};

static struct {
	struct event_base *base;
	struct conn_limits lim;
	struct http1_limits hlim;
	conn_request_fn on_request;
	conn_classify_fn classify;
	void *arg;
	OPENSSL_LHASH *shares;
	struct evconnlistener *listener;
	struct event *backoff, *recheck, *trim, *reaper;
	struct conn *all, *reap;
	bool enabled, backing_off;
	uint64_t in_flight; /* IN_FLIGHT_MAX */
	/*
	 * Identities holding two or more of a pool's connections, and
	 * observers holding any: without one, no newcomer can take a slot,
	 * and a full pool (a fleet larger than max_connections) is not searched.
	 */
	uint64_t crowded[PHASE_OPERATOR + 1], observers;
	struct conn_stats st;
} live;

static int conn_index = -1;

static const char *const close_names[CLOSE_KINDS] = {
	[CLOSE_HANDSHAKE_TIMEOUT] = "handshake_timeout",
	[CLOSE_REQUEST_TIMEOUT] = "request_timeout",
	[CLOSE_EVICTED] = "evicted",
	[CLOSE_PER_ADDRESS] = "per_address",
	[CLOSE_ANONYMOUS_FULL] = "anonymous_full",
	[CLOSE_OVER_LIMIT] = "over_limit",
	[CLOSE_SHARE] = "identity_share",
	[CLOSE_REVOKED] = "revoked",
	[CLOSE_BODIES] = "bodies",
};

const char *conn_close_name(enum conn_close why)
{
	return close_names[why];
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static struct timeval ms_tv(uint64_t ms)
{
	return (struct timeval){ .tv_sec = (time_t)(ms / 1000),
				 .tv_usec = (suseconds_t)(ms % 1000) * 1000 };
}

/*
 * A timeout of ms that every connection shares: libevent keeps the events
 * of one such timeout in a queue, not in its heap, so arming and disarming
 * them per request costs O(1), not O(log connections).
 */
static struct timeval shared_tv(uint64_t ms)
{
	struct timeval tv = ms_tv(ms);
	const struct timeval *common = event_base_init_common_timeout(live.base, &tv);

	return common ? *common : tv;
}

/* A client network's key: an IPv4 address, or the /64 of an IPv6 one. */
static void addr_key(const struct sockaddr *sa, char *key, size_t len)
{
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
	struct in6_addr a;
	char text[INET6_ADDRSTRLEN];

	if (sa->sa_family == AF_INET) {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, key,
			  (socklen_t)len);
		return;
	}
	if (sa->sa_family != AF_INET6) {
		snprintf(key, len, "local");
		return;
	}
	if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
		inet_ntop(AF_INET, &s6->sin6_addr.s6_addr[12], key, (socklen_t)len);
		return;
	}
	/* one host gets a /64: its addresses in it are one network */
	a = s6->sin6_addr;
	memset(&a.s6_addr[8], 0, 8);
	inet_ntop(AF_INET6, &a, text, sizeof(text));
	snprintf(key, len, "%s/64", text);
}

static unsigned long share_hash(const void *p)
{
	return OPENSSL_LH_strhash(((const struct share *)p)->key);
}

static int share_cmp(const void *a, const void *b)
{
	return strcmp(((const struct share *)a)->key, ((const struct share *)b)->key);
}

static struct share *share_get(const char *key)
{
	struct share probe, *s;

	snprintf(probe.key, sizeof(probe.key), "%s", key);
	s = OPENSSL_LH_retrieve(live.shares, &probe);
	if (s)
		return s;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	memcpy(s->key, probe.key, sizeof(s->key));
	OPENSSL_LH_insert(live.shares, s);
	if (!OPENSSL_LH_retrieve(live.shares, &probe)) {
		free(s);
		return NULL;
	}
	return s;
}

static void share_join(struct share *s, struct conn *c)
{
	c->share = s;
	c->prev = s->newest;
	c->next = NULL;
	if (s->newest)
		s->newest->next = c;
	else
		s->oldest = c;
	s->newest = c;
	s->n++;
	if (s->pool != PHASE_AUTHED && s->pool != PHASE_OPERATOR)
		return;
	live.crowded[s->pool] += s->n == 2;
	live.observers += s->observer && s->n == 1;
}

/* A share that holds nothing is forgotten. */
static void share_put(struct share *s)
{
	if (s->n == 0) {
		OPENSSL_LH_delete(live.shares, s);
		free(s);
	}
}

/* Its request's body bytes given back to max_bodies. */
static void bodies_release(struct conn *c)
{
	live.st.bodies -= c->body_bytes;
	if (c->share)
		c->share->body_bytes -= c->body_bytes;
	c->body_bytes = 0;
}

static void share_leave(struct conn *c)
{
	struct share *s = c->share;

	if (!s)
		return;
	if (c->prev)
		c->prev->next = c->next;
	else
		s->oldest = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		s->newest = c->prev;
	c->share = NULL;
	s->n--;
	if (s->pool == PHASE_AUTHED || s->pool == PHASE_OPERATOR) {
		live.crowded[s->pool] -= s->n == 1;
		live.observers -= s->observer && s->n == 0;
	}
	share_put(s);
}

static void phase_leave(struct conn *c)
{
	if (!c->counted)
		return;
	switch (c->phase) {
	case PHASE_HANDSHAKE:
		live.st.handshakes--;
		break;
	case PHASE_ANONYMOUS:
		live.st.anonymous--;
		break;
	case PHASE_AUTHED:
		live.st.authenticated--;
		break;
	case PHASE_OPERATOR:
		live.st.operators--;
		break;
	}
	c->counted = false;
}

/* Out of its phase's count and its network's share: nothing it holds is counted any more. */
static void uncount(struct conn *c)
{
	phase_leave(c);
	bodies_release(c);
	share_leave(c);
}

static void pace(void);

/*
 * Closed: no more I/O, out of every count, freed by on_reap() in a later
 * turn of the loop (the caller may be in the middle of its callbacks).
 */
static void conn_drop(struct conn *c)
{
	if (c->closing)
		return;
	c->closing = true;
	live.in_flight++;
	uncount(c);
	evtimer_del(c->deadline);
	event_del(c->rd);
	event_del(c->wr);
	c->reap_next = live.reap;
	live.reap = c;
	event_active(live.reaper, EV_TIMEOUT, 1);
	pace();
}

/* Closed by kmemd's own defence, counted by why. */
static void conn_close(struct conn *c, enum conn_close why)
{
	if (c->closing)
		return;
	live.st.closed[why]++;
	conn_drop(c);
}

/*
 * Stalled enough to give way: a handshake whose state stood still EVICT_MS
 * (HELLO_MS without its ClientHello) with nothing of its client's unread;
 * another connection EVICT_MS old.
 */
static bool evictable(const struct conn *c, uint64_t now)
{
	int unread = 0;

	if (c->phase != PHASE_HANDSHAKE)
		return now - c->since_ms >= EVICT_MS;
	if (now - c->advanced_ms < (c->hello ? EVICT_MS : HELLO_MS))
		return false;
	return ioctl(c->fd, FIONREAD, &unread) == 0 && unread == 0;
}

/*
 * The connection to close so that another fits: the oldest evictable one,
 * in phase, of the network that holds the most (then the one whose
 * candidate is oldest); NULL when there is none.
 */
struct pick {
	enum phase phase;
	uint64_t now;
	const struct share *best;
	struct conn *victim;
};

static void consider(void *p, void *arg)
{
	const struct share *s = p;
	struct pick *k = arg;
	struct conn *c;

	for (c = s->oldest; c && (c->phase != k->phase || !evictable(c, k->now)); c = c->next)
		;
	if (!c)
		return;
	if (!k->best || s->n > k->best->n ||
	    (s->n == k->best->n && c->since_ms < k->victim->since_ms)) {
		k->best = s;
		k->victim = c;
	}
}

static struct conn *victim(enum phase phase)
{
	struct pick k = { .phase = phase, .now = mono_ms() };

	OPENSSL_LH_doall_arg(live.shares, consider, &k);
	return k.victim;
}

/*
 * Accepting stops while descriptors are short, and while max_handshakes
 * young handshakes run (a fleet reconnecting: they finish soon); then it
 * resumes when the oldest of them could be evicted.
 */
static void pace(void)
{
	bool full = live.st.handshakes >= live.lim.max_handshakes, want;
	struct timeval tv = ms_tv(HELLO_MS);

	if (!live.listener)
		return;
	want = !live.backing_off && live.in_flight < IN_FLIGHT_MAX &&
	       !(full && !victim(PHASE_HANDSHAKE));
	/* held by young handshakes: one may be evictable soon */
	if (full && !want && !live.backing_off)
		evtimer_add(live.recheck, &tv);
	if (want == live.enabled)
		return;
	live.enabled = want;
	if (want)
		evconnlistener_enable(live.listener);
	else
		evconnlistener_disable(live.listener);
}

static void on_recheck(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	pace();
}

static void on_trim(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	malloc_trim(0);
}

/*
 * Handshakes leave freed memory between long-lived connection state, and
 * closed connections leave theirs; once things quiet down, give it back
 * to the system, or every idle host costs kmemd the memory of its
 * handshake.
 */
static void trim_soon(void)
{
	if (live.trim)
		evtimer_add(live.trim, &(struct timeval){ .tv_sec = 2 });
}

static void reads(struct conn *c, bool on)
{
	if (on == !c->rd_off || c->closing)
		return;
	c->rd_off = !on;
	if (on)
		event_add(c->rd, NULL);
	else
		event_del(c->rd);
}

/*
 * Reading again once nothing waits: what the client sent meanwhile (kept,
 * or in TLS's buffer) is read in a later turn of the loop.
 */
static void resume(struct conn *c)
{
	if (c->closing || c->req || c->out)
		return;
	reads(c, true);
	if (c->pending || SSL_has_pending(c->ssl))
		event_active(c->rd, EV_READ, 1);
}

static void arm(struct conn *c, uint64_t ms)
{
	struct timeval tv = shared_tv(ms);

	evtimer_add(c->deadline, &tv);
}

/*
 * An SSL call's failure: false when the connection cannot go on (it is
 * closed). WANT_WRITE arms the write event; WANT_READ waits for the read
 * event, armed already.
 */
static bool ssl_wait(struct conn *c, int r)
{
	switch (SSL_get_error(c->ssl, r)) {
	case SSL_ERROR_WANT_READ:
		return true;
	case SSL_ERROR_WANT_WRITE:
		event_add(c->wr, NULL);
		return true;
	default:
		/* the peer went, or sent what is not TLS: nothing to tell it */
		ERR_clear_error();
		conn_drop(c);
		return false;
	}
}

/*
 * What is left of the reply written: true when all of it is. A client
 * that does not read is not read either (its requests would pile up
 * replies here), and gets io_timeout to make room.
 */
static bool flush(struct conn *c)
{
	size_t len;
	int r;

	while (c->out && (len = evbuffer_get_length(c->out))) {
		if (!c->wlen)
			c->wlen = len < RECORD_MAX ? len : RECORD_MAX;
		r = SSL_write(c->ssl, evbuffer_pullup(c->out, (ev_ssize_t)c->wlen), (int)c->wlen);
		if (r <= 0) {
			if (ssl_wait(c, r) && SSL_get_error(c->ssl, r) == SSL_ERROR_WANT_WRITE) {
				reads(c, false);
				arm(c, live.lim.io_timeout_ms);
			}
			return false;
		}
		evbuffer_drain(c->out, (size_t)r);
		c->wlen = 0;
	}
	if (c->out) {
		evbuffer_free(c->out);
		c->out = NULL;
	}
	if (c->close_after) {
		/* a client reading to the end sees it end cleanly */
		SSL_shutdown(c->ssl);
		ERR_clear_error();
		conn_drop(c);
		return false;
	}
	resume(c);
	return true;
}

/*
 * head and body (b, or data of len) on their way: written now when the
 * connection has nothing else waiting and they fit a record, else queued.
 */
static void send_reply(struct conn *c, const char *head, size_t hlen, struct evbuffer *b,
		       const void *data, size_t len)
{
	char rec[RECORD_MAX];
	size_t blen = b ? evbuffer_get_length(b) : len;
	int r;

	if (!c->out && hlen + blen <= sizeof(rec)) {
		memcpy(rec, head, hlen);
		if (b)
			evbuffer_remove(b, rec + hlen, blen);
		else if (len)
			memcpy(rec + hlen, data, len);
		r = SSL_write(c->ssl, rec, (int)(hlen + blen));
		if (r > 0) {
			if (c->close_after)
				flush(c);
			return;
		}
		if (!ssl_wait(c, r))
			return;
		/* SSL_write() is given the same bytes again, from out */
		c->out = evbuffer_new();
		if (!c->out || evbuffer_add(c->out, rec, hlen + blen) < 0) {
			conn_drop(c);
			return;
		}
		c->wlen = hlen + blen;
		flush(c);
		return;
	}
	if (!c->out)
		c->out = evbuffer_new();
	if (!c->out || evbuffer_add(c->out, head, hlen) < 0 ||
	    (b ? evbuffer_add_buffer(c->out, b) : evbuffer_add(c->out, data, len)) < 0) {
		conn_drop(c);
		return;
	}
	flush(c);
}

/*
 * A request that cannot be read, or from a connection refused at its
 * handshake (its own text then): the status, and the connection ends.
 */
static void refuse(struct conn *c, int status)
{
	char head[HTTP1_HEAD_MAX], text[80];
	int n = c->refusal == status ? snprintf(text, sizeof(text), "%s", c->refusal_text) :
				       snprintf(text, sizeof(text), "%s\n",
						http_status_str((enum http_status)status));
	size_t hlen =
		http1_head(head, NULL, status, NULL, "text/plain; charset=utf-8", (size_t)n, true);

	c->close_after = true;
	reads(c, false);
	send_reply(c, head, hlen, NULL, text, (size_t)n);
}

static void dispatch(struct conn *c)
{
	struct http_request *req = http1_take(&c->h);

	c->in_request = false;
	/* the body is the handler's now: one per connection, bounded by max_request */
	bodies_release(c);
	req->conn = c;
	c->req = req;
	c->dispatching = true;
	live.on_request(req, live.arg);
	c->dispatching = false;
	http1_request_free(c->answered);
	c->answered = NULL;
}

/*
 * A request read in pieces: its first bytes set its deadline, and more
 * bytes do not move it; meanwhile the client may fall silent for
 * io_timeout at most.
 */
static void arm_request(struct conn *c)
{
	uint64_t now = mono_ms(), left;
	struct timeval tv;

	if (!c->in_request) {
		c->in_request = true;
		c->request_end_ms = now + live.lim.request_timeout_ms;
	}
	left = c->request_end_ms > now ? c->request_end_ms - now : 0;
	c->at_request_end = left < live.lim.io_timeout_ms;
	if (!c->at_request_end) {
		arm(c, live.lim.io_timeout_ms);
		return;
	}
	/* the deadline's last stretch: a timer of its own, not a shared timeout per length */
	tv = ms_tv(left);
	evtimer_add(c->deadline, &tv);
}

/*
 * Bytes the client sent, read into requests and each dispatched; false
 * when reading must stop: the connection closed, or its request is with
 * its handler (the rest kept in pending until it is answered).
 */
static bool feed(struct conn *c, const char *data, size_t n)
{
	size_t used;
	char *keep;

	while (n && !c->closing) {
		used = http1_feed(&c->h, data, n);
		data += used;
		n -= used;
		if (c->h.continue_due) {
			c->h.continue_due = false;
			send_reply(c, http1_continue, strlen(http1_continue), NULL, NULL, 0);
		}
		switch (c->h.state) {
		case HTTP1_IDLE:
			break;
		case HTTP1_READING:
			arm_request(c);
			break;
		case HTTP1_REFUSED:
			bodies_release(c);
			if (c->refusal)
				live.st.closed[c->refusal == 403 ? CLOSE_REVOKED :
								   CLOSE_OVER_LIMIT]++;
			refuse(c, c->h.status);
			return false;
		case HTTP1_COMPLETE:
			dispatch(c);
			/* the next request waits for this one's answer, written */
			if ((!c->req && !c->out) || c->closing)
				break;
			if (n) {
				keep = malloc(n);
				if (!keep) {
					conn_drop(c);
					return false;
				}
				memcpy(keep, data, n);
				c->pending = keep;
				c->pending_len = n;
			}
			return false;
		}
		if (!used && c->h.state != HTTP1_COMPLETE)
			break;
	}
	return !c->closing;
}

/* The bytes kept while a request was with its handler, read now that it is answered. */
static bool feed_pending(struct conn *c)
{
	char *p = c->pending;
	size_t n = c->pending_len;
	bool more;

	if (!p)
		return true;
	c->pending = NULL;
	c->pending_len = 0;
	more = feed(c, p, n);
	free(p);
	return more;
}

static void read_requests(struct conn *c)
{
	char buf[RECORD_MAX];
	int r;

	if (!feed_pending(c))
		return;
	while (!c->closing && !c->req && !c->out) {
		r = SSL_read(c->ssl, buf, sizeof(buf));
		if (r <= 0) {
			ssl_wait(c, r);
			return;
		}
		if (!feed(c, buf, (size_t)r))
			return;
	}
}

/*
 * Within a full pool, the connection to close so that an identity holding
 * own's share gets one more: of the identity holding the most, if that
 * holds at least two more than own (an observer counting one more against
 * an operator), so that it keeps at least as many as own will have; its
 * oldest with no request under way, else its oldest. NULL: none, as when
 * a fleet larger than the pool holds one connection a host.
 */
struct fair {
	enum phase pool;
	const struct share *own;
	bool by_operator;
	const struct share *best;
	unsigned weight;
};

static void consider_identity(void *p, void *arg)
{
	const struct share *s = p;
	struct fair *f = arg;
	unsigned w;

	if (s == f->own || !s->oldest || s->oldest->phase != f->pool)
		return;
	w = s->n + (f->by_operator && s->observer);
	if (w > f->own->n + 1 && (!f->best || w > f->weight)) {
		f->best = s;
		f->weight = w;
	}
}

static struct conn *identity_victim(enum phase pool, const struct share *own, bool by_operator)
{
	struct fair f = { .pool = pool, .own = own, .by_operator = by_operator };
	struct conn *c;

	if (!live.crowded[pool] && !(by_operator && live.observers))
		return NULL;
	OPENSSL_LH_doall_arg(live.shares, consider_identity, &f);
	if (!f.best)
		return NULL;
	for (c = f.best->oldest; c; c = c->next)
		if (!c->req && !c->in_request)
			return c;
	return f.best->oldest;
}

/* Its pool's slot for the certificate's identity, another's given up when it is full. */
static bool take_slot(struct conn *c, enum conn_class cls)
{
	enum phase pool = cls == CONN_HOST ? PHASE_AUTHED : PHASE_OPERATOR;
	uint64_t *n = pool == PHASE_AUTHED ? &live.st.authenticated : &live.st.operators;
	uint64_t max = pool == PHASE_AUTHED ? live.lim.max_connections : live.lim.max_operators;
	static const char letter[] = {
		[CONN_HOST] = 'h', [CONN_OBSERVER] = 'r', [CONN_OPERATOR] = 'o'
	};
	char key[sizeof(((struct share *)0)->key)];
	struct share *s;
	struct conn *v;

	snprintf(key, sizeof(key), "%c %s", letter[cls], c->peer.cn);
	s = share_get(key);
	if (!s)
		return false;
	s->observer = cls == CONN_OBSERVER;
	s->pool = pool;
	if (*n >= max) {
		v = identity_victim(pool, s, cls == CONN_OPERATOR);
		if (!v) {
			share_put(s);
			return false;
		}
		conn_close(v, CLOSE_SHARE);
	}
	c->phase = pool;
	share_join(s, c);
	++*n;
	c->counted = true;
	return true;
}

static void join_network(struct conn *c);

/*
 * Answered status and why at its first request, and closed; until then it
 * waits as anonymous connections do, in its network's share.
 */
static void refuse_later(struct conn *c, int status, const char *why)
{
	c->refusal = c->h.refusal = status;
	c->refusal_text = why;
	c->phase = PHASE_ANONYMOUS;
	live.st.anonymous++;
	c->counted = true;
	join_network(c);
}

/*
 * Past its handshake: a host, observer or operator in its pool, or
 * anonymous (enrollment and health only), or refused. The certificate is
 * read here, once for the connection's life.
 */
static void handshake_done(struct conn *c, bool certified)
{
	enum conn_class cls;
	struct conn *v;

	phase_leave(c);
	arm(c, live.lim.io_timeout_ms);
	live.st.handshaken++;
	c->peer_result = certified ? tls_peer_identity(c->ssl, &c->peer) : -ENOENT;
	c->peer_read = true;
	if (!c->peer_result) {
		share_leave(c);
		cls = live.classify(c->ssl, &c->peer, live.arg);
		if (cls == CONN_REVOKED_HOST || cls == CONN_REVOKED_OPERATOR)
			refuse_later(c, 403,
				     cls == CONN_REVOKED_HOST ? REVOKED_HOST : REVOKED_OPERATOR);
		else if (!take_slot(c, cls))
			refuse_later(c, 503, cls == CONN_HOST ? OVER_HOSTS : OVER_OPERATORS);
	} else {
		c->phase = PHASE_ANONYMOUS;
		live.st.anonymous++;
		c->counted = true;
	}
	c->h.anonymous = c->phase == PHASE_ANONYMOUS;
	while (!c->closing && c->phase == PHASE_ANONYMOUS &&
	       live.st.anonymous > live.lim.max_anonymous) {
		v = victim(PHASE_ANONYMOUS);
		conn_close(v ?: c, v ? CLOSE_EVICTED : CLOSE_ANONYMOUS_FULL);
		if (!v)
			break;
	}
	pace();
}

static void on_info(const SSL *ssl, int where, int ret)
{
	struct conn *c = SSL_get_ex_data(ssl, conn_index);

	(void)ret;
	if (!c || c->closing || c->phase != PHASE_HANDSHAKE)
		return;
	if (where & SSL_CB_ACCEPT_LOOP)
		c->advanced_ms = mono_ms();
	if ((where & SSL_CB_ACCEPT_LOOP) && SSL_get_state(ssl) == TLS_ST_SR_CLNT_HELLO)
		c->hello = true;
	if (where & SSL_CB_HANDSHAKE_DONE)
		handshake_done(c, SSL_get0_peer_certificate(ssl) != NULL);
}

static void on_io(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	int r;

	(void)fd;
	(void)what;
	if (c->closing)
		return;
	if (c->phase == PHASE_HANDSHAKE) {
		r = SSL_do_handshake(c->ssl);
		if (r <= 0) {
			ssl_wait(c, r);
			return;
		}
	}
	if (c->out && !flush(c))
		return;
	/* a client that sends before its request is answered waits for the answer */
	if (c->req) {
		reads(c, false);
		return;
	}
	read_requests(c);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	(void)fd;
	(void)what;
	if (c->phase == PHASE_HANDSHAKE)
		conn_close(c, CLOSE_HANDSHAKE_TIMEOUT);
	else if (c->in_request && c->at_request_end)
		conn_close(c, CLOSE_REQUEST_TIMEOUT);
	else if (!c->req)
		/* silent mid-request, idle, or its reply unread, for io_timeout */
		conn_drop(c);
}

void conn_reply(struct http_request *req, int code, const char *reason, const char *type,
		struct evbuffer *b, const void *data, size_t len)
{
	struct conn *c = req->conn;
	char head[HTTP1_HEAD_MAX];
	size_t hlen;

	if (!c || c->closing) {
		/* its client has gone: nothing to answer */
		if (c)
			c->req = NULL;
		if (c && c->dispatching)
			c->answered = req;
		else
			http1_request_free(req);
		return;
	}
	c->req = NULL;
	c->close_after = req->close || !req->keep_alive;
	hlen = http1_head(head, req, code, reason, type, b ? evbuffer_get_length(b) : len,
			  c->close_after);
	if (c->dispatching)
		c->answered = req;
	else
		http1_request_free(req);
	send_reply(c, head, hlen, b, data, len);
	if (c->closing || c->out)
		return;
	arm(c, live.lim.io_timeout_ms);
	if (!c->dispatching)
		resume(c);
}

/*
 * Bytes the client sent that kmemd did not read (what followed a request
 * it refused) would make close() reset the connection, and a reset can
 * destroy the refusal before the client reads it: what has arrived is
 * read and dropped first, a bounded amount.
 */
static void drain(evutil_socket_t fd)
{
	char buf[4096];

	for (int i = 0; i < 16 && recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0; i++)
		;
}

static void conn_free(struct conn *c)
{
	if (c->close_after)
		drain(c->fd);
	if (c->req)
		c->req->conn = NULL;
	if (c->all_prev)
		c->all_prev->all_next = c->all_next;
	else
		live.all = c->all_next;
	if (c->all_next)
		c->all_next->all_prev = c->all_prev;
	live.st.open--;
	http1_release(&c->h);
	free(c->pending);
	if (c->out)
		evbuffer_free(c->out);
	event_free(c->rd);
	event_free(c->wr);
	event_free(c->deadline);
	SSL_free(c->ssl);
	close(c->fd);
	free(c);
}

static void on_reap(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c;

	(void)fd;
	(void)what;
	(void)arg;
	while ((c = live.reap)) {
		live.reap = c->reap_next;
		live.in_flight--;
		conn_free(c);
	}
	trim_soon();
	pace();
}

/*
 * Within max_bodies, the body to close so that another share's grows: the
 * largest of the share holding the most body bytes, if that holds more
 * than own will; NULL: none.
 */
struct heavy {
	const struct share *own;
	uint64_t more;
	const struct share *best;
};

static void consider_bodies(void *p, void *arg)
{
	const struct share *s = p;
	struct heavy *h = arg;
	uint64_t own = h->own ? h->own->body_bytes : 0;

	if (s != h->own && s->body_bytes > own + h->more &&
	    (!h->best || s->body_bytes > h->best->body_bytes))
		h->best = s;
}

static struct conn *body_victim(const struct share *own, uint64_t more)
{
	struct heavy h = { .own = own, .more = more };
	struct conn *c, *v = NULL;

	OPENSSL_LH_doall_arg(live.shares, consider_bodies, &h);
	for (c = h.best ? h.best->oldest : NULL; c; c = c->next)
		if (!v || c->body_bytes > v->body_bytes)
			v = c;
	return v;
}

/* http1's question before a body's buffer grows by more bytes (conn.h). */
static int body_grow(void *arg, size_t more)
{
	struct conn *c = arg, *v;

	while (live.st.bodies + more > live.lim.max_bodies) {
		v = body_victim(c->share, more);
		if (!v) {
			live.st.bodies_refused++;
			return -ENOBUFS;
		}
		conn_close(v, CLOSE_BODIES);
	}
	live.st.bodies += more;
	c->body_bytes += more;
	if (c->share)
		c->share->body_bytes += more;
	return 0;
}

/* The connection's network: its share of what unauthenticated clients may hold. */
static void join_network(struct conn *c)
{
	struct share *s;
	struct conn *v;
	char key[48];

	addr_key(&c->addr.sa, key, sizeof(key));
	s = share_get(key);
	if (!s) {
		conn_close(c, CLOSE_PER_ADDRESS);
		return;
	}
	share_join(s, c);
	if (s->n > live.lim.max_per_address) {
		v = s->oldest;
		conn_close(v != c && evictable(v, mono_ms()) ? v : c, CLOSE_PER_ADDRESS);
	}
}

/* A new connection: in its network's share, and within max_handshakes. */
static void admit(struct conn *c)
{
	struct conn *v;

	join_network(c);
	while (!c->closing && live.st.handshakes > live.lim.max_handshakes &&
	       (v = victim(PHASE_HANDSHAKE)))
		conn_close(v, CLOSE_EVICTED);
}

void conn_new(SSL_CTX *ctx, evutil_socket_t fd, const struct sockaddr *sa, socklen_t salen)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c) {
		close(fd);
		return;
	}
	c->fd = fd;
	c->ssl = SSL_new(ctx);
	c->rd = event_new(live.base, fd, EV_READ | EV_PERSIST, on_io, c);
	c->wr = event_new(live.base, fd, EV_WRITE, on_io, c);
	c->deadline = evtimer_new(live.base, on_deadline, c);
	if (!c->ssl || !c->rd || !c->wr || !c->deadline || !SSL_set_fd(c->ssl, fd) ||
	    !SSL_set_ex_data(c->ssl, conn_index, c)) {
		if (c->rd)
			event_free(c->rd);
		if (c->wr)
			event_free(c->wr);
		if (c->deadline)
			event_free(c->deadline);
		SSL_free(c->ssl);
		free(c);
		close(fd);
		return;
	}
	memcpy(&c->addr, sa, salen < sizeof(c->addr) ? salen : sizeof(c->addr));
	SSL_set_accept_state(c->ssl);
	/* a reply waiting for room is written again from the connection's buffer */
	SSL_set_mode(c->ssl, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	SSL_set_info_callback(c->ssl, on_info);
	http1_init(&c->h, &live.hlim);
	c->h.grow = body_grow;
	c->h.grow_arg = c;
	c->all_next = live.all;
	if (live.all)
		live.all->all_prev = c;
	live.all = c;
	live.st.open++;
	live.st.handshakes++;
	c->counted = true;
	c->since_ms = c->advanced_ms = mono_ms();
	arm(c, live.lim.handshake_timeout_ms);
	event_add(c->rd, NULL);
	admit(c);
	trim_soon();
	pace();
}

static struct conn *conn_of(struct http_request *req)
{
	return req->conn && !req->conn->closing ? req->conn : NULL;
}

int conn_peer_identity(struct http_request *req, const struct tls_identity **id)
{
	struct conn *c = conn_of(req);

	if (!c)
		return -ENOTCONN;
	if (!c->peer_read) {
		c->peer_result = tls_peer_identity(c->ssl, &c->peer);
		c->peer_read = true;
	}
	*id = &c->peer;
	return c->peer_result;
}

bool conn_peer_anchored_in(struct http_request *req, STACK_OF(X509) * cas)
{
	struct conn *c = conn_of(req);

	return c && tls_peer_anchored_in(c->ssl, cas);
}

uint64_t *conn_not_revoked_at(struct http_request *req)
{
	struct conn *c = conn_of(req);

	return c ? &c->not_revoked_at : NULL;
}

void conn_peer(struct http_request *req, char *addr, size_t addrlen, char *key, size_t keylen)
{
	struct conn *c = conn_of(req);
	const void *a;

	snprintf(addr, addrlen, "?");
	snprintf(key, keylen, "?");
	if (!c)
		return;
	a = c->addr.sa.sa_family == AF_INET6 ? (const void *)&c->addr.in6.sin6_addr :
					       (const void *)&c->addr.in.sin_addr;
	if (c->addr.sa.sa_family == AF_INET || c->addr.sa.sa_family == AF_INET6)
		inet_ntop(c->addr.sa.sa_family, a, addr, (socklen_t)addrlen);
	addr_key(&c->addr.sa, key, keylen);
}

static void on_backoff(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	live.backing_off = false;
	pace();
}

/*
 * accept() failed for good reason (EMFILE, ENFILE, ENOBUFS, ENOMEM): the
 * listener would report it again at once, in a loop; it rests instead,
 * and says so once per ACCEPT_LOG_MS.
 */
static void on_accept_error(struct evconnlistener *l, void *arg)
{
	static struct log_ratelimit rl = { .interval_ms = ACCEPT_LOG_MS, .burst = 1 };
	int err = EVUTIL_SOCKET_ERROR();
	struct timeval tv = ms_tv(BACKOFF_MS);

	(void)l;
	(void)arg;
	live.st.accept_errors++;
	log_ratelimited(&rl, LOG_WARNING,
			"accepting a connection failed: %s; resting %d ms (raise LimitNOFILE= or "
			"lower max_connections)",
			evutil_socket_error_to_string(err), BACKOFF_MS);
	live.backing_off = true;
	evtimer_add(live.backoff, &tv);
	pace();
}

int conns_init(struct event_base *base, const struct conn_limits *lim, conn_request_fn on_request,
	       conn_classify_fn classify, void *arg)
{
	if (conn_index < 0)
		conn_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
	live.base = base;
	live.on_request = on_request;
	live.classify = classify;
	live.arg = arg;
	conns_set_limits(lim);
	live.shares = live.shares ?: OPENSSL_LH_new(share_hash, share_cmp);
	live.backoff = evtimer_new(base, on_backoff, NULL);
	live.recheck = evtimer_new(base, on_recheck, NULL);
	live.trim = evtimer_new(base, on_trim, NULL);
	live.reaper = event_new(base, -1, 0, on_reap, NULL);
	if (conn_index < 0 || !live.shares || !live.backoff || !live.recheck || !live.trim ||
	    !live.reaper) {
		conns_free();
		return -ENOMEM;
	}
	return 0;
}

void conns_set_limits(const struct conn_limits *lim)
{
	live.lim = *lim;
	live.hlim = (struct http1_limits){ .max_body = lim->max_body,
					   .max_header_bytes = lim->max_header_bytes,
					   .anonymous_path = CONN_ANONYMOUS_PATH,
					   .anonymous_max_body = CONN_ANONYMOUS_MAX_BODY };
	pace();
}

void conns_set_listener(struct evconnlistener *l)
{
	live.listener = l;
	live.enabled = true;
	if (l)
		evconnlistener_set_error_cb(l, on_accept_error);
	pace();
}

/* After the listener is gone: requests still with their handlers are answered to no one. */
void conns_free(void)
{
	struct event **evs[] = { &live.backoff, &live.recheck, &live.trim, &live.reaper };

	live.listener = NULL;
	while (live.all)
		conn_free(live.all);
	live.reap = NULL;
	live.in_flight = 0;
	for (size_t i = 0; i < ARRAY_SIZE(evs); i++) {
		if (*evs[i])
			event_free(*evs[i]);
		*evs[i] = NULL;
	}
}

void conns_revisit(void)
{
	enum conn_class cls;
	struct conn *c;

	if (!live.classify)
		return;
	/* a closed connection stays on the list until it is reaped */
	for (c = live.all; c; c = c->all_next) {
		if (c->closing || (c->phase != PHASE_AUTHED && c->phase != PHASE_OPERATOR))
			continue;
		cls = live.classify(c->ssl, &c->peer, live.arg);
		if (cls != CONN_REVOKED_HOST && cls != CONN_REVOKED_OPERATOR)
			continue;
		/* its handler's answer (a revocation by itself, say) is the last */
		if (c->req)
			c->req->close = true;
		else
			conn_close(c, CLOSE_REVOKED);
	}
}

void conns_stats(struct conn_stats *out)
{
	*out = live.st;
}

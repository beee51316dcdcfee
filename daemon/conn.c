// SPDX-License-Identifier: GPL-2.0
/*
 * Connections: admission, pools and deadlines (conn.h).
 *
 * State is file-global, not in struct server: libevent frees a
 * connection's SSL, and with it the struct conn hung on it, when its
 * deferred callbacks run, which can be after the server is gone.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <malloc.h>
#include <netinet/in.h>
#include <openssl/lhash.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "conn.h"
#include "log.h"
#include "tls.h"

/*
 * A connection younger than this is not evicted: it may be a host
 * mid-handshake. A client sends its ClientHello as it connects; one that
 * has not after HELLO_MS is no TLS client, or no hurried one.
 */
#define EVICT_MS 1000
#define HELLO_MS 100
/*
 * Connections accepted and not yet admitted, or closed and not yet freed,
 * at most: one accept burst could otherwise take thousands of connections
 * (each an SSL and its buffers) before any is admitted or evicted.
 */
#define IN_FLIGHT_MAX 256
#define BACKOFF_MS 250
#define ACCEPT_LOG_MS 10000

enum phase { PHASE_HANDSHAKE, PHASE_ANONYMOUS, PHASE_AUTHED };

struct share;

struct conn {
	struct bufferevent *bev;
	struct event *deadline, *admit;
	struct share *share; /* while unauthenticated and admitted */
	struct conn *prev, *next; /* in share's list, oldest first */
	uint64_t since_ms;
	enum phase phase;
	bool counted; /* in its phase's count */
	bool admitted, hello, closing, in_request, handling, over;
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

/* A client network's unauthenticated connections. */
struct share {
	char key[48];
	unsigned n;
	struct conn *oldest, *newest;
};

static struct {
	struct event_base *base;
	struct conn_limits lim;
	OPENSSL_LHASH *shares;
	struct evconnlistener *listener;
	struct event *backoff, *recheck, *trim;
	bool enabled, backing_off;
	uint64_t in_flight; /* IN_FLIGHT_MAX */
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

struct timeval conn_shared_tv(struct event_base *base, uint64_t ms)
{
	struct timeval tv = ms_tv(ms);
	const struct timeval *common = event_base_init_common_timeout(base, &tv);

	return common ? *common : tv;
}

void conn_addr_key(const struct sockaddr *sa, char *key, size_t len)
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
}

/* A network that holds nothing is forgotten. */
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
	if (--s->n == 0) {
		OPENSSL_LH_delete(live.shares, s);
		free(s);
	}
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
	}
	c->counted = false;
}

/* Out of its phase's count and its network's share: nothing it holds is counted any more. */
static void uncount(struct conn *c)
{
	phase_leave(c);
	share_leave(c);
}

static void pace(void);

static void conn_close(struct conn *c, enum conn_close why)
{
	evutil_socket_t fd = bufferevent_getfd(c->bev);

	if (c->closing)
		return;
	c->closing = true;
	live.in_flight++;
	live.st.closed[why]++;
	uncount(c);
	evtimer_del(c->deadline);
	/* evhttp reads the end of the stream and frees the connection as any other */
	if (fd >= 0)
		shutdown(fd, SHUT_RDWR);
	pace();
}

/* Old enough to give way: a handshake without its ClientHello sooner. */
static bool evictable(const struct conn *c, uint64_t now)
{
	uint64_t min = c->phase == PHASE_HANDSHAKE && !c->hello ? HELLO_MS : EVICT_MS;

	return now - c->since_ms >= min;
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

/* The connection's network, known once evhttp gave the bufferevent its socket. */
static void on_admit(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg, *v;
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	struct share *s;
	char key[48] = "unknown";

	(void)fd;
	(void)what;
	/* it runs once: an idle connection does not keep it (each costs its memory) */
	event_free(c->admit);
	c->admit = NULL;
	c->admitted = true;
	live.in_flight--;
	if (c->closing) {
		pace();
		return;
	}
	if (getpeername(bufferevent_getfd(c->bev), (struct sockaddr *)&ss, &len) == 0)
		conn_addr_key((struct sockaddr *)&ss, key, sizeof(key));
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
	while (!c->closing && live.st.handshakes > live.lim.max_handshakes &&
	       (v = victim(PHASE_HANDSHAKE)))
		conn_close(v, CLOSE_EVICTED);
	pace();
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	(void)fd;
	(void)what;
	if (c->phase == PHASE_HANDSHAKE)
		conn_close(c, CLOSE_HANDSHAKE_TIMEOUT);
	else if (c->in_request)
		conn_close(c, CLOSE_REQUEST_TIMEOUT);
}

static void request_begins(struct conn *c)
{
	struct timeval tv =
		conn_shared_tv(event_get_base(c->deadline), live.lim.request_timeout_ms);

	c->in_request = true;
	evtimer_add(c->deadline, &tv);
}

/* The first bytes of a request arm its deadline; more bytes do not move it. */
static void on_input(struct evbuffer *b, const struct evbuffer_cb_info *info, void *arg)
{
	struct conn *c = arg;

	(void)b;
	if (info->n_added && c->phase != PHASE_HANDSHAKE && !c->in_request && !c->handling &&
	    !c->closing)
		request_begins(c);
}

/* Past its handshake: a host or operator, or anonymous (enrollment and health only). */
static void handshake_done(struct conn *c, bool certified)
{
	struct conn *v;

	phase_leave(c);
	evtimer_del(c->deadline);
	if (certified) {
		share_leave(c);
		c->phase = PHASE_AUTHED;
		live.st.authenticated++;
		c->over = live.st.authenticated > live.lim.max_connections;
	} else {
		c->phase = PHASE_ANONYMOUS;
		live.st.anonymous++;
	}
	c->counted = true;
	while (!certified && live.st.anonymous > live.lim.max_anonymous) {
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
	if ((where & SSL_CB_ACCEPT_LOOP) && SSL_get_state(ssl) == TLS_ST_SR_CLNT_HELLO)
		c->hello = true;
	if (where & SSL_CB_HANDSHAKE_DONE)
		handshake_done(c, SSL_get0_peer_certificate(ssl) != NULL);
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

static void conn_gone(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp)
{
	struct conn *c = ptr;

	(void)parent;
	(void)ad;
	(void)idx;
	(void)argl;
	(void)argp;
	if (!c)
		return;
	uncount(c);
	live.st.open--;
	/* each of these held one place in flight */
	live.in_flight -= !c->admitted + c->closing;
	if (c->deadline)
		event_free(c->deadline);
	if (c->admit)
		event_free(c->admit);
	free(c);
	trim_soon();
	pace();
}

struct bufferevent *conn_new(struct event_base *base, SSL_CTX *ctx)
{
	struct timeval tv = conn_shared_tv(base, live.lim.handshake_timeout_ms);
	SSL *ssl = SSL_new(ctx);
	struct bufferevent *bev;
	struct conn *c;

	if (!ssl)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (c)
		c->admitted = true;
	if (!c || !SSL_set_ex_data(ssl, conn_index, c)) {
		free(c);
		SSL_free(ssl);
		return NULL;
	}
	live.st.open++;
	c->since_ms = mono_ms();
	c->deadline = evtimer_new(base, on_deadline, c);
	c->admit = event_new(base, -1, 0, on_admit, c);
	bev = bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING,
					     BEV_OPT_CLOSE_ON_FREE);
	if (!bev || !c->deadline || !c->admit) {
		if (bev)
			bufferevent_free(bev);
		else
			SSL_free(ssl);
		return NULL;
	}
	c->bev = bev;
	c->counted = true;
	c->admitted = false;
	live.in_flight++;
	live.st.handshakes++;
	SSL_set_info_callback(ssl, on_info);
	evbuffer_add_cb(bufferevent_get_input(bev), on_input, c);
	evtimer_add(c->deadline, &tv);
	/* evhttp gives the bufferevent its socket after this returns */
	event_active(c->admit, EV_TIMEOUT, 1);
	trim_soon();
	pace();
	return bev;
}

static struct conn *conn_of(struct evhttp_request *req)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
	SSL *ssl = bev ? bufferevent_openssl_get_ssl(bev) : NULL;

	return ssl ? SSL_get_ex_data(ssl, conn_index) : NULL;
}

int conn_peer_identity(struct evhttp_request *req, const struct tls_identity **id)
{
	struct conn *c = conn_of(req);

	if (!c)
		return -ENOTCONN;
	if (!c->peer_read) {
		c->peer_result = tls_peer_identity(bufferevent_openssl_get_ssl(c->bev), &c->peer);
		c->peer_read = true;
	}
	*id = &c->peer;
	return c->peer_result;
}

uint64_t *conn_not_revoked_at(struct evhttp_request *req)
{
	struct conn *c = conn_of(req);

	return c ? &c->not_revoked_at : NULL;
}

/* The reply went out: the connection idles until the next request's first byte. */
static void on_complete(struct evhttp_request *req, void *arg)
{
	struct conn *c = conn_of(req);

	(void)arg;
	if (!c)
		return;
	c->handling = false;
	if (!c->closing && evbuffer_get_length(bufferevent_get_input(c->bev)))
		request_begins(c);
}

bool conn_request_read(struct evhttp_request *req)
{
	struct conn *c = conn_of(req);

	if (!c)
		return true;
	c->in_request = false;
	c->handling = true;
	evtimer_del(c->deadline);
	evhttp_request_set_on_complete_cb(req, on_complete, NULL);
	if (c->over)
		live.st.closed[CLOSE_OVER_LIMIT]++;
	return !c->over;
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

int conns_init(struct event_base *base, const struct conn_limits *lim)
{
	if (conn_index < 0)
		conn_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, conn_gone);
	live.base = base;
	live.lim = *lim;
	live.shares = live.shares ?: OPENSSL_LH_new(share_hash, share_cmp);
	live.backoff = evtimer_new(base, on_backoff, NULL);
	live.recheck = evtimer_new(base, on_recheck, NULL);
	live.trim = evtimer_new(base, on_trim, NULL);
	if (conn_index < 0 || !live.shares || !live.backoff || !live.recheck || !live.trim) {
		conns_free();
		return -ENOMEM;
	}
	return 0;
}

void conns_set_limits(const struct conn_limits *lim)
{
	live.lim = *lim;
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

/*
 * After evhttp_free(): connections it freed are gone; those whose SSL
 * libevent frees later find no listener and no timers.
 */
void conns_free(void)
{
	live.listener = NULL;
	if (live.backoff)
		event_free(live.backoff);
	if (live.recheck)
		event_free(live.recheck);
	if (live.trim)
		event_free(live.trim);
	live.backoff = live.recheck = live.trim = NULL;
}

void conns_stats(struct conn_stats *out)
{
	*out = live.st;
}

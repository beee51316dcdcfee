// SPDX-License-Identifier: GPL-2.0
/*
 * attack-load: hostile clients against kmemd, and a valid host reporting
 * among them, for bench/attack and tests/integration/attacks.sh.
 *
 *   attack-load -s HOST:PORT -C CA -m MODE -n N [-b NETS] [-i MS] [-t SECONDS]
 *               [-w SECONDS] [-A CERT -K KEY] [-L BYTES]
 *               [-c CERT -k KEY -H HOST -r REPORTS]
 *
 * N attackers of MODE hold connections for SECONDS, each opening another
 * when kmemd closes its own, from NETS source addresses (127.0.1.1 on,
 * one per network as kmemd counts them):
 *   trickle	a TLS ClientHello, one byte every MS (default 500)
 *   slowloris	TLS without a certificate, then request headers, a byte every MS
 *   idle	TCP connected, nothing sent
 *   idle-tls	TLS without a certificate, then nothing
 *   hold	TLS with the attacker's certificate (-A, -K), then GET /v1/health
 *		every MS on the same connection: an insider holding slots
 *   bodies	TLS with the attacker's certificate, then a report's headers
 *		saying BYTES (-L, default 1 MiB) and all of its body but the
 *		last byte: memory held by bodies never finished
 *   enroll	TLS without a certificate, then an enrollment with a guessed
 *		secret, again on the same connection at each answer, and a new
 *		connection when kmemd closes it
 *   none	no attackers
 * After a warm-up (-w, default 3 s), the valid host (-c, -k: its
 * certificate; -H its host id) sends REPORTS reports one after another,
 * each over a new connection from 127.0.0.1, as an agent does after a
 * restart; each one's time from connect to acknowledgement is measured.
 *
 * The attack ends after -t SECONDS, when the valid host's reports are done, or
 * at SIGTERM.
 *
 * Prints "warm" when the warm-up ends, then key=value: attackers held open
 * at the end, closed by kmemd, opened in all, the answers they read (200,
 * other); reports acknowledged, failed, and p50/p99/max ms.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "fake-report.h"
#include "hostport.h"
#include "tls.h"

enum mode {
	MODE_NONE,
	MODE_TRICKLE,
	MODE_SLOWLORIS,
	MODE_IDLE,
	MODE_IDLE_TLS,
	MODE_HOLD,
	MODE_BODIES,
	MODE_ENROLL
};

struct attacker {
	int i;
	struct bufferevent *bev;
	struct event *tick;
	size_t sent;
	bool open;
};

static struct {
	struct event_base *base;
	enum mode mode;
	int n, nets, interval_ms;
	char host[256];
	uint16_t port;
	SSL_CTX *anon;
	SSL_CTX *insider; /* the attacker's certificate: hold, bodies */
	size_t body_len; /* bodies: the length the headers say */
	uint8_t *body; /* bodies: shared by every attacker, never copied */
	uint64_t answered_ok, answered_other;
	uint8_t hello[4096];
	size_t hello_len;
	uint64_t held, closed, opened;
	/* the valid host */
	SSL_CTX *valid;
	const char *host_id;
	int reports, done;
	uint64_t seq, failed;
	double *ms;
	struct timespec t0;
	struct attacker *attackers; /* live until exit, as their events */
} g;

static const char slow_headers[] = "POST /v1/enroll HTTP/1.1\r\nHost: kmemd\r\n"
				   "Content-Type: application/x-protobuf\r\n";
static const char health[] = "GET /v1/health HTTP/1.1\r\nHost: kmemd\r\n\r\n";
/* an EnrollRequest: secret (1) of 48 hex digits no kmemd issued, host id (2), CSR (3) */
static const char enroll_body[] = "\x0a\x30"
				  "0123456789abcdef0123456789abcdef0123456789abcdef"
				  "\x12\x05guess\x1a\x01x";

static double since_ms(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

static struct sockaddr_in server_addr(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(g.port) };

	inet_pton(AF_INET, g.host, &sa.sin_addr);
	return sa;
}

/* A socket bound to attacker i's network: 127.0.1.1, 127.0.1.2, ... */
static int attacker_socket(int i)
{
	int net = i % g.nets + 1;
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	sa.sin_addr.s_addr = htonl((127U << 24) | ((1U + (unsigned)net / 250) << 8) |
				   (1U + (unsigned)net % 250));
	if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void attacker_open(struct attacker *a);

static void on_reopen(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	attacker_open(arg);
}

/* kmemd closed it (or it failed): counted, and another one in a little while. */
static void attacker_lost(struct attacker *a)
{
	struct timeval tv = { 0, 20000 };

	if (a->open) {
		g.held--;
		g.closed++;
	}
	a->open = false;
	evtimer_del(a->tick);
	bufferevent_free(a->bev);
	a->bev = NULL;
	event_base_once(g.base, -1, EV_TIMEOUT, on_reopen, a, &tv);
}

static void arm(struct attacker *a)
{
	struct timeval tv = { g.interval_ms / 1000, (g.interval_ms % 1000) * 1000 };

	evtimer_add(a->tick, &tv);
}

/* One more byte of what this attacker sends slowly. */
static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct attacker *a = arg;
	static const char more[] = "X-Slow: a\r\n";

	(void)fd;
	(void)what;
	if (g.mode == MODE_HOLD) {
		bufferevent_write(a->bev, health, sizeof(health) - 1);
	} else if (g.mode == MODE_TRICKLE) {
		if (a->sent < g.hello_len)
			bufferevent_write(a->bev, g.hello + a->sent++, 1);
	} else {
		bufferevent_write(a->bev, more + a->sent++ % (sizeof(more) - 1), 1);
	}
	arm(a);
}

/* An enrollment with a guessed secret. */
static void send_enroll(struct attacker *a)
{
	char head[160];
	int n = snprintf(head, sizeof(head),
			 "POST /v1/enroll HTTP/1.1\r\nHost: kmemd\r\n"
			 "Content-Type: application/x-protobuf\r\nContent-Length: %zu\r\n\r\n",
			 sizeof(enroll_body) - 1);

	bufferevent_write(a->bev, head, (size_t)n);
	bufferevent_write(a->bev, enroll_body, sizeof(enroll_body) - 1);
}

/* A report's headers and all of its body but the last byte. */
static void send_body(struct attacker *a)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "POST /v1/agent/report HTTP/1.1\r\nHost: kmemd\r\n"
			 "Content-Type: application/x-protobuf\r\nContent-Length: %zu\r\n\r\n",
			 g.body_len);
	struct evbuffer *out = bufferevent_get_output(a->bev);

	evbuffer_add(out, head, (size_t)n);
	evbuffer_add_reference(out, g.body, g.body_len - 1, NULL, NULL);
}

static void on_attacker_event(struct bufferevent *bev, short what, void *arg)
{
	struct attacker *a = arg;

	(void)bev;
	if (what & BEV_EVENT_CONNECTED) {
		a->open = true;
		g.held++;
		if (g.mode == MODE_SLOWLORIS)
			bufferevent_write(a->bev, slow_headers, sizeof(slow_headers) - 1);
		if (g.mode == MODE_HOLD)
			bufferevent_write(a->bev, health, sizeof(health) - 1);
		if (g.mode == MODE_BODIES)
			send_body(a);
		if (g.mode == MODE_ENROLL)
			send_enroll(a);
		if (g.mode == MODE_TRICKLE || g.mode == MODE_SLOWLORIS || g.mode == MODE_HOLD)
			arm(a);
		return;
	}
	ERR_clear_error();
	attacker_lost(a);
}

/*
 * Answers counted by their status line (one within a read, as kmemd writes
 * each whole); an enroller asks again at each.
 */
static void on_attacker_read(struct bufferevent *bev, void *arg)
{
	struct attacker *a = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer_ptr p;
	char code[4] = "";

	for (p = evbuffer_search(in, "HTTP/1.1 ", 9, NULL); p.pos >= 0;
	     p = evbuffer_search(in, "HTTP/1.1 ", 9, &p)) {
		evbuffer_ptr_set(in, &p, 9, EVBUFFER_PTR_ADD);
		if (evbuffer_copyout_from(in, &p, code, 3) == 3 && !memcmp(code, "200", 3))
			g.answered_ok++;
		else
			g.answered_other++;
		if (g.mode == MODE_ENROLL)
			send_enroll(a);
	}
	evbuffer_drain(in, evbuffer_get_length(in));
}

static void attacker_open(struct attacker *a)
{
	struct sockaddr_in sa = server_addr();
	int fd = attacker_socket(a->i);
	SSL *ssl;

	if (fd < 0)
		return;
	g.opened++;
	a->sent = 0;
	if (g.mode == MODE_SLOWLORIS || g.mode == MODE_IDLE_TLS || g.mode == MODE_HOLD ||
	    g.mode == MODE_BODIES || g.mode == MODE_ENROLL) {
		ssl = SSL_new(g.mode == MODE_HOLD || g.mode == MODE_BODIES ? g.insider : g.anon);
		a->bev = bufferevent_openssl_socket_new(g.base, fd, ssl, BUFFEREVENT_SSL_CONNECTING,
							BEV_OPT_CLOSE_ON_FREE);
	} else {
		a->bev = bufferevent_socket_new(g.base, fd, BEV_OPT_CLOSE_ON_FREE);
	}
	bufferevent_setcb(a->bev, on_attacker_read, NULL, on_attacker_event, a);
	bufferevent_enable(a->bev, EV_READ | EV_WRITE);
	if (bufferevent_socket_connect(a->bev, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		attacker_lost(a);
}

/* The bytes a TLS 1.3 client opens with, made once by a client on memory BIOs. */
static int make_hello(void)
{
	SSL *ssl = SSL_new(g.anon);
	BIO *in = BIO_new(BIO_s_mem()), *out = BIO_new(BIO_s_mem());
	int n;

	if (!ssl || !in || !out)
		return -1;
	SSL_set_bio(ssl, in, out);
	SSL_set_connect_state(ssl);
	SSL_do_handshake(ssl);
	n = BIO_read(out, g.hello, sizeof(g.hello));
	SSL_free(ssl);
	g.hello_len = n > 0 ? (size_t)n : 0;
	return n > 0 ? 0 : -1;
}

static void valid_next(void);

static void on_next(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	evhttp_connection_free(arg);
	valid_next();
}

static void on_valid_reply(struct evhttp_request *req, void *arg)
{
	struct timeval now = { 0 };

	if (req && evhttp_request_get_response_code(req) == 200)
		g.ms[g.done++] = since_ms(&g.t0);
	else
		g.failed++;
	ERR_clear_error();
	/* not from inside the connection's own callback */
	event_base_once(g.base, -1, EV_TIMEOUT, on_next, arg, &now);
}

/* The valid host's next report, over a new connection: a handshake among the attackers. */
static void valid_next(void)
{
	static uint8_t buf[16384];
	struct evhttp_connection *conn;
	struct evhttp_request *req;
	struct bufferevent *bev;
	struct timespec ts;
	SSL *ssl;
	size_t len;

	if (g.done + (int)g.failed >= g.reports) {
		event_base_loopbreak(g.base);
		return;
	}
	if (tls_client_ssl(g.valid, g.host, &ssl) < 0) {
		g.failed++;
		valid_next();
		return;
	}
	bev = bufferevent_openssl_socket_new(g.base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
					     BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	conn = evhttp_connection_base_bufferevent_new(g.base, NULL, bev, g.host, g.port);
	evhttp_connection_set_timeout(conn, 60);
	req = evhttp_request_new(on_valid_reply, conn);
	clock_gettime(CLOCK_REALTIME, &ts);
	len = fake_report(g.host_id, ++g.seq, (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000,
			  buf);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Host", g.host);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
			  "application/x-protobuf");
	evbuffer_add(evhttp_request_get_output_buffer(req), buf, len);
	clock_gettime(CLOCK_MONOTONIC, &g.t0);
	if (evhttp_make_request(conn, req, EVHTTP_REQ_POST, "/v1/agent/report") < 0)
		on_valid_reply(NULL, conn);
}

static void on_warm(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	/* for whoever waits for the attack to be under way */
	printf("warm held=%llu\n", (unsigned long long)g.held);
	fflush(stdout);
	if (g.reports)
		valid_next();
}

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	event_base_loopbreak(g.base);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double quantile(double q)
{
	size_t i = (size_t)(q * (g.done - 1) + 0.5);

	return g.done ? g.ms[i] : 0;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: attack-load -s HOST:PORT -C CA "
		"-m trickle|slowloris|idle|idle-tls|hold|bodies|enroll|none -n N [-b NETS] [-i MS] "
		"[-t SECONDS] [-w SECONDS] [-A CERT -K KEY] [-L BYTES] [-c CERT -k KEY -H HOST "
		"-r REPORTS]\n");
	return 2;
}

static const char *const mode_names[] = { "none",     "trickle", "slowloris", "idle",
					  "idle-tls", "hold",	 "bodies",    "enroll" };

static int parse_mode(const char *s)
{
	for (size_t i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]); i++)
		if (!strcmp(s, mode_names[i]))
			return (int)i;
	return -1;
}

static int setup(const char *server, const char *ca, const char *cert, const char *key,
		 const char *acert, const char *akey)
{
	struct tls_config anon = { NULL, NULL, ca, TLS_CLIENT_NONE },
			  valid = { cert, key, ca, TLS_CLIENT_NONE },
			  insider = { acert, akey, ca, TLS_CLIENT_NONE };
	struct rlimit rl;

	if (hostport_split(server, g.host, sizeof(g.host), &g.port, false) < 0)
		return -1;
	/* thousands of attackers: as many descriptors as allowed */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	g.base = event_base_new();
	if (!g.base || tls_client_ctx(&anon, &g.anon) < 0 || make_hello() < 0)
		return -1;
	if (g.reports && (tls_client_ctx(&valid, &g.valid) < 0 || !g.host_id))
		return -1;
	if ((g.mode == MODE_HOLD || g.mode == MODE_BODIES) &&
	    (!acert || !akey || tls_client_ctx(&insider, &g.insider) < 0))
		return -1;
	if (g.mode == MODE_BODIES && (g.body_len < 2 || !(g.body = calloc(1, g.body_len))))
		return -1;
	g.ms = calloc((size_t)g.reports + 1, sizeof(double));
	return g.ms ? 0 : -1;
}

int main(int argc, char **argv)
{
	const char *server = NULL, *ca = NULL, *cert = NULL, *key = NULL, *acert = NULL,
		   *akey = NULL;
	double secs = 30, warm = 3;
	struct event *term;
	struct attacker *a;
	int c, mode = -1;

	signal(SIGPIPE, SIG_IGN);
	g.nets = 1;
	g.interval_ms = 500;
	g.body_len = 1 << 20;
	while ((c = getopt(argc, argv, "s:C:m:n:b:i:t:w:c:k:H:r:A:K:L:")) != -1) {
		switch (c) {
		case 'A':
			acert = optarg;
			break;
		case 'K':
			akey = optarg;
			break;
		case 'L':
			g.body_len = strtoull(optarg, NULL, 10);
			break;
		case 's':
			server = optarg;
			break;
		case 'C':
			ca = optarg;
			break;
		case 'm':
			mode = parse_mode(optarg);
			break;
		case 'n':
			g.n = atoi(optarg);
			break;
		case 'b':
			g.nets = atoi(optarg);
			break;
		case 'i':
			g.interval_ms = atoi(optarg);
			break;
		case 't':
			secs = atof(optarg);
			break;
		case 'w':
			warm = atof(optarg);
			break;
		case 'c':
			cert = optarg;
			break;
		case 'k':
			key = optarg;
			break;
		case 'H':
			g.host_id = optarg;
			break;
		case 'r':
			g.reports = atoi(optarg);
			break;
		default:
			return usage();
		}
	}
	if (!server || !ca || mode < 0 || g.n < 0 || g.nets < 1 || g.interval_ms < 1)
		return usage();
	g.mode = (enum mode)mode;
	if (setup(server, ca, cert, key, acert, akey) < 0) {
		fprintf(stderr, "attack-load: setup failed (address, CA, certificate)\n");
		return 1;
	}
	a = g.attackers = calloc((size_t)g.n + 1, sizeof(*a));
	for (int i = 0; g.mode != MODE_NONE && i < g.n; i++) {
		a[i].i = i;
		a[i].tick = evtimer_new(g.base, on_tick, &a[i]);
		attacker_open(&a[i]);
	}
	event_base_once(g.base, -1, EV_TIMEOUT, on_warm, NULL,
			&(struct timeval){ (time_t)warm,
					   (suseconds_t)((warm - (time_t)warm) * 1e6) });
	event_base_once(g.base, -1, EV_TIMEOUT, on_stop, NULL,
			&(struct timeval){ (time_t)secs,
					   (suseconds_t)((secs - (time_t)secs) * 1e6) });
	/* a caller ending the attack early still reads what it did */
	term = evsignal_new(g.base, SIGTERM, on_stop, NULL);
	if (!term || evsignal_add(term, NULL) < 0)
		return 1;
	event_base_dispatch(g.base);
	event_free(term);
	qsort(g.ms, (size_t)g.done, sizeof(double), cmp_double);
	printf("mode=%s attackers=%d nets=%d held=%llu closed=%llu opened=%llu answered_ok=%llu "
	       "answered_other=%llu acked=%d failed=%llu p50_ms=%.1f p99_ms=%.1f max_ms=%.1f\n",
	       mode_names[g.mode], g.n, g.nets, (unsigned long long)g.held,
	       (unsigned long long)g.closed, (unsigned long long)g.opened,
	       (unsigned long long)g.answered_ok, (unsigned long long)g.answered_other, g.done,
	       (unsigned long long)g.failed, quantile(0.5), quantile(0.99),
	       g.done ? g.ms[g.done - 1] : 0);
	return 0;
}

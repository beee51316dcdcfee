// SPDX-License-Identifier: GPL-2.0
/*
 * ingest-floor: what storing a report costs on this machine with nothing
 * of kmemd's, the floor bench/ingest compares kmemd with. A server
 * process takes reports from a client process over CONNS loopback TCP and
 * TLS 1.3 connections (mutual certificates, as kmemd's), one record each
 * way per report and one report in flight per connection, as kmem-agent
 * sends them; it decodes each report (protobuf) and inserts the rows kmemd
 * keeps of it (a counters row, a row of its probe histograms, the same
 * tables and indexes) into SQLite (WAL, synchronous=NORMAL, kmemd's cache
 * and checkpoint sizes), and answers a report once its transaction
 * commits: at 256 reports or 5 ms after the first, kmemd's batch and
 * default batch_wait. The reports are bench/ingest's, from HOSTS hosts in
 * turn. DB is created if missing and added to if not: bench/ingest's
 * rounds grow it as they grow kmemd's store, whose inserts cost more as
 * its tables and indexes deepen.
 *
 * Why many connections: with one, every report costs a sleep in
 * epoll_wait, a wakeup, a read that finds nothing more and a commit of its
 * own, while kmemd with 1,000 hosts finds many reports per epoll_wait and
 * commits them together; a one-connection floor charged those to the floor
 * and hid them from the ratio. So the server does what kmemd's event loop
 * does at kmemd's concurrency (bench/ingest passes its number of hosts):
 * level-triggered epoll over non-blocking sockets, non-blocking OpenSSL, a
 * read per ready connection, and answers held until their batch commits.
 * And at kmemd's rate (-r, bench/ingest passes the rate kmemd kept in the
 * same round): reports arriving faster fill larger batches and more of
 * them come per wakeup, so a client faster than kmemd's load generator
 * would make the floor cheaper than the same work at kmemd's pace.
 *
 *   ingest-floor -c CERT -k KEY -C CA -h HOSTCERT -K HOSTKEY -n HOSTS -t SECONDS -f DB
 *                [-p CONNS] [-r RATE]
 *
 * CONNS defaults to 64; RATE (reports a second) to as fast as the server
 * answers. Every connection uses the one host certificate (the handshakes
 * are not measured). Prints key=value lines: conns, reports,
 * seconds, and the server's CPU time per report (user and system) as
 * floor_us.
 */
#include <errno.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fake-report.h"
#include "kmemctl/v1/report.pb-c.h"
#include "tls.h"

#define BATCH 256
#define BATCH_WAIT_MS 5
#define EVENTS 256
#define FRAME_MAX (4 + 16384)

static const char schema[] =
	"PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"
	"PRAGMA wal_autocheckpoint = 8192; PRAGMA cache_size = -32768;"
	"CREATE TABLE IF NOT EXISTS report_samples (host_id TEXT NOT NULL, end_ms INTEGER NOT NULL,"
	" probes BLOB NOT NULL, counts BLOB);"
	"CREATE INDEX IF NOT EXISTS report_samples_by_host ON report_samples (host_id, end_ms);"
	"CREATE INDEX IF NOT EXISTS report_samples_by_time ON report_samples (end_ms);"
	"CREATE TABLE IF NOT EXISTS counters (host_id TEXT NOT NULL, unix_ms INTEGER, seq INTEGER,"
	" soft_lockups INTEGER, hard_lockups INTEGER, rcu_stalls INTEGER, hung_tasks INTEGER,"
	" tlb_shootdowns INTEGER, mitigation_trips INTEGER, events_dropped INTEGER,"
	" reports_dropped INTEGER, uptime_ms INTEGER);"
	"CREATE INDEX IF NOT EXISTS counters_by_host ON counters (host_id, unix_ms);";

static void die(const char *what)
{
	char buf[256];

	fprintf(stderr, "ingest-floor: %s: %s\n", what, tls_error_string(buf, sizeof(buf)));
	exit(1);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* A connection of either side: its TLS, and the frame it is reading. */
struct conn {
	SSL *ssl;
	int fd;
	int host; /* the client's: the host its next report is from */
	uint64_t seq;
	bool waiting; /* the server's: a report in the open batch, its answer held */
	size_t have;
	uint8_t buf[FRAME_MAX];
};

static void nonblocking(int fd)
{
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) {
		perror("ingest-floor: O_NONBLOCK");
		exit(1);
	}
}

static int watch(int ep, struct conn *c)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };

	nonblocking(c->fd);
	return epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
}

/*
 * Reads what one ready connection has into its frame: 1 when the frame is
 * complete (it stays in c->buf, c->have long), 0 when more is to come, -1
 * when the peer is gone. One SSL_read, and another only while OpenSSL
 * holds decrypted bytes: epoll is level-triggered, so a socket with more
 * is reported again, and a read that would find nothing is not made.
 */
static int read_frame(struct conn *c, size_t want)
{
	int n;

	do {
		n = SSL_read(c->ssl, c->buf + c->have, (int)(want - c->have));
		if (n <= 0)
			return SSL_get_error(c->ssl, n) == SSL_ERROR_WANT_READ ? 0 : -1;
		c->have += (size_t)n;
		if (c->have == want)
			return 1;
	} while (SSL_pending(c->ssl));
	return 0;
}

/* A length-prefixed report: 1 when complete, as read_frame(). */
static int read_report(struct conn *c)
{
	uint32_t len;
	int r;

	if (c->have < 4) {
		r = read_frame(c, 4);
		if (r <= 0)
			return r;
	}
	memcpy(&len, c->buf, 4);
	if (len > FRAME_MAX - 4)
		return -1;
	return read_frame(c, 4 + len);
}

static void client_send(struct conn *c, int conns, int hosts)
{
	char host[32];
	uint32_t len;

	snprintf(host, sizeof(host), "bench-%04d", c->host);
	c->host = (c->host + conns) % hosts;
	len = (uint32_t)fake_report(host, ++c->seq, now_ms(), c->buf + 4);
	memcpy(c->buf, &len, 4);
	/* the server closing is the end of the run; it reports its own errors */
	if (SSL_write(c->ssl, c->buf, (int)len + 4) != (int)len + 4)
		exit(0);
}

/*
 * Paced sending (-r): the connections answered and not yet sent on, in
 * turn, and the reports sent since t0, at most rate * elapsed.
 */
struct pace {
	double rate, t0;
	uint64_t sent;
	struct conn **ready;
	size_t head, n, cap;
};

static void pace_push(struct pace *p, struct conn *c)
{
	p->ready[(p->head + p->n++) % p->cap] = c;
}

/* Sends what the rate allows; the milliseconds until the next report is due, or -1. */
static int pace_send(struct pace *p, int conns, int hosts)
{
	double due, now;

	while (p->n) {
		if (p->rate > 0) {
			due = p->t0 + (double)p->sent / p->rate;
			now = mono_s();
			if (due > now)
				return (int)((due - now) * 1e3) + 1;
		}
		client_send(p->ready[p->head], conns, hosts);
		p->head = (p->head + 1) % p->cap;
		p->n--;
		p->sent++;
	}
	return -1;
}

/*
 * The client: connects CONNS times (each handshake completing before the
 * next connection, as the server accepts them in turn), then keeps one
 * report in flight on each, at most RATE a second if given, until the
 * server closes.
 */
static void client(struct sockaddr_in *a, const struct tls_config *tc, int conns, int hosts,
		   double rate)
{
	struct conn *cs = calloc((size_t)conns, sizeof(*cs));
	struct pace p = { .rate = rate, .cap = (size_t)conns };
	struct epoll_event ev[EVENTS];
	int ep = epoll_create1(0), i, n, wait_ms;
	SSL_CTX *ctx;

	p.ready = calloc((size_t)conns, sizeof(*p.ready));
	if (!cs || !p.ready || ep < 0 || tls_client_ctx(tc, &ctx) < 0)
		die("client TLS context");
	for (i = 0; i < conns; i++) {
		struct conn *c = &cs[i];

		c->host = i % hosts;
		c->fd = socket(AF_INET, SOCK_STREAM, 0);
		if (c->fd < 0 || connect(c->fd, (struct sockaddr *)a, sizeof(*a)) < 0)
			die("client connect");
		setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
		if (tls_client_ssl(ctx, "127.0.0.1", &c->ssl) < 0)
			die("client TLS");
		SSL_set_fd(c->ssl, c->fd);
		if (SSL_connect(c->ssl) != 1)
			die("client handshake");
		if (watch(ep, c) < 0)
			die("client epoll");
		pace_push(&p, c);
	}
	p.t0 = mono_s();
	for (;;) {
		wait_ms = pace_send(&p, conns, hosts);
		n = epoll_wait(ep, ev, EVENTS, wait_ms);
		if (n < 0 && errno != EINTR)
			die("client epoll_wait");
		for (i = 0; i < n; i++) {
			struct conn *c = ev[i].data.ptr;
			int r = read_frame(c, 8);

			if (r < 0)
				exit(0);
			if (r == 0)
				continue;
			c->have = 0;
			pace_push(&p, c);
		}
	}
}

struct db {
	sqlite3 *db;
	sqlite3_stmt *begin, *commit, *sample, *counters;
};

static void check(int rc, struct db *d, const char *what)
{
	if (rc != SQLITE_OK && rc != SQLITE_DONE) {
		fprintf(stderr, "ingest-floor: %s: %s\n", what, sqlite3_errmsg(d->db));
		exit(1);
	}
}

static void run(sqlite3_stmt *st, struct db *d, const char *what)
{
	check(sqlite3_step(st), d, what);
	sqlite3_reset(st);
}

static void store(struct db *d, const Kmemctl__V1__Report *rep)
{
	const Kmemctl__V1__Counters *c = rep->counters;
	const char *host = rep->facts->host_id;
	sqlite3_stmt *st = d->counters;
	size_t i;

	static char probes[16384];
	static uint8_t counts[16384];
	size_t plen = 1, clen = 0;

	/*
	 * the report's histograms as one row, as kmemd keeps them (its probes
	 * end together; docs/kmemd.md): a format byte, then per probe its name,
	 * first bucket, bucket count and four 64-bit numbers (a little-endian
	 * machine's own order); the buckets in counts
	 */
	probes[0] = 1;
	for (i = 0; i < rep->n_probes; i++) {
		const Kmemctl__V1__ProbeSample *p = rep->probes[i];
		const int64_t num[4] = { p->start_unix_ms, (int64_t)p->hist->count,
					 (int64_t)p->hist->sum_ns, (int64_t)p->hist->max_ns };
		size_t name = strlen(p->probe), n = p->hist->n_counts * 8;

		probes[plen++] = (char)name;
		memcpy(probes + plen, p->probe, name);
		plen += name;
		probes[plen++] = (char)p->hist->first_bucket;
		probes[plen++] = (char)p->hist->n_counts;
		memcpy(probes + plen, num, sizeof(num));
		plen += sizeof(num);
		memcpy(counts + clen, p->hist->counts, n);
		clen += n;
	}
	st = d->sample;
	sqlite3_bind_text(st, 1, host, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, rep->probes[0]->end_unix_ms);
	sqlite3_bind_blob(st, 3, probes, (int)plen, SQLITE_STATIC);
	sqlite3_bind_blob(st, 4, counts, (int)clen, SQLITE_STATIC);
	run(st, d, "samples");
	st = d->counters;
	sqlite3_bind_text(st, 1, host, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, rep->unix_ms);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)rep->seq);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)c->soft_lockups);
	sqlite3_bind_int64(st, 5, (sqlite3_int64)c->hard_lockups);
	sqlite3_bind_int64(st, 6, (sqlite3_int64)c->rcu_stalls);
	sqlite3_bind_int64(st, 7, (sqlite3_int64)c->hung_tasks);
	sqlite3_bind_int64(st, 8, (sqlite3_int64)c->tlb_shootdowns);
	sqlite3_bind_int64(st, 9, (sqlite3_int64)c->mitigation_trips);
	sqlite3_bind_int64(st, 10, (sqlite3_int64)c->events_dropped);
	sqlite3_bind_int64(st, 11, (sqlite3_int64)c->reports_dropped);
	sqlite3_bind_int64(st, 12, (sqlite3_int64)c->uptime_ms);
	run(st, d, "counters");
}

static void open_db(struct db *d, const char *path)
{
	/* one thread, without SQLite's lock around each call, as kmemd opens its store */
	if (sqlite3_open_v2(path, &d->db,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK)
		check(SQLITE_ERROR, d, path);
	check(sqlite3_exec(d->db, schema, NULL, NULL, NULL), d, "schema");
	check(sqlite3_prepare_v2(d->db, "BEGIN IMMEDIATE", -1, &d->begin, NULL), d, "begin");
	check(sqlite3_prepare_v2(d->db, "COMMIT", -1, &d->commit, NULL), d, "commit");
	check(sqlite3_prepare_v2(d->db, "INSERT INTO report_samples VALUES (?1, ?2, ?3, ?4)", -1,
				 &d->sample, NULL),
	      d, "samples");
	check(sqlite3_prepare_v2(d->db,
				 "INSERT INTO counters VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9,"
				 " ?10, ?11, ?12)",
				 -1, &d->counters, NULL),
	      d, "counters");
}

/* The server's side: the open batch and what it has stored. */
struct server {
	struct db d;
	struct conn **waiting; /* the batch's connections, answered at its commit */
	size_t in_batch;
	double deadline; /* the batch's commit, BATCH_WAIT_MS after its first report */
	uint64_t reports;
};

/* Commits the open batch and answers its reports, as kmemd answers a report once stored. */
static void commit(struct server *s)
{
	size_t i;

	if (!s->in_batch)
		return;
	run(s->d.commit, &s->d, "commit");
	for (i = 0; i < s->in_batch; i++) {
		struct conn *c = s->waiting[i];

		/* 8 bytes to a client that reads as it waits: its socket never fills */
		if (SSL_write(c->ssl, &s->reports, 8) != 8)
			die("answering");
		c->waiting = false;
	}
	s->in_batch = 0;
}

static void serve_report(struct server *s, struct conn *c)
{
	Kmemctl__V1__Report *rep;
	uint32_t len;

	memcpy(&len, c->buf, 4);
	rep = kmemctl__v1__report__unpack(NULL, len, c->buf + 4);
	if (!rep || !rep->facts || !rep->counters || !rep->n_probes)
		die("decoding a report");
	if (c->waiting)
		die("a second report in flight on a connection");
	if (!s->in_batch) {
		run(s->d.begin, &s->d, "begin");
		s->deadline = mono_s() + BATCH_WAIT_MS / 1e3;
	}
	store(&s->d, rep);
	kmemctl__v1__report__free_unpacked(rep, NULL);
	c->have = 0;
	c->waiting = true;
	s->waiting[s->in_batch++] = c;
	s->reports++;
	if (s->in_batch == BATCH)
		commit(s);
}

/* Accepts CONNS connections in turn, each handshake complete before the next. */
static struct conn *accept_all(int l, const struct tls_config *tc, int conns, int ep)
{
	struct conn *cs = calloc((size_t)conns, sizeof(*cs));
	SSL_CTX *ctx;
	int i;

	if (!cs || tls_server_ctx(tc, &ctx) < 0)
		die("server TLS context");
	for (i = 0; i < conns; i++) {
		struct conn *c = &cs[i];

		c->fd = accept(l, NULL, NULL);
		if (c->fd < 0)
			die("accept");
		setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
		c->ssl = SSL_new(ctx);
		if (!c->ssl)
			die("server TLS");
		SSL_set_fd(c->ssl, c->fd);
		if (SSL_accept(c->ssl) != 1)
			die("server handshake");
		if (watch(ep, c) < 0)
			die("server epoll");
	}
	SSL_CTX_free(ctx);
	return cs;
}

/* Serves until SECONDS have passed; the elapsed time. */
static double serve(struct server *s, int ep, double seconds)
{
	struct epoll_event ev[EVENTS];
	double t0 = mono_s(), now = t0, until;
	int i, n;

	while (now - t0 < seconds) {
		until = s->in_batch ? s->deadline : t0 + seconds;
		n = epoll_wait(ep, ev, EVENTS, until > now ? (int)((until - now) * 1e3) + 1 : 0);
		if (n < 0 && errno != EINTR)
			die("epoll_wait");
		for (i = 0; i < n; i++) {
			struct conn *c = ev[i].data.ptr;
			int r = read_report(c);

			if (r < 0)
				die("reading a report");
			if (r > 0)
				serve_report(s, c);
		}
		now = mono_s();
		if (s->in_batch && now >= s->deadline)
			commit(s);
	}
	commit(s);
	return now - t0;
}

static int listen_loopback(struct sockaddr_in *a, int backlog)
{
	socklen_t len = sizeof(*a);
	int l = socket(AF_INET, SOCK_STREAM, 0);

	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a->sin_port = 0;
	if (l < 0 || bind(l, (struct sockaddr *)a, sizeof(*a)) < 0 || listen(l, backlog) < 0 ||
	    getsockname(l, (struct sockaddr *)a, &len) < 0)
		return -1;
	return l;
}

int main(int argc, char **argv)
{
	struct tls_config server_tc = { .client_auth = TLS_CLIENT_REQUIRED }, client_tc = { 0 };
	struct server s = { 0 };
	const char *path = NULL;
	double seconds = 10, rate = 0, c0, elapsed;
	int hosts = 1, conns = 64, c, l, ep, i;
	struct sockaddr_in a;
	struct conn *cs;
	pid_t pid;

	while ((c = getopt(argc, argv, "c:k:C:h:K:n:t:f:p:r:")) != -1) {
		switch (c) {
		case 'c':
			server_tc.cert = optarg;
			break;
		case 'k':
			server_tc.key = optarg;
			break;
		case 'C':
			server_tc.ca = client_tc.ca = optarg;
			break;
		case 'h':
			client_tc.cert = optarg;
			break;
		case 'K':
			client_tc.key = optarg;
			break;
		case 'n':
			hosts = atoi(optarg);
			break;
		case 't':
			seconds = atof(optarg);
			break;
		case 'f':
			path = optarg;
			break;
		case 'p':
			conns = atoi(optarg);
			break;
		case 'r':
			rate = atof(optarg);
			break;
		default:
			return 2;
		}
	}
	if (!server_tc.cert || !server_tc.key || !server_tc.ca || !client_tc.cert ||
	    !client_tc.key || !path || hosts < 1 || seconds <= 0 || conns < 1 || rate < 0) {
		fprintf(stderr, "usage: ingest-floor -c CERT -k KEY -C CA -h HOSTCERT -K HOSTKEY "
				"-n HOSTS -t SECONDS -f DB [-p CONNS] [-r RATE]\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	l = listen_loopback(&a, 16);
	ep = epoll_create1(0);
	if (l < 0 || ep < 0) {
		perror("ingest-floor: loopback TCP");
		return 1;
	}
	pid = fork();
	if (pid < 0) {
		perror("ingest-floor: fork");
		return 1;
	}
	if (pid == 0) {
		close(l);
		close(ep);
		client(&a, &client_tc, conns, hosts, rate);
		return 0;
	}
	open_db(&s.d, path);
	s.waiting = calloc(BATCH, sizeof(*s.waiting));
	if (!s.waiting)
		die("out of memory");
	cs = accept_all(l, &server_tc, conns, ep);
	close(l);
	c0 = cpu_s();
	elapsed = serve(&s, ep, seconds);
	printf("conns=%d reports=%llu seconds=%.3f floor_us=%.1f\n", conns,
	       (unsigned long long)s.reports, elapsed, (cpu_s() - c0) / (double)s.reports * 1e6);
	fflush(stdout);
	for (i = 0; i < conns; i++) {
		SSL_free(cs[i].ssl);
		close(cs[i].fd);
	}
	waitpid(pid, NULL, 0);
	sqlite3_close(s.d.db);
	return 0;
}

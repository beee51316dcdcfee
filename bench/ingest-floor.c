// SPDX-License-Identifier: GPL-2.0
/*
 * ingest-floor: what storing a report costs on this machine with nothing
 * of kmemd's, the floor bench/ingest compares kmemd with. A server
 * process takes reports from a client process over one loopback TCP and TLS 1.3
 * connection (mutual certificates, as kmemd's), one record each way per
 * report; it decodes each report (protobuf) and inserts the rows kmemd
 * keeps of it (a counters row, a row of its probe histograms, the same
 * tables and indexes) into SQLite (WAL, synchronous=NORMAL) in transactions of
 * up to 256 reports, kmemd's batch. The reports are bench/ingest's, from
 * HOSTS hosts in turn.
 *
 *   ingest-floor -c CERT -k KEY -C CA -h HOSTCERT -K HOSTKEY -n HOSTS -t SECONDS -f DB
 *
 * Prints key=value lines: reports, seconds, and the server's CPU time per
 * report (user and system) as floor_us.
 */
#include <errno.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fake-report.h"
#include "kmemctl/v1/report.pb-c.h"
#include "tls.h"

#define BATCH 256

static const char schema[] =
	"PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"
	"PRAGMA cache_size = -32768;"
	"CREATE TABLE report_samples (host_id TEXT NOT NULL, end_ms INTEGER NOT NULL,"
	" probes BLOB NOT NULL, counts BLOB);"
	"CREATE INDEX report_samples_by_host ON report_samples (host_id, end_ms);"
	"CREATE INDEX report_samples_by_time ON report_samples (end_ms);"
	"CREATE TABLE counters (host_id TEXT NOT NULL, unix_ms INTEGER, seq INTEGER,"
	" soft_lockups INTEGER, hard_lockups INTEGER, rcu_stalls INTEGER, hung_tasks INTEGER,"
	" tlb_shootdowns INTEGER, mitigation_trips INTEGER, events_dropped INTEGER,"
	" reports_dropped INTEGER, uptime_ms INTEGER);"
	"CREATE INDEX counters_by_host ON counters (host_id, unix_ms);";

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

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static int read_full(SSL *ssl, void *p, size_t len)
{
	size_t got = 0;
	int n;

	while (got < len) {
		n = SSL_read(ssl, (char *)p + got, (int)(len - got));
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return 0;
}

/* sv[0] accepted from sv[1], over 127.0.0.1, both without Nagle. */
static int tcp_pair(int sv[2])
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0);

	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 1) < 0 ||
	    getsockname(l, (struct sockaddr *)&a, &len) < 0)
		return -1;
	sv[1] = socket(AF_INET, SOCK_STREAM, 0);
	if (sv[1] < 0 || connect(sv[1], (struct sockaddr *)&a, sizeof(a)) < 0)
		return -1;
	sv[0] = accept(l, NULL, NULL);
	close(l);
	if (sv[0] < 0)
		return -1;
	setsockopt(sv[0], IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
	setsockopt(sv[1], IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
	return 0;
}

/* Sends a report (length, then bytes: one record) and waits for its answer, until told to stop. */
static void client(int fd, const struct tls_config *tc, int hosts)
{
	static uint8_t buf[16384 + 4];
	SSL_CTX *ctx;
	SSL *ssl;
	uint64_t seq = 0;
	uint8_t ack[8];

	if (tls_client_ctx(tc, &ctx) < 0 || tls_client_ssl(ctx, "127.0.0.1", &ssl) < 0)
		die("client TLS context");
	SSL_set_fd(ssl, fd);
	if (SSL_connect(ssl) != 1)
		die("client handshake");
	for (;;) {
		char host[32];
		uint32_t len;

		snprintf(host, sizeof(host), "bench-%04d", (int)(seq % (uint64_t)hosts));
		len = (uint32_t)fake_report(host, ++seq, now_ms(), buf + 4);
		memcpy(buf, &len, 4);
		if (SSL_write(ssl, buf, (int)len + 4) <= 0 || read_full(ssl, ack, sizeof(ack)) < 0)
			exit(0);
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
	unlink(path);
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

int main(int argc, char **argv)
{
	struct tls_config server_tc = { .client_auth = TLS_CLIENT_REQUIRED }, client_tc = { 0 };
	const char *path = NULL;
	static uint8_t buf[16384];
	double seconds = 10, t0, c0, elapsed;
	uint64_t n = 0, in_batch = 0;
	struct timespec ts;
	int hosts = 1, sv[2], c;
	struct db d = { 0 };
	SSL_CTX *ctx;
	pid_t pid;
	SSL *ssl;

	while ((c = getopt(argc, argv, "c:k:C:h:K:n:t:f:")) != -1) {
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
		default:
			return 2;
		}
	}
	if (!server_tc.cert || !server_tc.key || !server_tc.ca || !client_tc.cert ||
	    !client_tc.key || !path || hosts < 1 || seconds <= 0) {
		fprintf(stderr, "usage: ingest-floor -c CERT -k KEY -C CA -h HOSTCERT -K HOSTKEY "
				"-n HOSTS -t SECONDS -f DB\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	/* loopback TCP without Nagle, as kmemd's connections */
	if (tcp_pair(sv) < 0) {
		perror("ingest-floor: loopback TCP");
		return 1;
	}
	pid = fork();
	if (pid < 0) {
		perror("ingest-floor: fork");
		return 1;
	}
	if (pid == 0) {
		close(sv[0]);
		client(sv[1], &client_tc, hosts);
		return 0;
	}
	close(sv[1]);
	open_db(&d, path);
	if (tls_server_ctx(&server_tc, &ctx) < 0 || !(ssl = SSL_new(ctx)))
		die("server TLS context");
	SSL_set_fd(ssl, sv[0]);
	if (SSL_accept(ssl) != 1)
		die("server handshake");
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t0 = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	c0 = cpu_s();
	for (;;) {
		Kmemctl__V1__Report *rep;
		uint64_t ack = n;
		uint32_t len;

		if (read_full(ssl, &len, 4) < 0 || len > sizeof(buf) ||
		    read_full(ssl, buf, len) < 0)
			die("reading a report");
		rep = kmemctl__v1__report__unpack(NULL, len, buf);
		if (!rep || !rep->facts || !rep->counters || !rep->n_probes)
			die("decoding a report");
		if (!in_batch)
			run(d.begin, &d, "begin");
		store(&d, rep);
		kmemctl__v1__report__free_unpacked(rep, NULL);
		n++;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		elapsed = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 - t0;
		/*
		 * One report in flight: each is answered at once, and a batch
		 * commits every BATCH reports (kmemd's answers wait for their
		 * commit; the work is the same).
		 */
		if (++in_batch == BATCH || elapsed >= seconds) {
			run(d.commit, &d, "commit");
			in_batch = 0;
		}
		if (SSL_write(ssl, &ack, sizeof(ack)) <= 0)
			die("answering");
		if (elapsed >= seconds)
			break;
	}
	printf("reports=%llu seconds=%.3f floor_us=%.1f\n", (unsigned long long)n, elapsed,
	       (cpu_s() - c0) / (double)n * 1e6);
	fflush(stdout);
	SSL_free(ssl);
	close(sv[0]);
	waitpid(pid, NULL, 0);
	SSL_CTX_free(ctx);
	sqlite3_close(d.db);
	return 0;
}

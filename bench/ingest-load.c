// SPDX-License-Identifier: GPL-2.0
/*
 * ingest-load: simulated agents for bench/ingest. Each of N hosts keeps
 * one TLS connection to kmemd with its own host certificate and posts
 * reports over it, one in flight at a time (as kmem-agent does), HTTP/1.1
 * keep-alive. Phase 1 connects every host (one report each) and idles;
 * phase 2 posts back to back for the given time (none with -t 0).
 *
 *   ingest-load -s HOST:PORT -C CA -d CERTDIR -n HOSTS -t SECONDS -i IDLE_SECONDS [-P PID]
 *
 * Certificates are CERTDIR/bench-NNNN.{crt,key}. Prints key=value lines.
 * With -P, the CPU time process PID (kmemd) spent during phase 2, read here
 * as it starts and as it stops so that the window is exactly the load's:
 * the process's (cpu_ticks=, clock ticks, threads gone since included) and
 * each thread's (thread=NAME ticks=, the main thread as "main").
 */
#include <dirent.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "evloop.h"
#include "fake-report.h"
#include "hostport.h"
#include "kmemctl/v1/report.pb-c.h"
#include "tls.h"

struct host {
	char id[32];
	SSL_CTX *ctx;
	struct evhttp_connection *conn;
	uint64_t seq;
	bool connected;
};

static struct event_base *base;
static struct host *hosts;
static int nhosts, connected, phase;
static uint64_t acked, failed;
static char server_host[256];
static uint16_t server_port;
static uint8_t buf[16384];

/* A process's CPU time, in clock ticks: its own and its threads'. */
#define THREADS_MAX 64
struct cpu_sample {
	unsigned long long total;
	int n;
	struct {
		int tid;
		char name[16];
		unsigned long long ticks;
	} t[THREADS_MAX];
};

/* utime + stime of a /proc stat file, and the name in it. */
static int stat_ticks(const char *path, char name[16], unsigned long long *ticks)
{
	unsigned long long ut, st;
	char line[1024], *lp, *rp;
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -errno;
	n = fread(line, 1, sizeof(line) - 1, f);
	fclose(f);
	line[n] = '\0';
	lp = strchr(line, '(');
	rp = strrchr(line, ')');
	/* after the name: state, 5 numbers, flags and 4 fault counts, then utime and stime */
	if (!lp || !rp || rp < lp ||
	    sscanf(rp + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -EINVAL;
	snprintf(name, 16, "%.*s", (int)(rp - lp - 1), lp + 1);
	/* a name is one word in a key=value line */
	for (; *name; name++)
		if (*name == ' ' || *name == '=')
			*name = '_';
	*ticks = ut + st;
	return 0;
}

static int cpu_sample(int pid, struct cpu_sample *s)
{
	char path[64], name[16];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (stat_ticks(path, name, &s->total) < 0)
		return -ESRCH;
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return -ESRCH;
	s->n = 0;
	while ((de = readdir(d)) && s->n < THREADS_MAX) {
		int tid = atoi(de->d_name);

		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
		if (tid <= 0 || stat_ticks(path, s->t[s->n].name, &s->t[s->n].ticks) < 0)
			continue; /* gone since readdir: its time is in the process's */
		s->t[s->n++].tid = tid;
	}
	closedir(d);
	return 0;
}

/* What each thread of b spent since a (all of it for a thread a did not see). */
static void cpu_print(int pid, const struct cpu_sample *a, const struct cpu_sample *b)
{
	int i, j;

	printf("cpu_ticks=%llu\n", b->total - a->total);
	for (i = 0; i < b->n; i++) {
		unsigned long long before = 0;

		for (j = 0; j < a->n; j++)
			if (a->t[j].tid == b->t[i].tid)
				before = a->t[j].ticks;
		printf("thread=%s ticks=%llu\n", b->t[i].tid == pid ? "main" : b->t[i].name,
		       b->t[i].ticks - before);
	}
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void post(struct host *h);

static void on_reply(struct evhttp_request *req, void *arg)
{
	struct host *h = arg;
	int code = req ? evhttp_request_get_response_code(req) : 0;

	if (code == 200) {
		acked++;
	} else {
		failed++;
		ERR_clear_error();
	}
	if (!h->connected) {
		/* a request's header and body are separate writes: no Nagle wait */
		setsockopt(bufferevent_getfd(evhttp_connection_get_bufferevent(h->conn)),
			   IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
		h->connected = true;
		connected++;
	}
	if (phase == 2)
		post(h);
}

static void post(struct host *h)
{
	struct evhttp_request *req = evhttp_request_new(on_reply, h);
	size_t len = fake_report(h->id, ++h->seq, now_ms(), buf);

	evhttp_add_header(evhttp_request_get_output_headers(req), "Host", server_host);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
			  "application/x-protobuf");
	evbuffer_add(evhttp_request_get_output_buffer(req), buf, len);
	if (evhttp_make_request(h->conn, req, EVHTTP_REQ_POST, "/v1/agent/report") < 0)
		failed++;
	/* as kmem-agent sends it */
	http_one_record(h->conn);
}

static int open_host(struct host *h, const char *ca, const char *dir, int i)
{
	char crt[4096], key[4096];
	struct tls_config tc = { crt, key, ca, TLS_CLIENT_NONE };
	struct bufferevent *bev;
	SSL *ssl;

	snprintf(h->id, sizeof(h->id), "bench-%04d", i);
	snprintf(crt, sizeof(crt), "%s/%s.crt", dir, h->id);
	snprintf(key, sizeof(key), "%s/%s.key", dir, h->id);
	if (tls_client_ctx(&tc, &h->ctx) < 0 || tls_client_ssl(h->ctx, server_host, &ssl) < 0)
		return -EINVAL;
	bev = bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
					     BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	h->conn = evhttp_connection_base_bufferevent_new(base, NULL, bev, server_host, server_port);
	if (!h->conn)
		return -ENOMEM;
	evhttp_connection_set_timeout(h->conn, 30);
	return 0;
}

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	event_base_loopbreak(base);
}

static void run_for(double seconds)
{
	struct timeval tv = { .tv_sec = (time_t)seconds,
			      .tv_usec = (suseconds_t)((seconds - (time_t)seconds) * 1e6) };
	struct event *ev = evtimer_new(base, on_stop, NULL);

	evtimer_add(ev, &tv);
	event_base_dispatch(base);
	event_free(ev);
}

int main(int argc, char **argv)
{
	const char *server = NULL, *ca = NULL, *dir = NULL;
	static struct cpu_sample cpu0, cpu1;
	double secs = 10, idle = 5;
	int pid = 0;
	struct timespec t0, t1;
	uint64_t acked0;
	int c, i;

	while ((c = getopt(argc, argv, "s:C:d:n:t:i:P:")) != -1) {
		switch (c) {
		case 's':
			server = optarg;
			break;
		case 'C':
			ca = optarg;
			break;
		case 'd':
			dir = optarg;
			break;
		case 'n':
			nhosts = atoi(optarg);
			break;
		case 't':
			secs = atof(optarg);
			break;
		case 'i':
			idle = atof(optarg);
			break;
		case 'P':
			pid = atoi(optarg);
			break;
		default:
			return 2;
		}
	}
	if (!server || !ca || !dir || nhosts < 1 ||
	    hostport_split(server, server_host, sizeof(server_host), &server_port, false) < 0) {
		fprintf(stderr, "usage: ingest-load -s HOST:PORT -C CA -d CERTDIR -n HOSTS "
				"-t SECONDS -i IDLE_SECONDS [-P PID]\n");
		return 2;
	}
	/* kmemd closing a connection (its limits, a busy machine) is a failed report, not our end */
	signal(SIGPIPE, SIG_IGN);
	base = event_base_new();
	hosts = calloc((size_t)nhosts, sizeof(*hosts));
	for (i = 0; i < nhosts; i++)
		if (open_host(&hosts[i], ca, dir, i) < 0) {
			fprintf(stderr, "ingest-load: host %d: no certificate or TLS context\n", i);
			return 1;
		}
	/* phase 1: every host connects with one report, then all idle */
	phase = 1;
	for (i = 0; i < nhosts; i++)
		post(&hosts[i]);
	while (connected < nhosts)
		event_base_loop(base, EVLOOP_ONCE);
	printf("connected=%d failed=%llu\n", connected, (unsigned long long)failed);
	fflush(stdout);
	run_for(idle);
	if (secs <= 0)
		return 0;
	/* phase 2: back to back */
	phase = 2;
	acked0 = acked;
	if (pid && cpu_sample(pid, &cpu0) < 0) {
		fprintf(stderr, "ingest-load: no process %d\n", pid);
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < nhosts; i++)
		post(&hosts[i]);
	run_for(secs);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (pid && cpu_sample(pid, &cpu1) < 0) {
		fprintf(stderr, "ingest-load: process %d is gone\n", pid);
		return 1;
	}
	printf("acked=%llu failed=%llu seconds=%.3f\n", (unsigned long long)(acked - acked0),
	       (unsigned long long)failed,
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	if (pid)
		cpu_print(pid, &cpu0, &cpu1);
	return 0;
}

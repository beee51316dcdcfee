// SPDX-License-Identifier: GPL-2.0
/*
 * ingest-load: simulated agents for bench/ingest. Each of N hosts keeps
 * one TLS connection to kmemd with its own host certificate and posts
 * reports over it, one in flight at a time (as kmem-agent does), HTTP/1.1
 * keep-alive. Phase 1 connects every host (one report each) and idles;
 * phase 2 posts back to back for the given time (none with -t 0).
 *
 *   ingest-load -s HOST:PORT -C CA -d CERTDIR -n HOSTS -t SECONDS -i IDLE_SECONDS
 *
 * Certificates are CERTDIR/bench-NNNN.{crt,key}. Prints key=value lines.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A report the size of a real one: 5 mitigations, 6 probe samples, counters. */
static size_t encode(struct host *h)
{
	static const char *const mit[] = { "kasan-flush-batch", "kasan-quarantine", "rstat-yield",
					   "tlb-gen", "usercopy-fastpath" };
	static const char *const probe[] = { "rstat-flush",   "rstat-flush-irqoff",
					     "tlb-shootdown", "usercopy-vmalloc",
					     "vmap-purge",    "vmap-purge-flushes" };
	Kmemctl__V1__Report rep = KMEMCTL__V1__REPORT__INIT;
	Kmemctl__V1__HostFacts f = KMEMCTL__V1__HOST_FACTS__INIT;
	Kmemctl__V1__HostFacts__LabelsEntry le = KMEMCTL__V1__HOST_FACTS__LABELS_ENTRY__INIT,
					    *lep[] = { &le };
	Kmemctl__V1__MitigationState ms[5], *msp[5];
	Kmemctl__V1__ProbeSample ps[6], *psp[6];
	Kmemctl__V1__Histogram hs[6];
	Kmemctl__V1__Counters c = KMEMCTL__V1__COUNTERS__INIT;
	uint64_t counts[6] = { 12, 40, 7, 3, 1, 1 };
	int64_t t = now_ms();
	int i;

	f.host_id = h->id;
	f.hostname = h->id;
	f.kernel_release = "6.1.0-57-amd64";
	f.kernel_build_id = "e4f18d9dc1d0e6fc2b17e93e885a647b3c0a6fc1";
	f.possible_cpus = 64;
	f.online_cpus = 64;
	f.mem_total_bytes = 256ULL << 30;
	f.module_version = "0.1.0";
	le.key = "role";
	le.value = "web";
	f.n_labels = 1;
	f.labels = lep;
	for (i = 0; i < 5; i++) {
		kmemctl__v1__mitigation_state__init(&ms[i]);
		ms[i].id = (char *)mit[i];
		ms[i].state = KMEMCTL__V1__MITIGATION_STATE_KIND__MITIGATION_STATE_OFF;
		ms[i].mode = KMEMCTL__V1__MITIGATION_MODE__MITIGATION_MODE_OFF;
		ms[i].source = KMEMCTL__V1__MODE_SOURCE__MODE_SOURCE_DEFAULT;
		ms[i].reason = "off: supported on this kernel";
		msp[i] = &ms[i];
	}
	for (i = 0; i < 6; i++) {
		kmemctl__v1__probe_sample__init(&ps[i]);
		kmemctl__v1__histogram__init(&hs[i]);
		hs[i].first_bucket = 12;
		hs[i].n_counts = 6;
		hs[i].counts = counts;
		hs[i].count = 64;
		hs[i].sum_ns = 1234567;
		hs[i].max_ns = 100000; /* in the top bucket, (65536, 131072] */
		ps[i].probe = (char *)probe[i];
		ps[i].start_unix_ms = t - 10000;
		ps[i].end_unix_ms = t;
		ps[i].hist = &hs[i];
		psp[i] = &ps[i];
	}
	c.uptime_ms = (uint64_t)h->seq * 10000;
	rep.seq = ++h->seq;
	rep.unix_ms = t;
	rep.facts = &f;
	rep.n_mitigations = 5;
	rep.mitigations = msp;
	rep.n_probes = 6;
	rep.probes = psp;
	rep.counters = &c;
	return kmemctl__v1__report__pack(&rep, buf);
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
	size_t len = encode(h);

	evhttp_add_header(evhttp_request_get_output_headers(req), "Host", server_host);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
			  "application/x-protobuf");
	evbuffer_add(evhttp_request_get_output_buffer(req), buf, len);
	if (evhttp_make_request(h->conn, req, EVHTTP_REQ_POST, "/v1/agent/report") < 0)
		failed++;
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
	double secs = 10, idle = 5;
	struct timespec t0, t1;
	uint64_t acked0;
	int c, i;

	while ((c = getopt(argc, argv, "s:C:d:n:t:i:")) != -1) {
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
		default:
			return 2;
		}
	}
	if (!server || !ca || !dir || nhosts < 1 ||
	    hostport_split(server, server_host, sizeof(server_host), &server_port, false) < 0) {
		fprintf(stderr, "usage: ingest-load -s HOST:PORT -C CA -d CERTDIR -n HOSTS "
				"-t SECONDS -i IDLE_SECONDS\n");
		return 2;
	}
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
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < nhosts; i++)
		post(&hosts[i]);
	run_for(secs);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("acked=%llu failed=%llu seconds=%.3f\n", (unsigned long long)(acked - acked0),
	       (unsigned long long)failed,
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	return 0;
}

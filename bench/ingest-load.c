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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

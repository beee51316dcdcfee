// SPDX-License-Identifier: GPL-2.0
/*
 * series-load: the dashboard's rollout page refreshed against a
 * 10,000-member rollout while a host reports, for
 * tests/integration/series.sh.
 *
 *   series-load seed FILE HOSTS REPORTS
 *   series-load run HOST:PORT CA ADMIN HOST ROUNDS REFRESHES
 *
 * seed: a store holding rollout "bench" of HOSTS hosts
 * (bench/rollout-store.h), REPORTS reports each over the last hour, its
 * first wave started 30 minutes ago so that it bakes through the test.
 *
 * run: as operator ADMIN (ADMIN.crt, ADMIN.key), asks for wave 1's series
 * ROUNDS times with a step never asked before (each computed anew), then
 * REFRESHES times with one query, as a page left open does. Meanwhile
 * host HOST posts reports back to back, one in flight as kmem-agent does.
 * Prints what it saw; fails unless every report is acknowledged, at least
 * 2 reports were acknowledged while each new query waited for its answer
 * (kmemd served them meanwhile: with the series computed on its loop it
 * serves at most the one it had read), and every answer is a series with
 * its computed_ms, never older than the one before.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake-report.h"
#include "hostport.h"
#include "macro.h"
#include "rollout-store.h"
#include "tls.h"

#define MIN 60000LL

static struct event_base *base;
static char server_host[256];
static uint16_t server_port;
static struct evhttp_connection *admin, *host;
static const char *host_id;
static uint64_t seq, acked, refused, waited;
static int rounds, refreshes, asked, answers, canaries = -1, baselines = -1;
static int64_t last_computed;
static bool stopping, in_flight;
static uint8_t buf[16384];

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static _noreturn_ void fail(const char *fmt, const char *what)
{
	fprintf(stderr, "series-load: ");
	fprintf(stderr, fmt, what);
	fputc('\n', stderr);
	exit(1);
}

static int seed(const char *path, unsigned long n, unsigned long reports)
{
	struct rollout_member *m = calloc(n, sizeof(*m));
	int64_t now = now_ms();
	struct store *st;
	char err[256];

	if (!m || store_open(path, &st, err, sizeof(err)) < 0)
		fail("the store: %s", m ? err : "out of memory");
	rollout_store_hosts(m, n);
	if (rollout_store_reports(st, m, n, reports, now - 60 * MIN) < 0 ||
	    rollout_store_start(st, m, n, now - 30 * MIN) < 0)
		fail("seeding the store: %s", st->ops->error(st));
	st->ops->close(st);
	free(m);
	return 0;
}

static struct evhttp_connection *connect_as(const char *ca, const char *who)
{
	char crt[4096], key[4096];
	struct tls_config tc = { crt, key, ca, TLS_CLIENT_NONE };
	struct evhttp_connection *c;
	struct bufferevent *bev;
	SSL_CTX *ctx;
	SSL *ssl;

	snprintf(crt, sizeof(crt), "%s.crt", who);
	snprintf(key, sizeof(key), "%s.key", who);
	if (tls_client_ctx(&tc, &ctx) < 0 || tls_client_ssl(ctx, server_host, &ssl) < 0)
		fail("no TLS context for %s", who);
	/* the connection's SSL holds the context from here on */
	SSL_CTX_free(ctx);
	bev = bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
					     BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	c = bev ? evhttp_connection_base_bufferevent_new(base, NULL, bev, server_host,
							 server_port) :
		  NULL;
	if (!c)
		fail("no connection for %s", who);
	evhttp_connection_set_timeout(c, 60);
	return c;
}

static void post(void);

static void on_report(struct evhttp_request *req, void *arg)
{
	(void)arg;
	in_flight = false;
	/* a report's header and body are separate writes: no Nagle wait */
	if (seq == 1)
		setsockopt(bufferevent_getfd(evhttp_connection_get_bufferevent(host)), IPPROTO_TCP,
			   TCP_NODELAY, &(int){ 1 }, sizeof(int));
	if (req && evhttp_request_get_response_code(req) == 200) {
		acked++;
		/* a query is out (asked > answers): kmemd served this report meanwhile */
		waited += asked > answers;
	} else {
		refused++;
	}
	if (!stopping)
		post();
	else
		event_base_loopbreak(base);
}

static void post(void)
{
	struct evhttp_request *req = evhttp_request_new(on_report, NULL);
	size_t len = fake_report(host_id, ++seq, now_ms(), buf);

	evhttp_add_header(evhttp_request_get_output_headers(req), "Host", server_host);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
			  "application/x-protobuf");
	evbuffer_add(evhttp_request_get_output_buffer(req), buf, len);
	if (evhttp_make_request(host, req, EVHTTP_REQ_POST, "/v1/agent/report") < 0)
		fail("posting a report%s", "");
	in_flight = true;
}

static void ask(void);

/* The hosts on each side of an answer; false when it is not a series. */
static bool sides(json_t *o, int *c, int *b)
{
	json_t *s = json_object_get(json_object_get(o, "series"), "sides");

	if (json_array_size(s) != 2)
		return false;
	*c = (int)json_integer_value(json_object_get(json_array_get(s, 0), "hosts"));
	*b = (int)json_integer_value(json_object_get(json_array_get(s, 1), "hosts"));
	return true;
}

static void on_series(struct evhttp_request *req, void *arg)
{
	struct evbuffer *in = req ? evhttp_request_get_input_buffer(req) : NULL;
	uint64_t before = (uint64_t)(uintptr_t)arg;
	json_error_t e;
	json_t *o;
	int64_t computed;
	int c, b;

	if (!req || evhttp_request_get_response_code(req) != 200)
		fail("a series request failed: %s", req ? "not 200" : "no answer");
	o = json_loadb((const char *)evbuffer_pullup(in, -1), evbuffer_get_length(in), 0, &e);
	computed = json_integer_value(json_object_get(o, "computed_ms"));
	if (!o || !sides(o, &c, &b) || !computed)
		fail("an answer that is not a series with its computed_ms: %s",
		     (const char *)evbuffer_pullup(in, -1));
	if (computed < last_computed)
		fail("an answer computed before the one before it%s", "");
	if ((canaries >= 0 && c != canaries) || (baselines >= 0 && b != baselines))
		fail("the sides' hosts changed between answers%s", "");
	json_decref(o);
	last_computed = computed;
	canaries = c;
	baselines = b;
	answers++;
	if (answers <= rounds) {
		printf("query %d: %llu reports acknowledged while it waited\n", answers,
		       (unsigned long long)(acked - before));
		if (acked - before < 2)
			fail("kmemd did not serve reports while computing a series%s", "");
	}
	if (answers < rounds + refreshes) {
		ask();
		return;
	}
	stopping = true;
	if (!in_flight)
		event_base_loopbreak(base);
}

static void ask(void)
{
	struct evhttp_request *req = evhttp_request_new(on_series, (void *)(uintptr_t)acked);
	char path[128];

	/* a step no query asked for before is computed anew; refreshes ask the same */
	if (asked < rounds)
		snprintf(path, sizeof(path), "/v1/rollouts/series?name=bench&wave=1&step=%d",
			 60000 + 1000 * asked);
	else
		snprintf(path, sizeof(path), "/v1/rollouts/series?name=bench&wave=1");
	evhttp_add_header(evhttp_request_get_output_headers(req), "Host", server_host);
	if (evhttp_make_request(admin, req, EVHTTP_REQ_GET, path) < 0)
		fail("asking for %s", path);
	asked++;
}

static int run(char **argv)
{
	if (hostport_split(argv[0], server_host, sizeof(server_host), &server_port, false) < 0)
		fail("bad server %s", argv[0]);
	rounds = atoi(argv[4]);
	refreshes = atoi(argv[5]);
	if (rounds < 1 || refreshes < 1)
		fail("want ROUNDS and REFRESHES >= 1%s", "");
	base = event_base_new();
	admin = connect_as(argv[1], argv[2]);
	host_id = strrchr(argv[3], '/') ? strrchr(argv[3], '/') + 1 : argv[3];
	host = connect_as(argv[1], argv[3]);
	post();
	ask();
	event_base_dispatch(base);
	printf("series answers %d (%d new queries, %d refreshes): %d canaries, %d baselines\n",
	       answers, rounds, refreshes, canaries, baselines);
	printf("reports acknowledged %llu, refused %llu, acknowledged while a query waited %llu\n",
	       (unsigned long long)acked, (unsigned long long)refused, (unsigned long long)waited);
	if (refused)
		fail("reports were refused%s", "");
	evhttp_connection_free(admin);
	evhttp_connection_free(host);
	event_base_free(base);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "seed") && strtoul(argv[3], NULL, 10) >= 100 &&
	    strtoul(argv[4], NULL, 10) >= 2)
		return seed(argv[2], strtoul(argv[3], NULL, 10), strtoul(argv[4], NULL, 10));
	if (argc == 8 && !strcmp(argv[1], "run"))
		return run(argv + 2);
	fprintf(stderr, "usage: series-load seed FILE HOSTS(>=100) REPORTS(>=2)\n"
			"       series-load run HOST:PORT CA ADMIN HOST ROUNDS REFRESHES\n");
	return 2;
}

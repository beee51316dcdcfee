// SPDX-License-Identifier: GPL-2.0
/*
 * bench/rollout-engine: what one pass of kmemd's rollout engine costs over
 * a large rollout, on a real SQLite store: while a wave bakes (canaries'
 * health, and every canary's and matched baseline's lockups and hours
 * for the sequential tests) and when its bake is over (their windows:
 * exposure, lockups, probe p99 and max). kmemd runs each pass on the
 * engine's thread (daemon/engine-worker.h), as this does: the pass's
 * cost is that thread's, and what the loop spends asking for it and
 * hearing its end is the loop's, which stores reports meanwhile (a batch
 * of 100 per turn, as the dashboard's measure below).
 * Then what the dashboard's rollout page (wave 1's canaries against its
 * baselines over the bake) costs: kmemd computes it in a worker thread
 * (daemon/series-worker.h), so this is what its thread spends asking and
 * answering, and what it stored meanwhile; and what a host's page costs.
 *
 *   build/bench/rollout-engine [--hosts N] [--reports R] [--dir DIR]
 *
 * Defaults: 10000 hosts in 4 strata, 12 reports each over the hour the
 * wave bakes (one vmap-purge sample per report), the store in a new
 * directory under $TMPDIR.
 */
#include <event2/event.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine-worker.h"
#include "engine.h"
#include "macro.h"
#include "rollout-store.h"
#include "series-worker.h"
#include "series.h"

#define MIN 60000LL
#define T0 1700000000000LL

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static _noreturn_ void die(const char *what, struct store *st)
{
	fprintf(stderr, "rollout-engine: %s failed%s%s\n", what, st ? ": " : "",
		st ? st->ops->error(st) : "");
	exit(1);
}

struct page {
	int answers, r;
	double compute_s;
};

static void on_answer(void *arg, const struct series_answer *a)
{
	struct page *p = arg;

	p->answers++;
	p->r = a->r;
	p->compute_s = a->compute_s;
}

/* A batch of 100 reports stored on the loop's connection, each host's next, after the window. */
static void store_batch(struct store *st, struct rollout_member *m, unsigned long hosts,
			uint64_t *stored)
{
	if (st->ops->begin(st) < 0)
		die("begin", st);
	for (uint64_t n = *stored; n < *stored + 100; n++)
		if (rollout_store_report(st, m, n % hosts, 1000 + n / hosts, T0 + 62 * MIN) < 0)
			die("ingest", st);
	if (st->ops->commit(st) < 0)
		die("commit", st);
	*stored += 100;
}

struct pass {
	int heard, r;
	double pass_s;
};

static void on_change(void *arg, const struct engine_change *c)
{
	(void)arg;
	(void)c;
}

static void on_pass(void *arg, int r, const char *store_error, double pass_s)
{
	struct pass *p = arg;

	(void)store_error;
	p->heard++;
	p->r = r;
	p->pass_s = pass_s;
}

/*
 * One pass of the engine at now_ms as kmemd makes it: asked for on the
 * loop, made by the engine's thread while the loop stores reports, heard
 * on the loop. loop_s: the loop's time asking and hearing.
 */
static void engine_pass(struct store *st, struct event_base *base, struct engine_worker *w,
			struct pass *p, struct rollout_member *m, unsigned long hosts,
			int64_t now_ms, double *loop_s, uint64_t *stored)
{
	double t = now_s();

	*p = (struct pass){ 0 };
	if (engine_worker_tick(w, now_ms) < 0)
		die("asking for a pass", NULL);
	*loop_s = now_s() - t;
	while (!p->heard) {
		store_batch(st, m, hosts, stored);
		t = now_s();
		event_base_loop(base, EVLOOP_NONBLOCK);
		if (p->heard)
			*loop_s += now_s() - t;
	}
	if (p->r != 1)
		die("the engine's pass", st);
}

/*
 * The rollout page as kmemd serves it: asked for on the loop, computed by
 * the worker while the loop stores reports (a batch of 100 per pass), the
 * answer taken on the loop. loop_s: the loop's time asking and answering.
 */
static void series_page(struct store *st, const char *path, struct rollout_member *m,
			unsigned long hosts, double *loop_s, double *hit_s, double *worker_s,
			uint64_t *stored)
{
	const struct series_key key = { .name = "bench", .from_ms = T0, .to_ms = T0 + 61 * MIN };
	struct event_base *base = event_base_new();
	struct series_worker *w;
	struct page p = { 0 }, hit = { 0 };
	char err[256];
	double t;

	if (!base || series_worker_new(base, path, &w, err, sizeof(err)) < 0)
		die("starting the series worker", NULL);
	t = now_s();
	if (series_worker_get(w, &key, T0 + 61 * MIN, on_answer, &p) < 0)
		die("asking for the rollout's series", NULL);
	*loop_s = now_s() - t;
	while (!p.answers) {
		store_batch(st, m, hosts, stored);
		t = now_s();
		event_base_loop(base, EVLOOP_NONBLOCK);
		if (p.answers)
			*loop_s += now_s() - t;
	}
	if (p.r < 0)
		die("the rollout's series", NULL);
	*worker_s = p.compute_s;
	t = now_s();
	if (series_worker_get(w, &key, T0 + 61 * MIN, on_answer, &hit) < 0 || !hit.answers)
		die("the rollout's kept series", NULL);
	*hit_s = now_s() - t;
	series_worker_free(w);
	event_base_free(base);
}

int main(int argc, char **argv)
{
	char dir[4096] = "", path[4200], err[256], cmdline[1024] = "build/bench/rollout-engine";
	struct store_rollout ro = { 0 };
	struct rollout_member *m;
	unsigned long hosts = 10000, reports = 12;
	double t, ingest_s, health_s, full_s, loop_s, hit_s, worker_s, host_s;
	double health_loop_s, full_loop_s;
	struct event_base *base;
	struct engine_worker *w;
	struct pass p;
	json_t *o;
	size_t canaries = 0, baselines = 0, i;
	uint64_t stored = 0, health_stored = 0, full_stored = 0;
	struct store *st;
	int c;

	for (i = 1; i < (size_t)argc; i++)
		snprintf(cmdline + strlen(cmdline), sizeof(cmdline) - strlen(cmdline), " %s",
			 argv[i]);
	while ((c = getopt_long(argc, argv, "",
				(const struct option[]){ { "hosts", required_argument, NULL, 'n' },
							 { "reports", required_argument, NULL, 'r' },
							 { "dir", required_argument, NULL, 'd' },
							 { 0 } },
				NULL)) != -1) {
		if (c == 'n')
			hosts = strtoul(optarg, NULL, 10);
		else if (c == 'r')
			reports = strtoul(optarg, NULL, 10);
		else if (c == 'd')
			snprintf(dir, sizeof(dir), "%s", optarg);
		else
			return 2;
	}
	if (hosts < 100 || reports < 2) {
		fprintf(stderr, "rollout-engine: want --hosts >= 100 and --reports >= 2\n");
		return 2;
	}
	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "%s/rollout-engine.XXXXXX", getenv("TMPDIR") ?: "/tmp");
		if (!mkdtemp(dir))
			die("mkdtemp", NULL);
	}
	snprintf(path, sizeof(path), "%s/kmemd.sqlite", dir);
	unlink(path);
	if (store_open(path, &st, err, sizeof(err)) < 0) {
		fprintf(stderr, "rollout-engine: %s: %s\n", path, err);
		return 1;
	}
	m = calloc(hosts, sizeof(*m));
	if (!m)
		die("calloc", NULL);
	rollout_store_hosts(m, hosts);

	/* an hour of reports */
	t = now_s();
	if (rollout_store_reports(st, m, hosts, reports, T0) < 0)
		die("ingest", st);
	ingest_s = now_s() - t;

	if (rollout_store_start(st, m, hosts, T0) < 0)
		die("starting the rollout", st);
	rollout_match(m, hosts, 0);
	for (i = 0; i < hosts; i++) {
		canaries += m[i].role == ROLLOUT_CANARY || m[i].role == ROLLOUT_UNMATCHED;
		baselines += m[i].role == ROLLOUT_BASELINE;
	}

	base = event_base_new();
	if (!base ||
	    engine_worker_new(base, st, NULL, on_change, on_pass, &p, &w, err, sizeof(err)) < 0)
		die("starting the engine's thread", NULL);
	engine_pass(st, base, w, &p, m, hosts, T0 + 30 * MIN, &health_loop_s, &health_stored);
	health_s = p.pass_s;
	engine_pass(st, base, w, &p, m, hosts, T0 + 61 * MIN, &full_loop_s, &full_stored);
	full_s = p.pass_s;
	engine_worker_free(w);
	event_base_free(base);
	if (st->ops->rollout_get(st, "bench", &ro) < 0)
		die("reading the rollout", st);
	series_page(st, path, m, hosts, &loop_s, &hit_s, &worker_s, &stored);
	t = now_s();
	if (series_host(st, m[0].host, 0, T0 + 61 * MIN, 360 * MIN, 0, 100, &o) < 0)
		die("a host's series", st);
	host_s = now_s() - t;
	json_decref(o);

	printf("# %s\n", cmdline);
	printf("# the rollout engine over one SQLite store on this machine\n");
	printf("%-40s %12s\n", "measure", "value");
	printf("%-40s %12lu\n", "hosts (4 strata)", hosts);
	printf("%-40s %12lu\n", "reports per host in the window", reports);
	printf("%-40s %12.0f\n", "reports stored per second (setup)",
	       (double)(hosts * reports) / ingest_s);
	printf("%-40s %12zu\n", "wave 1 canaries", canaries);
	printf("%-40s %12zu\n", "wave 1 matched baselines", baselines);
	printf("%-40s %12.1f\n", "tick while baking, engine's thread (ms)", health_s * 1000);
	printf("%-40s %12.1f\n", "  per host read (us)",
	       health_s * 1e6 / (double)(canaries + baselines));
	printf("%-40s %12.2f\n", "  kmemd's thread (ms)", health_loop_s * 1000);
	printf("%-40s %12llu\n", "  reports stored meanwhile", (unsigned long long)health_stored);
	printf("%-40s %12.1f\n", "end-of-bake tick, engine's thread (ms)", full_s * 1000);
	printf("%-40s %12.1f\n", "  per host judged (us)",
	       full_s * 1e6 / (double)(canaries + baselines));
	printf("%-40s %12.2f\n", "  kmemd's thread (ms)", full_loop_s * 1000);
	printf("%-40s %12llu\n", "  reports stored meanwhile", (unsigned long long)full_stored);
	printf("%-40s %10s %u\n", "after it the rollout is", rollout_state_name(ro.state),
	       ro.wave + 1);
	printf("%-40s %12.1f\n", "dashboard: wave 1 series, worker (ms)", worker_s * 1000);
	printf("%-40s %12.2f\n", "  kmemd's thread, first request (ms)", loop_s * 1000);
	printf("%-40s %12.2f\n", "  kmemd's thread, kept answer (ms)", hit_s * 1000);
	printf("%-40s %12llu\n", "  reports stored while it computed", (unsigned long long)stored);
	printf("%-40s %12.1f\n", "dashboard: a host's page (ms)", host_s * 1000);
	store_rollout_clear(&ro);
	st->ops->close(st);
	free(m);
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * bench/rollout-engine: what one pass of kmemd's rollout engine costs over
 * a large rollout, on a real SQLite store: while a wave bakes (canaries'
 * health only) and when its bake is over (every canary's and matched
 * baseline's window: exposure, lockups, probe p99 and max). The engine
 * runs in kmemd's one thread, so this is how long reports wait per tick.
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
		if (st->ops->begin(st) < 0)
			die("begin", st);
		/* each host's next report, after the window charted */
		for (uint64_t n = *stored; n < *stored + 100; n++)
			if (rollout_store_report(st, m, n % hosts, 1000 + n / hosts,
						 T0 + 62 * MIN) < 0)
				die("ingest", st);
		if (st->ops->commit(st) < 0)
			die("commit", st);
		*stored += 100;
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
	json_t *o;
	size_t canaries = 0, baselines = 0, i;
	uint64_t stored = 0;
	struct store *st;
	int c, judged;

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

	t = now_s();
	judged = engine_tick(st, T0 + 30 * MIN, NULL, NULL);
	health_s = now_s() - t;
	if (judged != 1)
		die("the tick while baking", st);
	t = now_s();
	judged = engine_tick(st, T0 + 61 * MIN, NULL, NULL);
	full_s = now_s() - t;
	if (judged != 1 || st->ops->rollout_get(st, "bench", &ro) < 0)
		die("the tick at the end of the bake", st);
	series_page(st, path, m, hosts, &loop_s, &hit_s, &worker_s, &stored);
	t = now_s();
	if (series_host(st, m[0].host, 0, T0 + 61 * MIN, 360 * MIN, 0, 100, &o) < 0)
		die("a host's series", st);
	host_s = now_s() - t;
	json_decref(o);

	printf("# %s\n", cmdline);
	printf("# the rollout engine over one SQLite store on this machine (kmemd's thread)\n");
	printf("%-40s %12s\n", "measure", "value");
	printf("%-40s %12lu\n", "hosts (4 strata)", hosts);
	printf("%-40s %12lu\n", "reports per host in the window", reports);
	printf("%-40s %12.0f\n", "reports stored per second (setup)",
	       (double)(hosts * reports) / ingest_s);
	printf("%-40s %12zu\n", "wave 1 canaries", canaries);
	printf("%-40s %12zu\n", "wave 1 matched baselines", baselines);
	printf("%-40s %12.1f\n", "tick while baking (ms)", health_s * 1000);
	printf("%-40s %12.1f\n", "  per canary (us)", health_s * 1e6 / (double)canaries);
	printf("%-40s %12.1f\n", "tick at the end of the bake (ms)", full_s * 1000);
	printf("%-40s %12.1f\n", "  per host judged (us)",
	       full_s * 1e6 / (double)(canaries + baselines));
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

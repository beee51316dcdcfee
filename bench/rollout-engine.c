// SPDX-License-Identifier: GPL-2.0
/*
 * bench/rollout-engine: what one pass of kmemd's rollout engine costs over
 * a large rollout, on a real SQLite store: while a wave bakes (canaries'
 * health only) and when its bake is over (every canary's and matched
 * baseline's window: exposure, lockups, probe p99 and max). The engine
 * runs in kmemd's one thread, so this is how long reports wait per tick.
 * Then what the dashboard's rollout page (wave 1's canaries against its
 * baselines over the bake) and host page cost kmemd's thread.
 *
 *   build/bench/rollout-engine [--hosts N] [--reports R] [--dir DIR]
 *
 * Defaults: 10000 hosts in 4 strata, 12 reports each over the hour the
 * wave bakes (one vmap-purge sample per report), the store in a new
 * directory under $TMPDIR.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "hist.h"
#include "rollout.h"
#include "series.h"

#define MIN 60000LL
#define T0 1700000000000LL

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, struct store *st)
{
	fprintf(stderr, "rollout-engine: %s failed%s%s\n", what, st ? ": " : "",
		st ? st->ops->error(st) : "");
	exit(1);
}

/* One report: facts, one vmap-purge sample of about 1 ms. */
static void report(struct store *st, const struct rollout_member *m, const char *build,
		   const char *role, uint64_t seq, int64_t t)
{
	Kmemctl__V1__Report rep = KMEMCTL__V1__REPORT__INIT;
	Kmemctl__V1__HostFacts f = KMEMCTL__V1__HOST_FACTS__INIT;
	Kmemctl__V1__HostFacts__LabelsEntry le = KMEMCTL__V1__HOST_FACTS__LABELS_ENTRY__INIT,
					    *lep[] = { &le };
	Kmemctl__V1__Counters c = KMEMCTL__V1__COUNTERS__INIT;
	Kmemctl__V1__Histogram h = KMEMCTL__V1__HISTOGRAM__INIT;
	Kmemctl__V1__ProbeSample p = KMEMCTL__V1__PROBE_SAMPLE__INIT, *pp[] = { &p };
	uint64_t one = 1, ns = 1000000 + seq * 1000;

	f.host_id = (char *)m->host;
	f.kernel_build_id = (char *)build;
	f.online_cpus = 16;
	le.key = "role";
	le.value = (char *)role;
	f.n_labels = 1;
	f.labels = lep;
	rep.facts = &f;
	rep.seq = seq;
	rep.unix_ms = t;
	rep.policy_name = "old";
	rep.policy_version = 1;
	rep.counters = &c;
	h.first_bucket = hist_bucket(ns);
	h.n_counts = 1;
	h.counts = &one;
	h.count = 1;
	h.sum_ns = h.max_ns = ns;
	p.probe = "vmap-purge";
	p.end_unix_ms = t;
	p.hist = &h;
	rep.n_probes = 1;
	rep.probes = pp;
	if (st->ops->ingest(st, &rep, t) < 0)
		die("ingest", st);
}

int main(int argc, char **argv)
{
	static const char doc[] =
		"{\"name\": \"bench\", \"policy\": \"new\", \"version\": 2, \"selector\": {\"all\": true},"
		" \"waves\": [{\"percent\": 1}, {\"percent\": 10}, {\"percent\": 100}],"
		" \"bake_s\": 3600, \"gates\": {\"min_exposure_h\": 1, \"min_hosts\": 3,"
		" \"latency_probes\": [\"vmap-purge\"]}}";
	static const char *const builds[] = { "b1", "b2" }, *const roles[] = { "web", "db" };
	struct store_rollout ro = { .name = "bench",
				    .state = ROLLOUT_RUNNING,
				    .wave_started_ms = T0 };
	char dir[4096] = "", path[4200], err[256], cmdline[1024] = "build/bench/rollout-engine";
	struct rollout_member *m;
	struct store_member *sm;
	struct rollout_spec spec;
	unsigned long hosts = 10000, reports = 12;
	double t, ingest_s, health_s, full_s, series_s, host_s;
	json_t *o;
	size_t canaries = 0, baselines = 0, i;
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
	if (rollout_spec_parse(doc, strlen(doc), &spec, err, sizeof(err)) < 0)
		die("the rollout document", NULL);
	m = calloc(hosts, sizeof(*m));
	sm = calloc(hosts, sizeof(*sm));
	if (!m || !sm)
		die("calloc", NULL);
	for (i = 0; i < hosts; i++) {
		snprintf(m[i].host, sizeof(m[i].host), "host-%05zu", i);
		rollout_stratum(builds[i % 2], 16, roles[i / 2 % 2], m[i].stratum,
				sizeof(m[i].stratum));
	}

	/* an hour of reports, in batches as kmemd commits them */
	t = now_s();
	for (uint64_t r = 0; r < reports; r++) {
		if (st->ops->begin(st) < 0)
			die("begin", st);
		for (i = 0; i < hosts; i++)
			report(st, &m[i], builds[i % 2], roles[i / 2 % 2], r + 1,
			       T0 + (int64_t)(r * 60 / (reports - 1)) * MIN);
		if (st->ops->commit(st) < 0)
			die("commit", st);
	}
	ingest_s = now_s() - t;

	rollout_plan(&spec, m, hosts);
	for (i = 0; i < hosts; i++)
		sm[i] = (struct store_member){ .host_id = m[i].host,
					       .stratum = m[i].stratum,
					       .position = m[i].position,
					       .wave = m[i].wave,
					       .prev_policy = "old",
					       .prev_version = 1 };
	if (st->ops->rollout_add(st, "bench", doc, T0) < 0 ||
	    st->ops->rollout_start(st, &ro, sm, hosts, T0) < 0)
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
	t = now_s();
	if (series_rollout(st, "bench", 0, T0, T0 + 61 * MIN, 0, 0, &o) < 0)
		die("the rollout's series", st);
	series_s = now_s() - t;
	json_decref(o);
	t = now_s();
	if (series_host(st, m[0].host, 0, T0 + 61 * MIN, 360 * MIN, 0, 100, &o) < 0)
		die("a host's series", st);
	host_s = now_s() - t;
	json_decref(o);

	printf("# %s\n", cmdline);
	printf("# the rollout engine over one SQLite store on this machine (kmemd's thread)\n");
	printf("%-36s %12s\n", "measure", "value");
	printf("%-36s %12lu\n", "hosts (4 strata)", hosts);
	printf("%-36s %12lu\n", "reports per host in the window", reports);
	printf("%-36s %12.0f\n", "reports stored per second (setup)",
	       (double)(hosts * reports) / ingest_s);
	printf("%-36s %12zu\n", "wave 1 canaries", canaries);
	printf("%-36s %12zu\n", "wave 1 matched baselines", baselines);
	printf("%-36s %12.1f\n", "tick while baking (ms)", health_s * 1000);
	printf("%-36s %12.1f\n", "  per canary (us)", health_s * 1e6 / (double)canaries);
	printf("%-36s %12.1f\n", "tick at the end of the bake (ms)", full_s * 1000);
	printf("%-36s %12.1f\n", "  per host judged (us)",
	       full_s * 1e6 / (double)(canaries + baselines));
	printf("%-36s %10s %u\n", "after it the rollout is", rollout_state_name(ro.state),
	       ro.wave + 1);
	printf("%-36s %12.1f\n", "dashboard: wave 1 series (ms)", series_s * 1000);
	printf("%-36s %12.1f\n", "dashboard: a host's page (ms)", host_s * 1000);
	store_rollout_clear(&ro);
	st->ops->close(st);
	free(m);
	free(sm);
	return 0;
}

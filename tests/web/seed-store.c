// SPDX-License-Identifier: GPL-2.0
/*
 * seed-store: a kmemd store holding a large fleet, for the dashboard's
 * tests at scale, written through kmemd's own store code (the reports
 * kmemd would have stored). Hosts fleet-00000... on three kernels, some
 * on policy batch@1, each with mitigation states, two reports and a
 * vmap-purge sample, labelled role=batch so no rollout of the tests picks
 * them.
 *
 *   seed-store FILE HOSTS
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "hist.h"
#include "store.h"

static const char *const kernels[] = { "6.1.0-57-amd64", "6.1.0-58-amd64", "6.12.48+deb13-amd64" };
static const char *const build_ids[] = { "6a2b4ac77585b8cf102cba771300e573c8489b69",
					 "58b0c1d2e3f405162738495a6b7c8d9e0f1a2b3c",
					 "3d9e6765e77a0b1c2d3e4f5061728394a5b6c7d8" };
/* 6.1.0-58-amd64 has no shipped record: its hosts wait for one for usercopy-fastpath */
static char *waiting[] = { "usercopy-fastpath" };
static const char build_58[] =
	"build_id 58b0c1d2e3f405162738495a6b7c8d9e0f1a2b3c\n"
	"release 6.1.0-58-amd64\n"
	"version #1 SMP PREEMPT_DYNAMIC Debian 6.1.193-1\n"
	"copy usercopy-fastpath usercopy_fastpath.c:overlaps 32a81a5e20dc8926\n"
	"func usercopy-fastpath is_vmalloc_addr 80 -\n";

static int ingest(struct store *st, unsigned long i, uint64_t seq, int64_t t)
{
	Kmemctl__V1__Report rep = KMEMCTL__V1__REPORT__INIT;
	Kmemctl__V1__HostFacts f = KMEMCTL__V1__HOST_FACTS__INIT;
	Kmemctl__V1__HostFacts__LabelsEntry le = KMEMCTL__V1__HOST_FACTS__LABELS_ENTRY__INIT,
					    *lep[] = { &le };
	Kmemctl__V1__MitigationState ms[2], *msp[] = { &ms[0], &ms[1] };
	Kmemctl__V1__Counters c = KMEMCTL__V1__COUNTERS__INIT;
	Kmemctl__V1__Histogram h = KMEMCTL__V1__HISTOGRAM__INIT;
	Kmemctl__V1__ProbeSample p = KMEMCTL__V1__PROBE_SAMPLE__INIT, *pp[] = { &p };
	const struct store_build build = { .build_id = build_ids[1],
					   .release = kernels[1],
					   .version = "#1 SMP PREEMPT_DYNAMIC Debian 6.1.193-1",
					   .file = build_58 };
	uint64_t one = 1, ns = 200000 + (i % 97) * 10000;
	char id[32];
	int r;

	snprintf(id, sizeof(id), "fleet-%05lu", i);
	f.host_id = id;
	f.hostname = id;
	f.kernel_release = (char *)kernels[i % 3];
	f.kernel_build_id = (char *)build_ids[i % 3];
	f.possible_cpus = f.online_cpus = 32;
	f.mem_total_bytes = 64ULL << 30;
	le.key = "role";
	le.value = "batch";
	f.n_labels = 1;
	f.labels = lep;
	for (int m = 0; m < 2; m++) {
		kmemctl__v1__mitigation_state__init(&ms[m]);
		ms[m].id = m ? "usercopy-fastpath" : "rstat-yield";
		ms[m].state = m || i % 4 ?
				      KMEMCTL__V1__MITIGATION_STATE_KIND__MITIGATION_STATE_OFF :
				      KMEMCTL__V1__MITIGATION_STATE_KIND__MITIGATION_STATE_ON;
	}
	rep.n_mitigations = 2;
	rep.mitigations = msp;
	rep.facts = &f;
	rep.seq = seq;
	rep.unix_ms = t;
	if (i % 3) {
		rep.policy_name = "batch";
		rep.policy_version = 1;
	}
	if (i % 3 == 1) {
		rep.waiting_for_record = waiting;
		rep.n_waiting_for_record = 1;
		rep.build_file = (char *)build_58;
	}
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
	r = st->ops->ingest(st, &rep, t);
	if (r == 0 && i % 3 == 1)
		r = st->ops->build_seen(st, &build, t);
	return r;
}

int main(int argc, char **argv)
{
	struct timespec ts;
	struct store *st;
	unsigned long n, i;
	char err[256];
	int64_t now;
	int r = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: seed-store FILE HOSTS\n");
		return 2;
	}
	n = strtoul(argv[2], NULL, 10);
	if (store_open(argv[1], &st, err, sizeof(err)) < 0) {
		fprintf(stderr, "seed-store: %s\n", err);
		return 1;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	r = st->ops->begin(st);
	for (i = 0; r >= 0 && i < n; i++) {
		r = ingest(st, i, 1, now - 60000);
		if (r >= 0)
			r = ingest(st, i, 2, now - 30000);
	}
	if (r >= 0)
		r = st->ops->commit(st);
	if (r < 0)
		fprintf(stderr, "seed-store: %s\n", st->ops->error(st));
	else
		printf("seed-store: %lu hosts in %s\n", n, argv[1]);
	st->ops->close(st);
	return r < 0;
}

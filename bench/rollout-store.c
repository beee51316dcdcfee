// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hist.h"
#include "rollout-store.h"

#define MIN 60000LL

const char rollout_store_doc[] =
	"{\"name\": \"bench\", \"policy\": \"new\", \"version\": 2, \"selector\": {\"all\": true},"
	" \"waves\": [{\"percent\": 1}, {\"percent\": 10}, {\"percent\": 100}],"
	" \"bake_s\": 3600, \"gates\": {\"min_exposure_h\": 1, \"min_hosts\": 3,"
	" \"latency_probes\": [\"vmap-purge\"]}}";

static const char *const builds[] = { "b1", "b2" }, *const roles[] = { "web", "db" };

void rollout_store_hosts(struct rollout_member *m, unsigned long n)
{
	for (unsigned long i = 0; i < n; i++) {
		snprintf(m[i].host, sizeof(m[i].host), "host-%05lu", i);
		rollout_stratum(builds[i % 2], 16, roles[i / 2 % 2], m[i].stratum,
				sizeof(m[i].stratum));
	}
}

/* One report: facts, one vmap-purge sample of about 1 ms. */
int rollout_store_report(struct store *st, const struct rollout_member *m, unsigned long i,
			 uint64_t seq, int64_t t)
{
	Kmemctl__V1__Report rep = KMEMCTL__V1__REPORT__INIT;
	Kmemctl__V1__HostFacts f = KMEMCTL__V1__HOST_FACTS__INIT;
	Kmemctl__V1__HostFacts__LabelsEntry le = KMEMCTL__V1__HOST_FACTS__LABELS_ENTRY__INIT,
					    *lep[] = { &le };
	Kmemctl__V1__Counters c = KMEMCTL__V1__COUNTERS__INIT;
	Kmemctl__V1__Histogram h = KMEMCTL__V1__HISTOGRAM__INIT;
	Kmemctl__V1__ProbeSample p = KMEMCTL__V1__PROBE_SAMPLE__INIT, *pp[] = { &p };
	uint64_t one = 1, ns = 1000000 + seq * 1000;

	f.host_id = (char *)m[i].host;
	f.kernel_build_id = (char *)builds[i % 2];
	f.online_cpus = 16;
	le.key = "role";
	le.value = (char *)roles[i / 2 % 2];
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
	return st->ops->ingest(st, &rep, t);
}

int rollout_store_reports(struct store *st, const struct rollout_member *m, unsigned long n,
			  unsigned long reports, int64_t t0)
{
	int r = 0;

	/* in batches as kmemd commits them */
	for (uint64_t k = 0; r == 0 && k < reports; k++) {
		r = st->ops->begin(st);
		for (unsigned long i = 0; r == 0 && i < n; i++)
			r = rollout_store_report(st, m, i, k + 1,
						 t0 + (int64_t)(k * 60 / (reports - 1)) * MIN);
		if (r == 0)
			r = st->ops->commit(st);
	}
	return r;
}

int rollout_store_start(struct store *st, struct rollout_member *m, unsigned long n, int64_t t0)
{
	struct store_rollout ro = { .name = "bench",
				    .state = ROLLOUT_RUNNING,
				    .wave_started_ms = t0 };
	struct rollout_spec *spec = malloc(sizeof(*spec));
	struct store_member *sm = calloc(n, sizeof(*sm));
	char err[256];
	int r = spec && sm ? 0 : -ENOMEM;

	if (r == 0 && rollout_spec_parse(rollout_store_doc, strlen(rollout_store_doc), spec, err,
					 sizeof(err)) < 0)
		r = -EINVAL;
	if (r == 0)
		rollout_plan(spec, m, n);
	for (unsigned long i = 0; r == 0 && i < n; i++)
		sm[i] = (struct store_member){ .host_id = m[i].host,
					       .stratum = m[i].stratum,
					       .position = m[i].position,
					       .wave = m[i].wave,
					       .prev_policy = "old",
					       .prev_version = 1 };
	if (r == 0)
		r = st->ops->rollout_add(st, "bench", rollout_store_doc, t0);
	if (r == 0)
		r = st->ops->rollout_start(st, &ro, sm, n, t0);
	free(sm);
	free(spec);
	return r;
}

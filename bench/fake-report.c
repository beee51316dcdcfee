// SPDX-License-Identifier: GPL-2.0
#include "fake-report.h"
#include "kmemctl/v1/report.pb-c.h"

/* 5 mitigations, 6 probe samples, counters. */
size_t fake_report(const char *host, uint64_t seq, int64_t unix_ms, uint8_t *buf)
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
	int64_t t = unix_ms;
	int i;

	f.host_id = (char *)host;
	f.hostname = (char *)host;
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
		/* the last millisecond: a host's reports a millisecond apart do not overlap */
		ps[i].start_unix_ms = t - 1;
		ps[i].end_unix_ms = t;
		ps[i].hist = &hs[i];
		psp[i] = &ps[i];
	}
	c.uptime_ms = seq * 10000;
	rep.seq = seq;
	rep.unix_ms = t;
	rep.facts = &f;
	rep.n_mitigations = 5;
	rep.mitigations = msp;
	rep.n_probes = 6;
	rep.probes = psp;
	rep.counters = &c;
	/* a policy bench/ingest may assign: an agent that runs it is sent nothing */
	rep.policy_name = "bench";
	rep.policy_version = 1;
	return kmemctl__v1__report__pack(&rep, buf);
}

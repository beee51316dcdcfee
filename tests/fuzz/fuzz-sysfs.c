// SPDX-License-Identifier: GPL-2.0
/*
 * A probe's and a mitigation's sysfs directories as the agent reads them
 * (kernel_read_probe(), kernel_read_mitigation(), kernel_abi()), in a
 * fixture tree under the scratch directory. The input holds the files'
 * contents in the order of files[], separated by lines ";;"; a file the
 * input does not reach is absent. What reads must be what kmemd takes:
 * histograms that add up and whose maximum is in or above their highest
 * bucket (hist_from_pb()), valid ids, known states.
 */
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "kernel.h"
#include "policydoc.h"

#define SEPARATOR "\n;;\n"
#define TOP "/sys/kernel/kmemctl"

static const char *const files[] = {
	"abi",
	"probes/p/enabled",
	"probes/p/reason",
	"probes/p/threshold_ns",
	"probes/p/missed",
	"probes/p/sum_ns",
	"probes/p/max_ns",
	"probes/p/hist",
	"mitigations/m/state",
	"mitigations/m/mode",
	"mitigations/m/reason",
	"mitigations/m/params",
	"mitigations/m/stats",
	/* last, as the secondary histogram is only in some probes */
	"probes/p/irqoff_hist",
	"probes/p/irqoff_max",
};

#define NFILES (sizeof(files) / sizeof(files[0]))

static struct rootfs rfs = { .dirfd = -1 };

static void make_tree(void)
{
	static const char *const dirs[] = { "/sys",
					    "/sys/kernel",
					    TOP,
					    TOP "/probes",
					    TOP "/probes/p",
					    TOP "/mitigations",
					    TOP "/mitigations/m" };
	char path[512];

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", fuzz_dir(), dirs[i]);
		FUZZ_CHECK(mkdir(path, 0700) == 0);
	}
	FUZZ_CHECK(rootfs_open_root(&rfs, fuzz_dir()) == 0);
}

/* kmemd's check of the histogram the agent reports, and its own sums. */
static void check_hist(const struct hist *h)
{
	Kmemctl__V1__Histogram pb = KMEMCTL__V1__HISTOGRAM__INIT;
	uint64_t storage[HIST_BUCKETS], total = 0;
	struct hist back;

	for (unsigned b = 0; b < HIST_BUCKETS; b++)
		total += h->buckets[b];
	FUZZ_CHECK(total == h->count);
	hist_to_pb(h, &pb, storage);
	FUZZ_CHECK(hist_from_pb(&back, &pb) == 0);
}

static void check_probe(void)
{
	struct kernel_probe p;

	if (kernel_read_probe(&rfs, "p", &p) < 0)
		return;
	FUZZ_CHECK(!strcmp(p.id, "p"));
	FUZZ_CHECK(memchr(p.reason, '\0', sizeof(p.reason)));
	FUZZ_CHECK(p.supported == !strcmp(p.reason, "ok"));
	check_hist(&p.hist);
	if (p.second[0]) {
		FUZZ_CHECK(!strcmp(p.second, "irqoff"));
		check_hist(&p.hist2);
	}
}

static void check_mitigation(void)
{
	struct kernel_mitigation m;

	if (kernel_read_mitigation(&rfs, "m", &m) < 0)
		return;
	FUZZ_CHECK(m.state > KERNEL_STATE_UNKNOWN && m.state <= KERNEL_STATE_TRANSITION);
	FUZZ_CHECK(memchr(m.reason, '\0', sizeof(m.reason)));
	FUZZ_CHECK(m.nparams <= KERNEL_MAX_KV && m.nstats <= KERNEL_MAX_KV);
	for (size_t i = 0; i < m.nparams; i++)
		FUZZ_CHECK(policy_id_valid(m.params[i].key));
	for (size_t i = 0; i < m.nstats; i++)
		FUZZ_CHECK(policy_id_valid(m.stats[i].key));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_part parts[NFILES];
	char path[512];
	int abi;

	if (rfs.dirfd < 0)
		make_tree();
	fuzz_split(data, size, SEPARATOR, parts, NFILES);
	for (size_t i = 0; i < NFILES; i++) {
		snprintf(path, sizeof(path), "%s" TOP "/%s", fuzz_dir(), files[i]);
		fuzz_file(path, parts[i].data, parts[i].len);
	}
	abi = kernel_abi(&rfs);
	FUZZ_CHECK(abi <= 1000);
	check_probe();
	check_mitigation();
	return 0;
}

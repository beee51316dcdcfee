// SPDX-License-Identifier: GPL-2.0
/*
 * agent/telemetry.c on a copy of the fixture tree's kmemctl.ko probes,
 * whose histogram files the test moves on between readings as the module
 * would.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fixture.h"
#include "macro.h"
#include "telemetry.h"

#define PROBES "/sys/kernel/kmemctl/probes"

static char root[4096];

static int setup(void **state)
{
	(void)state;
	return fixture_copy("telemetry-root", root, sizeof(root));
}

static void put(const char *path, const char *text)
{
	fixture_put(root, path, text);
}

static const Kmemctl__V1__ProbeSample *find(const struct telemetry *t, const char *name)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (!strcmp(t->samples[i].probe, name))
			return &t->samples[i];
	return NULL;
}

static void test_deltas(void **state)
{
	static struct telemetry t;
	const Kmemctl__V1__ProbeSample *s;
	struct rootfs rfs;

	(void)state;
	telemetry_init(&t);
	assert_int_equal(rootfs_open_root(&rfs, root), 0);
	/* the first reading is the baseline */
	assert_int_equal(telemetry_probes(&rfs, &t, 1000), 0);

	/* two more purges of ~100 us, each with one flush */
	put(PROBES "/vmap-purge/hist", "131072 5\n4194304 1\n");
	put(PROBES "/vmap-purge/sum_ns", "3118320\n");
	put(PROBES "/vmap-purge/flushes_hist", "1 6\n");
	/* four enabled probes, two with a second histogram; kasan-reduce is off */
	assert_int_equal(telemetry_probes(&rfs, &t, 11000), 6);
	assert_null(find(&t, "kasan-reduce"));
	s = find(&t, "vmap-purge");
	assert_non_null(s);
	assert_int_equal(s->start_unix_ms, 1000);
	assert_int_equal(s->end_unix_ms, 11000);
	assert_int_equal(s->hist->count, 2);
	assert_int_equal(s->hist->first_bucket, 17);
	assert_int_equal(s->hist->n_counts, 1);
	assert_int_equal(s->hist->counts[0], 2);
	assert_int_equal(s->hist->sum_ns, 200000);
	s = find(&t, "vmap-purge-flushes");
	assert_non_null(s);
	assert_int_equal(s->hist->count, 2);
	assert_int_equal(s->hist->first_bucket, 0);
	s = find(&t, "tlb-shootdown");
	assert_non_null(s);
	assert_int_equal(s->hist->count, 0);
	assert_int_equal(s->hist->n_counts, 0);
	assert_non_null(find(&t, "rstat-flush-irqoff"));

	/* the module was reloaded: totals went down, the delta is the new total */
	put(PROBES "/vmap-purge/hist", "131072 1\n");
	put(PROBES "/vmap-purge/sum_ns", "100000\n");
	put(PROBES "/vmap-purge/max_ns", "100000\n");
	assert_int_equal(telemetry_probes(&rfs, &t, 21000), 6);
	s = find(&t, "vmap-purge");
	assert_int_equal(s->start_unix_ms, 11000);
	assert_int_equal(s->hist->count, 1);
	assert_int_equal(s->hist->sum_ns, 100000);

	/* a probe that reads as garbage is left out and counted, the rest go on */
	put(PROBES "/tlb-shootdown/hist", "not a histogram\n");
	assert_int_equal(telemetry_probes(&rfs, &t, 31000), 5);
	assert_int_equal(t.unreadable, 1);
	rootfs_close(&rfs);
}

static void test_no_module(void **state)
{
	static struct telemetry t;
	struct rootfs rfs;

	(void)state;
	telemetry_init(&t);
	assert_int_equal(rootfs_open_root(&rfs, getenv("KMEM_TEST_DATA")), 0);
	assert_int_equal(telemetry_probes(&rfs, &t, 1000), -ENOENT);
	rootfs_close(&rfs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_deltas),
		cmocka_unit_test(test_no_module),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}

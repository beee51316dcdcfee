// SPDX-License-Identifier: GPL-2.0
/*
 * agent/collect.c: a round over the fixture tree, and a collector that
 * never answers (a FIFO nobody writes, standing in for a kernel file whose
 * read blocks) holding its round past the deadline without holding the
 * caller.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "collect.h"
#include "fixture.h"

#define ALL ((1U << COLLECT_N) - 1)

static char root[4096];

static int setup(void **state)
{
	(void)state;
	return fixture_copy("collect-root", root, sizeof(root));
}

/* Wait up to ms for the round-over eventfd; true when it fired. */
static bool round_over(struct collect *c, int ms)
{
	struct pollfd p = { .fd = c->efd, .events = POLLIN };
	uint64_t n;

	if (poll(&p, 1, ms) != 1)
		return false;
	assert_int_equal(read(c->efd, &n, sizeof(n)), sizeof(n));
	return true;
}

static void test_round(void **state)
{
	static struct collect c;
	struct agent_config cfg;
	struct rootfs rfs;

	(void)state;
	agent_config_defaults(&cfg);
	assert_int_equal(rootfs_open_root(&rfs, root), 0);
	assert_int_equal(collect_init(&c, &rfs, &cfg), 0);
	assert_int_equal(collect_done(&c), ALL);
	assert_int_equal(collect_start(&c), 0);
	assert_true(round_over(&c, 10000));
	assert_int_equal(collect_done(&c), ALL);
	assert_int_equal(collect_running(&c), -1);
	assert_int_equal(c.out.rc[COLLECT_FACTS], 0);
	assert_string_equal(c.out.facts.release, "6.1.0-57-amd64");
	/* states_collect() counts the mitigations */
	assert_int_equal(c.out.rc[COLLECT_STATES], 5);
	assert_int_equal(c.out.states.n, 5);
	assert_int_equal(c.out.rc[COLLECT_PROBES], 0);
	assert_true(c.out.probes.n > 0);
	assert_int_equal(c.out.tlb_shootdowns, 142112 + 121239);
	assert_int_equal(c.out.psi_some, 125);
	/* the fixture has no cgroup tree */
	assert_int_equal(c.out.rc[COLLECT_MEMSTAT], -ENOENT);
	/* rounds repeat */
	assert_int_equal(collect_start(&c), 0);
	assert_true(round_over(&c, 10000));
	assert_int_equal(collect_done(&c), ALL);
	assert_int_equal(collect_stop(&c, 10000), 0);
	collect_free(&c);
	rootfs_close(&rfs);
	ini_free(agent_options, agent_n_options, &cfg);
}

/* A round stuck on memory.stat, a FIFO nobody writes (its path in fifo). */
static void stuck_round(struct collect *c, struct agent_config *cfg, struct rootfs *rfs, char *fifo,
			size_t len)
{
	snprintf(fifo, len, "%s/sys/fs", root);
	assert_true(mkdir(fifo, 0755) == 0 || errno == EEXIST);
	strcat(fifo, "/cgroup");
	assert_true(mkdir(fifo, 0755) == 0 || errno == EEXIST);
	snprintf(fifo, len, "%s/sys/fs/cgroup/memory.stat", root);
	unlink(fifo);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	agent_config_defaults(cfg);
	assert_int_equal(rootfs_open_root(rfs, root), 0);
	assert_int_equal(collect_init(c, rfs, cfg), 0);
	assert_int_equal(collect_start(c), 0);
	assert_false(round_over(c, 300));
}

static void test_stuck(void **state)
{
	static struct collect c;
	struct agent_config cfg;
	struct rootfs rfs;
	char fifo[4200];
	int w;

	(void)state;
	/* the deadline passes: everything before memory.stat is done and usable */
	stuck_round(&c, &cfg, &rfs, fifo, sizeof(fifo));
	assert_int_equal(collect_done(&c), ALL & ~(1U << COLLECT_MEMSTAT));
	assert_int_equal(collect_running(&c), COLLECT_MEMSTAT);
	assert_int_equal(c.out.states.n, 5);
	/* and the next interval cannot start a round behind it */
	assert_int_equal(collect_start(&c), -EBUSY);
	/* the file answers at last: the round ends, the next one starts */
	w = open(fifo, O_WRONLY);
	assert_true(w >= 0);
	assert_int_equal(write(w, "cache 0\n", 8), 8);
	close(w);
	assert_true(round_over(&c, 10000));
	assert_int_equal(collect_done(&c), ALL);
	assert_int_equal(c.out.rc[COLLECT_MEMSTAT], 0);
	assert_true(c.out.memstat_ns > 0);
	unlink(fifo);
	assert_int_equal(collect_start(&c), 0);
	assert_true(round_over(&c, 10000));
	assert_int_equal(c.out.rc[COLLECT_MEMSTAT], -ENOENT);
	assert_int_equal(collect_stop(&c, 10000), 0);
	collect_free(&c);
	rootfs_close(&rfs);
	ini_free(agent_options, agent_n_options, &cfg);
}

/*
 * Stopping while a collector is stuck says so, and the thread keeps what
 * it reads; once the read returns, stopping again joins it.
 */
static void test_stop_stuck(void **state)
{
	static struct collect c;
	struct agent_config cfg;
	struct rootfs rfs;
	char fifo[4200];
	int w;

	(void)state;
	stuck_round(&c, &cfg, &rfs, fifo, sizeof(fifo));
	assert_int_equal(collect_running(&c), COLLECT_MEMSTAT);
	assert_int_equal(collect_stop(&c, 100), -EBUSY);
	w = open(fifo, O_WRONLY);
	assert_true(w >= 0);
	close(w);
	assert_int_equal(collect_stop(&c, 10000), 0);
	assert_int_equal(collect_done(&c), ALL);
	collect_free(&c);
	unlink(fifo);
	rootfs_close(&rfs);
	ini_free(agent_options, agent_n_options, &cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round),
		cmocka_unit_test(test_stuck),
		cmocka_unit_test(test_stop_stuck),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}

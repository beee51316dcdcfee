// SPDX-License-Identifier: GPL-2.0
/*
 * agent/confirm.c: boot confirmation records on disk, what start makes of
 * them (the same boot, another boot, confirmed ones), the window passing
 * in a report round, a mitigation turned off before confirmation, and
 * files that are damaged or cut short.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "confirm.h"
#include "fixture.h"
#include "macro.h"

#define BOOT "5f0c2a9e-8d1b-4e7a-9c3f-2b6d8e1a4c70"
#define EARLIER "0b4e1d2c-3a59-4f68-8e7d-6c5b4a392817"

static char root[4096], statedir[4096];
static const struct policy_version base3 = { .name = "base", .version = 3 };

static int setup(void **state)
{
	_cleanup_free_ char *cmd = NULL;

	(void)state;
	snprintf(statedir, sizeof(statedir), "%s/confirm-state", getenv("KMEM_TEST_TMP"));
	if (fixture_copy("confirm-root", root, sizeof(root)) < 0 ||
	    asprintf(&cmd, "rm -rf '%s' && mkdir '%s'", statedir, statedir) < 0 || system(cmd) != 0)
		return -1;
	return 0;
}

static int open_state(void)
{
	int fd = open(statedir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	assert_true(fd >= 0);
	return fd;
}

static void put(int dirfd, const char *text)
{
	int fd = openat(dirfd, CONFIRM_FILE, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void test_boot_id(void **state)
{
	char id[CONFIRM_BOOT_ID_LEN + 1];
	struct rootfs rfs;

	(void)state;
	assert_int_equal(rootfs_open_root(&rfs, root), 0);
	assert_int_equal(confirm_boot_id(&rfs, id, sizeof(id)), 0);
	assert_string_equal(id, BOOT);
	fixture_put(root, "/proc/sys/kernel/random/boot_id", "not-a-uuid\n");
	assert_int_equal(confirm_boot_id(&rfs, id, sizeof(id)), -EBADMSG);
	fixture_put(root, "/proc/sys/kernel/random/boot_id",
		    "5F0C2A9E-8D1B-4E7A-9C3F-2B6D8E1A4C70\n");
	assert_int_equal(confirm_boot_id(&rfs, id, sizeof(id)), -EBADMSG);
	fixture_put(root, "/proc/sys/kernel/random/boot_id", BOOT "0\n");
	assert_int_equal(confirm_boot_id(&rfs, id, sizeof(id)), -EBADMSG);
	fixture_put(root, "/proc/sys/kernel/random/boot_id", "");
	assert_int_equal(confirm_boot_id(&rfs, id, sizeof(id)), -EBADMSG);
	fixture_put(root, "/proc/sys/kernel/random/boot_id", BOOT "\n");
	rootfs_close(&rfs);
}

static void test_records(void **state)
{
	struct confirm c;
	int dirfd = open_state();

	(void)state;
	assert_int_equal(confirm_load(dirfd, &c), 0);
	assert_int_equal(c.n, 0);
	assert_int_equal(confirm_begin(dirfd, "rstat-yield", BOOT, 1000, &base3), 0);
	assert_int_equal(confirm_begin(dirfd, "usercopy-fastpath", BOOT, 2000,
				       &(struct policy_version){ 0 }),
			 0);
	assert_int_equal(confirm_load(dirfd, &c), 0);
	assert_int_equal(c.n, 2);
	assert_string_equal(c.e[0].id, "rstat-yield");
	assert_false(c.e[0].confirmed);
	assert_string_equal(c.e[0].boot_id, BOOT);
	assert_int_equal(c.e[0].since_ms, 1000);
	assert_string_equal(c.e[0].policy.name, "base");
	assert_int_equal(c.e[0].policy.version, 3);
	assert_string_equal(c.e[1].policy.name, "");
	/* no temporary file left: the record went on disk whole */
	assert_int_equal(faccessat(dirfd, ".confirm.tmp", F_OK, 0), -1);

	/* turned on again: the record starts over */
	assert_int_equal(confirm_begin(dirfd, "rstat-yield", BOOT, 5000, &base3), 0);
	assert_int_equal(confirm_load(dirfd, &c), 0);
	assert_int_equal(c.n, 2);
	assert_int_equal(confirm_find(&c, "rstat-yield")->since_ms, 5000);

	assert_int_equal(confirm_begin(dirfd, "../x", BOOT, 1, &base3), -EINVAL);
	assert_int_equal(confirm_begin(dirfd, "tlb-gen", "boot", 1, &base3), -EINVAL);
	assert_int_equal(confirm_end(dirfd, "rstat-yield"), 0);
	assert_int_equal(confirm_end(dirfd, "tlb-gen"), 0);
	assert_int_equal(confirm_end(dirfd, "usercopy-fastpath"), 0);
	/* the last record gone: so is the file */
	assert_int_equal(faccessat(dirfd, CONFIRM_FILE, F_OK, 0), -1);
	close(dirfd);
}

/* At start: which records say the host died with a mitigation new. */
static void test_start(void **state)
{
	struct confirm_entry lost[CONFIRM_MAX];
	struct confirm c;
	size_t n;
	int dirfd = open_state();

	(void)state;
	put(dirfd, "rstat-yield pending " BOOT " 100 base 3\n"
		   "usercopy-fastpath pending " EARLIER " 200 base 2\n"
		   "tlb-gen confirmed " EARLIER " 300 base 2\n"
		   "kasan-quarantine confirmed " BOOT " 400 - 0\n");
	assert_int_equal(confirm_load(dirfd, &c), 0);
	assert_int_equal(c.n, 4);
	/*
	 * Booted as EARLIER: the agent restarted in that boot, its pending
	 * record keeps its window; BOOT's pending one is another boot's.
	 */
	assert_true(confirm_start(&c, EARLIER, lost, &n));
	assert_int_equal(n, 1);
	assert_string_equal(lost[0].id, "rstat-yield");
	assert_string_equal(lost[0].policy.name, "base");
	assert_int_equal(lost[0].policy.version, 3);
	assert_int_equal(c.n, 2);
	assert_int_equal(confirm_find(&c, "usercopy-fastpath")->since_ms, 200);
	assert_false(confirm_find(&c, "usercopy-fastpath")->confirmed);
	assert_true(confirm_find(&c, "tlb-gen")->confirmed);

	/* booted as BOOT: the earlier boot's pending one is lost, its confirmed one done with */
	assert_int_equal(confirm_load(dirfd, &c), 0);
	assert_true(confirm_start(&c, BOOT, lost, &n));
	assert_int_equal(n, 1);
	assert_string_equal(lost[0].id, "usercopy-fastpath");
	assert_int_equal(lost[0].policy.version, 2);
	assert_int_equal(c.n, 2);
	assert_non_null(confirm_find(&c, "rstat-yield"));
	assert_int_equal(confirm_find(&c, "rstat-yield")->since_ms, 100);
	assert_non_null(confirm_find(&c, "kasan-quarantine"));
	assert_int_equal(confirm_save(dirfd, &c), 0);
	assert_int_equal(confirm_load(dirfd, &c), 0);
	assert_false(confirm_start(&c, BOOT, lost, &n));
	assert_int_equal(n, 0);

	/* this boot's id unknown: whatever is pending may be from before */
	assert_true(confirm_start(&c, "", lost, &n));
	assert_int_equal(n, 1);
	assert_string_equal(lost[0].id, "rstat-yield");
	assert_int_equal(c.n, 0);
	assert_int_equal(unlinkat(dirfd, CONFIRM_FILE, 0), 0);
	close(dirfd);
}

static struct kernel_mitigation km_of(const char *id, bool on)
{
	struct kernel_mitigation km = { .on = on,
					.state = on ? KERNEL_STATE_ON : KERNEL_STATE_OFF };

	strcpy(km.id, id);
	return km;
}

/* Report rounds: confirmed once the window passed with it on; dropped once seen off. */
static void test_round(void **state)
{
	char done[CONFIRM_MAX][POLICY_ID_MAX + 1];
	struct kernel_mitigation km[3] = { km_of("rstat-yield", true),
					   km_of("usercopy-fastpath", false),
					   km_of("tlb-gen", true) };
	struct confirm c;
	size_t n;
	int dirfd = open_state();

	(void)state;
	put(dirfd, "rstat-yield pending " BOOT " 1000 base 3\n"
		   "usercopy-fastpath pending " BOOT " 1000 base 3\n"
		   "tlb-gen pending " BOOT " 5000 base 3\n");
	assert_int_equal(confirm_load(dirfd, &c), 0);
	/* a round that read before the records were made says nothing of them */
	assert_false(confirm_round(&c, BOOT, 1000, 600000, km, 3, done, &n));
	assert_int_equal(c.n, 3);
	/* usercopy-fastpath was turned off before its window passed: its record goes */
	assert_true(confirm_round(&c, BOOT, 2000, 600000, km, 3, done, &n));
	assert_int_equal(n, 0);
	assert_int_equal(c.n, 2);
	assert_null(confirm_find(&c, "usercopy-fastpath"));
	/* one ms short of the window */
	assert_false(confirm_round(&c, BOOT, 600999, 600000, km, 3, done, &n));
	assert_true(confirm_round(&c, BOOT, 601000, 600000, km, 3, done, &n));
	assert_int_equal(n, 1);
	assert_string_equal(done[0], "rstat-yield");
	assert_true(confirm_find(&c, "rstat-yield")->confirmed);
	assert_false(confirm_find(&c, "tlb-gen")->confirmed);
	/* confirmed stays confirmed, even off */
	km[0].on = false;
	assert_true(confirm_round(&c, BOOT, 605000, 600000, km, 3, done, &n));
	assert_int_equal(n, 1);
	assert_string_equal(done[0], "tlb-gen");
	assert_true(confirm_find(&c, "rstat-yield")->confirmed);
	assert_int_equal(confirm_save(dirfd, &c), 0);
	assert_int_equal(confirm_load(dirfd, &c), 0);
	assert_true(confirm_find(&c, "rstat-yield")->confirmed);
	assert_true(confirm_find(&c, "tlb-gen")->confirmed);
	/* another boot's record is start's to judge, not a round's */
	put(dirfd, "rstat-yield pending " EARLIER " 1000 base 3\n");
	assert_int_equal(confirm_load(dirfd, &c), 0);
	assert_false(confirm_round(&c, BOOT, 900000, 600000, km, 3, done, &n));
	assert_int_equal(unlinkat(dirfd, CONFIRM_FILE, 0), 0);
	close(dirfd);
}

/* A file that does not parse whole names nothing; a new record rewrites it. */
static void test_damaged(void **state)
{
	static const char *const bad[] = {
		"rstat-yield pending " BOOT " 1000 base 3",
		"rstat-yield pending " BOOT " 1000 base",
		"rstat-yield pending " BOOT " 1000 base 3 extra\n",
		"rstat-yield maybe " BOOT " 1000 base 3\n",
		"rstat-yield pending not-a-boot-id 1000 base 3\n",
		"rstat-yield pending " BOOT " -1 base 3\n",
		"rstat-yield pending " BOOT " 1000 base 3x\n",
		"rstat-yield pending " BOOT " 1000 base 99999999999999999999999\n",
		"../x pending " BOOT " 1000 base 3\n",
		"rstat-yield pending " BOOT " 1000 ba/se 3\n",
		"rstat-yield pending " BOOT " 1000 base 3\nrstat-yield pending " BOOT
		" 1000 base 3\n",
		"\n",
		"rstat-yield pending " BOOT " 1000 base 3\n\n",
		"",
	};
	static const char nul[] = "tlb-gen pending " BOOT " 1 - 0\n\0\n";
	struct confirm c;
	size_t i;
	int dirfd = open_state(), fd;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		put(dirfd, bad[i]);
		c.n = 1;
		if (confirm_load(dirfd, &c) != -EBADMSG)
			fail_msg("bad file %zu was read", i);
		assert_int_equal(c.n, 0);
	}
	/* a NUL inside: cut where text ends, the rest unread */
	fd = openat(dirfd, CONFIRM_FILE, O_WRONLY | O_TRUNC | O_CLOEXEC);
	assert_int_equal(write(fd, nul, sizeof(nul) - 1), (ssize_t)sizeof(nul) - 1);
	close(fd);
	assert_int_equal(confirm_load(dirfd, &c), -EBADMSG);
	/* more records than mitigations */
	fd = openat(dirfd, CONFIRM_FILE, O_WRONLY | O_TRUNC | O_CLOEXEC);
	for (i = 0; i <= CONFIRM_MAX; i++)
		dprintf(fd, "m%zu pending " BOOT " 1 - 0\n", i);
	close(fd);
	assert_int_equal(confirm_load(dirfd, &c), -EBADMSG);
	assert_int_equal(confirm_end(dirfd, "m1"), -EBADMSG);

	assert_int_equal(confirm_begin(dirfd, "rstat-yield", BOOT, 7, &base3), 0);
	assert_int_equal(confirm_load(dirfd, &c), 0);
	assert_int_equal(c.n, 1);
	assert_string_equal(c.e[0].id, "rstat-yield");
	close(dirfd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_boot_id), cmocka_unit_test(test_records),
		cmocka_unit_test(test_start),	cmocka_unit_test(test_round),
		cmocka_unit_test(test_damaged),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}

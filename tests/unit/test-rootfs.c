// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "rootfs.h"

static char root[256];

static void put(const char *rel, const char *text)
{
	char p[512], *slash;

	snprintf(p, sizeof(p), "%s%s", root, rel);
	for (slash = strchr(p + strlen(root) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(p, 0755);
		*slash = '/';
	}
	FILE *f = fopen(p, "we");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "%s/root-XXXXXX", getenv("KMEM_TEST_TMP"));
	assert_non_null(mkdtemp(root));
	put("/proc/meminfo", "MemTotal:        1013532 kB\n");
	put("/sys/devices/system/cpu/possible", "0-63\n");
	put("/sys/kernel/kmemctl/mitigations/rstat-yield/mode", "off\n");
	put("/home/secret", "do not read\n");
	return 0;
}

static void test_read(void **state)
{
	struct rootfs rfs;
	char buf[64];

	(void)state;
	assert_int_equal(rootfs_open_root(&rfs, root), 0);
	assert_int_equal(rootfs_read(&rfs, "/proc/meminfo", buf, sizeof(buf)), 28);
	assert_string_equal(buf, "MemTotal:        1013532 kB\n");
	assert_int_equal(rootfs_read(&rfs, "/sys/devices/system/cpu/possible", buf, sizeof(buf)),
			 5);
	assert_string_equal(buf, "0-63\n");
	/* Too small a buffer: told, with the start of the file kept. */
	assert_int_equal(rootfs_read(&rfs, "/proc/meminfo", buf, 9), -EFBIG);
	assert_string_equal(buf, "MemTotal");
	/* A file exactly as long as the buffer allows is not too big. */
	assert_int_equal(rootfs_read(&rfs, "/sys/devices/system/cpu/possible", buf, 6), 5);
	assert_int_equal(rootfs_read(&rfs, "/proc/missing", buf, sizeof(buf)), -ENOENT);
	rootfs_close(&rfs);
}

static void test_write(void **state)
{
	struct rootfs rfs;
	char buf[16];
	const char *mode = "/sys/kernel/kmemctl/mitigations/rstat-yield/mode";

	(void)state;
	assert_int_equal(rootfs_open_root(&rfs, root), 0);
	assert_int_equal(rootfs_write(&rfs, mode, "on"), 0);
	assert_int_equal(rootfs_read(&rfs, mode, buf, sizeof(buf)), 2);
	assert_string_equal(buf, "on");
	rootfs_close(&rfs);
}

static void test_escape(void **state)
{
	static const char *const bad[] = {
		"/home/secret",
		"proc/meminfo",
		"/proc/../home/secret",
		"/sys/..",
		"/sys/../home/secret",
		"/procfoo/x",
		"/",
		"",
	};
	static const char *const good[] = { "/proc/a..b", "/sys/kernel/..x/y", "/dev/kmsg" };
	struct rootfs rfs;
	char buf[512];

	(void)state;
	assert_int_equal(rootfs_open_root(&rfs, root), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(rootfs_check_path(bad[i]), -EPERM);
		assert_int_equal(rootfs_read(&rfs, bad[i], buf, sizeof(buf)), -EPERM);
	}
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_int_equal(rootfs_check_path(good[i]), 0);
	assert_int_equal(rootfs_path(&rfs, "/dev/kmsg", buf, sizeof(buf)), 0);
	assert_true(strncmp(buf, root, strlen(root)) == 0);
	assert_string_equal(buf + strlen(root), "/dev/kmsg");
	assert_int_equal(rootfs_path(&rfs, "/dev/kmsg", buf, 8), -ENAMETOOLONG);
	rootfs_close(&rfs);

	assert_int_equal(rootfs_open_root(&rfs, NULL), 0);
	assert_int_equal(rootfs_path(&rfs, "/proc/self/stat", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/proc/self/stat");
	assert_true(rootfs_read(&rfs, "/proc/self/stat", buf, sizeof(buf)) > 0);
	rootfs_close(&rfs);
	assert_int_equal(rootfs_open_root(&rfs, "/nonexistent-root"), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read),
		cmocka_unit_test(test_write),
		cmocka_unit_test(test_escape),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}

// SPDX-License-Identifier: GPL-2.0
/* Host facts from the fixture tree tests/fixtures/host-6.1 and bad input. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "facts.h"

static void test_cpulist(void **state)
{
	static const char *const bad[] = {
		"",
		"\n",
		"-1",
		"1-",
		"3-1",
		"0,,1",
		"0-3,",
		"a",
		"0 1",
		"0-3\n\n",
		"0-3x",
		"0-4294967295,0-4294967295",
		"99999999999",
	};
	uint32_t n = 123;

	(void)state;
	assert_int_equal(facts_parse_cpulist("0-63\n", &n), 0);
	assert_int_equal(n, 64);
	assert_int_equal(facts_parse_cpulist("0-3,8,10-11", &n), 0);
	assert_int_equal(n, 7);
	assert_int_equal(facts_parse_cpulist("0\n", &n), 0);
	assert_int_equal(n, 1);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		n = 123;
		if (facts_parse_cpulist(bad[i], &n) != -EINVAL)
			fail_msg("cpulist '%s' was accepted", bad[i]);
		assert_int_equal(n, 123);
	}
}

static void test_meminfo(void **state)
{
	uint64_t b = 0;

	(void)state;
	assert_int_equal(facts_parse_meminfo("MemTotal:        1013532 kB\nMemFree: 1 kB\n", &b),
			 0);
	assert_int_equal(b, 1013532ULL * 1024);
	assert_int_equal(facts_parse_meminfo("MemFree: 1 kB\nMemTotal: 2 kB\n", &b), 0);
	assert_int_equal(b, 2048);
	assert_int_equal(facts_parse_meminfo("MemFree: 1 kB\n", &b), -ENOENT);
	assert_int_equal(facts_parse_meminfo("", &b), -ENOENT);
	assert_int_equal(facts_parse_meminfo("MemTotal: lots\n", &b), -EINVAL);
	assert_int_equal(facts_parse_meminfo("MemTotal: 12 MB\n", &b), -EINVAL);
	assert_int_equal(facts_parse_meminfo("MemTotal: 99999999999999999999 kB\n", &b), -EINVAL);
}

static size_t note(uint8_t *p, uint32_t namesz, uint32_t descsz, uint32_t type, const char *name,
		   uint8_t fill)
{
	size_t off = 12;

	memcpy(p, &namesz, 4);
	memcpy(p + 4, &descsz, 4);
	memcpy(p + 8, &type, 4);
	memset(p + off, 0, (namesz + 3) & ~3U);
	memcpy(p + off, name, namesz);
	off += (namesz + 3) & ~3U;
	memset(p + off, fill, (descsz + 3) & ~3U);
	return off + ((descsz + 3) & ~3U);
}

static void test_notes(void **state)
{
	uint8_t buf[256];
	char hex[81];
	size_t len;

	(void)state;
	/* A Xen note first, then the build id, as /sys/kernel/notes has them. */
	len = note(buf, 4, 8, 1, "Xen", 0x11);
	len += note(buf + len, 4, 20, 3, "GNU", 0xab);
	assert_int_equal(facts_parse_notes(buf, len, hex, sizeof(hex)), 0);
	assert_string_equal(hex, "abababababababababababababababababababab");
	/* Every truncation is refused or finds nothing; none reads past the end. */
	for (size_t l = 0; l < len; l++) {
		uint8_t *copy = malloc(l ? l : 1);

		memcpy(copy, buf, l);
		assert_int_not_equal(facts_parse_notes(copy, l, hex, sizeof(hex)), 0);
		free(copy);
	}
	/* A descsz that claims more than is there. */
	len = note(buf, 4, 20, 3, "GNU", 0xab);
	buf[4] = 0xff;
	assert_int_equal(facts_parse_notes(buf, len, hex, sizeof(hex)), -EINVAL);
	/* An id too long for the caller's buffer. */
	len = note(buf, 4, 64, 3, "GNU", 0xab);
	assert_int_equal(facts_parse_notes(buf, len, hex, sizeof(hex)), -EINVAL);
	/* No build id at all. */
	len = note(buf, 6, 4, 0x100, "Linux", 0);
	assert_int_equal(facts_parse_notes(buf, len, hex, sizeof(hex)), -ENOENT);
}

static void test_cmdline(void **state)
{
	(void)state;
	assert_true(facts_cmdline_disable("ro kmemctl.disable=1 quiet\n"));
	assert_true(facts_cmdline_disable("kmemctl.disable=1"));
	assert_false(facts_cmdline_disable("kmemctl.disable=0"));
	assert_false(facts_cmdline_disable("kmemctl.disable=10"));
	assert_false(facts_cmdline_disable("xkmemctl.disable=1"));
	assert_false(facts_cmdline_disable(""));
}

static void test_kconfig_bad(void **state)
{
	struct facts f;
	char *many = malloc(64 * 40);

	(void)state;
	memset(&f, 0, sizeof(f));
	assert_int_equal(facts_parse_kconfig("CONFIG_KASAN=\n", &f), -EINVAL);
	assert_int_equal(facts_parse_kconfig("CONFIG_KASAN=y\nCONFIG_KPROBES", &f), 0);
	assert_true(f.kasan);
	assert_int_equal(f.n_kconfig, 1);
	assert_int_equal(facts_parse_kconfig("CONFIG_NR_CPUS=12345678901234567890\n", &f), -EINVAL);
	many[0] = '\0';
	for (int i = 0; i < 20; i++)
		strcat(many, "CONFIG_SMP=y\n");
	assert_int_equal(facts_parse_kconfig(many, &f), -EINVAL);
	free(many);
}

static void test_fixture(void **state)
{
	struct agent_config cfg;
	struct rootfs rfs;
	struct facts f;
	char root[512];

	(void)state;
	snprintf(root, sizeof(root), "%s/../fixtures/host-6.1", getenv("KMEM_TEST_DATA"));
	assert_int_equal(rootfs_open_root(&rfs, root), 0);
	agent_config_defaults(&cfg);
	assert_int_equal(facts_collect(&rfs, &cfg, &f), 0);
	assert_string_equal(f.release, "6.1.0-57-amd64");
	assert_string_equal(f.hostname, "fixture-host");
	assert_string_equal(f.host_id, "4c4c4544003957108052b4c04f4e4d32");
	assert_string_equal(f.build_id, "e4f18d9dc1d0e6fc2b17e93e885a647b3c0a6fc1");
	assert_int_equal(f.possible_cpus, 64);
	assert_int_equal(f.online_cpus, 4);
	assert_int_equal(f.mem_total, 1013532ULL * 1024);
	assert_true(f.cmdline_disable);
	assert_false(f.kasan);
	assert_int_equal(f.n_kconfig, 12);
	assert_int_equal(facts_kconfig_uint(&f, "CONFIG_HZ"), 250);
	assert_int_equal(facts_kconfig_uint(&f, "CONFIG_NR_CPUS"), 8192);
	/* "y" is not a number; an absent symbol is unknown */
	assert_int_equal(facts_kconfig_uint(&f, "CONFIG_SMP"), 0);
	assert_int_equal(facts_kconfig_uint(&f, "CONFIG_KASAN"), 0);
	assert_string_equal(f.module_version, "0.1.0");

	cfg.host_id = strdup("bad/id");
	assert_int_equal(facts_collect(&rfs, &cfg, &f), -EINVAL);
	ini_free(agent_options, agent_n_options, &cfg);
	rootfs_close(&rfs);

	assert_int_equal(rootfs_open_root(&rfs, getenv("KMEM_TEST_DATA")), 0);
	agent_config_defaults(&cfg);
	assert_int_equal(facts_collect(&rfs, &cfg, &f), -ENOENT);
	ini_free(agent_options, agent_n_options, &cfg);
	rootfs_close(&rfs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpulist),	    cmocka_unit_test(test_meminfo),
		cmocka_unit_test(test_notes),	    cmocka_unit_test(test_cmdline),
		cmocka_unit_test(test_kconfig_bad), cmocka_unit_test(test_fixture),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

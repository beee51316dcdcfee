// SPDX-License-Identifier: GPL-2.0
/*
 * agent/kernel.c on a copy of tests/fixtures/host-6.1, whose
 * sys/kernel/kmemctl/ was captured from kmemctl.ko on Debian 6.1 under
 * QEMU (rstat-yield on with every_cpus=2, after a vmalloc workload).
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
#include "kernel.h"
#include "macro.h"

static char root[4096];

static int setup(void **state)
{
	(void)state;
	return fixture_copy("kernel-root", root, sizeof(root));
}

static void put(const char *path, const char *text)
{
	fixture_put(root, path, text);
}

static void get(const char *path, char *buf, size_t size)
{
	struct rootfs rfs;

	assert_int_equal(rootfs_open_root(&rfs, root), 0);
	assert_true(rootfs_read(&rfs, path, buf, size) >= 0);
	rootfs_close(&rfs);
}

static void test_read(void **state)
{
	char ids[KERNEL_MAX_IDS][KERNEL_ID_MAX + 1];
	struct kernel_mitigation m;
	struct kernel_probe p;
	struct rootfs rfs;
	size_t n;

	(void)state;
	assert_int_equal(rootfs_open_root(&rfs, root), 0);
	assert_int_equal(kernel_abi(&rfs), KMEMCTL_ABI);
	assert_int_equal(kernel_ids(&rfs, "mitigations", ids, KERNEL_MAX_IDS, &n), 0);
	assert_int_equal(n, 5);
	assert_string_equal(ids[0], "kasan-flush-batch");
	assert_string_equal(ids[4], "usercopy-fastpath");
	assert_int_equal(kernel_ids(&rfs, "probes", ids, KERNEL_MAX_IDS, &n), 0);
	assert_int_equal(n, 5);
	assert_int_equal(kernel_ids(&rfs, "probes", ids, 2, &n), -EBADMSG);
	assert_int_equal(kernel_ids(&rfs, "../../etc", ids, KERNEL_MAX_IDS, &n), -EINVAL);

	assert_int_equal(kernel_read_mitigation(&rfs, "rstat-yield", &m), 0);
	assert_int_equal(m.state, KERNEL_STATE_ON);
	assert_true(m.on);
	assert_string_equal(m.reason, "on: enacted");
	assert_int_equal(m.nparams, 1);
	assert_string_equal(m.params[0].key, "every_cpus");
	assert_int_equal(m.params[0].value, 2);
	assert_int_equal(m.nstats, 3);
	assert_string_equal(m.stats[0].key, "enables");
	assert_int_equal(m.stats[0].value, 1);

	assert_int_equal(kernel_read_mitigation(&rfs, "kasan-quarantine", &m), 0);
	assert_int_equal(m.state, KERNEL_STATE_UNSUPPORTED);
	assert_false(m.on);
	assert_string_equal(m.reason, "unsupported: CONFIG_KASAN_GENERIC is not set");
	assert_int_equal(m.nparams, 2);
	assert_int_equal(m.params[0].value, 1048576);

	assert_int_equal(kernel_read_mitigation(&rfs, "tlb-gen", &m), 0);
	assert_int_equal(m.state, KERNEL_STATE_NATIVE);
	assert_int_equal(m.nparams, 0);

	assert_int_equal(kernel_read_probe(&rfs, "vmap-purge", &p), 0);
	assert_true(p.enabled);
	assert_true(p.supported);
	assert_int_equal(p.hist.buckets[17], 3);
	assert_int_equal(p.hist.buckets[22], 1);
	assert_int_equal(p.hist.count, 4);
	assert_int_equal(p.hist.sum_ns, 2918320);
	assert_int_equal(p.hist.max_ns, 2580670);
	assert_string_equal(p.second, "flushes");
	assert_int_equal(p.hist2.buckets[0], 4);
	assert_int_equal(p.hist2.count, 4);
	assert_int_equal(p.hist2.max_ns, 1);

	assert_int_equal(kernel_read_probe(&rfs, "kasan-reduce", &p), 0);
	assert_false(p.enabled);
	assert_false(p.supported);
	assert_string_equal(p.second, "");
	assert_int_equal(p.hist.count, 0);
	rootfs_close(&rfs);
}

static void test_write(void **state)
{
	struct kernel_kv kv[2] = { { "batch_bytes", 65536 }, { "max_fraction", 64 } };
	struct rootfs rfs;
	char buf[256];

	(void)state;
	assert_int_equal(rootfs_open_root(&rfs, root), 0);
	assert_int_equal(kernel_set_mode(&rfs, "usercopy-fastpath", true), 0);
	get("/sys/kernel/kmemctl/mitigations/usercopy-fastpath/mode", buf, sizeof(buf));
	assert_string_equal(buf, "on");
	assert_int_equal(kernel_set_params(&rfs, "kasan-quarantine", kv, 2), 0);
	get("/sys/kernel/kmemctl/mitigations/kasan-quarantine/params", buf, sizeof(buf));
	assert_string_equal(buf, "batch_bytes=65536\nmax_fraction=64\n");
	assert_int_equal(kernel_set_probe(&rfs, "vmap-purge", 0, 1000000), 0);
	get("/sys/kernel/kmemctl/probes/vmap-purge/threshold_ns", buf, sizeof(buf));
	assert_string_equal(buf, "1000000");
	get("/sys/kernel/kmemctl/probes/vmap-purge/enabled", buf, sizeof(buf));
	assert_string_equal(buf, "0");

	assert_int_equal(kernel_reset(&rfs, "rstat-yield"), 0);
	get("/sys/kernel/kmemctl/mitigations/rstat-yield/reset", buf, sizeof(buf));
	assert_string_equal(buf, "1");

	assert_int_equal(kernel_set_mode(&rfs, "../../../etc/passwd", true), -EINVAL);
	assert_int_equal(kernel_set_mode(&rfs, "no-such-mitigation", true), -ENOENT);
	assert_int_equal(kernel_reset(&rfs, "../../x"), -EINVAL);
	assert_int_equal(kernel_set_params(&rfs, "kasan-quarantine", kv, 0), -EINVAL);
	strcpy(kv[0].key, "a=b");
	assert_int_equal(kernel_set_params(&rfs, "kasan-quarantine", kv, 1), -EINVAL);

	/* a module of another ABI: turning off only */
	strcpy(kv[0].key, "batch_bytes");
	put("/sys/kernel/kmemctl/abi", "6\n");
	assert_int_equal(kernel_set_mode(&rfs, "usercopy-fastpath", true), -EPROTO);
	assert_int_equal(kernel_set_params(&rfs, "kasan-quarantine", kv, 2), -EPROTO);
	assert_int_equal(kernel_set_probe(&rfs, "vmap-purge", 1, -1), -EPROTO);
	assert_int_equal(kernel_reset(&rfs, "rstat-yield"), -EPROTO);
	get("/sys/kernel/kmemctl/probes/vmap-purge/enabled", buf, sizeof(buf));
	assert_string_equal(buf, "0");
	assert_int_equal(kernel_set_mode(&rfs, "usercopy-fastpath", false), 0);
	get("/sys/kernel/kmemctl/mitigations/usercopy-fastpath/mode", buf, sizeof(buf));
	assert_string_equal(buf, "off");
	put("/sys/kernel/kmemctl/abi", "three\n");
	assert_int_equal(kernel_set_mode(&rfs, "usercopy-fastpath", true), -EBADMSG);
	put("/sys/kernel/kmemctl/abi", "5\n");
	rootfs_close(&rfs);
}

/* What the module never writes is an error, not a number. */
static void test_bad_files(void **state)
{
	static const struct {
		const char *path, *text;
	} bad[] = {
		{ "/sys/kernel/kmemctl/mitigations/tlb-gen/state", "maybe\n" },
		{ "/sys/kernel/kmemctl/mitigations/tlb-gen/state", "on\noff\n" },
		{ "/sys/kernel/kmemctl/mitigations/tlb-gen/mode", "sometimes\n" },
		{ "/sys/kernel/kmemctl/mitigations/tlb-gen/params", "every_cpus\n" },
		{ "/sys/kernel/kmemctl/mitigations/tlb-gen/params", "every_cpus=x\n" },
		{ "/sys/kernel/kmemctl/mitigations/tlb-gen/params", "every_cpus=-1\n" },
		{ "/sys/kernel/kmemctl/mitigations/tlb-gen/params", "=1\n" },
		{ "/sys/kernel/kmemctl/mitigations/tlb-gen/params", "a/b=1\n" },
		{ "/sys/kernel/kmemctl/mitigations/tlb-gen/params", "a=99999999999999999999\n" },
		{ "/sys/kernel/kmemctl/mitigations/tlb-gen/stats", "enables 1\ntrips\n" },
	};
	static const struct {
		const char *path, *text;
	} bad_probe[] = {
		{ "/sys/kernel/kmemctl/probes/vmap-purge/enabled", "2\n" },
		{ "/sys/kernel/kmemctl/probes/vmap-purge/enabled", "\n" },
		{ "/sys/kernel/kmemctl/probes/vmap-purge/hist", "3 5\n" },
		{ "/sys/kernel/kmemctl/probes/vmap-purge/hist", "1024 5\n1024 6\n" },
		{ "/sys/kernel/kmemctl/probes/vmap-purge/hist", "1024\n" },
		{ "/sys/kernel/kmemctl/probes/vmap-purge/max_ns", "12ms\n" },
		{ "/sys/kernel/kmemctl/probes/vmap-purge/flushes_hist", "x 1\n" },
		/* a maximum below the highest bucket: kmemd refuses the report (fuzz-sysfs) */
		{ "/sys/kernel/kmemctl/probes/vmap-purge/max_ns", "1000\n" },
		{ "/sys/kernel/kmemctl/probes/vmap-purge/flushes_hist", "1024 1\n" },
	};
	struct kernel_mitigation m;
	struct kernel_probe p;
	struct rootfs rfs;
	char saved[4096];
	size_t i;

	(void)state;
	assert_int_equal(rootfs_open_root(&rfs, root), 0);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		get(bad[i].path, saved, sizeof(saved));
		put(bad[i].path, bad[i].text);
		if (kernel_read_mitigation(&rfs, "tlb-gen", &m) != -EBADMSG)
			fail_msg("case %zu: '%s' in %s was accepted", i, bad[i].text, bad[i].path);
		put(bad[i].path, saved);
		assert_int_equal(kernel_read_mitigation(&rfs, "tlb-gen", &m), 0);
	}
	for (i = 0; i < ARRAY_SIZE(bad_probe); i++) {
		get(bad_probe[i].path, saved, sizeof(saved));
		put(bad_probe[i].path, bad_probe[i].text);
		if (kernel_read_probe(&rfs, "vmap-purge", &p) != -EBADMSG)
			fail_msg("case %zu: '%s' in %s was accepted", i, bad_probe[i].text,
				 bad_probe[i].path);
		put(bad_probe[i].path, saved);
		assert_int_equal(kernel_read_probe(&rfs, "vmap-purge", &p), 0);
	}
	put("/sys/kernel/kmemctl/abi", "three\n");
	assert_int_equal(kernel_abi(&rfs), -EBADMSG);
	put("/sys/kernel/kmemctl/abi", "5\n");
	rootfs_close(&rfs);
}

/* Without the module: -ENOENT everywhere, nothing half-read. */
static void test_no_module(void **state)
{
	char ids[KERNEL_MAX_IDS][KERNEL_ID_MAX + 1];
	struct kernel_mitigation m;
	struct rootfs rfs;
	size_t n;

	(void)state;
	assert_int_equal(rootfs_open_root(&rfs, getenv("KMEM_TEST_DATA")), 0);
	assert_int_equal(kernel_abi(&rfs), -ENOENT);
	assert_int_equal(kernel_ids(&rfs, "mitigations", ids, KERNEL_MAX_IDS, &n), -ENOENT);
	assert_int_equal(kernel_read_mitigation(&rfs, "rstat-yield", &m), -ENOENT);
	rootfs_close(&rfs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read),
		cmocka_unit_test(test_write),
		cmocka_unit_test(test_bad_files),
		cmocka_unit_test(test_no_module),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}

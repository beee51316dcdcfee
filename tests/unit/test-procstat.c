// SPDX-License-Identifier: GPL-2.0
/*
 * agent/procstat.c: /proc/interrupts as captured on a Debian 12 host,
 * /proc/pressure/memory in the kernel's format, and what neither file
 * ever holds.
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
#include "procstat.h"

static char root[4096];

static int setup(void **state)
{
	(void)state;
	return fixture_copy("procstat-root", root, sizeof(root));
}

static void test_fixture(void **state)
{
	struct rootfs rfs;
	uint32_t some, full;
	uint64_t tlb;

	(void)state;
	assert_int_equal(rootfs_open_root(&rfs, root), 0);
	assert_int_equal(procstat_tlb_shootdowns(&rfs, &tlb), 0);
	assert_int_equal(tlb, 142112 + 121239);
	assert_int_equal(procstat_memory_pressure(&rfs, &some, &full), 0);
	assert_int_equal(some, 125);
	assert_int_equal(full, 50);
	rootfs_close(&rfs);
}

static void test_bad(void **state)
{
	static const char *const interrupts[] = {
		"",
		"garbage\n TLB: 1 2\n",
		"           CPU0       CPU1\nTLB:      12   TLB shootdowns\n",
		"           CPU0       CPU1\nTLB:      12 x3   TLB shootdowns\n",
		"           CPU0       CPU1\nTLB:   -1   2   TLB shootdowns\n",
		"           CPU0\nTLB: 99999999999999999999   TLB shootdowns\n",
	};
	static const char *const pressure[] = {
		"",
		"some avg10=1.25 avg60=0.40 avg300=0.08 total=1\n",
		"some avg10=abc avg60=0.40\nfull avg10=0.00\n",
		"some avg10=1.5 avg60=0.40\nfull avg10=0.00\n",
		"some avg10=100.01 avg60=0.40\nfull avg10=0.00\n",
		"full avg10=1.00\nsome avg10=1.00\n",
		"some avg10=1.00\nfull avg10=1.00x\n",
	};
	struct rootfs rfs;
	uint32_t some, full;
	uint64_t tlb;
	size_t i;

	(void)state;
	assert_int_equal(rootfs_open_root(&rfs, root), 0);
	for (i = 0; i < ARRAY_SIZE(interrupts); i++) {
		fixture_put(root, "/proc/interrupts", interrupts[i]);
		if (procstat_tlb_shootdowns(&rfs, &tlb) != -EBADMSG)
			fail_msg("interrupts case %zu accepted", i);
	}
	/* no TLB row: not x86 */
	fixture_put(root, "/proc/interrupts", "           CPU0\n  0:  5  IO-APIC  timer\n");
	assert_int_equal(procstat_tlb_shootdowns(&rfs, &tlb), -ENOENT);
	for (i = 0; i < ARRAY_SIZE(pressure); i++) {
		fixture_put(root, "/proc/pressure/memory", pressure[i]);
		if (procstat_memory_pressure(&rfs, &some, &full) != -EBADMSG)
			fail_msg("pressure case %zu accepted", i);
	}
	rootfs_close(&rfs);

	/* PSI off, or no /proc at all */
	assert_int_equal(rootfs_open_root(&rfs, getenv("KMEM_TEST_DATA")), 0);
	assert_int_equal(procstat_memory_pressure(&rfs, &some, &full), -ENOENT);
	assert_int_equal(procstat_tlb_shootdowns(&rfs, &tlb), -ENOENT);
	rootfs_close(&rfs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixture),
		cmocka_unit_test(test_bad),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}

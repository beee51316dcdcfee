// SPDX-License-Identifier: GPL-2.0
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "guard.h"

static void test_window(void **state)
{
	char out[GUARD_MAX][POLICY_ID_MAX + 1];
	struct guard g;

	(void)state;
	guard_init(&g, 10000);
	guard_arm(&g, "rstat-yield", 1000);
	guard_arm(&g, "usercopy-fastpath", 5000);
	/* hung tasks do not trip it, and leave it armed */
	assert_int_equal(guard_trip(&g, KMSG_HUNG_TASK, 6000, out, GUARD_MAX), 0);
	/* rstat-yield has been on for 11 s, past the window */
	assert_int_equal(guard_trip(&g, KMSG_SOFT_LOCKUP, 12000, out, GUARD_MAX), 1);
	assert_string_equal(out[0], "usercopy-fastpath");
	/* reverted once: a second lockup finds nothing */
	assert_int_equal(guard_trip(&g, KMSG_RCU_STALL, 12001, out, GUARD_MAX), 0);

	/* re-enabling starts a new window */
	guard_arm(&g, "rstat-yield", 20000);
	guard_arm(&g, "rstat-yield", 29000);
	assert_int_equal(g.n, 1);
	assert_int_equal(guard_trip(&g, KMSG_HARD_LOCKUP, 38000, out, GUARD_MAX), 1);
	assert_string_equal(out[0], "rstat-yield");

	/* switched off by other means: no longer watched */
	guard_arm(&g, "kasan-quarantine", 40000);
	guard_disarm(&g, "kasan-quarantine");
	guard_disarm(&g, "never-armed");
	assert_int_equal(guard_trip(&g, KMSG_SOFT_LOCKUP, 40001, out, GUARD_MAX), 0);
}

static void test_limits(void **state)
{
	char out[2][POLICY_ID_MAX + 1];
	struct guard g;

	(void)state;
	guard_init(&g, 0);
	guard_arm(&g, "rstat-yield", 1);
	assert_int_equal(g.n, 0);

	guard_init(&g, 1000);
	guard_arm(&g, "../bad", 1);
	assert_int_equal(g.n, 0);
	guard_arm(&g, "a", 1);
	guard_arm(&g, "b", 2);
	guard_arm(&g, "c", 3);
	/* the rest stays armed when out is full */
	assert_int_equal(guard_trip(&g, KMSG_SOFT_LOCKUP, 10, out, 2), 2);
	assert_int_equal(guard_trip(&g, KMSG_SOFT_LOCKUP, 10, out, 2), 1);
	assert_int_equal(guard_trip(&g, KMSG_SOFT_LOCKUP, 10, out, 2), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_window),
		cmocka_unit_test(test_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

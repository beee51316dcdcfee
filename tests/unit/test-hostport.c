// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "hostport.h"

static void test_good(void **state)
{
	char host[64];
	uint16_t port;

	(void)state;
	assert_int_equal(hostport_split("127.0.0.1:8443", host, sizeof(host), &port, false), 0);
	assert_string_equal(host, "127.0.0.1");
	assert_int_equal(port, 8443);
	assert_int_equal(hostport_split("[::1]:443", host, sizeof(host), &port, false), 0);
	assert_string_equal(host, "::1");
	assert_int_equal(hostport_split("kmemd.example.net:1", host, sizeof(host), &port, false),
			 0);
	assert_int_equal(hostport_split("0.0.0.0:0", host, sizeof(host), &port, true), 0);
	assert_int_equal(port, 0);
}

static void test_bad(void **state)
{
	static const char *const bad[] = {
		NULL,
		"",
		"host",
		":80",
		"host:",
		"host:x",
		"host:-1",
		"host:65536",
		"host:80x",
		"host:0",
		"::1:80",
		"[::1:80",
		"[]:80",
		"host: 80",
		"a-very-long-host-name-that-does-not-fit-into-the-buffer-at-all.example:80",
	};
	char host[64] = "untouched";
	uint16_t port = 7;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (hostport_split(bad[i], host, sizeof(host), &port, false) != -EINVAL)
			fail_msg("'%s' was accepted", bad[i] ? bad[i] : "(null)");
		assert_string_equal(host, "untouched");
		assert_int_equal(port, 7);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_bad),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

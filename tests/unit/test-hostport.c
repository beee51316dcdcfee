// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
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

/* kmemd's addresses for an agent or kmemctl: in order, each once. */
static void test_list(void **state)
{
	static const char *const bad[] = {
		NULL,	    "",	       ",",	  "a:1,", ",a:1",	   "a:1,,b:2",
		"a:1, a:1", "a:1 b:2", "a:1;b:2", "a:0",  "[::1]:1,::1:2",
	};
	struct hostport hp[HOSTPORT_LIST_MAX];
	char many[256] = "";
	size_t n;

	(void)state;
	assert_int_equal(hostport_list("k1.example:8443", hp, HOSTPORT_LIST_MAX, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(hp[0].host, "k1.example");
	assert_int_equal(hp[0].port, 8443);
	assert_int_equal(hostport_list(" 10.0.0.1:1 ,\t[::1]:2,k:3 ", hp, HOSTPORT_LIST_MAX, &n),
			 0);
	assert_int_equal(n, 3);
	assert_string_equal(hp[0].host, "10.0.0.1");
	assert_string_equal(hp[1].host, "::1");
	assert_int_equal(hp[1].port, 2);
	assert_string_equal(hp[2].host, "k");
	/* the same host on another port is another kmemd */
	assert_int_equal(hostport_list("k:1,k:2", hp, HOSTPORT_LIST_MAX, &n), 0);
	assert_int_equal(n, 2);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (hostport_list(bad[i], hp, HOSTPORT_LIST_MAX, &n) != -EINVAL)
			fail_msg("'%s' was accepted", bad[i] ? bad[i] : "(null)");
	for (int i = 1; i <= HOSTPORT_LIST_MAX + 1; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), "%sk:%d",
			 i > 1 ? "," : "", i);
	assert_int_equal(hostport_list(many, hp, HOSTPORT_LIST_MAX, &n), -E2BIG);
	*strrchr(many, ',') = '\0';
	assert_int_equal(hostport_list(many, hp, HOSTPORT_LIST_MAX, &n), 0);
	assert_int_equal(n, HOSTPORT_LIST_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_list),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

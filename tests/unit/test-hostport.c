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

#define KEYS 6000

/* Each host's order: every address once; a fleet spread evenly, also after one fails. */
static void test_order(void **state)
{
	struct hostport hp[HOSTPORT_LIST_MAX];
	size_t n, first[4] = { 0 }, next[3] = { 0 }, moved = 0, i, j;
	uint8_t o[HOSTPORT_LIST_MAX], o4[HOSTPORT_LIST_MAX], again[HOSTPORT_LIST_MAX];
	char key[32];

	(void)state;
	assert_int_equal(hostport_list("a:1,b:1,a:2,10.0.0.4:8443", hp, HOSTPORT_LIST_MAX, &n), 0);
	for (i = 0; i < KEYS; i++) {
		snprintf(key, sizeof(key), "host-%05zu", i);
		for (size_t m = 1; m <= n; m++) {
			unsigned seen = 0;

			hostport_order(key, hp, m, o);
			for (j = 0; j < m; j++)
				seen |= 1U << o[j];
			assert_int_equal(seen, (1U << m) - 1);
		}
		hostport_order(key, hp, 3, o);
		hostport_order(key, hp, 3, again);
		assert_memory_equal(o, again, 3);
		first[o[0]]++;
		/* the hosts of address 0, when it fails */
		if (o[0] == 0)
			next[o[1]]++;
		/* a fourth address takes hosts for itself only, and its share */
		hostport_order(key, hp, 4, o4);
		if (o4[0] != o[0]) {
			assert_int_equal(o4[0], 3);
			moved++;
		}
	}
	for (i = 0; i < 3; i++)
		if (first[i] < KEYS / 3 * 9 / 10 || first[i] > KEYS / 3 * 11 / 10)
			fail_msg("address %zu is first for %zu of %d hosts", i, first[i], KEYS);
	if (next[1] < first[0] * 4 / 10 || next[2] < first[0] * 4 / 10)
		fail_msg("address 0's %zu hosts go on to 1: %zu, to 2: %zu", first[0], next[1],
			 next[2]);
	if (moved < KEYS / 4 * 9 / 10 || moved > KEYS / 4 * 11 / 10)
		fail_msg("a fourth address took %zu of %d hosts", moved, KEYS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_list),
		cmocka_unit_test(test_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

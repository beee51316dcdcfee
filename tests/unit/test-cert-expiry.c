// SPDX-License-Identifier: GPL-2.0
/* The earliest host certificate expiry /metrics reports (daemon/cert-expiry.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "cert-expiry.h"

#define DAY_MS (86400LL * 1000)

static void test_earliest(void **state)
{
	struct cert_expiry t = { 0 };
	size_t n;

	(void)state;
	assert_int_equal(cert_expiry_earliest(&t, 1000, DAY_MS, &n), 0);
	assert_int_equal(n, 0);
	assert_false(cert_expiry_seen(&t, "web-1"));
	assert_int_equal(cert_expiry_note(&t, "web-1", 5000, 1000), 0);
	assert_true(cert_expiry_seen(&t, "web-1"));
	assert_false(cert_expiry_seen(&t, "web-10"));
	assert_int_equal(cert_expiry_note(&t, "web-2", 3000, 1000), 0);
	assert_int_equal(cert_expiry_note(&t, "web-3", 9000, 1000), 0);
	assert_int_equal(cert_expiry_earliest(&t, 2000, DAY_MS, &n), 3000);
	assert_int_equal(n, 3);
	/* web-2 renewed: its old certificate no longer counts */
	assert_int_equal(cert_expiry_note(&t, "web-2", 8000, 3000), 0);
	assert_int_equal(cert_expiry_earliest(&t, 4000, DAY_MS, &n), 5000);
	assert_int_equal(n, 3);
	/* web-1 stopped reporting a day ago: forgotten */
	assert_int_equal(cert_expiry_note(&t, "web-2", 8000, DAY_MS + 2000), 0);
	assert_int_equal(cert_expiry_note(&t, "web-3", 9000, DAY_MS + 2000), 0);
	assert_int_equal(cert_expiry_earliest(&t, DAY_MS + 2500, DAY_MS, &n), 8000);
	assert_int_equal(n, 2);
	assert_int_equal(t.n, 2);
	assert_false(cert_expiry_seen(&t, "web-1"));
	assert_true(cert_expiry_seen(&t, "web-3"));
	cert_expiry_free(&t);
}

/* Many hosts: the table grows, every host is found again and counted once. */
static void test_many(void **state)
{
	struct cert_expiry t = { 0 };
	char host[32];
	size_t n;

	(void)state;
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < 20000; i++) {
			snprintf(host, sizeof(host), "host-%05d", i);
			assert_int_equal(cert_expiry_note(&t, host, 100000 + i + round, 1000), 0);
		}
	assert_int_equal(cert_expiry_earliest(&t, 1000, DAY_MS, &n), 100001);
	assert_int_equal(n, 20000);
	assert_true(t.cap >= 2 * t.n);
	cert_expiry_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_earliest),
		cmocka_unit_test(test_many),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

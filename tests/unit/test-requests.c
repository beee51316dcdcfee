// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "requests.h"

static void test_query_number(void **state)
{
	static const char *const bad[] = {
		"",
		"-1",
		"+1",
		" 1",
		"1 ",
		"1x",
		"0x10",
		"1e3",
		"99999999999999999999",
		"9223372036854775808",
		"253402300800000",
	};
	int64_t v = 7;

	(void)state;
	assert_int_equal(query_number(NULL, 10, &v), 0);
	assert_int_equal(v, 7);
	assert_int_equal(query_number("0", 10, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(query_number("253402300799999", QUERY_MS_MAX, &v), 0);
	assert_int_equal(v, QUERY_MS_MAX);
	assert_int_equal(query_number("11", 10, &v), -EINVAL);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (query_number(bad[i], QUERY_MS_MAX, &v) != -EINVAL)
			fail_msg("query number '%s' was taken", bad[i]);
}

static void test_secret_request(void **state)
{
	static const char *const bad[] = {
		"{\"expires_in_s\": -1}",
		"{\"expires_in_s\": 9223372036854775807}",
		"{\"expires_in_s\": 316224001}",
		"{\"uses\": -1}",
		"{\"uses\": 1000001}",
		"{\"hosts\": \"web/*\"}",
		"{\"hosts\": \"\"}",
		"{\"hosts\": 5}",
		"{\"other\": 1}",
		"{\"uses\": 1, \"uses\": 2}",
		"[]",
		"not json",
	};
	struct store_secret sec;
	char why[256];

	(void)state;
	assert_int_equal(secret_request_parse("", 0, &sec, 1000, why, sizeof(why)), 0);
	assert_int_equal(sec.expires_ms, 1000 + 7 * 86400 * 1000LL);
	assert_int_equal(sec.max_uses, 0);
	assert_string_equal(sec.host_pattern, "");
	assert_int_equal(secret_request_parse("{\"expires_in_s\": 0, \"uses\": 3, \"hosts\": "
					      "\"web-[0-9]*\"}",
					      53, &sec, 1000, why, sizeof(why)),
			 0);
	assert_int_equal(sec.expires_ms, 0);
	assert_int_equal(sec.max_uses, 3);
	assert_string_equal(sec.host_pattern, "web-[0-9]*");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (secret_request_parse(bad[i], strlen(bad[i]), &sec, 1000, why, sizeof(why)) !=
		    -EINVAL)
			fail_msg("secret request '%s' was taken", bad[i]);
}

static void test_enroll_request(void **state)
{
	Kmemctl__V1__EnrollRequest er = KMEMCTL__V1__ENROLL_REQUEST__INIT;

	(void)state;
	er.secret = "s3cret";
	er.host_id = "web-1";
	er.csr_pem = "-----BEGIN CERTIFICATE REQUEST-----";
	assert_true(enroll_request_valid(&er));
	er.host_id = "web\n1";
	assert_false(enroll_request_valid(&er));
	er.host_id = "web-1";
	er.secret = "";
	assert_false(enroll_request_valid(&er));
	er.secret = "s\xff";
	assert_false(enroll_request_valid(&er));
	er.secret = "s3cret";
	er.csr_pem = NULL;
	assert_false(enroll_request_valid(&er));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_query_number),
		cmocka_unit_test(test_secret_request),
		cmocka_unit_test(test_enroll_request),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

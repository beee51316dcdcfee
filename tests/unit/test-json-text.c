// SPDX-License-Identifier: GPL-2.0
/*
 * JSON of what hosts sent (lib/json-text.h): counts and sums that
 * saturated stay the largest integer, never negative; strings that are
 * not UTF-8 still make JSON.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hist.h"
#include "json-text.h"

static void test_count(void **state)
{
	struct hist a = { .count = UINT64_MAX - 1, .sum_ns = UINT64_MAX / 2 + 1 }, b = a;
	json_t *o;
	char *text;

	(void)state;
	assert_int_equal(json_count(0), 0);
	assert_int_equal(json_count(INT64_MAX), INT64_MAX);
	assert_int_equal(json_count((uint64_t)INT64_MAX + 1), INT64_MAX);
	assert_int_equal(json_count(UINT64_MAX), INT64_MAX);
	/* two hosts' sums merged saturate; the JSON of them is the largest, not -1 */
	hist_merge(&a, &b);
	assert_true(a.count == UINT64_MAX && a.sum_ns == UINT64_MAX);
	o = json_pack("{s:I, s:I}", "count", json_count(a.count), "sum_ns", json_count(a.sum_ns));
	text = json_dumps(o, JSON_COMPACT);
	assert_string_equal(text, "{\"count\":9223372036854775807,\"sum_ns\":9223372036854775807}");
	free(text);
	json_decref(o);
}

static void test_text(void **state)
{
	json_t *s;

	(void)state;
	s = json_text("ok\xff");
	assert_non_null(s);
	assert_string_equal(json_string_value(s), "ok\xef\xbf\xbd");
	json_decref(s);
	s = json_text(NULL);
	assert_string_equal(json_string_value(s), "");
	json_decref(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_count),
		cmocka_unit_test(test_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

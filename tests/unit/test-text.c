// SPDX-License-Identifier: GPL-2.0
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "text.h"

static void test_utf8(void **state)
{
	static const char *const good[] = {
		"", "plain", "caf\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x92\xa9", "\xef\xbf\xbd",
	};
	static const char *const bad[] = {
		"\x80", /* a continuation alone */
		"\xc3", /* cut */
		"\xc0\xaf", /* overlong '/' */
		"\xe0\x80\xaf", /* overlong, three bytes */
		"\xed\xa0\x80", /* a surrogate */
		"\xf4\x90\x80\x80", /* past U+10FFFF */
		"\xf8\x88\x80\x80\x80",
		"ok\xff",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_true(text_utf8_valid(good[i], strlen(good[i])));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (text_utf8_valid(bad[i], strlen(bad[i])))
			fail_msg("bad sequence %zu was taken as UTF-8", i);
}

static void test_valid(void **state)
{
	(void)state;
	assert_true(text_valid(NULL, 4));
	assert_true(text_valid("", 0));
	assert_true(text_valid("6.1.0-50-amd64", 64));
	assert_true(text_valid("h\xc3\xb4te", 5));
	assert_false(text_valid("h\xc3\xb4te", 4));
	assert_false(text_valid("two\nlines", 64));
	assert_false(text_valid("tab\there", 64));
	assert_false(text_valid("esc\x1b[2J", 64));
	assert_false(text_valid("del\x7f", 64));
	assert_false(text_valid("c1\xc2\x9b", 64));
	assert_false(text_valid("bad\xff", 64));
}

static void test_names(void **state)
{
	(void)state;
	assert_true(text_name_valid("rstat-yield", 63));
	assert_true(text_name_valid("web-01.example_net", 63));
	assert_false(text_name_valid("", 63));
	assert_false(text_name_valid(NULL, 63));
	assert_false(text_name_valid("a b", 63));
	assert_false(text_name_valid("a/b", 63));
	assert_false(text_name_valid("\xc3\xa9", 63));
	assert_false(text_name_valid("abcd", 3));
	assert_true(text_name_valid("abc", 3));
	/* host ids: a name that starts with a letter or digit */
	assert_true(text_host_id_valid("web-01.example_net", 64));
	assert_true(text_host_id_valid("0a", 64));
	assert_false(text_host_id_valid(".", 64));
	assert_false(text_host_id_valid("..", 64));
	assert_false(text_host_id_valid("-rf", 64));
	assert_false(text_host_id_valid("_x", 64));
	assert_false(text_host_id_valid("", 64));
	assert_false(text_host_id_valid(NULL, 64));
	assert_false(text_host_id_valid("abcd", 3));
}

static void test_sanitize(void **state)
{
	char *s;

	(void)state;
	s = text_sanitize("ok", 2);
	assert_string_equal(s, "ok");
	free(s);
	s = text_sanitize("a\xff"
			  "b\xc3",
			  4);
	assert_string_equal(s, "a\xef\xbf\xbd"
			       "b\xef\xbf\xbd");
	assert_true(text_utf8_valid(s, strlen(s)));
	free(s);
	s = text_sanitize("\xed\xa0\x80", 3);
	assert_string_equal(s, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
	free(s);
}

static void test_escape(void **state)
{
	char out[64];

	(void)state;
	assert_string_equal(text_escape("host-1", out, sizeof(out)), "host-1");
	assert_string_equal(text_escape("a\nkmemd: forged", out, sizeof(out)), "a\\nkmemd: forged");
	assert_string_equal(text_escape("t\tb\\s", out, sizeof(out)), "t\\tb\\\\s");
	assert_string_equal(text_escape("\x1b[31m", out, sizeof(out)), "\\x1b[31m");
	assert_string_equal(text_escape("x\xff", out, sizeof(out)), "x\\xff");
	assert_string_equal(text_escape("c1\xc2\x9b", out, sizeof(out)), "c1\\xc2\\x9b");
	assert_string_equal(text_escape("caf\xc3\xa9", out, sizeof(out)), "caf\xc3\xa9");
	assert_string_equal(text_escape(NULL, out, sizeof(out)), "");
	/* an escape that does not fit is left out whole */
	assert_string_equal(text_escape("abc\n", out, 5), "abc");
	assert_string_equal(text_escape("\xe2\x82\xac\xe2\x82\xac", out, 5), "\xe2\x82\xac");
}

/* Each unit from its threshold on, as plans and bakes print them. */
static void test_duration(void **state)
{
	char b[32];

	(void)state;
	assert_string_equal(text_duration(0, b, sizeof(b)), "0s");
	assert_string_equal(text_duration(119, b, sizeof(b)), "119s");
	assert_string_equal(text_duration(120, b, sizeof(b)), "2m");
	assert_string_equal(text_duration(7199, b, sizeof(b)), "120m");
	assert_string_equal(text_duration(7200, b, sizeof(b)), "2h");
	assert_string_equal(text_duration(77040, b, sizeof(b)), "21h");
	assert_string_equal(text_duration(5400 * 3, b, sizeof(b)), "4.5h");
	assert_string_equal(text_duration(172800, b, sizeof(b)), "2d");
	/* a short buffer is cut, never overrun */
	assert_string_equal(text_duration(172800 * 50, b, 3), "10");
}

/* FNV-1a, its published values; never 0 */
static void test_hash(void **state)
{
	(void)state;
	assert_true(text_hash("") == 14695981039346656037ULL);
	assert_true(text_hash("a") == 0xaf63dc4c8601ec8cULL);
	assert_true(text_hash("foobar") == 0x85944171f73967e8ULL);
	assert_true(text_hash("web-1") != text_hash("web-2"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8),   cmocka_unit_test(test_valid),
		cmocka_unit_test(test_names),  cmocka_unit_test(test_sanitize),
		cmocka_unit_test(test_escape), cmocka_unit_test(test_duration),
		cmocka_unit_test(test_hash),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

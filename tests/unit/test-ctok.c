// SPDX-License-Identifier: GPL-2.0
/* lib/ctok.c: the C tokenizer kmemctl build check compares kernel code with. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "ctok.h"

struct want {
	enum ctok_kind kind;
	const char *text;
	unsigned int line;
};

static void expect(const char *src, const struct want *w, size_t n)
{
	struct ctok_list l;
	unsigned int line = 0;

	assert_int_equal(ctok_scan(src, strlen(src), &l, &line), 0);
	for (size_t i = 0; i < n && i < l.n; i++) {
		if (l.v[i].kind != w[i].kind || strcmp(l.v[i].text, w[i].text) ||
		    l.v[i].line != w[i].line)
			fail_msg("token %zu: kind %d '%s' line %u, want kind %d '%s' line %u", i,
				 l.v[i].kind, l.v[i].text, l.v[i].line, w[i].kind, w[i].text,
				 w[i].line);
	}
	assert_int_equal(l.n, n);
	ctok_free(&l);
}

static void test_tokens(void **state)
{
	static const struct want w[] = {
		{ CTOK_IDENT, "static", 1 },	 { CTOK_IDENT, "int", 1 },
		{ CTOK_IDENT, "f", 1 },		 { CTOK_PUNCT, "(", 1 },
		{ CTOK_IDENT, "void", 1 },	 { CTOK_PUNCT, ")", 1 },
		{ CTOK_PUNCT, "{", 2 },		 { CTOK_IDENT, "x", 3 },
		{ CTOK_PUNCT, ">>=", 3 },	 { CTOK_NUMBER, "1UL", 3 },
		{ CTOK_PUNCT, "+", 3 },		 { CTOK_NUMBER, "0x1f", 3 },
		{ CTOK_PUNCT, "-", 3 },		 { CTOK_NUMBER, "1e+5", 3 },
		{ CTOK_PUNCT, "*", 3 },		 { CTOK_NUMBER, ".5", 3 },
		{ CTOK_PUNCT, ";", 3 },		 { CTOK_IDENT, "p", 4 },
		{ CTOK_PUNCT, "->", 4 },	 { CTOK_IDENT, "s", 4 },
		{ CTOK_PUNCT, "=", 4 },		 { CTOK_STRING, "\"a\\\"b\"", 4 },
		{ CTOK_PUNCT, ";", 4 },		 { CTOK_IDENT, "c", 5 },
		{ CTOK_PUNCT, "=", 5 },		 { CTOK_CHAR, "'\\''", 5 },
		{ CTOK_PUNCT, ";", 5 },		 { CTOK_COMMENT, " why ", 5 },
		{ CTOK_IDENT, "w", 6 },		 { CTOK_PUNCT, "=", 6 },
		{ CTOK_STRING, "L\"wide\"", 6 }, { CTOK_PUNCT, ";", 6 },
		{ CTOK_COMMENT, " line", 6 },	 { CTOK_PUNCT, "}", 7 },
	};

	(void)state;
	expect("static int f(void)\n{\n\tx >>= 1UL + 0x1f - 1e+5 * .5;\n"
	       "\tp->s = \"a\\\"b\";\n\tc = '\\''; /* why */\n\tw = L\"wide\"; // line\n}\n",
	       w, sizeof(w) / sizeof(w[0]));
}

/* A directive is one token, whatever its layout, comments and continuations. */
static void test_directives(void **state)
{
	static const struct want w[] = {
		{ CTOK_PP, "# define X ( 1 << 2 )", 1 },
		{ CTOK_PP, "# ifdef CONFIG_A", 3 },
		{ CTOK_IDENT, "a", 4 },
		{ CTOK_PUNCT, "#", 4 },
		{ CTOK_PP, "# endif", 5 },
		{ CTOK_IDENT, "b", 6 },
	};
	struct ctok_list a, b;
	unsigned int line;

	(void)state;
	expect("#define X (1 << \\\n  2)\n  #  ifdef /* c */ CONFIG_A\na #\n#endif\nb\n", w,
	       sizeof(w) / sizeof(w[0]));
	assert_int_equal(ctok_scan("#define X(a)\t(a)\n", 17, &a, &line), 0);
	assert_int_equal(ctok_scan("# define X( a ) ( a )  \n", 24, &b, &line), 0);
	assert_int_equal(a.n, 1);
	assert_int_equal(b.n, 1);
	assert_string_equal(a.v[0].text, b.v[0].text);
	assert_int_equal(a.v[0].end_line, 1);
	ctok_free(&a);
	ctok_free(&b);
}

/* What no C file holds is refused, with the line it starts on. */
static void test_bad_input(void **state)
{
	static const struct {
		const char *src;
		unsigned int line;
	} bad[] = {
		{ "int a;\n/* never closed\n\n", 2 },
		{ "int a;\nchar *s = \"open\n\";\n", 2 },
		{ "char *s = \"open", 1 },
		{ "\n\nchar c = 'x;\n", 3 },
		{ "int a = b @ c;\n", 1 },
		{ "int a = `b`;\n", 1 },
		{ "#define S \"x\n", 1 },
		{ "\n#if 0 /* open\n", 2 },
	};
	struct ctok_list l;
	unsigned int line;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		line = 0;
		if (ctok_scan(bad[i].src, strlen(bad[i].src), &l, &line) != -EINVAL)
			fail_msg("'%s' was not refused", bad[i].src);
		assert_int_equal(line, bad[i].line);
		assert_int_equal(l.n, 0);
	}
	/* a NUL byte inside the length is not C either */
	assert_int_equal(ctok_scan("int a;\0int b;", 13, &l, &line), -EINVAL);
	assert_int_equal(ctok_scan("", 0, &l, &line), 0);
	assert_int_equal(l.n, 0);
}

static void test_multiline_comment_lines(void **state)
{
	struct ctok_list l;
	unsigned int line;

	(void)state;
	assert_int_equal(ctok_scan("/*\n * a\n */\nint x;\n", 19, &l, &line), 0);
	assert_int_equal(l.n, 4);
	assert_int_equal(l.v[0].kind, CTOK_COMMENT);
	assert_int_equal(l.v[0].line, 1);
	assert_int_equal(l.v[0].end_line, 3);
	assert_string_equal(l.v[0].text, "\n * a\n ");
	assert_int_equal(l.v[1].line, 4);
	assert_true(ctok_is(&l.v[1], CTOK_IDENT, "int"));
	assert_false(ctok_is(&l.v[1], CTOK_PUNCT, "int"));
	ctok_free(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tokens),
		cmocka_unit_test(test_directives),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_multiline_comment_lines),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

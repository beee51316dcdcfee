// SPDX-License-Identifier: GPL-2.0
/*
 * lib/copycheck.c: copy declarations parsed from a kmod file and each copy
 * checked against a small kernel file. Every kind of mismatch between a
 * declaration and the code must fail, naming where.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "copycheck.h"

static const char kernel[] = "struct foo {\n" /* 1 */
			     "\tint a;\n" /* 2 */
			     "\tlong b;\n" /* 3 */
			     "};\n" /* 4 */
			     "\n" /* 5 */
			     "#define LIMIT (1 << 4)\n" /* 6 */
			     "\n" /* 7 */
			     "static int helper(int x)\n" /* 8 */
			     "{\n" /* 9 */
			     "\treturn x + LIMIT;\n" /* 10 */
			     "}\n" /* 11 */
			     "\n" /* 12 */
			     "static void work(struct foo *f, int n)\n" /* 13 */
			     "{\n" /* 14 */
			     "\tint i;\n" /* 15 */
			     "\n" /* 16 */
			     "\tfor (i = 0; i < n; i++)\n" /* 17 */
			     "\t\tf->a += helper(i);\n" /* 18 */
			     "\tf->b = 0;\n" /* 19 */
			     "\tsmp_wmb();\n" /* 20 */
			     "}\n" /* 21 */
			     "\n" /* 22 */
			     "DEFINE_THING(static, thing_cb, struct foo, a)\n" /* 23 */
			     "\n" /* 24 */
			     "static int after;\n"; /* 25 */

/* The copies as they are right: each test changes one thing. */
static const char copies[] =
	"/* kmemctl-copy: mit-a kernel/k.c struct foo */\n" /* 1 */
	"struct foo {\n"
	"\tint a;\n"
	"\tlong b;\n"
	"};\n" /* 5 */
	"\n"
	"/*\n"
	" * kmemctl-copy: mit-a kernel/k.c helper\n" /* 8 */
	" * rename: helper -> my_helper\n"
	" * replace: \"LIMIT\" -> \"my_limit\": a param\n" /* 10 */
	" */\n"
	"static int my_helper(int x)\n"
	"{\n"
	"\treturn x + my_limit;\n"
	"}\n" /* 15 */
	"\n"
	"/* kmemctl-copy: mit-a kernel/k.c work */\n" /* 17 */
	"static void work(struct foo *f, int n)\n"
	"{\n"
	"\tint i;\n" /* 20 */
	"\n"
	"\tfor (i = 0; i < n; i++)\n"
	"\t\tf->a += helper(i);\n"
	"\tf->b = 0;\n"
	"\t/* kmemctl-differs: no barrier, nothing reads it concurrently */\n" /* 25 */
	"}\n"
	"\n"
	"/*\n"
	" * kmemctl-copy: mit-b kernel/k.c\n"
	" *   DEFINE_THING(thing_cb)\n" /* 30 */
	" * rename: thing_cb -> my_cb\n"
	" */\n"
	"DEFINE_THING(static, my_cb, struct foo, a)\n"
	"\n"
	"static int own_code;\n"; /* 35 */

struct fixture {
	struct ctok_list k;
	char msg[COPY_MSG_MAX];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	unsigned int line;

	assert_non_null(f);
	assert_int_equal(ctok_scan(kernel, strlen(kernel), &f->k, &line), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	ctok_free(&f->k);
	free(f);
	return 0;
}

/* text with the first from replaced by to. */
static char *edit(const char *text, const char *from, const char *to)
{
	const char *p = strstr(text, from);
	char *s;

	assert_non_null(p);
	assert_true(asprintf(&s, "%.*s%s%s", (int)(p - text), text, to, p + strlen(from)) > 0);
	return s;
}

/* Parse text and check every declaration: the first failure, or 0. */
static int check_all(struct fixture *f, const char *text, size_t *ndecls)
{
	struct copy_file cf;
	int r = copy_parse("kmod/c.c", text, strlen(text), &cf, f->msg);

	if (r < 0)
		return r;
	*ndecls = cf.ndecls;
	for (size_t i = 0; r == 0 && i < cf.ndecls; i++)
		r = copy_check(&cf, &cf.decls[i], "kernel/k.c", &f->k, f->msg);
	copy_file_free(&cf);
	return r;
}

static void expect_fail(struct fixture *f, const char *from, const char *to, int err,
			const char *const *parts)
{
	char *text = edit(copies, from, to);
	size_t n = 0;
	int r = check_all(f, text, &n);

	if (r != err)
		fail_msg("'%s' -> '%s': %d, want %d (%s)", from, to, r, err, r ? f->msg : "");
	for (; *parts; parts++)
		if (!strstr(f->msg, *parts))
			fail_msg("'%s' -> '%s': '%s' does not say '%s'", from, to, f->msg, *parts);
	free(text);
}

static void test_matches(void **state)
{
	struct fixture *f = *state;
	struct copy_file cf;
	size_t n = 0;

	assert_int_equal(check_all(f, copies, &n), 0);
	assert_int_equal(n, 4);
	assert_int_equal(copy_parse("kmod/c.c", copies, strlen(copies), &cf, f->msg), 0);
	assert_string_equal(cf.decls[0].symbols[0], "struct foo");
	assert_string_equal(cf.decls[1].mitigation, "mit-a");
	assert_int_equal(cf.decls[1].line, 8);
	assert_int_equal(cf.decls[1].nsubst, 2);
	assert_true(cf.decls[1].subst[0].rename);
	assert_false(cf.decls[1].subst[1].rename);
	assert_string_equal(cf.decls[3].symbols[0], "DEFINE_THING(thing_cb)");
	assert_int_equal(cf.nmarkers, 1);
	assert_int_equal(cf.markers[0].line, 25);
	assert_int_equal(cf.markers[0].first, 26);
	copy_file_free(&cf);
}

static void test_undeclared_change_fails(void **state)
{
	static const char *const line[] = {
		"kmod/c.c:24: undeclared difference", "kernel/k.c:19", "(work)", "'0'", "'1'", NULL
	};
	static const char *const member[] = { "kmod/c.c:4:", "kernel/k.c:3", "(struct foo)", NULL };
	static const char *const macro[] = { "kmod/c.c:33:", "kernel/k.c:23", "'a'", "'b'", NULL };
	struct fixture *f = *state;

	expect_fail(f, "\tf->b = 0;\n", "\tf->b = 1;\n", -EBADMSG, line);
	expect_fail(f, "\tlong b;\n", "\tlong c;\n", -EBADMSG, member);
	expect_fail(f, "struct foo, a)", "struct foo, b)", -EBADMSG, macro);
	/* an added line is a difference as much as a changed one */
	expect_fail(f, "\tint i;\n", "\tint i;\n\tint j;\n", -EBADMSG,
		    (const char *const[]){ "kmod/c.c:21:", "'int j ;'", NULL });
}

static void test_declared_change_absent_fails(void **state)
{
	static const char *const parts[] = { "kmod/c.c:23: kmemctl-differs declares line 24 to 24",
					     "do not differ", "(work)", NULL };
	struct fixture *f = *state;

	expect_fail(f, "\t\tf->a += helper(i);\n",
		    "\t\t/* kmemctl-differs: claimed */\n\t\tf->a += helper(i);\n", -EBADMSG,
		    parts);
}

static void test_subst_never_applied_fails(void **state)
{
	struct fixture *f = *state;

	expect_fail(f, " * rename: helper -> my_helper\n",
		    " * rename: helper -> my_helper, nothere -> x\n", -EBADMSG,
		    (const char *const[]){ "kmod/c.c:9: declared 'nothere' is not in kernel/k.c",
					   NULL });
	expect_fail(f, " * replace: \"LIMIT\" -> \"my_limit\": a param\n",
		    " * replace: \"LIMIT\" -> \"my_limit\": a param\n"
		    " * replace: \"x - 1\" -> \"x\": never there\n",
		    -EBADMSG, (const char *const[]){ "kmod/c.c:11: declared 'x - 1'", NULL });
	/* a rename leaves members alone: f->b is no identifier b */
	expect_fail(f, "/* kmemctl-copy: mit-a kernel/k.c work */\n",
		    "/*\n * kmemctl-copy: mit-a kernel/k.c work\n * rename: b -> bb\n */\n",
		    -EBADMSG, (const char *const[]){ "declared 'b' is not in", NULL });
}

static void test_removal_declared_beside(void **state)
{
	struct fixture *f = *state;
	char *text =
		edit(copies, "\t\tf->a += helper(i);\n\tf->b = 0;\n", "\t\tf->a += helper(i);\n");
	size_t n;

	/* f->b = 0 removed, the marker on the next line declares it */
	assert_int_equal(check_all(f, text, &n), 0);
	free(text);
	text = edit(copies,
		    "\tf->b = 0;\n\t/* kmemctl-differs: no barrier, nothing reads it "
		    "concurrently */\n",
		    "\tf->b = 0;\n");
	assert_int_equal(check_all(f, text, &n), -EBADMSG);
	assert_non_null(strstr(f->msg, "the copy 'nothing'"));
	free(text);
}

static void test_missing_symbol(void **state)
{
	struct fixture *f = *state;

	expect_fail(f, "kernel/k.c work */", "kernel/k.c workx */", -ENOENT,
		    (const char *const[]){ "kmod/c.c:17: kernel/k.c does not define 'workx'",
					   NULL });
	expect_fail(f, "DEFINE_THING(thing_cb)", "DEFINE_THING(other_cb)", -ENOENT,
		    (const char *const[]){ "does not define 'DEFINE_THING(other_cb)'", NULL });
}

static void test_malformed_declarations(void **state)
{
	static const struct {
		const char *from, *to, *says;
	} bad[] = {
		{ "kmemctl-copy: mit-a kernel/k.c helper\n", "kmemctl-copy: mit-a kernel/k.c\n",
		  "kmod/c.c:8: malformed declaration line" },
		{ "kmemctl-copy: mit-a kernel/k.c helper\n",
		  "kmemctl-copy: Mit kernel/k.c helper\n", "kmod/c.c:8: malformed" },
		{ "kmemctl-copy: mit-a kernel/k.c helper\n",
		  "kmemctl-copy: mit-a /etc/k.c helper\n", "kmod/c.c:8: malformed" },
		{ "kmemctl-copy: mit-a kernel/k.c helper\n", "kmemctl-copy: mit-a ../k.c helper\n",
		  "kmod/c.c:8: malformed" },
		{ "kmemctl-copy: mit-a kernel/k.c helper\n",
		  "kmemctl-copy: mit-a kernel/k.c 2helper\n", "kmod/c.c:8: malformed" },
		{ " * rename: helper -> my_helper\n", " * rename: helper my_helper\n",
		  "kmod/c.c:9: malformed declaration line" },
		{ " * rename: helper -> my_helper\n", " * rename: helper -> my-helper\n",
		  "kmod/c.c:9: malformed" },
		{ ": a param\n", "\n", "kmod/c.c:10: malformed declaration line" },
		{ "\"LIMIT\" -> \"my_limit\"", "LIMIT -> \"my_limit\"", "kmod/c.c:10: malformed" },
		{ "\"LIMIT\" -> \"my_limit\"", "\"LIMIT\" => \"my_limit\"",
		  "kmod/c.c:10: malformed" },
		{ "\"LIMIT\" -> \"my_limit\"", "\"\" -> \"my_limit\"", "kmod/c.c:10: malformed" },
		{ "\"LIMIT\" -> \"my_limit\"", "\"LIMIT // c\" -> \"my_limit\"",
		  "kmod/c.c:10: malformed" },
		{ "\"LIMIT\" -> \"my_limit\"", "\"LIMIT\" -> \"my_limit",
		  "kmod/c.c:10: malformed" },
		{ " * rename: helper -> my_helper\n",
		  " * rename: helper -> my_helper\n * kmemctl-copy: mit-a kernel/k.c work\n",
		  "kmod/c.c:10: malformed" },
		{ "/*\n * kmemctl-copy: mit-a kernel/k.c helper\n",
		  "/*\n * kmemctl-copy: mit-a kernel/k.c helper\n * copy: nowhere\n",
		  "kmod/c.c:8: copy 'nowhere' is not defined in this file" },
		{ "static int own_code;\n", "/* kmemctl-copy: mit-a kernel/k.c after */\n",
		  "kmod/c.c:35: no definition follows" },
	};
	struct fixture *f = *state;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_fail(f, bad[i].from, bad[i].to, -EINVAL,
			    (const char *const[]){ bad[i].says, NULL });
}

static void test_malformed_markers(void **state)
{
	static const struct {
		const char *from, *to, *says;
	} bad[] = {
		{ "kmemctl-differs: no barrier, nothing reads it concurrently",
		  "kmemctl-differs:", "kmod/c.c:25: kmemctl-differs without a reason" },
		{ "kmemctl-differs: no barrier, nothing reads it concurrently", "kmemctl-differ: x",
		  "kmod/c.c:25: unknown kmemctl- comment" },
		{ "kmemctl-differs: no barrier, nothing reads it concurrently",
		  "kmemctl-differs-end", "kmod/c.c:25: kmemctl-differs-end without a begin" },
		{ "kmemctl-differs: no barrier, nothing reads it concurrently",
		  "kmemctl-differs-begin: open",
		  "kmod/c.c:25: kmemctl-differs-begin without an end" },
		{ "\t/* kmemctl-differs: no barrier, nothing reads it concurrently */\n",
		  "\t/* kmemctl-differs-begin: x */\n\t/* kmemctl-differs-end */\n",
		  "kmod/c.c:25: kmemctl-differs-begin/end enclose no line" },
		{ "\t/* kmemctl-differs: no barrier, nothing reads it concurrently */\n",
		  "\t/* kmemctl-differs-begin: x */\n\t/* kmemctl-differs: y */\n",
		  "kmod/c.c:26: kmemctl-differs inside an open kmemctl-differs-begin" },
		{ "static int own_code;\n", "/* kmemctl-differs: mine */\nstatic int own_code;\n",
		  "kmod/c.c:35: kmemctl-differs outside any declared copy" },
		{ "static int own_code;\n", "/* kmemctl-differs: at the end */\n",
		  "kmod/c.c:35: kmemctl-differs before no code" },
		{ "static int own_code;\n", "static char *s = \"open;\n", "kmod/c.c:35: not C" },
		{ "static int own_code;\n", "/* open\n", "kmod/c.c:35: not C" },
	};
	struct fixture *f = *state;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_fail(f, bad[i].from, bad[i].to, -EINVAL,
			    (const char *const[]){ bad[i].says, NULL });
}

/* A struct the kernel defines with its static instance is found, and the instance differs. */
static void test_struct_with_instance(void **state)
{
	static const char kernel2[] =
		"static struct node {\n\tint a;\n} single;\n\nstatic int x;\n";
	static const char declared[] = "/* kmemctl-copy: mit-a kernel/k.c struct node */\n"
				       "/* kmemctl-differs: the type alone */\n"
				       "struct node {\n"
				       "\tint a;\n"
				       "/* kmemctl-differs: the type alone */\n"
				       "};\n";
	static const char undeclared[] = "/* kmemctl-copy: mit-a kernel/k.c struct node */\n"
					 "struct node {\n"
					 "\tint a;\n"
					 "};\n";
	struct fixture *f = *state;
	struct ctok_list k;
	struct copy_file cf;
	unsigned int line;

	assert_int_equal(ctok_scan(kernel2, strlen(kernel2), &k, &line), 0);
	assert_int_equal(copy_parse("kmod/c.c", declared, strlen(declared), &cf, f->msg), 0);
	assert_int_equal(copy_check(&cf, &cf.decls[0], "kernel/k.c", &k, f->msg), 0);
	copy_file_free(&cf);
	assert_int_equal(copy_parse("kmod/c.c", undeclared, strlen(undeclared), &cf, f->msg), 0);
	assert_int_not_equal(copy_check(&cf, &cf.decls[0], "kernel/k.c", &k, f->msg), 0);
	copy_file_free(&cf);
	ctok_free(&k);
}

/* "kmemctl-series: X.Y" names the series a file's copies are of, once. */
static void test_series(void **state)
{
	static const struct {
		const char *to, *says;
	} bad[] = {
		{ "/* kmemctl-series: 6 */\n", "kmod/c.c:35: kmemctl-series wants a series" },
		{ "/* kmemctl-series: 6.x */\n", "kmod/c.c:35: kmemctl-series wants" },
		{ "/* kmemctl-series: 6.-1 */\n", "kmod/c.c:35: kmemctl-series wants" },
		{ "/* kmemctl-series: 0.1 */\n", "kmod/c.c:35: kmemctl-series wants" },
		{ "/* kmemctl-series: 6.12.1 */\n", "kmod/c.c:35: kmemctl-series wants" },
		{ "/* kmemctl-series: */\n", "kmod/c.c:35: kmemctl-series wants" },
		{ "/* kmemctl-series: 6.1 */\n/* kmemctl-series: 6.12 */\n",
		  "kmod/c.c:36: a second kmemctl-series" },
	};
	struct fixture *f = *state;
	char *text = edit(copies, "static int own_code;\n", "/* kmemctl-series:  6.12 */\n");
	struct copy_file cf;

	assert_int_equal(copy_parse("kmod/c.c", copies, strlen(copies), &cf, f->msg), 0);
	assert_string_equal(cf.series, "");
	copy_file_free(&cf);
	assert_int_equal(copy_parse("kmod/c.c", text, strlen(text), &cf, f->msg), 0);
	assert_string_equal(cf.series, "6.12");
	assert_int_equal(cf.ndecls, 4);
	copy_file_free(&cf);
	free(text);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_fail(f, "static int own_code;\n", bad[i].to, -EINVAL,
			    (const char *const[]){ bad[i].says, NULL });
}

/* Comments in the copy or the kernel are not code: they never differ. */
static void test_comments_and_layout_ignored(void **state)
{
	struct fixture *f = *state;
	char *text = edit(copies, "\tfor (i = 0; i < n; i++)\n",
			  "\t/* a comment of our own */\n\tfor (i = 0;\n\t     i < n; i++)\n");
	size_t n;

	assert_int_equal(check_all(f, text, &n), 0);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_matches, setup, teardown),
		cmocka_unit_test_setup_teardown(test_undeclared_change_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_declared_change_absent_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_subst_never_applied_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_removal_declared_beside, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_symbol, setup, teardown),
		cmocka_unit_test_setup_teardown(test_malformed_declarations, setup, teardown),
		cmocka_unit_test_setup_teardown(test_malformed_markers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_struct_with_instance, setup, teardown),
		cmocka_unit_test_setup_teardown(test_series, setup, teardown),
		cmocka_unit_test_setup_teardown(test_comments_and_layout_ignored, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

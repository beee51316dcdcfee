// SPDX-License-Identifier: GPL-2.0
/*
 * lib/buildrec.c: the module's build file and build records, both read
 * from outside (a host's sysfs, an operator's file): every malformed line
 * is refused with its number.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "buildrec.h"

static const char build[] = "build_id 4f1a9c0d2e3b\n"
			    "release 6.1.0-57-amd64\n"
			    "version #1 SMP PREEMPT_DYNAMIC Debian 6.1.192-3 (2026-11-20)\n"
			    "copy rstat-yield lp_rstat.c:cgroup_rstat_cpu 00112233445566ff\n"
			    "func rstat-yield cgroup_rstat_flush_locked 1184 9a3c5e7f0b1d2f43\n"
			    "func usercopy-fastpath __check_object_size 412 0123456789abcdef\n";

static const char record[] =
	"kmemctl-build-record 2\n"
	"build_id 4f1a9c0d2e3b\n"
	"release 6.1.0-57-amd64\n"
	"version #1 SMP PREEMPT_DYNAMIC Debian 6.1.192-3 (2026-11-20)\n"
	"source linux-source-6.1 6.1.192-3\n"
	"copy rstat-yield lp_rstat.c:cgroup_rstat_cpu 00112233445566ff\n"
	"copy rstat-yield kasan_quarantine.c:struct-qlist_node 0123456789abcdef\n"
	"func rstat-yield cgroup_rstat_flush_locked 1184 9a3c5e7f0b1d2f43\n"
	"end\n";

static char *edit(const char *text, const char *from, const char *to)
{
	const char *p = strstr(text, from);
	char *s;

	assert_non_null(p);
	assert_true(asprintf(&s, "%.*s%s%s", (int)(p - text), text, to, p + strlen(from)) > 0);
	return s;
}

static void test_build_file(void **state)
{
	char err[BUILDREC_ERR_MAX];
	struct build_info b;

	(void)state;
	assert_int_equal(build_parse(build, strlen(build), &b, err), 0);
	assert_string_equal(b.build_id, "4f1a9c0d2e3b");
	assert_string_equal(b.release, "6.1.0-57-amd64");
	assert_string_equal(b.version, "#1 SMP PREEMPT_DYNAMIC Debian 6.1.192-3 (2026-11-20)");
	assert_int_equal(b.nfuncs, 2);
	assert_int_equal(b.ncopies, 1);
	assert_string_equal(b.copies[0].name, "lp_rstat.c:cgroup_rstat_cpu");
	assert_string_equal(b.copies[0].digest, "00112233445566ff");
	assert_string_equal(b.funcs[1].mitigation, "usercopy-fastpath");
	assert_string_equal(b.funcs[1].symbol, "__check_object_size");
	assert_int_equal(b.funcs[1].size, 412);
	assert_string_equal(b.funcs[1].fingerprint, "0123456789abcdef");
	build_info_free(&b);
	/* a build file is no record, and a record no build file */
	assert_int_equal(build_parse_record(build, strlen(build), &b, err), -EBADMSG);
	assert_string_equal(err, "line 1: not 'kmemctl-build-record 2'");
	assert_int_equal(build_parse(record, strlen(record), &b, err), -EBADMSG);
	assert_string_equal(err, "line 1: unexpected 'kmemctl-build-record'");
}

static void test_record_roundtrip(void **state)
{
	char err[BUILDREC_ERR_MAX], *out;
	struct build_info b;
	size_t len;

	(void)state;
	assert_int_equal(build_parse_record(record, strlen(record), &b, err), 0);
	assert_int_equal(b.ncopies, 2);
	assert_string_equal(b.source_name, "linux-source-6.1");
	assert_string_equal(b.source_version, "6.1.192-3");
	assert_int_equal(b.nfuncs, 1);
	assert_int_equal(build_write_record(&b, &out, &len), 0);
	assert_int_equal(len, strlen(record));
	assert_string_equal(out, record);
	free(out);
	build_info_free(&b);
}

static void expect_refused(const char *text, bool rec, const char *want)
{
	char err[BUILDREC_ERR_MAX];
	struct build_info b;
	int r = rec ? build_parse_record(text, strlen(text), &b, err) :
		      build_parse(text, strlen(text), &b, err);

	if (r != -EBADMSG)
		fail_msg("accepted (%d): %s", r, text);
	if (strcmp(err, want))
		fail_msg("'%s', want '%s'", err, want);
	assert_null(b.funcs);
}

static void test_bad_build_files(void **state)
{
	static const struct {
		const char *from, *to, *err;
	} bad[] = {
		{ "build_id 4f1a9c0d2e3b\n", "build_id 4f1a9c0d2e3\n",
		  "line 1: build_id is not an even number of hex digits" },
		{ "build_id 4f1a9c0d2e3b\n", "build_id 4F1A\n",
		  "line 1: build_id is not an even number of hex digits" },
		{ "build_id 4f1a9c0d2e3b\n", "", "line 6: missing build_id" },
		{ "build_id 4f1a9c0d2e3b\n", "build_id 4f1a\nbuild_id 4f1a\n",
		  "line 2: 'build_id' given twice" },
		{ "release 6.1.0-57-amd64\n", "release 6.1.0 57\n",
		  "line 2: release '6.1.0 57' is malformed" },
		{ "release 6.1.0-57-amd64\n", "release\n", "line 2: unexpected 'release'" },
		{ "version #1", "version \t#1", "line 3: version is not printable text" },
		{ " 1184 ", " -1 ",
		  "line 5: func 'rstat-yield cgroup_rstat_flush_locked -1 9a3c5e7f0b1d2f43' is "
		  "malformed" },
		{ " 1184 ", " 99999999999999999999 ",
		  "line 5: func 'rstat-yield cgroup_rstat_flush_locked 99999999999999999999 "
		  "9a3c5e7f0b1d2f43' is malformed" },
		{ "9a3c5e7f0b1d2f43", "9a3c5e7f0b1d2f4",
		  "line 5: func 'rstat-yield cgroup_rstat_flush_locked 1184 9a3c5e7f0b1d2f4' is "
		  "malformed" },
		{ "func rstat-yield", "func Rstat",
		  "line 5: func 'Rstat cgroup_rstat_flush_locked 1184 9a3c5e7f0b1d2f43' is "
		  "malformed" },
		{ " 1184 9a3c5e7f0b1d2f43\n", " 1184\n",
		  "line 5: func wants <mitigation> <symbol> <size> <fingerprint>" },
		{ " 1184 9a3c5e7f0b1d2f43\n", " 1184 9a3c5e7f0b1d2f43 x\n",
		  "line 5: func wants <mitigation> <symbol> <size> <fingerprint>" },
		{ "func usercopy-fastpath __check_object_size 412",
		  "func rstat-yield cgroup_rstat_flush_locked 412",
		  "line 6: func rstat-yield cgroup_rstat_flush_locked is listed twice" },
		{ "0123456789abcdef\n", "0123456789abcdef", "line 6: no newline at the end" },
		{ " 00112233445566ff", " 00112233445566f",
		  "line 4: copy 'rstat-yield lp_rstat.c:cgroup_rstat_cpu 00112233445566f' is "
		  "malformed" },
		{ "lp_rstat.c:cgroup_rstat_cpu", "lp_rstat.c:a/b",
		  "line 4: copy 'rstat-yield lp_rstat.c:a/b 00112233445566ff' is malformed" },
		{ " 00112233445566ff", " 00112233445566ff x",
		  "line 4: copy wants <mitigation> <name> <digest>" },
		{ "copy rstat-yield lp_rstat.c:cgroup_rstat_cpu 00112233445566ff\n",
		  "copy rstat-yield a 00112233445566ff\ncopy rstat-yield a 1111111111111111\n",
		  "line 5: copy rstat-yield a is listed twice" },
		{ "release", "source linux 1\nrelease", "line 2: unexpected 'source'" },
		{ "release", "end\nrelease", "line 2: unexpected 'end'" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *text = edit(build, bad[i].from, bad[i].to);

		expect_refused(text, false, bad[i].err);
		free(text);
	}
}

static void test_bad_records(void **state)
{
	static const struct {
		const char *from, *to, *err;
	} bad[] = {
		{ "kmemctl-build-record 2\n", "kmemctl-build-record 3\n",
		  "line 1: not 'kmemctl-build-record 2'" },
		{ "kmemctl-build-record 2\n", "kmemctl-build-record 1\nkmemctl 0.1.0\n",
		  "line 1: format 1, valid for one kmemctl version only: make it again with "
		  "kmemctl build record" },
		{ "source linux-source-6.1 6.1.192-3\n", "source linux-source-6.1\n",
		  "line 5: source wants <package name> <package version>" },
		{ "source linux-source-6.1 6.1.192-3\n", "source linux-source-6.1 6.1 192\n",
		  "line 5: source wants <package name> <package version>" },
		{ "source linux-source-6.1 6.1.192-3\n", "source linux/source 6.1\n",
		  "line 5: source wants <package name> <package version>" },
		{ "source linux-source-6.1 6.1.192-3\n", "", "line 9: missing source" },
		{ "end\n", "", "line 9: missing end" },
		{ "end\n", "end\nfunc a b 1 0123456789abcdef\n", "line 10: text after 'end'" },
		{ "end\n", "end x\n", "line 9: unexpected 'end'" },
		{ "6.1.192-3\n", "6.1.192-3\nsource a 1\n", "line 6: 'source' given twice" },
		{ "end\n", "copy rstat-yield x 0123456789abcdef\nend\n",
		  "line 9: copy after a func line" },
		/* func lines vouched for without their copies */
		{ "copy rstat-yield lp_rstat.c:cgroup_rstat_cpu 00112233445566ff\n"
		  "copy rstat-yield kasan_quarantine.c:struct-qlist_node 0123456789abcdef\n",
		  "",
		  "line 8: func rstat-yield cgroup_rstat_flush_locked: no copy line for rstat-yield" },
	};
	static const char nul[] = "kmemctl-build-record 2\nbuild_id 0\0x\n";
	char err[BUILDREC_ERR_MAX], *big;
	struct build_info b;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *text = edit(record, bad[i].from, bad[i].to);

		expect_refused(text, true, bad[i].err);
		free(text);
	}
	/* a NUL byte inside a line */
	assert_int_equal(build_parse_record(nul, sizeof(nul) - 1, &b, err), -EBADMSG);
	assert_string_equal(err, "line 2: a NUL byte");
	big = calloc(1, BUILDREC_MAX + 2);
	assert_non_null(big);
	memset(big, '\n', BUILDREC_MAX + 1);
	assert_int_equal(build_parse_record(big, BUILDREC_MAX + 1, &b, err), -EBADMSG);
	assert_string_equal(err, "line 0: larger than 16384 bytes");
	free(big);
}

static void test_same_copies(void **state)
{
	static const char other[] =
		"build_id 00\nrelease r\nversion v\n"
		"copy rstat-yield lp_rstat.c:cgroup_rstat_cpu 00112233445566ff\n"
		"copy rstat-yield lp_rstat.c:new 1111111111111111\n"
		"copy usercopy-fastpath u.c:x 2222222222222222\n";
	char err[BUILDREC_ERR_MAX], why[200];
	struct build_info a, b;

	(void)state;
	assert_int_equal(build_parse(build, strlen(build), &a, err), 0);
	assert_int_equal(build_parse(other, strlen(other), &b, err), 0);
	assert_true(build_same_copies(&a, &a, "rstat-yield", "a", "b", why, sizeof(why)));
	assert_false(build_same_copies(&a, &b, "rstat-yield", "the record", "this module", why,
				       sizeof(why)));
	assert_string_equal(why, "lp_rstat.c:new is only in this module");
	assert_false(build_same_copies(&b, &a, "rstat-yield", "the record", "this module", why,
				       sizeof(why)));
	assert_string_equal(why, "lp_rstat.c:new is only in the record");
	strcpy(b.copies[0].digest, "ffffffffffffffff");
	assert_false(build_same_copies(&a, &b, "rstat-yield", "x", "y", why, sizeof(why)));
	assert_string_equal(why, "lp_rstat.c:cgroup_rstat_cpu differs");
	/* neither has copies of it: the same, nothing */
	assert_true(build_same_copies(&a, &b, "tlb-gen", "x", "y", NULL, 0));
	assert_false(build_same_copies(&a, &b, "usercopy-fastpath", "x", "y", NULL, 0));
	build_info_free(&a);
	build_info_free(&b);
}

static void test_write_too_large(void **state)
{
	struct build_info b = { .build_id = "ab", .release = "r", .version = "v" };
	char *out = NULL;
	size_t len;

	(void)state;
	b.nfuncs = 200;
	b.funcs = calloc(b.nfuncs, sizeof(*b.funcs));
	assert_non_null(b.funcs);
	for (size_t i = 0; i < b.nfuncs; i++) {
		snprintf(b.funcs[i].mitigation, sizeof(b.funcs[i].mitigation), "m%zu", i);
		memset(b.funcs[i].symbol, 's', 100);
		strcpy(b.funcs[i].fingerprint, "0123456789abcdef");
	}
	assert_int_equal(build_write_record(&b, &out, &len), -EFBIG);
	assert_null(out);
	build_info_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_build_file),	cmocka_unit_test(test_record_roundtrip),
		cmocka_unit_test(test_bad_build_files), cmocka_unit_test(test_bad_records),
		cmocka_unit_test(test_same_copies),	cmocka_unit_test(test_write_too_large),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * INI parser tests. Numbered ini/NN-*.in files are parsed with the table
 * below and the errors plus the normalized output must equal NN-*.ok (the
 * bgpd regress style); the rest are cases that are easier in code.
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "ini-conf.h"
#include "macro.h"

static char *slurp(const char *path)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t len = 0;

	if (!f)
		return NULL;
	if (getdelim(&buf, &len, '\0', f) < 0) {
		free(buf);
		return strdup("");
	}
	return buf;
}

/* Errors, a separator, then the normalized config: what the .ok files hold. */
static char *render(const char *path)
{
	struct ini_errors errs = { 0 };
	struct conf c;
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	const char *base = strrchr(path, '/') + 1;
	_cleanup_fclose_ FILE *in = fopen(path, "re");

	assert_non_null(f);
	assert_non_null(in);
	conf_defaults(&c);
	ini_load_stream(table, ARRAY_SIZE(table), &c, in, base, &errs);
	for (size_t i = 0; i < errs.n; i++)
		fprintf(f, "%s\n", errs.msgs[i]);
	fprintf(f, "---\n");
	ini_print(f, table, ARRAY_SIZE(table), &c);
	fclose(f);
	ini_errors_free(&errs);
	ini_free(table, ARRAY_SIZE(table), &c);
	return out;
}

static int in_filter(const struct dirent *d)
{
	size_t len = strlen(d->d_name);

	return len > 3 && strcmp(d->d_name + len - 3, ".in") == 0;
}

static void test_golden(void **state)
{
	const char *dir = getenv("KMEM_TEST_DATA");
	struct dirent **list;
	char path[4096], ok[4096];
	int n;

	(void)state;
	assert_non_null(dir);
	snprintf(path, sizeof(path), "%s/ini", dir);
	n = scandir(path, &list, in_filter, alphasort);
	assert_true(n >= 8);
	for (int i = 0; i < n; i++) {
		_cleanup_free_ char *got = NULL, *want = NULL;

		snprintf(path, sizeof(path), "%s/ini/%s", dir, list[i]->d_name);
		snprintf(ok, sizeof(ok), "%.*s.ok", (int)(strlen(path) - 3), path);
		got = render(path);
		/* KMEM_GOLDEN_UPDATE=1 rewrites the .ok files; review the diff. */
		if (getenv("KMEM_GOLDEN_UPDATE")) {
			FILE *f = fopen(ok, "we");

			assert_non_null(f);
			fputs(got, f);
			fclose(f);
		}
		want = slurp(ok);
		if (!want || strcmp(got, want) != 0)
			fail_msg("%s: output differs from %s:\n%s", list[i]->d_name, ok, got);
		free(list[i]);
	}
	free(list);
}

static int load_string(struct conf *c, const char *text, struct ini_errors *errs)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int r;

	assert_non_null(f);
	r = ini_load_stream(table, ARRAY_SIZE(table), c, f, "mem", errs);
	fclose(f);
	return r;
}

static void test_huge_line(void **state)
{
	size_t big = 1 << 20;
	char *text = malloc(big + 64);
	struct ini_errors errs = { 0 };
	struct conf c;

	(void)state;
	assert_non_null(text);
	conf_defaults(&c);
	strcpy(text, "[agent]\nserver = ");
	memset(text + strlen(text), 'x', big);
	strcpy(text + 17 + big, "\nworkers = 7\n");
	assert_int_equal(load_string(&c, text, &errs), -EINVAL);
	assert_int_equal(errs.n, 1);
	assert_string_equal(errs.msgs[0], "mem:2: line too long (more than 4096 bytes)");
	/* The line after the huge one is still read. */
	assert_int_equal(c.workers, 7);
	assert_null(c.server);
	ini_errors_free(&errs);
	ini_free(table, ARRAY_SIZE(table), &c);
	free(text);
}

static void test_nul_byte(void **state)
{
	static const char text[] = "[agent]\nserver = a\0b\nworkers = 3\n";
	FILE *f = fmemopen((void *)text, sizeof(text) - 1, "r");
	struct ini_errors errs = { 0 };
	struct conf c;

	(void)state;
	conf_defaults(&c);
	assert_int_equal(ini_load_stream(table, ARRAY_SIZE(table), &c, f, "mem", &errs), -EINVAL);
	fclose(f);
	assert_int_equal(errs.n, 1);
	assert_string_equal(errs.msgs[0], "mem:2: line contains a NUL byte");
	assert_int_equal(c.workers, 3);
	ini_errors_free(&errs);
	ini_free(table, ARRAY_SIZE(table), &c);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_dropins(void **state)
{
	char dir[256], path[300], p[400];
	struct ini_errors errs = { 0 };
	struct conf c;

	(void)state;
	/* In the build tree, so a failed run leaves its files to look at. */
	snprintf(dir, sizeof(dir), "%s/ini-XXXXXX", getenv("KMEM_TEST_TMP"));
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/agent.conf", dir);
	write_file(path, "[agent]\nserver = main\nworkers = 2\n[labels]\nrole = db\n");
	snprintf(p, sizeof(p), "%s.d", path);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s.d/20-late.conf", path);
	write_file(p, "[agent]\nserver = late\n");
	snprintf(p, sizeof(p), "%s.d/10-early.conf", path);
	write_file(p, "[agent]\nserver = early\nworkers = 4\n[labels]\nzone = b\n");
	snprintf(p, sizeof(p), "%s.d/30-ignored.txt", path);
	write_file(p, "garbage that is never read\n");
	snprintf(p, sizeof(p), "%s.d/40-bad.conf", path);
	write_file(p, "[agent]\nworkers = 0\n");

	conf_defaults(&c);
	assert_int_equal(ini_load(table, ARRAY_SIZE(table), &c, path, &errs), -EINVAL);
	assert_int_equal(errs.n, 1);
	assert_non_null(strstr(errs.msgs[0], "40-bad.conf:2: bad value '0' for 'workers'"));
	assert_string_equal(c.server, "late");
	assert_int_equal(c.workers, 4);
	assert_string_equal(ini_map_get(&c.labels, "role"), "db");
	assert_string_equal(ini_map_get(&c.labels, "zone"), "b");
	ini_errors_free(&errs);
	ini_free(table, ARRAY_SIZE(table), &c);

	snprintf(p, sizeof(p), "%s/missing.conf", dir);
	conf_defaults(&c);
	assert_int_equal(ini_load(table, ARRAY_SIZE(table), &c, p, &errs), -ENOENT);
	assert_int_equal(errs.n, 1);
	assert_non_null(strstr(errs.msgs[0], "missing.conf: cannot open: No such file"));
	ini_errors_free(&errs);
}

static void test_units(void **state)
{
	uint64_t v;
	bool b;

	(void)state;
	assert_int_equal(ini_parse_duration("250ms", &v), 0);
	assert_int_equal(v, 250);
	assert_int_equal(ini_parse_duration("10", &v), 0);
	assert_int_equal(v, 10000);
	assert_int_equal(ini_parse_duration("2h", &v), 0);
	assert_int_equal(v, 7200000);
	assert_int_equal(ini_parse_duration("1w", &v), -EINVAL);
	assert_int_equal(ini_parse_duration("-1s", &v), -EINVAL);
	assert_int_equal(ini_parse_duration("", &v), -EINVAL);
	assert_int_equal(ini_parse_duration("99999999999999999999d", &v), -ERANGE);
	assert_int_equal(ini_parse_duration("999999999999999999d", &v), -ERANGE);
	assert_int_equal(ini_parse_size("64k", &v), 0);
	assert_int_equal(v, 65536);
	assert_int_equal(ini_parse_size("8M", &v), 0);
	assert_int_equal(v, 8 << 20);
	assert_int_equal(ini_parse_size("8MB", &v), -EINVAL);
	assert_int_equal(ini_parse_size("17179869184G", &v), -ERANGE);
	assert_int_equal(ini_parse_uint("12x", &v), -EINVAL);
	assert_int_equal(ini_parse_uint(" 12", &v), -EINVAL);
	assert_int_equal(ini_parse_bool("On", &b), 0);
	assert_true(b);
	assert_int_equal(ini_parse_bool("nope", &b), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden),	 cmocka_unit_test(test_huge_line),
		cmocka_unit_test(test_nul_byte), cmocka_unit_test(test_dropins),
		cmocka_unit_test(test_units),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

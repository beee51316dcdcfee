// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "macro.h"
#include "spool.h"

static char dir[4096];

static int setup(void **state)
{
	_cleanup_free_ char *cmd = NULL;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/spool-test", getenv("KMEM_TEST_TMP"));
	if (asprintf(&cmd, "rm -rf '%s'", dir) < 0)
		return -1;
	return system(cmd) == 0 ? 0 : -1;
}

static void put_file(const char *name, const char *text)
{
	_cleanup_free_ char *path = NULL;
	FILE *f;

	assert_true(asprintf(&path, "%s/%s", dir, name) > 0);
	f = fopen(path, "we");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void expect_oldest(struct spool *s, uint64_t seq, const char *text)
{
	void *data;
	uint64_t got;
	size_t len;

	assert_int_equal(spool_oldest(s, &got, &data, &len), 0);
	assert_int_equal(got, seq);
	assert_int_equal(len, strlen(text));
	assert_memory_equal(data, text, len);
	free(data);
}

/* Oldest first, removed on acknowledgement, kept across a restart. */
static void test_order_and_ack(void **state)
{
	struct spool s;
	void *data;
	uint64_t seq;
	size_t len;

	(void)setup(state);
	assert_int_equal(spool_open(&s, dir, 1000), 0);
	assert_int_equal(spool_oldest(&s, &seq, &data, &len), -ENOENT);
	assert_int_equal(spool_add(&s, 5, "five", 4), 0);
	assert_int_equal(spool_add(&s, 6, "six", 3), 0);
	assert_int_equal(spool_add(&s, 9, "nine", 4), 0);
	assert_int_equal(spool_add(&s, 9, "again", 5), -EINVAL);
	assert_int_equal(spool_add(&s, 8, "older", 5), -EINVAL);
	assert_int_equal(spool_add(&s, 10, "", 0), -EINVAL);
	assert_int_equal(s.bytes, 11);
	expect_oldest(&s, 5, "five");
	assert_int_equal(spool_ack(&s, 5), 0);
	expect_oldest(&s, 6, "six");
	spool_close(&s);

	assert_int_equal(spool_open(&s, dir, 1000), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.bytes, 7);
	expect_oldest(&s, 6, "six");
	/* an ack past everything empties it */
	assert_int_equal(spool_ack(&s, 100), 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(s.bytes, 0);
	assert_int_equal(spool_oldest(&s, &seq, &data, &len), -ENOENT);
	assert_int_equal(s.dropped, 0);
	spool_close(&s);
}

/* Full: the oldest go first, and each drop is counted. */
static void test_bound(void **state)
{
	char report[40];
	struct spool s;
	uint64_t i;

	(void)setup(state);
	assert_int_equal(spool_open(&s, dir, 100), 0);
	memset(report, 'r', sizeof(report));
	for (i = 1; i <= 5; i++)
		assert_int_equal(spool_add(&s, i, report, sizeof(report)), 0);
	/* 100 bytes hold two reports of 40 */
	assert_int_equal(s.n, 2);
	assert_int_equal(s.dropped, 3);
	assert_true(s.bytes <= 100);
	assert_int_equal(s.entries[0].seq, 4);
	assert_int_equal(spool_add(&s, 6, report, 101), -EFBIG);
	assert_int_equal(s.dropped, 4);
	assert_int_equal(s.n, 2);
	spool_close(&s);

	/* a lower bound at the next start drops the oldest too */
	assert_int_equal(spool_open(&s, dir, 50), 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.entries[0].seq, 5);
	assert_int_equal(s.dropped, 1);
	spool_close(&s);
}

/* Files that are not reports are skipped and counted, and left alone. */
static void test_foreign_files(void **state)
{
	_cleanup_free_ char *path = NULL;
	struct spool s;
	struct stat st;
	uint64_t seq;

	(void)setup(state);
	assert_int_equal(spool_open(&s, dir, 1000), 0);
	assert_int_equal(spool_add(&s, 3, "three", 5), 0);
	spool_close(&s);
	put_file("notes.txt", "hello");
	put_file("0000000000000000000x.report", "bad digits");
	put_file("123.report", "short name");
	put_file("00000000000000000004.report", "");
	put_file("99999999999999999999.report", "seq overflow");
	/* a write the agent never finished */
	put_file(".00000000000000000007.report.tmp", "half");
	assert_true(asprintf(&path, "%s/00000000000000000008.report", dir) > 0);
	assert_int_equal(mkdir(path, 0700), 0);

	assert_int_equal(spool_open(&s, dir, 1000), 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.skipped, 6);
	expect_oldest(&s, 3, "three");
	free(path);
	assert_true(asprintf(&path, "%s/notes.txt", dir) > 0);
	assert_int_equal(stat(path, &st), 0);
	free(path);
	assert_true(asprintf(&path, "%s/.00000000000000000007.report.tmp", dir) > 0);
	assert_int_equal(stat(path, &st), -1);
	/* seq 3 is the newest report, so 4 may follow */
	assert_int_equal(spool_add(&s, 4, "four", 4), 0);
	spool_close(&s);
	/*
	 * What a restart without its stored seq goes on from: every name that
	 * looks like a report counts (the directory 8 too), since going on
	 * past one is always safe.
	 */
	assert_int_equal(spool_newest_seq(dir, &seq), 0);
	assert_int_equal(seq, 8);
	free(path);
	assert_true(asprintf(&path, "%s/nowhere", dir) > 0);
	assert_int_equal(spool_newest_seq(path, &seq), -ENOENT);
	assert_int_equal(seq, 0);
}

/* A report that vanished or shrank under the spool is an error, not garbage. */
static void test_truncated(void **state)
{
	_cleanup_free_ char *path = NULL;
	struct spool s;
	void *data;
	uint64_t seq;
	size_t len;

	(void)setup(state);
	assert_int_equal(spool_open(&s, dir, 1000), 0);
	assert_int_equal(spool_add(&s, 1, "a whole report", 14), 0);
	assert_true(asprintf(&path, "%s/00000000000000000001.report", dir) > 0);
	assert_int_equal(truncate(path, 3), 0);
	assert_int_equal(spool_oldest(&s, &seq, &data, &len), -EIO);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(spool_oldest(&s, &seq, &data, &len), -ENOENT);
	assert_int_equal(spool_ack(&s, 1), 0);
	assert_int_equal(s.n, 0);
	spool_close(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_and_ack),
		cmocka_unit_test(test_bound),
		cmocka_unit_test(test_foreign_files),
		cmocka_unit_test(test_truncated),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

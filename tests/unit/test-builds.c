// SPDX-License-Identifier: GPL-2.0
/*
 * agent/builds.c on a copy of tests/fixtures/host-6.1 given a build file:
 * which bundles in a builds directory reach the module's records file,
 * and that none of the refused ones stops the rest.
 */
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

#include "builds.h"
#include "fixture.h"
#include "macro.h"

#define NOW 1800000000

static const char build_file[] =
	"build_id 4f1a9c0d2e3b4a5968778695a4b3c2d1e0f1a2b3\n"
	"release 6.1.0-57-amd64\n"
	"version #1 SMP PREEMPT_DYNAMIC Debian 6.1.192-3 (2026-11-20)\n"
	"copy rstat-yield lp_rstat.c:flush_cpu 1111111111111111\n"
	"copy usercopy-fastpath usercopy_fastpath.c:kmem_check_object 2222222222222222\n"
	"func rstat-yield cgroup_rstat_flush_locked 1184 9a3c5e7f0b1d2f43\n"
	"func usercopy-fastpath __check_object_size 412 0123456789abcdef\n";

static const char head[] = "kmemctl-build-record 2\n"
			   "build_id %s\n"
			   "release 6.1.0-57-amd64\n"
			   "version #1 SMP PREEMPT_DYNAMIC Debian 6.1.192-3 (2026-11-20)\n"
			   "source linux-source-6.1 6.1.192-3\n"
			   "%s"
			   "%s"
			   "end\n";

/* The module's copies, as any kmemctl with the same copies makes records. */
static const char copies_same[] =
	"copy rstat-yield lp_rstat.c:flush_cpu 1111111111111111\n"
	"copy usercopy-fastpath usercopy_fastpath.c:kmem_check_object 2222222222222222\n";
/* A kmemctl whose usercopy copy changed. */
static const char copies_other[] =
	"copy rstat-yield lp_rstat.c:flush_cpu 1111111111111111\n"
	"copy usercopy-fastpath usercopy_fastpath.c:kmem_check_object 3333333333333333\n";

/* Only the usercopy function in common: the agent writes it, the module decides. */
static const char funcs_common[] =
	"func rstat-yield cgroup_rstat_flush_locked 1184 ffffffffffffffff\n"
	"func usercopy-fastpath __check_object_size 412 0123456789abcdef\n";
static const char funcs_other[] =
	"func rstat-yield cgroup_rstat_flush_locked 1200 9a3c5e7f0b1d2f43\n";

struct fixture {
	char root[4096], dir[4096];
	EVP_PKEY *key, *other;
	struct keyring kr;
	struct rootfs rfs;
};

static char *record(const char *copies, const char *build_id, const char *funcs)
{
	char *s;

	assert_true(asprintf(&s, head, build_id, copies, funcs) > 0);
	return s;
}

static void put_file(const struct fixture *f, const char *name, const void *data, size_t len)
{
	char path[8192];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", f->dir, name);
	fp = fopen(path, "we");
	assert_non_null(fp);
	assert_int_equal(fwrite(data, 1, len, fp), len);
	fclose(fp);
}

static void put_record(const struct fixture *f, EVP_PKEY *key, const char *name, const char *rec)
{
	Kmemctl__V1__BuildRecordPayload p = KMEMCTL__V1__BUILD_RECORD_PAYLOAD__INIT;
	uint8_t *bundle;
	size_t len;

	p.record = (char *)rec;
	p.issued_unix = NOW - 60;
	p.signer = "ops@example";
	assert_int_equal(build_record_sign(key, &p, &bundle, &len), 0);
	put_file(f, name, bundle, len);
	free(bundle);
}

static void records_file(const struct fixture *f, char *buf, size_t size)
{
	assert_true(rootfs_read(&f->rfs, "/sys/kernel/kmemctl/records", buf, size) >= 0);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_int_equal(fixture_copy("builds-root", f->root, sizeof(f->root)), 0);
	fixture_put(f->root, "/sys/kernel/kmemctl/build", build_file);
	fixture_put(f->root, "/sys/kernel/kmemctl/records", "");
	assert_int_equal(rootfs_open_root(&f->rfs, f->root), 0);
	snprintf(f->dir, sizeof(f->dir), "%s/builds-XXXXXX", getenv("KMEM_TEST_TMP"));
	assert_non_null(mkdtemp(f->dir));
	assert_int_equal(sign_keygen(&f->key), 0);
	assert_int_equal(sign_keygen(&f->other), 0);
	assert_int_equal(keyring_add(&f->kr, f->key), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char *cmd;

	assert_true(asprintf(&cmd, "rm -rf '%s'", f->dir) > 0);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	rootfs_close(&f->rfs);
	keyring_free(&f->kr);
	EVP_PKEY_free(f->key);
	EVP_PKEY_free(f->other);
	free(f);
	return 0;
}

static void test_admits_only_what_concerns_this_kernel(void **state)
{
	struct fixture *f = *state;
	char *good = record(copies_same, "4f1a9c0d", funcs_common);
	char *other_build = record(copies_same, "77aa", funcs_other);
	char *other_copies = record(copies_other, "4f1a9c0d", funcs_common);
	char buf[4096];
	struct builds_tally t;

	put_record(f, f->key, "a-other-build.bundle", other_build);
	put_record(f, f->key, "b-other-copies.bundle", other_copies);
	put_record(f, f->key, "c-good.bundle", good);
	/* not a bundle by its name: never read */
	put_file(f, "notes.txt", "garbage", 7);
	t = builds_admit(&f->rfs, &f->kr, f->dir, NOW);
	assert_int_equal(t.admitted, 1);
	assert_int_equal(t.refused, 0);
	assert_int_equal(t.skipped, 2);
	records_file(f, buf, sizeof(buf));
	assert_string_equal(buf, good);
	free(good);
	free(other_build);
	free(other_copies);
}

/* Each of these is refused, none stops the good one after it. */
static void test_refusals_never_stop_the_rest(void **state)
{
	struct fixture *f = *state;
	Kmemctl__V1__PolicyPayload pol = KMEMCTL__V1__POLICY_PAYLOAD__INIT;
	char *good = record(copies_same, "4f1a9c0d", funcs_common);
	char path[8192], buf[4096];
	struct builds_tally t;
	uint8_t *policy;
	size_t len;

	/* a valid signed policy, by a pinned key: not a build record */
	pol.name = "rstat-canary";
	pol.version = 3;
	pol.document_json = "{\"mitigations\":{\"rstat-yield\":{\"mode\":\"on\"}}}";
	pol.issued_unix = NOW - 60;
	pol.not_after_unix = NOW + 86400;
	pol.signer = "ops@example";
	assert_int_equal(policy_sign(f->key, &pol, &policy, &len), 0);
	put_file(f, "a-policy.bundle", policy, len);
	free(policy);
	put_record(f, f->other, "b-unpinned.bundle", good);
	put_record(f, f->key, "c-malformed.bundle", "kmemctl-build-record 2\nbuild_id 00\n");
	put_file(f, "d-garbage.bundle", "\x0a\xff\xff", 3);
	snprintf(path, sizeof(path), "%s/e-fifo.bundle", f->dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	snprintf(path, sizeof(path), "%s/f-dir.bundle", f->dir);
	assert_int_equal(mkdir(path, 0700), 0);
	put_record(f, f->key, "g-good.bundle", good);
	t = builds_admit(&f->rfs, &f->kr, f->dir, NOW);
	assert_int_equal(t.refused, 6);
	assert_int_equal(t.admitted, 1);
	assert_int_equal(t.skipped, 0);
	records_file(f, buf, sizeof(buf));
	assert_string_equal(buf, good);
	/* issued beyond the clock's skew: refused */
	t = builds_admit(&f->rfs, &f->kr, f->dir, NOW - 3600);
	assert_int_equal(t.refused, 7);
	assert_int_equal(t.admitted, 0);
	free(good);
}

/* A write the module fails is a refusal, and the next bundle still goes. */
static void test_module_refuses(void **state)
{
	struct fixture *f = *state;
	char *good = record(copies_same, "4f1a9c0d", funcs_common);
	char path[8192];
	struct builds_tally t;

	put_record(f, f->key, "good.bundle", good);
	snprintf(path, sizeof(path), "%s/sys/kernel/kmemctl/records", f->root);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkdir(path, 0700), 0);
	t = builds_admit(&f->rfs, &f->kr, f->dir, NOW);
	assert_int_equal(t.refused, 1);
	assert_int_equal(t.admitted, 0);
	free(good);
}

/* No module, another ABI, or no directory: nothing is written, nothing fails. */
static void test_nothing_to_write_to(void **state)
{
	struct fixture *f = *state;
	char *good = record(copies_same, "4f1a9c0d", funcs_common);
	char path[8192], buf[4096];
	struct builds_tally t;

	put_record(f, f->key, "good.bundle", good);
	fixture_put(f->root, "/sys/kernel/kmemctl/abi", "3\n");
	t = builds_admit(&f->rfs, &f->kr, f->dir, NOW);
	assert_int_equal(t.admitted + t.refused + t.skipped, 0);
	fixture_put(f->root, "/sys/kernel/kmemctl/abi", "5\n");
	snprintf(path, sizeof(path), "%s/sys/kernel/kmemctl/build", f->root);
	assert_int_equal(unlink(path), 0);
	t = builds_admit(&f->rfs, &f->kr, f->dir, NOW);
	assert_int_equal(t.admitted + t.refused + t.skipped, 0);
	fixture_put(f->root, "/sys/kernel/kmemctl/build", "build_id xyz\n");
	t = builds_admit(&f->rfs, &f->kr, f->dir, NOW);
	assert_int_equal(t.admitted + t.refused + t.skipped, 0);
	fixture_put(f->root, "/sys/kernel/kmemctl/build", build_file);
	snprintf(path, sizeof(path), "%s/none", f->dir);
	t = builds_admit(&f->rfs, &f->kr, path, NOW);
	assert_int_equal(t.admitted + t.refused + t.skipped, 0);
	records_file(f, buf, sizeof(buf));
	assert_string_equal(buf, "");
	free(good);
}

/* Bundles from kmemd: kept once under their digest when pinned and well formed, then admitted. */
static void test_keep_from_kmemd(void **state)
{
	struct fixture *f = *state;
	Kmemctl__V1__BuildRecordPayload p = KMEMCTL__V1__BUILD_RECORD_PAYLOAD__INIT;
	char *good = record(copies_same, "4f1a9c0d", funcs_common);
	char kept[8192], cmd[8300], buf[4096];
	uint8_t *bundle, *stranger;
	size_t len, slen;
	struct builds_tally t;
	FILE *ls;

	p.record = good;
	p.issued_unix = NOW - 60;
	p.signer = "ops@example";
	assert_int_equal(build_record_sign(f->key, &p, &bundle, &len), 0);
	assert_int_equal(build_record_sign(f->other, &p, &stranger, &slen), 0);
	/* the directory is made on the first one */
	snprintf(kept, sizeof(kept), "%s/kmemd", f->dir);
	assert_int_equal(builds_keep(&f->kr, kept, bundle, len, NOW), 1);
	assert_int_equal(builds_keep(&f->kr, kept, bundle, len, NOW), 0);
	/* an unpinned key, a policy's bytes, garbage, a record that does not parse: refused */
	assert_true(builds_keep(&f->kr, kept, stranger, slen, NOW) < 0);
	assert_true(builds_keep(&f->kr, kept, (const uint8_t *)"\x0a\xff", 2, NOW) < 0);
	p.record = "kmemctl-build-record 2\nbuild_id 00\n";
	free(stranger);
	assert_int_equal(build_record_sign(f->key, &p, &stranger, &slen), 0);
	assert_true(builds_keep(&f->kr, kept, stranger, slen, NOW) < 0);
	snprintf(cmd, sizeof(cmd), "ls '%s'", kept);
	ls = popen(cmd, "r");
	assert_non_null(ls);
	assert_non_null(fgets(buf, sizeof(buf), ls));
	assert_int_equal(strlen(buf), strlen("kmemd-0123456789abcdef0123456789abcdef.bundle\n"));
	assert_int_equal(strncmp(buf, "kmemd-", 6), 0);
	assert_null(fgets(buf, sizeof(buf), ls));
	pclose(ls);
	/* what was kept is admitted as any bundle is */
	t = builds_admit(&f->rfs, &f->kr, kept, NOW);
	assert_int_equal(t.admitted, 1);
	records_file(f, buf, sizeof(buf));
	assert_string_equal(buf, good);
	free(bundle);
	free(stranger);
	free(good);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_admits_only_what_concerns_this_kernel, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_refusals_never_stop_the_rest, setup, teardown),
		cmocka_unit_test_setup_teardown(test_module_refuses, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nothing_to_write_to, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keep_from_kmemd, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * agent/policy.c: signed bundles checked with real Ed25519 keys, applied
 * to a copy of the fixture tree's kmemctl.ko sysfs (test-kernel.c).
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

#include "fixture.h"
#include "macro.h"
#include "policy.h"

static char root[4096], statedir[4096];
static EVP_PKEY *key, *other_key;
static struct keyring kr;

static int setup(void **state)
{
	_cleanup_free_ char *cmd = NULL;

	(void)state;
	snprintf(statedir, sizeof(statedir), "%s/policy-state", getenv("KMEM_TEST_TMP"));
	if (fixture_copy("policy-root", root, sizeof(root)) < 0 ||
	    asprintf(&cmd, "rm -rf '%s' && mkdir '%s'", statedir, statedir) < 0 || system(cmd) != 0)
		return -1;
	if (sign_keygen(&key) < 0 || sign_keygen(&other_key) < 0 || keyring_add(&kr, key) < 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	keyring_free(&kr);
	EVP_PKEY_free(key);
	EVP_PKEY_free(other_key);
	return 0;
}

static void sign_doc(EVP_PKEY *k, const char *name, uint64_t version, int64_t issued,
		     int64_t not_after, const char *json, uint8_t **out, size_t *len)
{
	Kmemctl__V1__PolicyPayload p = KMEMCTL__V1__POLICY_PAYLOAD__INIT;

	p.name = (char *)name;
	p.version = version;
	p.document_json = (char *)json;
	p.issued_unix = issued;
	p.not_after_unix = not_after;
	p.signer = "test";
	assert_int_equal(policy_sign(k, &p, out, len), 0);
}

static int check(const uint8_t *buf, size_t len, const struct policy_version *cur,
		 struct policy_doc *doc, char *why)
{
	Kmemctl__V1__PolicyPayload *p = NULL;
	int r;

	why[0] = '\0';
	r = policy_check(&kr, buf, len, 1700000000, cur, &p, doc, why, POLICY_WHY_MAX);
	if (p)
		kmemctl__v1__policy_payload__free_unpacked(p, NULL);
	assert_true(r == 0 || why[0]);
	return r;
}

static void test_check(void **state)
{
	static const char json[] = "{\"mitigations\": {\"rstat-yield\": {\"mode\": \"on\"}}}";
	struct policy_version cur = { .name = "fleet", .version = 5 };
	struct policy_doc doc;
	char why[POLICY_WHY_MAX];
	uint8_t *buf;
	size_t len;

	(void)state;
	sign_doc(key, "fleet", 6, 1700000000, 0, json, &buf, &len);
	assert_int_equal(check(buf, len, &cur, &doc, why), 0);
	assert_int_equal(doc.nmitigations, 1);
	/* tampered: one byte of the signed payload, which comes first */
	buf[10] ^= 1;
	assert_int_equal(check(buf, len, &cur, &doc, why), -EBADMSG);
	assert_non_null(strstr(why, "not a validly signed policy"));
	assert_int_equal(check(buf, 0, &cur, &doc, why), -EBADMSG);
	free(buf);

	sign_doc(other_key, "fleet", 6, 1700000000, 0, json, &buf, &len);
	assert_int_equal(check(buf, len, &cur, &doc, why), -ENOKEY);
	free(buf);
	sign_doc(key, "fleet", 6, 1600000000, 1690000000, json, &buf, &len);
	assert_int_equal(check(buf, len, &cur, &doc, why), -EKEYEXPIRED);
	free(buf);
	sign_doc(key, "fleet", 6, 1700009999, 0, json, &buf, &len);
	assert_int_equal(check(buf, len, &cur, &doc, why), -ETIME);
	free(buf);
	/* older than what runs: a replay cannot roll the host back */
	sign_doc(key, "fleet", 4, 1700000000, 0, json, &buf, &len);
	assert_int_equal(check(buf, len, &cur, &doc, why), -ESTALE);
	assert_non_null(strstr(why, "older than version 5"));
	free(buf);
	sign_doc(key, "fleet", 5, 1700000000, 0, json, &buf, &len);
	assert_int_equal(check(buf, len, &cur, &doc, why), 0);
	free(buf);
	sign_doc(key, "fleet", 7, 1700000000, 0, "{\"mitigations\": {\"x\": {\"mode\": 1}}}", &buf,
		 &len);
	assert_int_equal(check(buf, len, &cur, &doc, why), -EINVAL);
	assert_non_null(strstr(why, "fleet version 7: mitigations.x.mode"));
	free(buf);
	/* a name kmemd refuses reports for: too long, bad characters, empty */
	sign_doc(key, "1234567890123456789012345678901234567890123456789012345678901234", 1,
		 1700000000, 0, json, &buf, &len);
	assert_int_equal(check(buf, len, &cur, &doc, why), -EINVAL);
	assert_string_equal(why, "the policy name is not 1 to 63 of [A-Za-z0-9._-]");
	free(buf);
	sign_doc(key, "fleet base", 1, 1700000000, 0, json, &buf, &len);
	assert_int_equal(check(buf, len, &cur, &doc, why), -EINVAL);
	assert_non_null(strstr(why, "policy name"));
	free(buf);
	sign_doc(key, "", 1, 1700000000, 0, json, &buf, &len);
	assert_int_equal(check(buf, len, &cur, &doc, why), -EINVAL);
	assert_non_null(strstr(why, "policy name"));
	free(buf);
}

static void file_is(const char *rel, const char *want)
{
	_cleanup_free_ char *path = NULL;
	char buf[256] = "";
	FILE *f;
	size_t n;

	assert_true(asprintf(&path, "%s%s", root, rel) > 0);
	f = fopen(path, "re");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	assert_string_equal(buf, want);
}

static int open_state(void)
{
	int fd = open(statedir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	assert_true(fd >= 0);
	return fd;
}

static bool intent_left(int dirfd)
{
	return faccessat(dirfd, "intent", F_OK, 0) == 0;
}

static void test_apply(void **state)
{
	static const char json[] =
		"{\"mitigations\": {"
		"  \"rstat-yield\": {\"mode\": \"on\", \"params\": {\"every_cpus\": 2}},"
		"  \"usercopy-fastpath\": {\"mode\": \"on\"},"
		"  \"kasan-quarantine\": {\"mode\": \"on\"},"
		"  \"tlb-gen\": {\"mode\": \"on\"},"
		"  \"from-a-newer-module\": {\"mode\": \"on\"},"
		"  \"kasan-flush-batch\": {\"params\": {\"batch\": 3}}"
		"}, \"probes\": {"
		"  \"vmap-purge\": {\"threshold_ns\": 5000000},"
		"  \"kasan-reduce\": {\"enabled\": true},"
		"  \"rstat-flush\": {\"enabled\": true}"
		"}}";
	static const enum policy_result want[] = {
		POLICY_UNCHANGED, POLICY_APPLIED, POLICY_SKIPPED, POLICY_SKIPPED,   POLICY_SKIPPED,
		POLICY_FAILED,	  POLICY_APPLIED, POLICY_SKIPPED, POLICY_UNCHANGED,
	};
	struct policy_outcome out[2 * POLICY_MAX_ENTRIES];
	struct rootfs rfs;
	struct policy_doc doc;
	char err[256];
	size_t n, i;
	int dirfd = open_state();

	(void)state;
	assert_int_equal(policy_doc_parse(json, strlen(json), &doc, err, sizeof(err)), 0);
	assert_int_equal(rootfs_open_root(&rfs, root), 0);
	assert_int_equal(policy_apply(&rfs, dirfd, &doc, NULL, out, &n), 0);
	assert_int_equal(n, ARRAY_SIZE(want));
	for (i = 0; i < n; i++)
		if (out[i].result != want[i])
			fail_msg("%s: result %d, want %d (%s)", out[i].id, out[i].result, want[i],
				 out[i].why);
	assert_string_equal(out[2].why, "unsupported: CONFIG_KASAN_GENERIC is not set");
	assert_string_equal(out[3].why, "native: fixed since 6.0");
	assert_string_equal(out[4].why, "this kmemctl.ko has no such mitigation");
	assert_string_equal(out[5].why, "no param \"batch\" here");
	file_is("/sys/kernel/kmemctl/mitigations/usercopy-fastpath/mode", "on");
	file_is("/sys/kernel/kmemctl/probes/vmap-purge/threshold_ns", "5000000");
	assert_false(intent_left(dirfd));

	/* a changed param is written; a quarantined mitigation is left alone */
	static const char json2[] =
		"{\"mitigations\": {\"rstat-yield\": {\"params\": {\"every_cpus\": 8}},"
		"  \"usercopy-fastpath\": {\"mode\": \"off\"}}}";
	static const char *const quarantined[] = { "usercopy-fastpath", NULL };

	assert_int_equal(policy_doc_parse(json2, strlen(json2), &doc, err, sizeof(err)), 0);
	assert_int_equal(policy_apply(&rfs, dirfd, &doc, quarantined, out, &n), 0);
	assert_int_equal(out[0].result, POLICY_APPLIED);
	assert_int_equal(out[1].result, POLICY_SKIPPED);
	file_is("/sys/kernel/kmemctl/mitigations/rstat-yield/params", "every_cpus=8\n");
	file_is("/sys/kernel/kmemctl/mitigations/usercopy-fastpath/mode", "on");
	rootfs_close(&rfs);
	close(dirfd);
}

/* A write that left the mitigation tripped did not apply. */
static void test_verify(void **state)
{
	static const char on[] = "{\"mitigations\": {\"usercopy-fastpath\": {\"mode\": \"on\"}}}";
	static const char off[] = "{\"mitigations\": {\"usercopy-fastpath\": {\"mode\": \"off\"}}}";
	const char *mit = "/sys/kernel/kmemctl/mitigations/usercopy-fastpath";
	struct policy_outcome out[2 * POLICY_MAX_ENTRIES];
	char err[256], path[256];
	struct policy_doc doc;
	struct rootfs rfs;
	size_t n;
	int dirfd = open_state();

	(void)state;
	assert_int_equal(rootfs_open_root(&rfs, root), 0);
	assert_int_equal(policy_doc_parse(off, strlen(off), &doc, err, sizeof(err)), 0);
	assert_int_equal(policy_apply(&rfs, dirfd, &doc, NULL, out, &n), 0);
	assert_int_not_equal(out[0].result, POLICY_FAILED);

	/* the module turned it off by itself as it went on */
	snprintf(path, sizeof(path), "%s/state", mit);
	fixture_put(root, path, "tripped\n");
	snprintf(path, sizeof(path), "%s/reason", mit);
	fixture_put(root, path, "tripped: 3 faults in the fast path\n");
	assert_int_equal(policy_doc_parse(on, strlen(on), &doc, err, sizeof(err)), 0);
	assert_int_equal(policy_apply(&rfs, dirfd, &doc, NULL, out, &n), 0);
	assert_int_equal(out[0].result, POLICY_FAILED);
	assert_string_equal(out[0].why, "tripped: 3 faults in the fast path");

	assert_false(intent_left(dirfd));
	snprintf(path, sizeof(path), "%s/state", mit);
	fixture_put(root, path, "off\n");
	snprintf(path, sizeof(path), "%s/mode", mit);
	fixture_put(root, path, "off\n");
	snprintf(path, sizeof(path), "%s/reason", mit);
	fixture_put(root, path, "off: supported on this kernel\n");
	rootfs_close(&rfs);
	close(dirfd);
}

/* An intent left by a run that died names the change to quarantine. */
static void test_recover(void **state)
{
	char id[POLICY_ID_MAX + 1];
	int dirfd = open_state(), fd;

	(void)state;
	assert_int_equal(policy_recover(dirfd, id, sizeof(id)), 0);
	fd = openat(dirfd, "intent", O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_int_equal(write(fd, "rstat-yield mode on\n", 20), 20);
	close(fd);
	assert_int_equal(policy_recover(dirfd, id, sizeof(id)), 1);
	assert_string_equal(id, "rstat-yield");
	assert_false(intent_left(dirfd));
	assert_int_equal(policy_recover(dirfd, id, sizeof(id)), 0);

	fd = openat(dirfd, "intent", O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_int_equal(write(fd, "../../x mode on\n", 16), 16);
	close(fd);
	assert_int_equal(policy_recover(dirfd, id, sizeof(id)), -EBADMSG);
	assert_false(intent_left(dirfd));
	fd = openat(dirfd, "intent", O_WRONLY | O_CREAT | O_TRUNC, 0600);
	close(fd);
	assert_int_equal(policy_recover(dirfd, id, sizeof(id)), -EBADMSG);
	assert_false(intent_left(dirfd));
	close(dirfd);
}

static void test_quarantine(void **state)
{
	struct policy_version v3 = { .name = "fleet", .version = 3 };
	struct policy_version v4 = { .name = "fleet", .version = 4 };
	struct policy_version other = { .name = "other", .version = 3 };
	struct policy_version none = { 0 }, spaced = { .name = "a b", .version = 1 };
	char store[4][POLICY_ID_MAX + 1];
	const char *ids[4];
	int dirfd = open_state(), fd;

	(void)state;
	assert_int_equal(policy_quarantine_list(dirfd, &v3, store, ids, 4), 0);
	assert_null(ids[0]);
	assert_int_equal(policy_quarantine_add(dirfd, "rstat-yield", &v3), 0);
	assert_int_equal(policy_quarantine_add(dirfd, "usercopy-fastpath", &v4), 0);
	assert_int_equal(policy_quarantine_add(dirfd, "tlb-gen", &none), 0);
	assert_int_equal(policy_quarantine_add(dirfd, "../x", &v3), -EINVAL);
	assert_int_equal(policy_quarantine_add(dirfd, "x", &spaced), -EINVAL);
	/* a damaged line is nobody's */
	fd = openat(dirfd, "quarantine", O_WRONLY | O_APPEND);
	assert_int_equal(write(fd, "garbage\n../y fleet 3\nz fleet x\n", 31), 31);
	close(fd);
	assert_int_equal(policy_quarantine_add(dirfd, "kasan-quarantine", &v3), 0);

	assert_int_equal(policy_quarantine_list(dirfd, &v3, store, ids, 4), 2);
	assert_string_equal(ids[0], "rstat-yield");
	assert_string_equal(ids[1], "kasan-quarantine");
	assert_null(ids[2]);
	assert_int_equal(policy_quarantine_list(dirfd, &v4, store, ids, 4), 1);
	assert_string_equal(ids[0], "usercopy-fastpath");
	assert_int_equal(policy_quarantine_list(dirfd, &other, store, ids, 4), 0);
	assert_int_equal(policy_quarantine_list(dirfd, &none, store, ids, 4), 1);
	assert_string_equal(ids[0], "tlb-gen");
	/* room for one id and the NULL */
	assert_int_equal(policy_quarantine_list(dirfd, &v3, store, ids, 2), 1);
	assert_null(ids[1]);
	close(dirfd);
}

static void test_store(void **state)
{
	int dirfd = open_state(), fd;
	uint8_t *buf;
	size_t len;

	(void)state;
	assert_int_equal(policy_load(dirfd, &buf, &len), -ENOENT);
	assert_int_equal(policy_store(dirfd, (const uint8_t *)"bundle", 6), 0);
	assert_int_equal(policy_store(dirfd, (const uint8_t *)"newer bundle", 12), 0);
	assert_int_equal(policy_load(dirfd, &buf, &len), 0);
	assert_int_equal(len, 12);
	assert_memory_equal(buf, "newer bundle", 12);
	free(buf);
	assert_int_equal(faccessat(dirfd, ".policy.signed.tmp", F_OK, 0), -1);
	fd = openat(dirfd, "policy.signed", O_WRONLY | O_TRUNC);
	close(fd);
	assert_int_equal(policy_load(dirfd, &buf, &len), -EBADMSG);
	close(dirfd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check),	cmocka_unit_test(test_apply),
		cmocka_unit_test(test_recover), cmocka_unit_test(test_quarantine),
		cmocka_unit_test(test_store),	cmocka_unit_test(test_verify),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

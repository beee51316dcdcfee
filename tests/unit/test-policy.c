// SPDX-License-Identifier: GPL-2.0
/*
 * agent/policy.c: signed bundles checked with real Ed25519 keys, the
 * quarantine and the last known good bundle. Applying them is enact.c's
 * (test-enact.c).
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

#include "macro.h"
#include "policy.h"

static char statedir[4096];
static EVP_PKEY *key, *other_key;
static struct keyring kr;

static int setup(void **state)
{
	_cleanup_free_ char *cmd = NULL;

	(void)state;
	snprintf(statedir, sizeof(statedir), "%s/policy-state", getenv("KMEM_TEST_TMP"));
	if (asprintf(&cmd, "rm -rf '%s' && mkdir '%s'", statedir, statedir) < 0 || system(cmd) != 0)
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

static int open_state(void)
{
	int fd = open(statedir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	assert_true(fd >= 0);
	return fd;
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
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_quarantine),
		cmocka_unit_test(test_store),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

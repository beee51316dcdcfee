// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "pki.h"
#include "sign.h"

#define NOW 1800000000

struct fixture {
	EVP_PKEY *key, *other;
	struct keyring kr;
	uint8_t *bundle;
	size_t len;
};

static void payload_init(Kmemctl__V1__PolicyPayload *p)
{
	kmemctl__v1__policy_payload__init(p);
	p->name = "rstat-canary";
	p->version = 3;
	p->document_json = "{\"mitigations\":{\"rstat-yield\":{\"mode\":\"on\"}}}";
	p->issued_unix = NOW - 60;
	p->not_after_unix = NOW + 86400;
	p->signer = "ops@example";
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	Kmemctl__V1__PolicyPayload p;

	assert_non_null(f);
	assert_int_equal(sign_keygen(&f->key), 0);
	assert_int_equal(sign_keygen(&f->other), 0);
	assert_int_equal(keyring_add(&f->kr, f->key), 0);
	payload_init(&p);
	assert_int_equal(policy_sign(f->key, &p, &f->bundle, &f->len), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	keyring_free(&f->kr);
	EVP_PKEY_free(f->key);
	EVP_PKEY_free(f->other);
	free(f->bundle);
	free(f);
	return 0;
}

static void test_roundtrip(void **state)
{
	struct fixture *f = *state;
	Kmemctl__V1__PolicyPayload *p = NULL;

	assert_int_equal(policy_verify(&f->kr, f->bundle, f->len, NOW, &p), 0);
	assert_string_equal(p->name, "rstat-canary");
	assert_int_equal(p->version, 3);
	assert_string_equal(p->document_json,
			    "{\"mitigations\":{\"rstat-yield\":{\"mode\":\"on\"}}}");
	kmemctl__v1__policy_payload__free_unpacked(p, NULL);
}

/* Every single-bit change anywhere in the bundle must be refused. */
static void test_tamper_every_bit(void **state)
{
	struct fixture *f = *state;
	uint8_t *copy = malloc(f->len);

	assert_non_null(copy);
	for (size_t i = 0; i < f->len; i++) {
		for (int bit = 0; bit < 8; bit++) {
			Kmemctl__V1__PolicyPayload *p = NULL;
			int r;

			memcpy(copy, f->bundle, f->len);
			copy[i] ^= (uint8_t)(1 << bit);
			r = policy_verify(&f->kr, copy, f->len, NOW, &p);
			if (r == 0)
				fail_msg("flipping bit %d of byte %zu was accepted", bit, i);
			assert_true(r == -EBADMSG || r == -ENOKEY);
		}
	}
	free(copy);
}

static void test_truncated(void **state)
{
	struct fixture *f = *state;
	Kmemctl__V1__PolicyPayload *p = NULL;

	for (size_t len = 0; len < f->len; len++)
		assert_int_not_equal(policy_verify(&f->kr, f->bundle, len, NOW, &p), 0);
	assert_int_equal(policy_verify(&f->kr, (const uint8_t *)"garbage!", 8, NOW, &p), -EBADMSG);
}

static void test_unknown_key(void **state)
{
	struct fixture *f = *state;
	struct keyring other = { 0 };
	Kmemctl__V1__PolicyPayload *p = NULL;

	assert_int_equal(keyring_add(&other, f->other), 0);
	assert_int_equal(policy_verify(&other, f->bundle, f->len, NOW, &p), -ENOKEY);
	keyring_free(&other);
	assert_int_equal(policy_verify(&other, f->bundle, f->len, NOW, &p), -ENOKEY);
}

/* A signature by one key presented under another key's id fails. */
static void test_wrong_signer_same_id(void **state)
{
	struct fixture *f = *state;
	Kmemctl__V1__PolicyPayload p, *out = NULL;
	Kmemctl__V1__SignedPolicy *sp;
	char id[SIGN_KEY_ID_LEN + 1];
	uint8_t *forged, *enc;
	size_t len, enc_len;
	char *orig_id;

	payload_init(&p);
	p.version = 99;
	assert_int_equal(policy_sign(f->other, &p, &forged, &len), 0);
	sp = kmemctl__v1__signed_policy__unpack(NULL, len, forged);
	assert_non_null(sp);
	assert_int_equal(sign_key_id(f->key, id), 0);
	orig_id = sp->key_id;
	sp->key_id = id;
	enc_len = kmemctl__v1__signed_policy__get_packed_size(sp);
	enc = malloc(enc_len);
	kmemctl__v1__signed_policy__pack(sp, enc);
	sp->key_id = orig_id;
	assert_int_equal(policy_verify(&f->kr, enc, enc_len, NOW, &out), -EBADMSG);
	kmemctl__v1__signed_policy__free_unpacked(sp, NULL);
	free(enc);
	free(forged);
}

static void test_time(void **state)
{
	struct fixture *f = *state;
	Kmemctl__V1__PolicyPayload p, *out = NULL;
	uint8_t *b;
	size_t len;

	assert_int_equal(policy_verify(&f->kr, f->bundle, f->len, NOW + 86400, &out), -EKEYEXPIRED);
	payload_init(&p);
	p.issued_unix = NOW + SIGN_MAX_SKEW_S + 10;
	assert_int_equal(policy_sign(f->key, &p, &b, &len), 0);
	assert_int_equal(policy_verify(&f->kr, b, len, NOW, &out), -ETIME);
	free(b);
	payload_init(&p);
	p.not_after_unix = 0; /* never expires */
	assert_int_equal(policy_sign(f->key, &p, &b, &len), 0);
	assert_int_equal(policy_verify(&f->kr, b, len, NOW + 10 * 365 * 86400L, &out), 0);
	kmemctl__v1__policy_payload__free_unpacked(out, NULL);
	free(b);
}

static void test_keyring(void **state)
{
	struct fixture *f = *state;
	struct keyring kr = { 0 };
	char dir[256], path[300];
	EVP_PKEY *ec = NULL;

	snprintf(dir, sizeof(dir), "%s/keys-XXXXXX", getenv("KMEM_TEST_TMP"));
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/a.pem", dir);
	assert_int_equal(sign_write_public(path, f->key), 0);
	snprintf(path, sizeof(path), "%s/b.pem", dir);
	assert_int_equal(sign_write_public(path, f->other), 0);
	assert_int_equal(keyring_load_dir(&kr, dir), 0);
	assert_int_equal(kr.n, 2);
	assert_int_equal(keyring_add(&kr, f->key), -EEXIST);
	keyring_free(&kr);

	/* A P-256 key is not a policy key. */
	assert_int_equal(pki_keygen(PKI_ROLE_SERVER, &ec), 0);
	assert_int_equal(keyring_add(&kr, ec), -EINVAL);
	snprintf(path, sizeof(path), "%s/c.pem", dir);
	assert_int_equal(sign_write_public(path, ec), 0);
	assert_int_equal(keyring_load_dir(&kr, dir), -EINVAL);
	keyring_free(&kr);
	EVP_PKEY_free(ec);

	snprintf(path, sizeof(path), "%s/c.pem", dir);
	FILE *fp = fopen(path, "we");
	fputs("-----BEGIN PUBLIC KEY-----\nnot base64\n-----END PUBLIC KEY-----\n", fp);
	fclose(fp);
	assert_int_equal(keyring_load_dir(&kr, dir), -EBADMSG);
	keyring_free(&kr);
	assert_int_equal(keyring_load_dir(&kr, "/nonexistent-dir"), -ENOENT);
}

static const char record[] = "kmemctl-build-record 2\nbuild_id ab\nrelease r\n"
			     "version v\nsource linux-source-6.1 6.1.192-3\nend\n";

static int sign_record(EVP_PKEY *key, int64_t issued, uint8_t **out, size_t *len)
{
	Kmemctl__V1__BuildRecordPayload p = KMEMCTL__V1__BUILD_RECORD_PAYLOAD__INIT;

	p.record = (char *)record;
	p.issued_unix = issued;
	p.signer = "ops@example";
	return build_record_sign(key, &p, out, len);
}

static void test_build_record(void **state)
{
	struct fixture *f = *state;
	Kmemctl__V1__BuildRecordPayload *p = NULL;
	uint8_t *b, *copy;
	size_t len;

	assert_int_equal(sign_record(f->key, NOW - 60, &b, &len), 0);
	assert_int_equal(build_record_verify(&f->kr, b, len, NOW, &p), 0);
	assert_string_equal(p->record, record);
	assert_string_equal(p->signer, "ops@example");
	kmemctl__v1__build_record_payload__free_unpacked(p, NULL);
	copy = malloc(len);
	assert_non_null(copy);
	for (size_t i = 0; i < len; i++)
		for (int bit = 0; bit < 8; bit++) {
			memcpy(copy, b, len);
			copy[i] ^= (uint8_t)(1 << bit);
			if (build_record_verify(&f->kr, copy, len, NOW, &p) == 0)
				fail_msg("flipping bit %d of byte %zu was accepted", bit, i);
		}
	free(copy);
	for (size_t n = 0; n < len; n++)
		assert_int_not_equal(build_record_verify(&f->kr, b, n, NOW, &p), 0);
	free(b);
	assert_int_equal(sign_record(f->other, NOW - 60, &b, &len), 0);
	assert_int_equal(build_record_verify(&f->kr, b, len, NOW, &p), -ENOKEY);
	free(b);
	assert_int_equal(sign_record(f->key, NOW + SIGN_MAX_SKEW_S + 10, &b, &len), 0);
	assert_int_equal(build_record_verify(&f->kr, b, len, NOW, &p), -ETIME);
	free(b);
}

/*
 * The two bundles share their wire layout (payload, signature, key id),
 * so only the signature's domain keeps one from passing as the other.
 */
static void test_record_and_policy_apart(void **state)
{
	struct fixture *f = *state;
	Kmemctl__V1__BuildRecordPayload *rp = NULL;
	Kmemctl__V1__PolicyPayload *pp = NULL;
	uint8_t *b;
	size_t len;

	assert_int_equal(policy_verify(&f->kr, f->bundle, f->len, NOW, &pp), 0);
	kmemctl__v1__policy_payload__free_unpacked(pp, NULL);
	assert_int_equal(build_record_verify(&f->kr, f->bundle, f->len, NOW, &rp), -EBADMSG);
	assert_null(rp);
	assert_int_equal(sign_record(f->key, NOW - 60, &b, &len), 0);
	pp = NULL;
	assert_int_equal(policy_verify(&f->kr, b, len, NOW, &pp), -EBADMSG);
	assert_null(pp);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_roundtrip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tamper_every_bit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_truncated, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wrong_signer_same_id, setup, teardown),
		cmocka_unit_test_setup_teardown(test_time, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keyring, setup, teardown),
		cmocka_unit_test_setup_teardown(test_build_record, setup, teardown),
		cmocka_unit_test_setup_teardown(test_record_and_policy_apart, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

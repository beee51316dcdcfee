// SPDX-License-Identifier: GPL-2.0
/*
 * Signed policy bundles as the agent's root parent takes them:
 * policy_check() unpacks the SignedPolicy, verifies it against the
 * keyring (policy_verify()), unpacks the PolicyPayload, checks the name,
 * version and expiry and parses the document. A fixed test key is pinned
 * so that the corpus holds bundles that verify. A fuzzed bundle rarely
 * keeps a valid signature, so its payload (or, when the input is no
 * bundle, the input as the document) is signed again with the test key
 * and checked once more: that reaches the checks behind the signature,
 * and a bundle signed with a pinned key must not fail as badly signed
 * unless its payload does not decode.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "policy.h"

/* After every bundle in the corpus was issued, before any expires that expires at all. */
#define NOW ((time_t)2000000000)

/* The test key's private half; tests/fuzz/corpus/bundle/ is signed with it. */
static const uint8_t test_seed[32] = {
	0x6b, 0x6d, 0x65, 0x6d, 0x63, 0x74, 0x6c, 0x2d, 0x66, 0x75, 0x7a,
	0x7a, 0x2d, 0x74, 0x65, 0x73, 0x74, 0x2d, 0x6b, 0x65, 0x79, 0x2d,
	0x6e, 0x6f, 0x74, 0x2d, 0x73, 0x65, 0x63, 0x72, 0x65, 0x74,
};

static const struct policy_version running = { .name = "fuzz", .version = 5 };

static EVP_PKEY *test_key(struct keyring *kr)
{
	static EVP_PKEY *key;

	if (key)
		return key;
	key = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, test_seed, sizeof(test_seed));
	FUZZ_CHECK(key);
	FUZZ_CHECK(keyring_add(kr, key) == 0);
	return key;
}

static int check(const struct keyring *kr, const uint8_t *buf, size_t len)
{
	Kmemctl__V1__PolicyPayload *p = NULL;
	struct policy_doc doc;
	char why[POLICY_WHY_MAX] = "";
	int r;

	r = policy_check(kr, buf, len, NOW, &running, &p, &doc, why, sizeof(why));
	if (r < 0) {
		FUZZ_CHECK(why[0] && !p);
		return r;
	}
	FUZZ_CHECK(p && policy_name_valid(p->name));
	FUZZ_CHECK(strcmp(p->name, running.name) || p->version >= running.version);
	FUZZ_CHECK(!p->not_after_unix || p->not_after_unix > NOW);
	FUZZ_CHECK(p->issued_unix <= NOW + SIGN_MAX_SKEW_S);
	FUZZ_CHECK(doc.nmitigations <= POLICY_MAX_ENTRIES && doc.nprobes <= POLICY_MAX_ENTRIES);
	for (size_t i = 0; i < doc.nmitigations; i++)
		FUZZ_CHECK(policy_id_valid(doc.mitigations[i].id));
	for (size_t i = 0; i < doc.nprobes; i++)
		FUZZ_CHECK(policy_id_valid(doc.probes[i].id));
	kmemctl__v1__policy_payload__free_unpacked(p, NULL);
	return 0;
}

/*
 * Whether payload, packed, unpacks again. Not always: protobuf-c takes
 * field number 0 in a tag of two bytes as an unknown field, packs it in
 * one byte and then refuses it (in the corpus: bundle/field-zero).
 */
static bool decodes(const Kmemctl__V1__PolicyPayload *payload)
{
	size_t len = kmemctl__v1__policy_payload__get_packed_size(payload);
	uint8_t *buf = malloc(len ? len : 1);
	Kmemctl__V1__PolicyPayload *p;

	FUZZ_CHECK(buf);
	kmemctl__v1__policy_payload__pack(payload, buf);
	p = kmemctl__v1__policy_payload__unpack(NULL, len, buf);
	free(buf);
	if (p)
		kmemctl__v1__policy_payload__free_unpacked(p, NULL);
	return p != NULL;
}

/* The input's payload, or the input as the document of a new one, signed with the test key. */
static void check_resigned(EVP_PKEY *key, const struct keyring *kr, const uint8_t *data,
			   size_t size)
{
	Kmemctl__V1__PolicyPayload fresh = KMEMCTL__V1__POLICY_PAYLOAD__INIT, *p = NULL;
	Kmemctl__V1__SignedPolicy *sp = kmemctl__v1__signed_policy__unpack(NULL, size, data);
	uint8_t *bundle = NULL;
	char *doc = NULL;
	size_t len;
	int r;

	if (sp)
		p = kmemctl__v1__policy_payload__unpack(NULL, sp->payload.len, sp->payload.data);
	if (!p) {
		doc = strndup((const char *)data, size);
		FUZZ_CHECK(doc);
		fresh.name = "fuzz";
		fresh.version = 6;
		fresh.document_json = doc;
	}
	FUZZ_CHECK(policy_sign(key, p ? p : &fresh, &bundle, &len) == 0);
	r = check(kr, bundle, len);
	FUZZ_CHECK(r != -ENOKEY);
	FUZZ_CHECK(r != -EBADMSG || !decodes(p ? p : &fresh));
	free(bundle);
	free(doc);
	if (p)
		kmemctl__v1__policy_payload__free_unpacked(p, NULL);
	if (sp)
		kmemctl__v1__signed_policy__free_unpacked(sp, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct keyring kr;
	EVP_PKEY *key = test_key(&kr);

	check(&kr, data, size);
	check_resigned(key, &kr, data, size);
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Ed25519 signatures over policy bundles (see proto/kmemctl/v1/policy.proto).
 *
 * Operators sign offline; agents verify against a keyring of pinned public
 * keys. The signature covers the encoded PolicyPayload bytes exactly as they
 * travel, so verification never re-encodes anything.
 */
#ifndef KMEMCTL_SIGN_H
#define KMEMCTL_SIGN_H

#include <openssl/evp.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "kmemctl/v1/build.pb-c.h"
#include "kmemctl/v1/policy.pb-c.h"

#define SIGN_KEY_ID_LEN 16 /* hex characters */
#define SIGN_SIG_LEN 64
/* Allowed clock difference between signer and verifier for issued_unix. */
#define SIGN_MAX_SKEW_S 300

struct keyring {
	EVP_PKEY **keys;
	char (*ids)[SIGN_KEY_ID_LEN + 1];
	size_t n;
};

int sign_keygen(EVP_PKEY **out);
int sign_key_id(EVP_PKEY *key, char id[SIGN_KEY_ID_LEN + 1]);
int sign_read_public(const char *path, EVP_PKEY **out);
int sign_write_public(const char *path, EVP_PKEY *key);

int sign_data(EVP_PKEY *key, const void *data, size_t len, uint8_t sig[SIGN_SIG_LEN]);
/* 0 when sig is a valid signature of data by key, -EBADMSG otherwise. */
int sign_verify(EVP_PKEY *key, const void *data, size_t len, const uint8_t *sig, size_t sig_len);

/* Add a public key (a reference is taken). -EEXIST for a duplicate id. */
int keyring_add(struct keyring *kr, EVP_PKEY *key);
/* Load every *.pem public key in dir. */
int keyring_load_dir(struct keyring *kr, const char *dir);
void keyring_free(struct keyring *kr);

/* Encode payload, sign it and return an encoded SignedPolicy (malloc'ed). */
int policy_sign(EVP_PKEY *key, const Kmemctl__V1__PolicyPayload *payload, uint8_t **out,
		size_t *out_len);

/*
 * Verify an encoded SignedPolicy and decode its payload.
 * -EBADMSG: not a SignedPolicy, bad signature, or undecodable payload;
 * -ENOKEY: key id not in the keyring; -EKEYEXPIRED: past not_after;
 * -ETIME: issued in the future beyond SIGN_MAX_SKEW_S.
 * On success *payload must be freed with kmemctl__v1__policy_payload__free_unpacked.
 */
int policy_verify(const struct keyring *kr, const uint8_t *buf, size_t len, time_t now,
		  Kmemctl__V1__PolicyPayload **payload);

/*
 * Build record bundles (proto/kmemctl/v1/build.proto): the same keys, but
 * the signature covers BUILD_RECORD_DOMAIN and then the payload, so a
 * policy signature never verifies as a record's, nor the reverse.
 */
#define BUILD_RECORD_DOMAIN "kmemctl build record v1\n"

int build_record_sign(EVP_PKEY *key, const Kmemctl__V1__BuildRecordPayload *payload, uint8_t **out,
		      size_t *out_len);
/*
 * As policy_verify(), for an encoded SignedBuildRecord. On success
 * *payload must be freed with kmemctl__v1__build_record_payload__free_unpacked.
 */
int build_record_verify(const struct keyring *kr, const uint8_t *buf, size_t len, time_t now,
			Kmemctl__V1__BuildRecordPayload **payload);

#endif

// SPDX-License-Identifier: GPL-2.0
#include <dirent.h>
#include <errno.h>
#include <openssl/pem.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "sign.h"

int sign_keygen(EVP_PKEY **out)
{
	*out = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	return *out ? 0 : -EIO;
}

int sign_key_id(EVP_PKEY *key, char id[SIGN_KEY_ID_LEN + 1])
{
	unsigned char raw[32], md[32];
	size_t len = sizeof(raw);

	if (EVP_PKEY_get_id(key) != EVP_PKEY_ED25519)
		return -EINVAL;
	if (!EVP_PKEY_get_raw_public_key(key, raw, &len) || len != sizeof(raw))
		return -EINVAL;
	if (!EVP_Digest(raw, len, md, NULL, EVP_sha256(), NULL))
		return -EIO;
	for (int i = 0; i < SIGN_KEY_ID_LEN / 2; i++)
		snprintf(id + 2 * i, 3, "%02x", md[i]);
	return 0;
}

int sign_read_public(const char *path, EVP_PKEY **out)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	EVP_PKEY *key;

	if (!f)
		return negative_errno();
	key = PEM_read_PUBKEY(f, NULL, NULL, NULL);
	if (!key)
		return -EBADMSG;
	if (EVP_PKEY_get_id(key) != EVP_PKEY_ED25519) {
		EVP_PKEY_free(key);
		return -EINVAL;
	}
	*out = key;
	return 0;
}

int sign_write_public(const char *path, EVP_PKEY *key)
{
	_cleanup_fclose_ FILE *f = fopen(path, "we");

	if (!f)
		return negative_errno();
	if (!PEM_write_PUBKEY(f, key))
		return -EIO;
	return fflush(f) == 0 ? 0 : -EIO;
}

int sign_data(EVP_PKEY *key, const void *data, size_t len, uint8_t sig[SIGN_SIG_LEN])
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	size_t sig_len = SIGN_SIG_LEN;
	int ok;

	if (!ctx)
		return -ENOMEM;
	/* Ed25519 hashes internally: no digest, one-shot only. */
	ok = EVP_DigestSignInit(ctx, NULL, NULL, NULL, key) == 1 &&
	     EVP_DigestSign(ctx, sig, &sig_len, data, len) == 1 && sig_len == SIGN_SIG_LEN;
	EVP_MD_CTX_free(ctx);
	return ok ? 0 : -EINVAL;
}

int sign_verify(EVP_PKEY *key, const void *data, size_t len, const uint8_t *sig, size_t sig_len)
{
	EVP_MD_CTX *ctx;
	int ok;

	if (sig_len != SIGN_SIG_LEN)
		return -EBADMSG;
	ctx = EVP_MD_CTX_new();
	if (!ctx)
		return -ENOMEM;
	ok = EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, key) == 1 &&
	     EVP_DigestVerify(ctx, sig, sig_len, data, len) == 1;
	EVP_MD_CTX_free(ctx);
	return ok ? 0 : -EBADMSG;
}

int keyring_add(struct keyring *kr, EVP_PKEY *key)
{
	char id[SIGN_KEY_ID_LEN + 1];
	EVP_PKEY **keys;
	char(*ids)[SIGN_KEY_ID_LEN + 1];
	int r = sign_key_id(key, id);

	if (r < 0)
		return r;
	for (size_t i = 0; i < kr->n; i++)
		if (strcmp(kr->ids[i], id) == 0)
			return -EEXIST;
	keys = realloc(kr->keys, (kr->n + 1) * sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	kr->keys = keys;
	ids = realloc(kr->ids, (kr->n + 1) * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	kr->ids = ids;
	if (!EVP_PKEY_up_ref(key))
		return -EIO;
	kr->keys[kr->n] = key;
	memcpy(kr->ids[kr->n], id, sizeof(id));
	kr->n++;
	return 0;
}

static int pem_filter(const struct dirent *d)
{
	size_t len = strlen(d->d_name);

	return d->d_name[0] != '.' && len > 4 && strcmp(d->d_name + len - 4, ".pem") == 0;
}

int keyring_load_dir(struct keyring *kr, const char *dir)
{
	struct dirent **list;
	int n = scandir(dir, &list, pem_filter, alphasort), r = 0;

	if (n < 0)
		return negative_errno();
	for (int i = 0; i < n; i++) {
		_cleanup_free_ char *path = NULL;
		EVP_PKEY *key = NULL;

		if (r == 0 && asprintf(&path, "%s/%s", dir, list[i]->d_name) < 0)
			r = -ENOMEM;
		if (r == 0)
			r = sign_read_public(path, &key);
		if (r == 0) {
			r = keyring_add(kr, key);
			EVP_PKEY_free(key);
		}
		free(list[i]);
	}
	free(list);
	return r;
}

void keyring_free(struct keyring *kr)
{
	for (size_t i = 0; i < kr->n; i++)
		EVP_PKEY_free(kr->keys[i]);
	free(kr->keys);
	free(kr->ids);
	*kr = (struct keyring){ 0 };
}

int policy_sign(EVP_PKEY *key, const Kmemctl__V1__PolicyPayload *payload, uint8_t **out,
		size_t *out_len)
{
	Kmemctl__V1__SignedPolicy sp = KMEMCTL__V1__SIGNED_POLICY__INIT;
	_cleanup_free_ uint8_t *buf = NULL;
	char id[SIGN_KEY_ID_LEN + 1];
	uint8_t sig[SIGN_SIG_LEN], *enc;
	size_t len = kmemctl__v1__policy_payload__get_packed_size(payload);
	int r;

	r = sign_key_id(key, id);
	if (r < 0)
		return r;
	buf = malloc(len ? len : 1);
	if (!buf)
		return -ENOMEM;
	kmemctl__v1__policy_payload__pack(payload, buf);
	r = sign_data(key, buf, len, sig);
	if (r < 0)
		return r;
	sp.payload = (ProtobufCBinaryData){ len, buf };
	sp.signature = (ProtobufCBinaryData){ sizeof(sig), sig };
	sp.key_id = id;
	*out_len = kmemctl__v1__signed_policy__get_packed_size(&sp);
	enc = malloc(*out_len);
	if (!enc)
		return -ENOMEM;
	kmemctl__v1__signed_policy__pack(&sp, enc);
	*out = enc;
	return 0;
}

static EVP_PKEY *keyring_find(const struct keyring *kr, const char *id)
{
	for (size_t i = 0; i < kr->n; i++)
		if (strcmp(kr->ids[i], id) == 0)
			return kr->keys[i];
	return NULL;
}

int policy_verify(const struct keyring *kr, const uint8_t *buf, size_t len, time_t now,
		  Kmemctl__V1__PolicyPayload **payload)
{
	Kmemctl__V1__SignedPolicy *sp = kmemctl__v1__signed_policy__unpack(NULL, len, buf);
	Kmemctl__V1__PolicyPayload *p = NULL;
	EVP_PKEY *key;
	int r = -EBADMSG;

	if (!sp)
		return -EBADMSG;
	key = keyring_find(kr, sp->key_id);
	if (!key) {
		r = -ENOKEY;
		goto out;
	}
	r = sign_verify(key, sp->payload.data, sp->payload.len, sp->signature.data,
			sp->signature.len);
	if (r < 0)
		goto out;
	p = kmemctl__v1__policy_payload__unpack(NULL, sp->payload.len, sp->payload.data);
	if (!p) {
		r = -EBADMSG;
		goto out;
	}
	if (p->not_after_unix && p->not_after_unix <= now)
		r = -EKEYEXPIRED;
	else if (p->issued_unix > now + SIGN_MAX_SKEW_S)
		r = -ETIME;
	if (r < 0) {
		kmemctl__v1__policy_payload__free_unpacked(p, NULL);
		goto out;
	}
	*payload = p;
out:
	kmemctl__v1__signed_policy__free_unpacked(sp, NULL);
	return r;
}

/* BUILD_RECORD_DOMAIN then the payload: what a record's signature covers. */
static uint8_t *domain_message(const uint8_t *payload, size_t len, size_t *out_len)
{
	size_t dlen = strlen(BUILD_RECORD_DOMAIN);
	uint8_t *m = malloc(dlen + len + 1);

	if (!m)
		return NULL;
	memcpy(m, BUILD_RECORD_DOMAIN, dlen);
	if (len)
		memcpy(m + dlen, payload, len);
	*out_len = dlen + len;
	return m;
}

int build_record_sign(EVP_PKEY *key, const Kmemctl__V1__BuildRecordPayload *payload, uint8_t **out,
		      size_t *out_len)
{
	Kmemctl__V1__SignedBuildRecord sb = KMEMCTL__V1__SIGNED_BUILD_RECORD__INIT;
	size_t len = kmemctl__v1__build_record_payload__get_packed_size(payload), mlen;
	_cleanup_free_ uint8_t *buf = NULL, *msg = NULL;
	char id[SIGN_KEY_ID_LEN + 1];
	uint8_t sig[SIGN_SIG_LEN], *enc;
	int r;

	r = sign_key_id(key, id);
	if (r < 0)
		return r;
	buf = malloc(len ? len : 1);
	if (!buf)
		return -ENOMEM;
	kmemctl__v1__build_record_payload__pack(payload, buf);
	msg = domain_message(buf, len, &mlen);
	if (!msg)
		return -ENOMEM;
	r = sign_data(key, msg, mlen, sig);
	if (r < 0)
		return r;
	sb.payload = (ProtobufCBinaryData){ len, buf };
	sb.signature = (ProtobufCBinaryData){ sizeof(sig), sig };
	sb.key_id = id;
	*out_len = kmemctl__v1__signed_build_record__get_packed_size(&sb);
	enc = malloc(*out_len);
	if (!enc)
		return -ENOMEM;
	kmemctl__v1__signed_build_record__pack(&sb, enc);
	*out = enc;
	return 0;
}

int build_record_verify(const struct keyring *kr, const uint8_t *buf, size_t len, time_t now,
			Kmemctl__V1__BuildRecordPayload **payload)
{
	Kmemctl__V1__SignedBuildRecord *sb =
		kmemctl__v1__signed_build_record__unpack(NULL, len, buf);
	Kmemctl__V1__BuildRecordPayload *p;
	_cleanup_free_ uint8_t *msg = NULL;
	size_t mlen;
	EVP_PKEY *key;
	int r;

	if (!sb)
		return -EBADMSG;
	key = keyring_find(kr, sb->key_id);
	msg = domain_message(sb->payload.data, sb->payload.len, &mlen);
	r = !key ? -ENOKEY : !msg ? -ENOMEM : 0;
	if (r == 0)
		r = sign_verify(key, msg, mlen, sb->signature.data, sb->signature.len);
	p = r == 0 ? kmemctl__v1__build_record_payload__unpack(NULL, sb->payload.len,
							       sb->payload.data) :
		     NULL;
	if (r == 0 && !p)
		r = -EBADMSG;
	if (r == 0 && p->issued_unix > now + SIGN_MAX_SKEW_S)
		r = -ETIME;
	kmemctl__v1__signed_build_record__free_unpacked(sb, NULL);
	if (r < 0) {
		if (p)
			kmemctl__v1__build_record_payload__free_unpacked(p, NULL);
		return r;
	}
	*payload = p;
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/* Revoked hosts and operator certificates, in memory (revocations.h). */
#include <errno.h>
#include <openssl/lhash.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "kmemd.h"
#include "log.h"
#include "revocations.h"
#include "store.h"

/* "h" and a host id, or "o" and a fingerprint: one set for both kinds */
struct revocations {
	OPENSSL_LHASH *keys;
};

static unsigned long key_hash(const void *p)
{
	return OPENSSL_LH_strhash(p);
}

static int key_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

static void key_free(void *p)
{
	free(p);
}

void revocations_free(struct revocations *r)
{
	if (!r)
		return;
	if (r->keys) {
		OPENSSL_LH_doall(r->keys, key_free);
		OPENSSL_LH_free(r->keys);
	}
	free(r);
}

static int add(void *arg, char kind, const char *key)
{
	struct revocations *r = arg;
	size_t n = strlen(key);
	char *k = malloc(n + 2), *old;

	if (!k)
		return -ENOMEM;
	k[0] = kind;
	memcpy(k + 1, key, n + 1);
	old = OPENSSL_LH_insert(r->keys, k);
	/* a key twice (the store has none): the one it replaced goes */
	if (old) {
		free(old);
		return 0;
	}
	if (OPENSSL_LH_retrieve(r->keys, k) != k) {
		free(k);
		return -ENOMEM;
	}
	return 0;
}

static bool has(const struct revocations *r, char kind, const char *key)
{
	char probe[256];

	if (!r || snprintf(probe, sizeof(probe), "%c%s", kind, key) >= (int)sizeof(probe))
		return false;
	return OPENSSL_LH_retrieve(r->keys, probe) != NULL;
}

void revocations_close(struct kmemd *k)
{
	if (revocations_refresh(k) < 0)
		log_error("reading the revocations failed: %s; the revoked certificate's open "
			  "connections close at the next rollout tick",
			  k->store->ops->error(k->store));
}

bool revocations_host(const struct revocations *r, const char *host_id)
{
	return has(r, 'h', host_id);
}

bool revocations_operator(const struct revocations *r, const char *fingerprint)
{
	return has(r, 'o', fingerprint);
}

unsigned long revocations_count(const struct revocations *r)
{
	return r ? OPENSSL_LH_num_items(r->keys) : 0;
}

int revocations_refresh(struct kmemd *k)
{
	struct revocations *r = calloc(1, sizeof(*r));
	unsigned long before = revocations_count(k->revoked);
	int ret;

	if (!r)
		return -ENOMEM;
	r->keys = OPENSSL_LH_new(key_hash, key_cmp);
	ret = r->keys ? k->store->ops->revocations(k->store, add, r) : -ENOMEM;
	if (ret < 0) {
		revocations_free(r);
		return ret;
	}
	revocations_free(k->revoked);
	k->revoked = r;
	/* revocations are for good: a set that grew holds a new one */
	if (revocations_count(r) > before) {
		if (before)
			log_info("%lu new revocations: closing the connections they hold",
				 revocations_count(r) - before);
		conns_revisit();
	}
	return 0;
}

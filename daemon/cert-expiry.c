// SPDX-License-Identifier: GPL-2.0
/* The host certificates' expiry, in memory (cert-expiry.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cert-expiry.h"
#include "text.h"

struct cert_slot {
	uint64_t key; /* 0: empty */
	int64_t not_after_s, seen_ms;
};

static struct cert_slot *slot_of(struct cert_slot *slots, size_t cap, uint64_t key)
{
	size_t i = (size_t)(key ^ key >> 32) & (cap - 1);

	while (slots[i].key && slots[i].key != key)
		i = (i + 1) & (cap - 1);
	return &slots[i];
}

/* The table with cap slots, holding the entries of t that keep says to. */
static int rebuild(struct cert_expiry *t, size_t cap, int64_t since_ms)
{
	struct cert_slot *slots = calloc(cap, sizeof(*slots)), *s;
	size_t i, n = 0;

	if (!slots)
		return -ENOMEM;
	for (i = 0; i < t->cap; i++) {
		if (!t->slots[i].key || t->slots[i].seen_ms < since_ms)
			continue;
		s = slot_of(slots, cap, t->slots[i].key);
		*s = t->slots[i];
		n++;
	}
	free(t->slots);
	t->slots = slots;
	t->cap = cap;
	t->n = n;
	return 0;
}

int cert_expiry_note(struct cert_expiry *t, const char *host, int64_t not_after_s, int64_t now_ms)
{
	uint64_t key = text_hash(host);
	struct cert_slot *s;
	int r;

	/* at most half full: probes stay short */
	if (2 * (t->n + 1) > t->cap) {
		r = rebuild(t, t->cap ? 2 * t->cap : 64, INT64_MIN);
		if (r < 0)
			return r;
	}
	s = slot_of(t->slots, t->cap, key);
	if (!s->key) {
		s->key = key;
		t->n++;
	}
	s->not_after_s = not_after_s;
	s->seen_ms = now_ms;
	return 0;
}

int64_t cert_expiry_earliest(struct cert_expiry *t, int64_t now_ms, int64_t window_ms, size_t *n)
{
	int64_t since = now_ms - window_ms, earliest = 0;
	size_t i, stale = 0;

	*n = 0;
	for (i = 0; i < t->cap; i++) {
		if (!t->slots[i].key)
			continue;
		if (t->slots[i].seen_ms < since) {
			stale++;
			continue;
		}
		(*n)++;
		if (!earliest || t->slots[i].not_after_s < earliest)
			earliest = t->slots[i].not_after_s;
	}
	/* forgotten in one go; a table that cannot shrink now keeps them a scrape longer */
	if (stale)
		rebuild(t, t->cap, since);
	return earliest;
}

bool cert_expiry_seen(const struct cert_expiry *t, const char *host)
{
	return t->cap && slot_of(t->slots, t->cap, text_hash(host))->key;
}

void cert_expiry_free(struct cert_expiry *t)
{
	free(t->slots);
	*t = (struct cert_expiry){ 0 };
}

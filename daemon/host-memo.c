// SPDX-License-Identifier: GPL-2.0
#include <stdlib.h>
#include <string.h>

#include "host-memo.h"

struct host_memo_slot {
	char *host; /* NULL: free */
	struct host_memo_entry e;
};

/* FNV-1a 64: a host can only make its own rows stale by a collision */
static uint64_t mix(uint64_t h, const void *p, size_t len)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < len; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* A string and its end, so that "ab","c" and "a","bc" differ; NULL apart from "". */
static uint64_t mix_str(uint64_t h, const char *s)
{
	return s ? mix(h, s, strlen(s) + 1) : mix(h, "\xff", 1);
}

static uint64_t mix_u64(uint64_t h, uint64_t v)
{
	return mix(h, &v, sizeof(v));
}

#define SEED 0xcbf29ce484222325ULL

/* never 0, which means not known */
static uint64_t known(uint64_t h)
{
	return h ?: 1;
}

uint64_t host_memo_facts(const Kmemctl__V1__Report *rep)
{
	const Kmemctl__V1__HostFacts *f = rep->facts;
	uint64_t h = SEED;

	h = mix_str(h, f->hostname);
	h = mix_str(h, f->kernel_release);
	h = mix_str(h, f->kernel_build_id);
	h = mix_u64(h, f->possible_cpus);
	h = mix_u64(h, f->online_cpus);
	h = mix_u64(h, f->mem_total_bytes);
	h = mix_u64(h, f->kasan);
	h = mix_str(h, f->module_version);
	h = mix_u64(h, f->n_labels);
	for (size_t i = 0; i < f->n_labels; i++) {
		h = mix_str(h, f->labels[i]->key);
		h = mix_str(h, f->labels[i]->value);
	}
	h = mix_str(h, rep->policy_name);
	h = mix_u64(h, rep->off);
	h = mix_u64(h, rep->n_waiting_for_record);
	for (size_t i = 0; i < rep->n_waiting_for_record; i++)
		h = mix_str(h, rep->waiting_for_record[i]);
	return known(mix_u64(h, rep->policy_version));
}

uint64_t host_memo_states(const Kmemctl__V1__Report *rep)
{
	uint64_t h = mix_u64(SEED, rep->n_mitigations);

	for (size_t i = 0; i < rep->n_mitigations; i++) {
		const Kmemctl__V1__MitigationState *m = rep->mitigations[i];

		h = mix_str(h, m->id);
		h = mix_u64(h, (uint64_t)m->state);
		h = mix_u64(h, (uint64_t)m->mode);
		h = mix_u64(h, (uint64_t)m->source);
		h = mix_str(h, m->reason);
	}
	return known(h);
}

static size_t place(const struct host_memo *m, const char *host)
{
	return (size_t)mix_str(SEED, host) & (m->cap - 1);
}

static int grow(struct host_memo *m)
{
	size_t cap = m->cap ? m->cap * 2 : 1024, i, j;
	struct host_memo_slot *old = m->slot, *s = calloc(cap, sizeof(*s));

	if (!s)
		return -1;
	m->slot = s;
	for (i = 0, j = m->cap, m->cap = cap; i < j; i++) {
		size_t k;

		if (!old[i].host)
			continue;
		for (k = place(m, old[i].host); s[k].host; k = (k + 1) & (cap - 1))
			;
		s[k] = old[i];
	}
	free(old);
	return 0;
}

struct host_memo_entry *host_memo_get(struct host_memo *m, const char *host)
{
	size_t k;

	/* at most 3/4 full: probes stay short */
	if ((m->n + 1) * 4 > m->cap * 3 && grow(m) < 0)
		return NULL;
	for (k = place(m, host); m->slot[k].host; k = (k + 1) & (m->cap - 1))
		if (!strcmp(m->slot[k].host, host))
			return &m->slot[k].e;
	m->slot[k].host = strdup(host);
	if (!m->slot[k].host)
		return NULL;
	m->slot[k].e = (struct host_memo_entry){ 0 };
	m->n++;
	return &m->slot[k].e;
}

void host_memo_clear(struct host_memo *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->slot[i].host);
	free(m->slot);
	*m = (struct host_memo){ 0 };
}

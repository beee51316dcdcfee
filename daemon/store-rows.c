// SPDX-License-Identifier: GPL-2.0
/*
 * A report's probe histograms as one row (store-rows.h, docs/kmemd.md):
 * made by ingest, read by every reader of samples, in either backend.
 *
 * Binary, not JSON: readers find a host's rows through report_samples'
 * indexes and pick the probe they want here, with fixed-width fields and
 * no parser; schema 7's JSON cost each row a json_each() and a
 * json_extract() per field, which more than doubled the rollout engine's
 * and the dashboard's reads.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store-rows.h"

int buf_reserve(struct buf *b, size_t n)
{
	uint8_t *p;

	if (n <= b->cap)
		return 0;
	p = realloc(b->p, n);
	if (!p)
		return -ENOMEM;
	b->p = p;
	b->cap = n;
	return 0;
}

static void put_le64(uint8_t *p, uint64_t v)
{
	for (unsigned i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

void rs_begin(struct buf *probes, struct buf *counts)
{
	probes->p[0] = RS_FORMAT;
	probes->len = 1;
	counts->len = 0;
}

void rs_add(struct buf *probes, struct buf *counts, const struct rs_probe *x)
{
	uint8_t *p = probes->p + probes->len;

	p[0] = (uint8_t)x->name_len;
	memcpy(p + 1, x->name, x->name_len);
	p += 1 + x->name_len;
	p[0] = (uint8_t)x->first_bucket;
	p[1] = (uint8_t)x->nbuckets;
	put_le64(p + 2, (uint64_t)x->start_ms);
	put_le64(p + 10, x->count);
	put_le64(p + 18, x->sum_ns);
	put_le64(p + 26, x->max_ns);
	probes->len += rs_room(x->name_len);
	if (x->nbuckets)
		memcpy(counts->p + counts->len, x->buckets, x->nbuckets * 8);
	counts->len += x->nbuckets * 8;
}

int rs_open(struct rs_row *row, const void *probes, size_t len, const void *counts,
	    size_t counts_len, const char **why)
{
	const uint8_t *p = probes, *end = p + len;
	size_t used = 0;

	if (!len || p[0] != RS_FORMAT) {
		*why = len ? "not of a format this kmemd reads" : "empty";
		return -EBADMSG;
	}
	for (p++; p < end; p += rs_room(p[0])) {
		size_t n = p[0];
		unsigned first, nb;

		if ((size_t)(end - p) < rs_room(n)) {
			*why = "truncated";
			return -EBADMSG;
		}
		first = p[1 + n];
		nb = p[2 + n];
		if (first + nb > HIST_BUCKETS) {
			*why = "a probe's buckets out of range";
			return -EBADMSG;
		}
		if (nb * 8 > counts_len - used) {
			*why = "counts shorter than its probes say";
			return -EBADMSG;
		}
		used += nb * 8;
	}
	if (used != counts_len) {
		*why = "counts longer than its probes say";
		return -EBADMSG;
	}
	row->p = (const uint8_t *)probes + 1;
	row->end = end;
	row->counts = counts;
	return 0;
}

bool rs_next(struct rs_row *row, struct rs_probe *x)
{
	const uint8_t *p = row->p;

	if (p >= row->end)
		return false;
	x->name_len = p[0];
	x->name = (const char *)p + 1;
	p += 1 + x->name_len;
	x->first_bucket = p[0];
	x->nbuckets = p[1];
	x->start_ms = (int64_t)get_le64(p + 2);
	x->count = get_le64(p + 10);
	x->sum_ns = get_le64(p + 18);
	x->max_ns = get_le64(p + 26);
	x->buckets = row->counts;
	if (x->nbuckets)
		row->counts += x->nbuckets * 8;
	row->p = p + 34;
	return true;
}

bool rs_is(const struct rs_probe *x, const char *name)
{
	return strlen(name) == x->name_len && !memcmp(x->name, name, x->name_len);
}

void rs_hist(const struct rs_probe *x, struct hist *h)
{
	memset(h->buckets, 0, sizeof(h->buckets));
	if (x->nbuckets)
		memcpy(&h->buckets[x->first_bucket], x->buckets, x->nbuckets * 8);
	h->count = x->count;
	h->sum_ns = x->sum_ns;
	h->max_ns = x->max_ns;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

void rs_merge(struct hist *h, const struct rs_probe *x)
{
	uint64_t v;

	for (unsigned i = 0; i < x->nbuckets; i++) {
		memcpy(&v, x->buckets + i * 8, 8);
		h->buckets[x->first_bucket + i] = sat_add(h->buckets[x->first_bucket + i], v);
	}
	h->count = sat_add(h->count, x->count);
	h->sum_ns = sat_add(h->sum_ns, x->sum_ns);
	if (x->max_ns > h->max_ns)
		h->max_ns = x->max_ns;
}

int rs_reserve_report(struct buf *probes, struct buf *counts, const Kmemctl__V1__Report *rep)
{
	size_t np = 0, nc = 0, i;

	for (i = 0; i < rep->n_probes; i++) {
		const Kmemctl__V1__ProbeSample *p = rep->probes[i];
		size_t name = p->probe ? strlen(p->probe) : 0;

		if (!p->hist)
			continue;
		if (name > RS_NAME_MAX || p->hist->first_bucket > HIST_BUCKETS ||
		    p->hist->n_counts > HIST_BUCKETS - p->hist->first_bucket)
			return -EINVAL;
		/* the probe, and a row's format byte should it start one */
		np += 1 + rs_room(name);
		nc += p->hist->n_counts * 8;
	}
	return buf_reserve(probes, np ?: 1) ?: buf_reserve(counts, nc ?: 1);
}

void rs_add_sample(struct buf *probes, struct buf *counts, const Kmemctl__V1__ProbeSample *x)
{
	/* native-endian u64s: kmemd of one host architecture per store */
	rs_add(probes, counts,
	       &(struct rs_probe){ .name = x->probe ?: "",
				   .name_len = x->probe ? strlen(x->probe) : 0,
				   .start_ms = x->start_unix_ms,
				   .first_bucket = x->hist->first_bucket,
				   .nbuckets = (unsigned)x->hist->n_counts,
				   .buckets = (const uint8_t *)x->hist->counts,
				   .count = x->hist->count,
				   .sum_ns = x->hist->sum_ns,
				   .max_ns = x->hist->max_ns });
}

int rs_hour_add(struct rs_hour *hr, const struct rs_probe *p)
{
	struct rs_acc *a = NULL;
	size_t i;

	for (i = 0; i < hr->n && !a; i++)
		if (rs_is(p, hr->a[i].probe))
			a = &hr->a[i];
	if (!a) {
		if (hr->n == hr->cap) {
			size_t cap = hr->cap ? hr->cap * 2 : 8;
			struct rs_acc *m = realloc(hr->a, cap * sizeof(*m));

			if (!m)
				return -ENOMEM;
			hr->a = m;
			hr->cap = cap;
		}
		a = &hr->a[hr->n++];
		memset(a, 0, sizeof(*a));
		memcpy(a->probe, p->name, p->name_len);
	}
	rs_merge(&a->h, p);
	a->n++;
	return 0;
}

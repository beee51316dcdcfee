// SPDX-License-Identifier: GPL-2.0
/*
 * kmemd's SQLite store, a report's probe histograms as one report_samples
 * row (the format is in store-sqlite.h and docs/kmemd.md): made by ingest,
 * read by every reader of samples, and schema 7's rows converted to it.
 *
 * Binary, not JSON: readers find a host's rows through report_samples'
 * indexes and pick the probe they want here, with fixed-width fields and
 * no parser; schema 7's JSON cost each row a json_each() and a
 * json_extract() per field, which more than doubled the rollout engine's
 * and the dashboard's reads.
 */
#include <jansson.h>
#include <string.h>

#include "store-sqlite.h"

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

bool sq_row_open(struct sqlite_store *q, sqlite3_stmt *st, int col, const char *host,
		 int64_t end_ms, struct rs_row *row)
{
	const char *why;

	if (rs_open(row, sqlite3_column_blob(st, col), (size_t)sqlite3_column_bytes(st, col),
		    sqlite3_column_blob(st, col + 1), (size_t)sqlite3_column_bytes(st, col + 1),
		    &why) == 0)
		return true;
	q->skipped++;
	log_ratelimited(&q->skip_rl, LOG_WARNING,
			"store: the probe samples of '%s' ending at %lld are skipped: %s", host,
			(long long)end_ms, why);
	return false;
}

/* One probe of a schema-7 row: [start_ms, first_bucket, count, sum_ns, max_ns, offset, length]. */
static int json_probe(const char *name, json_t *a, size_t counts_len, struct rs_probe *x)
{
	json_int_t v[7];

	if (!json_is_array(a) || json_array_size(a) != 7 || strlen(name) > RS_NAME_MAX)
		return -EBADMSG;
	for (size_t i = 0; i < 7; i++) {
		if (!json_is_integer(json_array_get(a, i)))
			return -EBADMSG;
		v[i] = json_integer_value(json_array_get(a, i));
	}
	if (v[1] < 0 || v[1] > HIST_BUCKETS || v[5] < 0 || v[6] < 0 || v[6] % 8 ||
	    v[6] / 8 > HIST_BUCKETS - v[1] || (size_t)v[5] > counts_len ||
	    (size_t)v[6] > counts_len - (size_t)v[5])
		return -EBADMSG;
	*x = (struct rs_probe){ .name = name,
				.name_len = strlen(name),
				.start_ms = v[0],
				.first_bucket = (unsigned)v[1],
				.nbuckets = (unsigned)(v[6] / 8),
				.count = (uint64_t)v[2],
				.sum_ns = (uint64_t)v[3],
				.max_ns = (uint64_t)v[4] };
	return (int)v[5];
}

/* A schema-7 row as RS_FORMAT into probes and counts. */
static int json_row(const char *text, size_t len, const uint8_t *counts, size_t counts_len,
		    struct buf *probes, struct buf *out)
{
	json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL), *a;
	struct rs_probe x;
	const char *name;
	size_t room = 1;
	int r = json_is_object(o) ? 0 : -EBADMSG;

	json_object_foreach(o, name, a) room += rs_room(strlen(name));
	if (r == 0)
		r = buf_reserve(probes, room) ?: buf_reserve(out, counts_len ?: 1);
	if (r == 0)
		rs_begin(probes, out);
	json_object_foreach(o, name, a)
	{
		int off = r == 0 ? json_probe(name, a, counts_len, &x) : r;

		if (off < 0) {
			r = off;
			break;
		}
		x.buckets = counts + off;
		rs_add(probes, out, &x);
	}
	json_decref(o);
	return r;
}

int rs_migrate_json(sqlite3 *db)
{
	struct buf probes = { 0 }, counts = { 0 };
	sqlite3_stmt *rd = NULL, *wr = NULL;
	unsigned skipped = 0;
	int rc = SQLITE_DONE, r = 0;

	if (sqlite3_prepare_v2(db,
			       "SELECT host_id, end_ms, probes, counts FROM report_samples"
			       " ORDER BY rowid",
			       -1, &rd, NULL) ||
	    sqlite3_prepare_v2(db, "INSERT INTO report_samples8 VALUES (?1, ?2, ?3, ?4)", -1, &wr,
			       NULL))
		r = -EIO;
	while (r == 0 && (rc = sqlite3_step(rd)) == SQLITE_ROW) {
		int k = json_row((const char *)sqlite3_column_text(rd, 2),
				 (size_t)sqlite3_column_bytes(rd, 2), sqlite3_column_blob(rd, 3),
				 (size_t)sqlite3_column_bytes(rd, 3), &probes, &counts);

		if (k == -EBADMSG) {
			skipped++;
			continue;
		}
		if (k < 0) {
			r = k;
			break;
		}
		sqlite3_reset(wr);
		sqlite3_bind_value(wr, 1, sqlite3_column_value(rd, 0));
		sqlite3_bind_value(wr, 2, sqlite3_column_value(rd, 1));
		sqlite3_bind_blob(wr, 3, probes.p, (int)probes.len, SQLITE_STATIC);
		sqlite3_bind_blob(wr, 4, counts.p, (int)counts.len, SQLITE_STATIC);
		r = step_done(wr);
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = -EIO;
	sqlite3_finalize(rd);
	sqlite3_finalize(wr);
	free(probes.p);
	free(counts.p);
	if (skipped)
		log_warning("store: %u rows of probe samples unreadable (their JSON), left out",
			    skipped);
	if (r < 0)
		return r;
	return exec(db, "DROP TABLE report_samples;"
			"ALTER TABLE report_samples8 RENAME TO report_samples;"
			"CREATE INDEX report_samples_by_host ON report_samples (host_id, end_ms);"
			"CREATE INDEX report_samples_by_time ON report_samples (end_ms);");
}

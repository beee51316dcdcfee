// SPDX-License-Identifier: GPL-2.0
/*
 * store-rows: a kmemd store's telemetry written and read by kmemd's own
 * store code, for the shell tests (a report's probe samples are one binary
 * row that sqlite3 cannot write or read).
 *
 *   store-rows ingest FILE < REPORTS
 *	one report a line, stored with the store's ingest op in one batch:
 *	HOST UNIX_MS SEQ SOFT_LOCKUPS [PROBE START_MS FIRST_BUCKET COUNTS COUNT SUM_NS MAX_NS]...
 *	each probe's sample ending at UNIX_MS; COUNTS its buckets from
 *	FIRST_BUCKET on, comma-separated. Besides its samples a report
 *	stores its counters row and its host's row, as kmemd would.
 *   store-rows probes FILE HOST
 *	the probes HOST has samples of (raw or hourly), one a line, once each.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hist.h"
#include "store.h"

#define PROBES_MAX 64

struct line {
	Kmemctl__V1__Report rep;
	Kmemctl__V1__HostFacts f;
	Kmemctl__V1__Counters c;
	Kmemctl__V1__ProbeSample p[PROBES_MAX], *pp[PROBES_MAX];
	Kmemctl__V1__Histogram h[PROBES_MAX];
	uint64_t counts[PROBES_MAX][HIST_BUCKETS];
};

static int number(const char *tok, long long *v)
{
	char *end;

	if (!tok)
		return -EINVAL;
	errno = 0;
	*v = strtoll(tok, &end, 10);
	return errno || *end ? -EINVAL : 0;
}

static int parse_counts(char *tok, Kmemctl__V1__Histogram *h, uint64_t *counts)
{
	char *save = NULL, *c;
	long long v;

	for (c = strtok_r(tok, ",", &save); c; c = strtok_r(NULL, ",", &save)) {
		if (h->n_counts == HIST_BUCKETS || number(c, &v) < 0)
			return -EINVAL;
		counts[h->n_counts++] = (uint64_t)v;
	}
	h->counts = counts;
	return 0;
}

/* One probe's seven fields from the line being read. */
static int parse_probe(struct line *l, char **save, char *name)
{
	size_t i = l->rep.n_probes;
	Kmemctl__V1__ProbeSample *p = &l->p[i];
	Kmemctl__V1__Histogram *h = &l->h[i];
	long long v[5];
	char *counts;

	if (i == PROBES_MAX)
		return -E2BIG;
	kmemctl__v1__probe_sample__init(p);
	kmemctl__v1__histogram__init(h);
	p->probe = name;
	p->end_unix_ms = l->rep.unix_ms;
	p->hist = h;
	if (number(strtok_r(NULL, " \t\n", save), &v[0]) < 0 ||
	    number(strtok_r(NULL, " \t\n", save), &v[1]) < 0)
		return -EINVAL;
	counts = strtok_r(NULL, " \t\n", save);
	if (!counts || parse_counts(counts, h, l->counts[i]) < 0)
		return -EINVAL;
	for (int k = 2; k < 5; k++)
		if (number(strtok_r(NULL, " \t\n", save), &v[k]) < 0)
			return -EINVAL;
	p->start_unix_ms = v[0];
	h->first_bucket = (uint32_t)v[1];
	h->count = (uint64_t)v[2];
	h->sum_ns = (uint64_t)v[3];
	h->max_ns = (uint64_t)v[4];
	l->pp[i] = p;
	l->rep.n_probes++;
	return 0;
}

static int parse_line(char *text, struct line *l)
{
	char *save = NULL, *tok;
	long long v[3];
	int r = 0;

	kmemctl__v1__report__init(&l->rep);
	kmemctl__v1__host_facts__init(&l->f);
	kmemctl__v1__counters__init(&l->c);
	l->f.host_id = strtok_r(text, " \t\n", &save);
	for (int k = 0; k < 3; k++)
		if (number(strtok_r(NULL, " \t\n", &save), &v[k]) < 0)
			return -EINVAL;
	if (!l->f.host_id)
		return -EINVAL;
	l->rep.facts = &l->f;
	l->rep.unix_ms = v[0];
	l->rep.seq = (uint64_t)v[1];
	l->c.soft_lockups = (uint64_t)v[2];
	l->rep.counters = &l->c;
	l->rep.probes = l->pp;
	while (r == 0 && (tok = strtok_r(NULL, " \t\n", &save)))
		r = parse_probe(l, &save, tok);
	return r;
}

static int ingest(struct store *st)
{
	static struct line l;
	char text[8192];
	unsigned n = 0;
	int r = st->ops->begin(st);

	while (r == 0 && fgets(text, sizeof(text), stdin)) {
		n++;
		r = parse_line(text, &l);
		if (r < 0) {
			fprintf(stderr, "store-rows: line %u is not a report\n", n);
			break;
		}
		r = st->ops->ingest(st, &l.rep, l.rep.unix_ms);
		if (r > 0) {
			fprintf(stderr, "store-rows: line %u is a report stored before\n", n);
			r = -EEXIST;
		}
	}
	if (r == 0)
		return st->ops->commit(st);
	st->ops->rollback(st);
	return r;
}

struct names {
	char (*name)[STORE_ID_MAX];
	size_t n;
};

static int add_name(void *arg, const struct store_sample *x)
{
	struct names *s = arg;
	void *m;

	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->name[i], x->probe))
			return 0;
	m = realloc(s->name, (s->n + 1) * sizeof(*s->name));
	if (!m)
		return -ENOMEM;
	s->name = m;
	snprintf(s->name[s->n++], STORE_ID_MAX, "%s", x->probe);
	return 0;
}

static int probes(struct store *st, const char *host)
{
	struct store_filter f = { .host = host };
	struct names s = { 0 };
	int r = st->ops->samples(st, &f, add_name, &s);

	for (size_t i = 0; r == 0 && i < s.n; i++)
		printf("%s\n", s.name[i]);
	free(s.name);
	return r;
}

int main(int argc, char **argv)
{
	struct store *st;
	char err[256];
	int r;

	if (argc < 3 || (strcmp(argv[1], "ingest") && strcmp(argv[1], "probes")) ||
	    (!strcmp(argv[1], "probes") && argc != 4)) {
		fprintf(stderr,
			"usage: store-rows ingest FILE < REPORTS | store-rows probes FILE HOST\n");
		return 2;
	}
	r = !strcmp(argv[1], "ingest") ? store_open(argv[2], &st, err, sizeof(err)) :
					 store_open_reader(argv[2], &st, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "store-rows: %s: %s\n", argv[2], err);
		return 1;
	}
	r = !strcmp(argv[1], "ingest") ? ingest(st) : probes(st, argv[3]);
	if (r < 0)
		fprintf(stderr, "store-rows: %s\n", r == -EIO ? st->ops->error(st) : strerror(-r));
	st->ops->close(st);
	return r < 0;
}

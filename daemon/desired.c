// SPDX-License-Identifier: GPL-2.0
/*
 * The policy each host is to run, from what the store holds (desired.h).
 * Assignments and started rollouts are swapped in whole when a load
 * succeeds; a rollout's members never change once it started, so they are
 * loaded once per rollout and kept while the store has it. Answers are
 * cached per host, with the facts they were decided on and the generation
 * of the data: a new generation or other facts decide again.
 */
#include <errno.h>
#include <openssl/lhash.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "desired.h"
#include "rollout.h"
#include "selector.h"

struct assignment {
	char policy[STORE_ID_MAX];
	uint64_t version;
	struct selector sel;
};

/* A host a rollout reached or will reach, and what it ran before. */
struct member {
	const char *host; /* in the same allocation */
	unsigned wave;
	const char *prev_policy; /* NULL: nothing; in the same allocation */
	uint64_t prev_version;
};

/* A rollout past pending, as much as decides what its members run. */
struct started {
	char name[STORE_ID_MAX];
	enum rollout_state state;
	unsigned wave;
	char policy[ROLLOUT_NAME_MAX];
	uint64_t version;
	char rollback[ROLLOUT_NAME_MAX]; /* "": each host's previous policy */
	uint64_t rollback_version;
	bool dry_run; /* judged, and no host is sent anything */
	struct lhash_st *members; /* struct member by host */
};

/* One host's answer, and what it was decided on. */
struct answer {
	const char *host; /* in the same allocation */
	uint64_t gen;
	char *facts; /* facts_key() */
	size_t len;
	bool found;
	char name[STORE_ID_MAX];
	uint64_t version;
};

struct desired {
	bool loaded;
	struct store_changes seen; /* as of the last load of each part */
	uint64_t gen; /* one more with each change loaded */
	struct assignment *a; /* newest first */
	size_t na;
	struct started **ro; /* newest first */
	size_t nro;
	struct lhash_st *answers; /* struct answer by host */
};

/* Host-keyed tables: struct member and struct answer both start with their host. */
static unsigned long host_hash(const void *p)
{
	return OPENSSL_LH_strhash(*(const char *const *)p);
}

static int host_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void skip(struct desired_skipped *sk, const char *fmt, const char *what, const char *err)
{
	if (!sk->n++)
		snprintf(sk->first, sizeof(sk->first), fmt, what, err);
}

static void free_members(struct lhash_st *members)
{
	OPENSSL_LH_doall(members, free);
	OPENSSL_LH_free(members);
}

static void free_started(struct started *ro)
{
	if (ro && ro->members)
		free_members(ro->members);
	free(ro);
}

int desired_new(struct desired **out)
{
	struct desired *d = calloc(1, sizeof(*d));

	if (d)
		d->answers = OPENSSL_LH_new(host_hash, host_cmp);
	if (!d || !d->answers) {
		free(d);
		return -ENOMEM;
	}
	*out = d;
	return 0;
}

static void free_answer(void *p)
{
	struct answer *a = p;

	free(a->facts);
	free(a);
}

void desired_free(struct desired *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->nro; i++)
		free_started(d->ro[i]);
	free(d->ro);
	free(d->a);
	OPENSSL_LH_doall(d->answers, free_answer);
	OPENSSL_LH_free(d->answers);
	free(d);
}

struct assignments {
	struct assignment *a;
	size_t n, cap;
	struct desired_skipped *sk;
};

static int add_assignment(void *arg, const struct store_assignment *sa)
{
	struct assignments *as = arg;
	struct assignment *a;
	char err[256], what[64];

	if (as->n == as->cap) {
		size_t cap = as->cap ? as->cap * 2 : 16;

		a = realloc(as->a, cap * sizeof(*a));
		if (!a)
			return -ENOMEM;
		as->a = a;
		as->cap = cap;
	}
	a = &as->a[as->n];
	if (selector_parse(sa->selector_json, strlen(sa->selector_json), &a->sel, err,
			   sizeof(err)) < 0) {
		snprintf(what, sizeof(what), "%lld", (long long)sa->id);
		skip(as->sk, "assignment %s: its selector is not valid: %s", what, err);
		return 0;
	}
	snprintf(a->policy, sizeof(a->policy), "%s", sa->policy);
	a->version = sa->version;
	as->n++;
	return 0;
}

static int load_assignments(struct desired *d, struct store *st, struct desired_skipped *sk)
{
	struct assignments as = { .sk = sk };
	int r = st->ops->assignments(st, add_assignment, &as);

	if (r < 0) {
		free(as.a);
		return r;
	}
	free(d->a);
	d->a = as.a;
	d->na = as.n;
	return 0;
}

static int add_member(void *arg, const struct store_member *sm)
{
	size_t hlen = strlen(sm->host_id) + 1,
	       plen = sm->prev_policy ? strlen(sm->prev_policy) + 1 : 0;
	struct member *m = malloc(sizeof(*m) + hlen + plen), *was;
	char *p = (char *)(m + 1);

	if (!m)
		return -ENOMEM;
	m->host = memcpy(p, sm->host_id, hlen);
	m->wave = sm->wave;
	m->prev_policy = plen ? memcpy(p + hlen, sm->prev_policy, plen) : NULL;
	m->prev_version = sm->prev_version;
	was = OPENSSL_LH_insert(arg, m);
	if (was) {
		free(was);
		return 0;
	}
	return OPENSSL_LH_error(arg) ? -ENOMEM : 0;
}

/* A rollout first seen started: what it sends and its members, or NULL with *r set. */
static struct started *load_started(struct store *st, const struct store_rollout *row,
				    struct desired_skipped *sk, int *r)
{
	struct started *ro = calloc(1, sizeof(*ro));
	struct rollout_spec *s = malloc(sizeof(*s));
	char err[256];

	*r = ro && s ? 0 : -ENOMEM;
	if (*r == 0 &&
	    rollout_spec_parse(row->spec_json, strlen(row->spec_json), s, err, sizeof(err)) < 0) {
		skip(sk, "rollout %s: its document is not valid: %s", row->name, err);
		goto fail;
	}
	if (*r == 0) {
		snprintf(ro->name, sizeof(ro->name), "%s", row->name);
		snprintf(ro->policy, sizeof(ro->policy), "%s", s->policy);
		ro->version = s->version;
		snprintf(ro->rollback, sizeof(ro->rollback), "%s", s->rollback_policy);
		ro->rollback_version = s->rollback_version;
		ro->dry_run = s->dry_run;
		ro->members = OPENSSL_LH_new(host_hash, host_cmp);
		*r = ro->members ? st->ops->members(st, row->name, add_member, ro->members) :
				   -ENOMEM;
	}
	if (*r < 0)
		goto fail;
	free(s);
	return ro;
fail:
	free_started(ro);
	free(s);
	return NULL;
}

/* The started rollouts as the store lists them: rows first, members after. */
struct rows {
	struct store_rollout *r; /* spec_json strdup'ed */
	size_t n, cap;
};

static int add_row(void *arg, const struct store_rollout *r)
{
	struct rows *rs = arg;
	char *spec = strdup(r->spec_json);

	if (spec && rs->n == rs->cap) {
		size_t cap = rs->cap ? rs->cap * 2 : 8;
		struct store_rollout *nr = realloc(rs->r, cap * sizeof(*nr));

		if (nr) {
			rs->r = nr;
			rs->cap = cap;
		}
	}
	if (!spec || rs->n == rs->cap) {
		free(spec);
		return -ENOMEM;
	}
	rs->r[rs->n] = *r;
	rs->r[rs->n++].spec_json = spec;
	return 0;
}

static struct started *find(struct started *const *ro, size_t n, const char *name, size_t hint)
{
	if (hint < n && !strcmp(ro[hint]->name, name))
		return ro[hint];
	for (size_t i = 0; i < n; i++)
		if (!strcmp(ro[i]->name, name))
			return ro[i];
	return NULL;
}

/*
 * The started rollouts again: new ones loaded, those the store no longer
 * has dropped, the others keep their members. *moved: an answer may
 * change (a rollout started, went, or changed its state or wave).
 */
static int load_rollouts(struct desired *d, struct store *st, struct desired_skipped *sk,
			 bool *moved)
{
	struct rows rs = { 0 };
	struct started **ro = NULL;
	size_t i, n = 0;
	int r = st->ops->rollouts_started(st, add_row, &rs);

	if (r == 0 && rs.n && !(ro = calloc(rs.n, sizeof(*ro))))
		r = -ENOMEM;
	for (i = 0; r == 0 && i < rs.n; i++) {
		struct started *x = find(d->ro, d->nro, rs.r[i].name, i);

		if (!x)
			x = load_started(st, &rs.r[i], sk, &r);
		if (!x)
			continue;
		*moved |= x != (n < d->nro ? d->ro[n] : NULL) || x->state != rs.r[i].state ||
			  x->wave != rs.r[i].wave;
		ro[n++] = x;
	}
	if (r < 0) {
		/* the new ones only: the others are still d's */
		for (i = 0; i < n; i++)
			if (!find(d->ro, d->nro, ro[i]->name, i))
				free_started(ro[i]);
		goto out;
	}
	*moved |= n != d->nro;
	for (i = 0; i < d->nro; i++)
		if (!find(ro, n, d->ro[i]->name, i))
			free_started(d->ro[i]);
	for (i = 0; i < n; i++) {
		const struct store_rollout *row = NULL;

		for (size_t j = i; !row; j++)
			if (!strcmp(rs.r[j].name, ro[i]->name))
				row = &rs.r[j];
		ro[i]->state = row->state;
		ro[i]->wave = row->wave;
	}
	free(d->ro);
	d->ro = ro;
	d->nro = n;
	ro = NULL;
out:
	free(ro);
	for (i = 0; i < rs.n; i++)
		free(rs.r[i].spec_json);
	free(rs.r);
	return r;
}

int desired_refresh(struct desired *d, struct store *st, struct desired_skipped *skipped)
{
	struct store_changes c;
	bool changed = false;
	int r = st->ops->changes(st, &c);

	memset(skipped, 0, sizeof(*skipped));
	if (r < 0)
		return r;
	if (!d->loaded || c.assignments != d->seen.assignments ||
	    c.assignment_last != d->seen.assignment_last) {
		r = load_assignments(d, st, skipped);
		if (r < 0)
			return r;
		d->seen.assignments = c.assignments;
		d->seen.assignment_last = c.assignment_last;
		d->gen++;
		changed = true;
	}
	if (!d->loaded || c.rollouts != d->seen.rollouts ||
	    c.rollouts_updated != d->seen.rollouts_updated) {
		bool moved = !d->loaded;

		r = load_rollouts(d, st, skipped, &moved);
		if (r < 0)
			return r;
		d->seen.rollouts = c.rollouts;
		d->seen.rollouts_updated = c.rollouts_updated;
		/* a rollout's reason changes with every tick it holds: no new generation for that */
		d->gen += moved;
		changed = true;
	}
	d->loaded = true;
	return changed;
}

static void put(char *buf, size_t size, size_t *n, const char *s)
{
	size_t len = strlen(s ?: "") + 1;

	if (*n + len <= size)
		memcpy(buf + *n, s ?: "", len);
	*n += len;
}

/* What of f a selector reads, as one run of bytes; its length, written only when it fits. */
static size_t facts_key(const Kmemctl__V1__HostFacts *f, char *buf, size_t size)
{
	char cpus[32];
	size_t n = 0;

	snprintf(cpus, sizeof(cpus), "%u %d", f->possible_cpus, (int)f->kasan);
	put(buf, size, &n, cpus);
	put(buf, size, &n, f->kernel_release);
	put(buf, size, &n, f->kernel_build_id);
	for (size_t i = 0; i < f->n_labels; i++) {
		put(buf, size, &n, f->labels[i]->key);
		put(buf, size, &n, f->labels[i]->value);
	}
	return n;
}

static void set(struct answer *a, const char *name, uint64_t version)
{
	snprintf(a->name, sizeof(a->name), "%s", name);
	a->version = version;
	a->found = true;
}

/* The newest rollout that reached the host, else the newest assignment that matches it. */
static void decide(const struct desired *d, const Kmemctl__V1__HostFacts *f, struct answer *a)
{
	const struct member key = { .host = f->host_id }, *m;
	const char *back;
	uint64_t back_version;
	size_t i;

	a->found = false;
	for (i = 0; i < d->nro; i++) {
		const struct started *ro = d->ro[i];
		enum rollout_target t = rollout_state_target(ro->state);

		/* a dry run decides nothing for anyone */
		if (ro->dry_run)
			continue;
		m = OPENSSL_LH_retrieve(ro->members, &key);
		/* a rollout has no say where its waves have not come yet */
		if (!m || m->wave > ro->wave || t == ROLLOUT_TARGET_NONE)
			continue;
		if (t == ROLLOUT_TARGET_POLICY)
			set(a, ro->policy, ro->version);
		else if (rollout_rollback_target(ro->rollback, ro->rollback_version, m->prev_policy,
						 m->prev_version, &back, &back_version))
			set(a, back, back_version);
		/* rolled back to nothing: no rollout has a say, the assignments do */
		if (a->found)
			return;
		break;
	}
	for (i = 0; i < d->na; i++)
		if (selector_match(&d->a[i].sel, f)) {
			set(a, d->a[i].policy, d->a[i].version);
			return;
		}
}

/* The host's cached answer, a new one the first time; NULL when out of memory. */
static struct answer *answer_of(struct desired *d, const char *host)
{
	const struct answer key = { .host = host };
	struct answer *a = OPENSSL_LH_retrieve(d->answers, &key);
	size_t len = strlen(host) + 1;

	if (a)
		return a;
	a = calloc(1, sizeof(*a) + len);
	if (!a)
		return NULL;
	a->host = memcpy(a + 1, host, len);
	OPENSSL_LH_insert(d->answers, a);
	if (OPENSSL_LH_error(d->answers)) {
		free(a);
		return NULL;
	}
	return a;
}

/* Keeps facts (buf, or a buffer of its own that a takes) with a's answer. */
static void keep(struct answer *a, char *facts, const char *buf, size_t len, uint64_t gen)
{
	char *copy = facts;

	if (facts == buf) {
		copy = malloc(len);
		if (copy)
			memcpy(copy, buf, len);
	}
	free(a->facts);
	a->facts = copy;
	/* a key is never empty: without a copy, the next report decides again */
	a->len = copy ? len : 0;
	a->gen = gen;
}

int desired_policy(struct desired *d, const Kmemctl__V1__HostFacts *f, char name[STORE_ID_MAX],
		   uint64_t *version)
{
	char buf[512], *facts = buf;
	size_t len = facts_key(f, buf, sizeof(buf));
	struct answer *a = answer_of(d, f->host_id), once = { 0 };

	if (len > sizeof(buf)) {
		facts = malloc(len);
		if (facts)
			facts_key(f, facts, len);
	}
	/* out of memory: decided, not kept */
	if (!a || !facts)
		a = &once;
	if (a == &once || a->gen != d->gen || a->len != len || memcmp(a->facts, facts, len)) {
		decide(d, f, a);
		if (a != &once) {
			keep(a, facts, buf, len, d->gen);
			facts = buf;
		}
	}
	if (facts != buf)
		free(facts);
	if (!a->found)
		return -ENOENT;
	snprintf(name, STORE_ID_MAX, "%s", a->name);
	*version = a->version;
	return 0;
}

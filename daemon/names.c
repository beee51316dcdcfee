// SPDX-License-Identifier: GPL-2.0
/*
 * The bounded sets of probe and mitigation names (names.h), hashed:
 * checking a report costs the same with 10 names or the limit's worth.
 */
#include <errno.h>
#include <openssl/lhash.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kmemctl-names.h"
#include "names.h"
#include "report-check.h"
#include "store.h"

struct name {
	char text[REPORT_NAME_MAX + 1];
};

/* How many names one host brought in. */
struct host_share {
	char host[REPORT_HOST_ID_MAX + 1];
	unsigned n;
};

struct names {
	struct store *st;
	struct names_limits lim;
	OPENSSL_LHASH *known[NAME_KINDS];
	OPENSSL_LHASH *hosts; /* struct host_share */
	uint64_t added[NAME_KINDS], dropped[NAME_KINDS];
};

static const char *const kind_names[NAME_KINDS] = { "probe", "mitigation" };

const char *names_kind_name(enum name_kind k)
{
	return kind_names[k];
}

static unsigned long name_hash(const void *p)
{
	return OPENSSL_LH_strhash(((const struct name *)p)->text);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct name *)a)->text, ((const struct name *)b)->text);
}

static unsigned long share_hash(const void *p)
{
	return OPENSSL_LH_strhash(((const struct host_share *)p)->host);
}

static int share_cmp(const void *a, const void *b)
{
	return strcmp(((const struct host_share *)a)->host, ((const struct host_share *)b)->host);
}

static bool known(const struct names *n, enum name_kind k, const char *text)
{
	struct name key;

	snprintf(key.text, sizeof(key.text), "%s", text);
	return OPENSSL_LH_retrieve(n->known[k], &key) != NULL;
}

/* Adds text to the set (in memory only); -ENOMEM. */
static int remember(struct names *n, enum name_kind k, const char *text)
{
	struct name *e;
	unsigned long err = (unsigned long)OPENSSL_LH_error(n->known[k]);

	if (known(n, k, text))
		return 0;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	snprintf(e->text, sizeof(e->text), "%s", text);
	OPENSSL_LH_insert(n->known[k], e);
	if ((unsigned long)OPENSSL_LH_error(n->known[k]) != err) {
		free(e);
		return -ENOMEM;
	}
	return 0;
}

static struct host_share *share_of(struct names *n, const char *host, bool create)
{
	struct host_share key = { 0 }, *s;

	snprintf(key.host, sizeof(key.host), "%s", host);
	s = OPENSSL_LH_retrieve(n->hosts, &key);
	if (s || !create)
		return s;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	*s = key;
	OPENSSL_LH_insert(n->hosts, s);
	if (!OPENSSL_LH_retrieve(n->hosts, &key)) {
		free(s);
		return NULL;
	}
	return s;
}

static int load_one(void *arg, int kind, const char *text, const char *host)
{
	struct names *n = arg;
	struct host_share *s;
	int r;

	if (kind < 0 || kind >= NAME_KINDS || known(n, kind, text))
		return 0;
	r = remember(n, kind, text);
	if (r < 0)
		return r;
	n->added[kind]++;
	s = host && host[0] ? share_of(n, host, true) : NULL;
	if (s)
		s->n++;
	return 0;
}

static int builtins(struct names *n)
{
	char second[64];
	unsigned i;
	int r = 0;

	for (i = 0; r == 0 && kmemctl_mitigation_name(i); i++)
		r = remember(n, NAME_MITIGATION, kmemctl_mitigation_name(i));
	for (i = 0; r == 0 && kmemctl_probe_name(i); i++) {
		r = remember(n, NAME_PROBE, kmemctl_probe_name(i));
		if (r == 0 && kmemctl_probe_second(i)[0]) {
			/* the series of its secondary histogram, as agents report it */
			snprintf(second, sizeof(second), "%s-%s", kmemctl_probe_name(i),
				 kmemctl_probe_second(i));
			r = remember(n, NAME_PROBE, second);
		}
	}
	return r;
}

int names_new(struct store *st, const struct names_limits *lim, struct names **out)
{
	struct names *n = calloc(1, sizeof(*n));
	int r = -ENOMEM;

	if (!n)
		return -ENOMEM;
	n->st = st;
	n->lim = *lim;
	n->known[NAME_PROBE] = OPENSSL_LH_new(name_hash, name_cmp);
	n->known[NAME_MITIGATION] = OPENSSL_LH_new(name_hash, name_cmp);
	n->hosts = OPENSSL_LH_new(share_hash, share_cmp);
	if (n->known[NAME_PROBE] && n->known[NAME_MITIGATION] && n->hosts)
		r = builtins(n);
	if (r == 0)
		r = st->ops->names(st, load_one, n);
	if (r < 0) {
		names_free(n);
		return r;
	}
	*out = n;
	return 0;
}

static void free_entry(void *p)
{
	free(p);
}

void names_free(struct names *n)
{
	if (!n)
		return;
	for (int k = 0; k < NAME_KINDS; k++) {
		if (!n->known[k])
			continue;
		OPENSSL_LH_doall(n->known[k], free_entry);
		OPENSSL_LH_free(n->known[k]);
	}
	if (n->hosts) {
		OPENSSL_LH_doall(n->hosts, free_entry);
		OPENSSL_LH_free(n->hosts);
	}
	free(n);
}

void names_set_limits(struct names *n, const struct names_limits *lim)
{
	n->lim = *lim;
}

/* 1 when text may be kept, 0 when it is past the bounds; a negative errno. */
static int admit(struct names *n, enum name_kind k, const char *text, const char *host,
		 int64_t now_ms)
{
	struct host_share *s;
	int r;

	if (known(n, k, text))
		return 1;
	s = share_of(n, host, false);
	if (n->added[k] >= n->lim.fleet || (s && s->n >= n->lim.host))
		return 0;
	s = share_of(n, host, true);
	if (!s)
		return -ENOMEM;
	r = n->st->ops->name_add(n->st, k, text, host, now_ms);
	if (r == 0)
		r = remember(n, k, text);
	if (r < 0)
		return r;
	n->added[k]++;
	s->n++;
	return 1;
}

/* Moves the entries admit() refuses to the end of v; how many stay. */
static ssize_t partition(struct names *n, enum name_kind k, void **v, size_t count,
			 const char *(*name_of)(const void *), const char *host, int64_t now_ms)
{
	size_t keep = 0;
	void *t;
	int r;

	for (size_t i = 0; i < count; i++) {
		r = admit(n, k, name_of(v[i]), host, now_ms);
		if (r < 0)
			return r;
		if (!r) {
			n->dropped[k]++;
			continue;
		}
		t = v[keep];
		v[keep++] = v[i];
		v[i] = t;
	}
	return (ssize_t)keep;
}

static const char *probe_name(const void *p)
{
	return ((const Kmemctl__V1__ProbeSample *)p)->probe;
}

static const char *mitigation_name(const void *p)
{
	return ((const Kmemctl__V1__MitigationState *)p)->id;
}

/* An event keeps its place; a name past the bounds is blanked. */
static int admit_event_names(struct names *n, Kmemctl__V1__KernelEvent *e, const char *host,
			     int64_t now_ms, size_t *blanked)
{
	int r = 1;

	if (e->mitigation && e->mitigation[0]) {
		r = admit(n, NAME_MITIGATION, e->mitigation, host, now_ms);
		if (r == 0) {
			e->mitigation[0] = '\0';
			n->dropped[NAME_MITIGATION]++;
			++*blanked;
		}
	}
	if (r >= 0 && e->probe && e->probe[0]) {
		r = admit(n, NAME_PROBE, e->probe, host, now_ms);
		if (r == 0) {
			e->probe[0] = '\0';
			n->dropped[NAME_PROBE]++;
			++*blanked;
		}
	}
	return r < 0 ? r : 0;
}

int names_admit(struct names *n, Kmemctl__V1__Report *rep, int64_t now_ms, char *why, size_t len)
{
	const char *host = rep->facts->host_id;
	size_t blanked = 0, i, n_probes = rep->n_probes, n_mitigations = rep->n_mitigations;
	ssize_t probes, mits;
	int r = 0;

	probes = partition(n, NAME_PROBE, (void **)rep->probes, rep->n_probes, probe_name, host,
			   now_ms);
	if (probes < 0)
		return (int)probes;
	mits = partition(n, NAME_MITIGATION, (void **)rep->mitigations, rep->n_mitigations,
			 mitigation_name, host, now_ms);
	if (mits < 0)
		return (int)mits;
	rep->n_probes = (size_t)probes;
	rep->n_mitigations = (size_t)mits;
	for (i = 0; r == 0 && i < rep->n_events; i++)
		r = admit_event_names(n, rep->events[i], host, now_ms, &blanked);
	if (r < 0)
		return r;
	if (n_probes == rep->n_probes && n_mitigations == rep->n_mitigations && !blanked)
		return 0;
	snprintf(why, len,
		 "%zu probe samples, %zu mitigation states and %zu event names left out: new "
		 "names past kmemd's limits ([limits] names %u for the fleet, host_names %u "
		 "for one host)",
		 n_probes - rep->n_probes, n_mitigations - rep->n_mitigations, blanked,
		 n->lim.fleet, n->lim.host);
	return (int)(n_probes - rep->n_probes + n_mitigations - rep->n_mitigations + blanked);
}

void names_counts(const struct names *n, enum name_kind k, uint64_t *known_out, uint64_t *dropped)
{
	*known_out = n->added[k];
	*dropped = n->dropped[k];
}

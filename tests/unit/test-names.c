// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "kmemd.h"
#include "names.h"
#include "store.h"

static char path[4096];

static struct store *fresh_store(void)
{
	struct store *s = NULL;
	char err[256];

	snprintf(path, sizeof(path), "%s/test-names.sqlite", getenv("KMEM_TEST_TMP"));
	unlink(path);
	if (store_open(path, &s, err, sizeof(err)) < 0)
		fail_msg("store_open: %s", err);
	return s;
}

/* A report of host with probe samples and mitigation states of the given names. */
struct fixture {
	Kmemctl__V1__Report rep;
	Kmemctl__V1__HostFacts facts;
	Kmemctl__V1__ProbeSample probe[8], *probes[8];
	Kmemctl__V1__MitigationState mit[8], *mits[8];
	Kmemctl__V1__KernelEvent ev, *evs[1];
	char ev_mitigation[64];
};

static Kmemctl__V1__Report *report(struct fixture *f, const char *host, const char *const *probes,
				   const char *const *mits)
{
	size_t i;

	memset(f, 0, sizeof(*f));
	kmemctl__v1__report__init(&f->rep);
	kmemctl__v1__host_facts__init(&f->facts);
	f->facts.host_id = (char *)host;
	f->rep.facts = &f->facts;
	for (i = 0; probes && probes[i]; i++) {
		kmemctl__v1__probe_sample__init(&f->probe[i]);
		f->probe[i].probe = (char *)probes[i];
		f->probes[i] = &f->probe[i];
	}
	f->rep.probes = f->probes;
	f->rep.n_probes = i;
	for (i = 0; mits && mits[i]; i++) {
		kmemctl__v1__mitigation_state__init(&f->mit[i]);
		f->mit[i].id = (char *)mits[i];
		f->mits[i] = &f->mit[i];
	}
	f->rep.mitigations = f->mits;
	f->rep.n_mitigations = i;
	return &f->rep;
}

static void test_module_names(void **state)
{
	static const char *const probes[] = { "rstat-flush", "vmap-purge-flushes", NULL };
	static const char *const mits[] = { "rstat-yield", "usercopy-fastpath", NULL };
	struct names_limits lim = { .fleet = 0, .host = 0 };
	struct store *s = fresh_store();
	struct names *n;
	struct fixture f;
	uint64_t known, dropped;
	char why[320] = "";

	(void)state;
	assert_int_equal(names_new(s, &lim, &n), 0);
	/* the module's own names pass with no room for any other */
	assert_int_equal(names_admit(n, report(&f, "web-1", probes, mits), 1, why, sizeof(why)), 0);
	assert_int_equal(f.rep.n_probes, 2);
	assert_int_equal(f.rep.n_mitigations, 2);
	names_counts(n, NAME_PROBE, &known, &dropped);
	assert_int_equal(known, 0);
	assert_int_equal(dropped, 0);
	names_free(n);
	s->ops->close(s);
}

static void test_bounds(void **state)
{
	static const char *const mine[] = { "p1", "p2", "p3", NULL };
	static const char *const theirs[] = { "p4", "p5", NULL };
	static const char *const mit[] = { "m1", NULL };
	struct names_limits lim = { .fleet = 4, .host = 2 };
	struct store *s = fresh_store();
	struct names *n;
	struct fixture f;
	uint64_t known, dropped;
	char why[320] = "";

	(void)state;
	assert_int_equal(names_new(s, &lim, &n), 0);
	/* one host brings in two names at most; the third sample is left out */
	assert_int_equal(names_admit(n, report(&f, "web-1", mine, mit), 1, why, sizeof(why)), 2);
	assert_int_equal(f.rep.n_probes, 2);
	assert_int_equal(f.rep.n_mitigations, 0);
	assert_non_null(strstr(why, "1 probe samples, 1 mitigation states"));
	assert_string_equal(f.rep.probes[2]->probe, "p3");
	/* another host may bring in two, but the fleet holds four in all */
	assert_int_equal(names_admit(n, report(&f, "web-2", theirs, NULL), 1, why, sizeof(why)), 0);
	assert_int_equal(names_admit(n,
				     report(&f, "web-3", (const char *const[]){ "p6", NULL }, NULL),
				     1, why, sizeof(why)),
			 1);
	/* names known stay open to every host */
	assert_int_equal(names_admit(n, report(&f, "web-3", mine, NULL), 1, why, sizeof(why)), 1);
	assert_int_equal(f.rep.n_probes, 2);
	names_counts(n, NAME_PROBE, &known, &dropped);
	assert_int_equal(known, 4);
	assert_int_equal(dropped, 3);
	names_free(n);
	/* the bounds hold across a restart: the names are in the store */
	assert_int_equal(names_new(s, &lim, &n), 0);
	names_counts(n, NAME_PROBE, &known, &dropped);
	assert_int_equal(known, 4);
	assert_int_equal(names_admit(n,
				     report(&f, "web-1", (const char *const[]){ "p9", NULL }, NULL),
				     1, why, sizeof(why)),
			 1);
	names_free(n);
	s->ops->close(s);
}

static void test_event_names(void **state)
{
	struct names_limits lim = { .fleet = 0, .host = 0 };
	struct store *s = fresh_store();
	struct names *n;
	struct fixture f;
	char why[320] = "";

	(void)state;
	assert_int_equal(names_new(s, &lim, &n), 0);
	report(&f, "web-1", NULL, NULL);
	kmemctl__v1__kernel_event__init(&f.ev);
	snprintf(f.ev_mitigation, sizeof(f.ev_mitigation), "made-up");
	f.ev.mitigation = f.ev_mitigation;
	f.evs[0] = &f.ev;
	f.rep.events = f.evs;
	f.rep.n_events = 1;
	/* the event stays, without the name */
	assert_int_equal(names_admit(n, &f.rep, 1, why, sizeof(why)), 1);
	assert_int_equal(f.rep.n_events, 1);
	assert_string_equal(f.ev.mitigation, "");
	names_free(n);
	s->ops->close(s);
}

static void test_totals(void **state)
{
	struct probe_totals t = { 0 }, batch = { 0 };
	struct hist h = { .count = 1, .sum_ns = 5, .max_ns = 5 };
	char probe[16], policy[16];
	size_t i;

	(void)state;
	h.buckets[3] = 1;
	/* series past the cap fold their policy into "other", per probe */
	for (i = 0; i < PROBE_SERIES_MAX + 10; i++) {
		snprintf(probe, sizeof(probe), "p%zu", i % 4);
		snprintf(policy, sizeof(policy), "pol%zu", i);
		assert_int_equal(probe_totals_add(&batch, probe, policy, &h), 0);
	}
	assert_int_equal(probe_totals_merge(&t, &batch), 0);
	assert_int_equal(batch.n, 0);
	assert_int_equal(t.n, PROBE_SERIES_MAX + 4);
	for (i = 0; i < t.n && strcmp(t.s[i]->policy, "other"); i++)
		;
	assert_true(i < t.n);
	/* the same series again is found, not added */
	assert_int_equal(probe_totals_add(&t, "p0", "pol0", &h), 0);
	assert_int_equal(t.n, PROBE_SERIES_MAX + 4);
	assert_int_equal(t.s[0]->h.count, 2);
	probe_totals_free(&batch);
	probe_totals_free(&t);
}

/* n values of about 1 us */
static struct hist values(uint64_t n)
{
	struct hist h = { .count = n, .sum_ns = n * 1000, .max_ns = 1000 };

	h.buckets[10] = n;
	return h;
}

/*
 * /metrics weighs each host by its total since kmemd started against the
 * other hosts': past ten times their lower median, a sample is scaled
 * down to what is left.
 */
static void test_shares(void **state)
{
	struct probe_shares shares = { 0 };
	char host[16];
	struct hist h;
	size_t i;

	(void)state;
	/* one host with values: no fleet to weigh it against */
	h = values(5000);
	assert_int_equal(probe_shares_weigh(&shares, "h0", "vmap-purge", &h), 0);
	/* 20 hosts of 5,000: a host claiming 1e12 gets to ten times 5,000, then nothing */
	for (i = 1; i < 20; i++) {
		snprintf(host, sizeof(host), "h%zu", i);
		h = values(5000);
		assert_int_equal(probe_shares_weigh(&shares, host, "vmap-purge", &h), 0);
		assert_true(h.count == 5000);
	}
	h = values(1000000000000);
	assert_int_equal(probe_shares_weigh(&shares, "evil", "vmap-purge", &h), 1);
	assert_true(h.count == 50000);
	assert_true(h.sum_ns == h.count * 1000 && h.buckets[10] == h.count);
	/* however many reports it sends */
	for (i = 0; i < 1000; i++) {
		h = values(1000000);
		assert_int_equal(probe_shares_weigh(&shares, "evil", "vmap-purge", &h), 1);
		assert_true(h.count == 0);
	}
	/* as the fleet's totals grow, so does its share */
	for (i = 0; i < 20; i++) {
		snprintf(host, sizeof(host), "h%zu", i);
		h = values(5000);
		assert_int_equal(probe_shares_weigh(&shares, host, "vmap-purge", &h), 0);
	}
	h = values(1000000000000);
	assert_int_equal(probe_shares_weigh(&shares, "evil", "vmap-purge", &h), 1);
	assert_true(h.count == 50000);
	/* a first sample carrying what the module counted before: within ten hosts' */
	h = values(90000);
	assert_int_equal(probe_shares_weigh(&shares, "new", "vmap-purge", &h), 0);
	assert_true(h.count == 90000);
	/* no values: nothing weighed, and not a host with values; another probe its own */
	h = values(0);
	assert_int_equal(probe_shares_weigh(&shares, "idle", "rstat-flush", &h), 0);
	h = values(1000000000000);
	assert_int_equal(probe_shares_weigh(&shares, "evil", "rstat-flush", &h), 0);
	h = values(100);
	assert_int_equal(probe_shares_weigh(&shares, "h1", "rstat-flush", &h), 0);
	h = values(1000000000000);
	assert_int_equal(probe_shares_weigh(&shares, "evil", "rstat-flush", &h), 1);
	assert_true(h.count == 0);
	probe_shares_free(&shares);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_module_names), cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_event_names),  cmocka_unit_test(test_totals),
		cmocka_unit_test(test_shares),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

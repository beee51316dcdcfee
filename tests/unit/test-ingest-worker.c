// SPDX-License-Identifier: GPL-2.0
/*
 * daemon/ingest-worker.c over a real store: a host's reports bounded by
 * where its stored reports end (report_trim_samples(),
 * report_trim_events()) come out the same whether the writer takes them
 * one by one or several in one list, where it asks for the ends once and
 * carries each stored report's on to the host's next ones.
 */
#include <errno.h>
#include <event2/event.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "ingest-worker.h"
#include "store-fixture.h"

#define REPORTS 6

/* One report of host w-1 (one CPU): a sample of [start, end), lockups at end, its seq and time. */
struct fake {
	Kmemctl__V1__Report rep;
	Kmemctl__V1__HostFacts facts;
	Kmemctl__V1__ProbeSample p, *pp[1];
	Kmemctl__V1__Histogram h;
	uint64_t one;
	Kmemctl__V1__KernelEvent e[4], *ep[4];
	struct ingest_job job;
};

static struct fake fakes[REPORTS];
static int back;
static struct event_base *base;
static char path[4096];

static void fake(struct fake *f, const char *host, uint64_t seq, int64_t start, int64_t end,
		 size_t lockups)
{
	memset(f, 0, sizeof(*f));
	kmemctl__v1__report__init(&f->rep);
	kmemctl__v1__host_facts__init(&f->facts);
	kmemctl__v1__probe_sample__init(&f->p);
	kmemctl__v1__histogram__init(&f->h);
	f->facts.host_id = (char *)host;
	f->facts.online_cpus = 1;
	f->rep.facts = &f->facts;
	f->rep.seq = seq;
	f->rep.unix_ms = end;
	f->one = 1;
	f->h.first_bucket = 10;
	f->h.n_counts = 1;
	f->h.counts = &f->one;
	f->h.count = 1;
	f->p.probe = "vmap-purge";
	f->p.start_unix_ms = start;
	f->p.end_unix_ms = end;
	f->p.hist = &f->h;
	f->pp[0] = &f->p;
	f->rep.probes = f->pp;
	f->rep.n_probes = 1;
	for (size_t i = 0; i < lockups; i++) {
		kmemctl__v1__kernel_event__init(&f->e[i]);
		f->e[i].kind = KMEMCTL__V1__EVENT_KIND__EVENT_KIND_SOFT_LOCKUP;
		f->e[i].unix_ms = end - 1;
		f->ep[i] = &f->e[i];
	}
	f->rep.events = f->ep;
	f->rep.n_events = lockups;
	f->job.rep = &f->rep;
	f->job.now_ms = 10000;
}

static void count(void *arg, struct ingest_batch *b, const Kmemctl__V1__Report *rep)
{
	(void)arg;
	(void)b;
	(void)rep;
}

static void done(void *arg, struct ingest_batch *b)
{
	(void)arg;
	assert_int_equal(b->r, 0);
	for (struct ingest_job *j = b->jobs; j; j = j->next)
		back++;
	if (back == REPORTS)
		event_base_loopbreak(base);
}

/* Each report's answer: "r samples_left_out events_left_out", a space apart. */
static void run(unsigned gap_us, char *out, size_t len)
{
	struct store *st;
	struct ingest_worker *w;
	char err[256];

	test_store_wipe(path);
	assert_int_equal(store_open(test_store_where(path), &st, err, sizeof(err)), 0);
	base = event_base_new();
	assert_non_null(base);
	assert_int_equal(ingest_worker_new(base, st, 200, count, done, NULL, &w, err, sizeof(err)),
			 0);
	/* another host first; then w-1's walk, with a replay and overlaps */
	fake(&fakes[0], "w-2", 1, 1000, 2000, 0);
	fake(&fakes[1], "w-1", 1, 1000, 2000, 4); /* the first: nothing bounds it */
	fake(&fakes[2], "w-1", 2, 2000, 3000, 4); /* 1 s at 1 CPU: 2 lockups */
	fake(&fakes[3], "w-1", 3, 2500, 3500, 4); /* overlaps; 0.5 s: 1 lockup */
	fake(&fakes[4], "w-1", 2, 2000, 3000, 4); /* a resend of seq 2 */
	fake(&fakes[5], "w-1", 4, 3000, 4000, 2); /* follows seq 2's sample; 0.5 s: 1 */
	back = 0;
	for (size_t i = 0; i < REPORTS; i++) {
		ingest_worker_submit(w, &fakes[i].job);
		if (gap_us)
			usleep(gap_us);
	}
	event_base_dispatch(base);
	assert_int_equal(back, REPORTS);
	ingest_worker_free(w);
	event_base_free(base);
	out[0] = '\0';
	for (size_t i = 1; i < REPORTS; i++)
		snprintf(out + strlen(out), len - strlen(out), "%s%d %zu %zu", i > 1 ? ", " : "",
			 fakes[i].job.r, fakes[i].job.samples_left_out,
			 fakes[i].job.events_left_out);
	st->ops->close(st);
}

static void test_carried(void **state)
{
	const char *want = "0 0 0, 0 0 2, 0 1 3, 1 1 4, 0 0 1";
	char together[256], apart[256];

	(void)state;
	/* at once: one list after the first report's */
	run(0, together, sizeof(together));
	assert_string_equal(together, want);
	/* each its own list, past the batch's 200 ms */
	run(300000, apart, sizeof(apart));
	assert_string_equal(apart, want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_carried),
	};

	snprintf(path, sizeof(path), "test-ingest-worker-%d.sqlite", getpid());
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmemd's ingest writer: reports stored by a thread of their own
 * ("kmemd-ingest"), so that storing them uses a core the event loop does
 * not. It writes through its own read-write connection, opened beside the
 * loop's (store.h's open_beside): the loop keeps every other use of the
 * store, and the two take turns at writing.
 *
 * Group commit, as when the loop stored reports itself: the writer opens
 * a batch at the first report it is handed and commits it wait_ms later
 * or at INGEST_BATCH_MAX reports. The reports handed over meanwhile are
 * stored when it is due, all at once: the loop wakes the writer once a
 * batch, not once a report. A report whose ingest fails rolls its whole batch back. Each
 * batch, committed or not, goes back to the loop whole (an eventfd, as
 * the series worker's): nothing in it is to be acknowledged before then,
 * and nothing in a batch that failed is stored.
 *
 * Reports are stored in the order they were handed over.
 */
#ifndef KMEMD_INGEST_WORKER_H
#define KMEMD_INGEST_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include "kmemctl/v1/report.pb-c.h"
#include "kmemd.h"
#include "store.h"

/* Reports per commit at most. */
#define INGEST_BATCH_MAX 256

struct event_base;
struct ingest_worker;
struct store;
struct store_build;

/* A batch as it ended. */
struct ingest_batch {
	int r; /* 0: committed; < 0: none of its reports is stored */
	struct ingest_job *failed; /* the report whose ingest failed; NULL: begin or commit did */
	char store_error[200]; /* r < 0: what the store said */
	size_t n;
	struct ingest_job *jobs; /* in the order they were stored */
	/*
	 * What its reports stored for /metrics (ingest_count_fn), for the loop
	 * to add once committed and to free either way.
	 */
	struct probe_totals probes;
	uint64_t weighed; /* samples scaled down there (probe_shares_weigh()) */
	uint64_t events[KMEMD_EVENT_KINDS];
	struct ingest_batch *next; /* the writer's */
};

/*
 * One report: the loop's, lent to the writer from submit until its batch
 * comes back. A batch is kept in its first job, so the writer allocates
 * nothing.
 */
struct ingest_job {
	/* the writer leaves out what the host's stored reports rule out (trim_by_host()) */
	Kmemctl__V1__Report *rep;
	/* the build its build file describes, kept with the report (store.h's build_seen); NULL */
	const struct store_build *build;
	int64_t now_ms;
	/* the writer's: where the host's stored reports end, asked for its list at once */
	struct store_host_ends ends;
	bool ends_known;
	struct ingest_job *same_host; /* the next report of its host in its list */
	/* the writer's answer */
	int r; /* the store's ingest() (and build_seen()): 0 stored, 1 a resend, < 0 failed */
	/* r == 0: samples and events left out, why the first of each */
	size_t samples_left_out, events_left_out;
	char why[512];
	uint64_t ingest_ns; /* what ingest() took */
	struct ingest_job *next;
	struct ingest_batch batch; /* the writer's */
};

/*
 * Called on the loop for each batch, in order. The jobs are its to free,
 * b (in one of them) last.
 */
typedef void (*ingest_done_fn)(void *arg, struct ingest_batch *b);

/* Called on the writer for each report it stored (not a resend), to count it into b. */
typedef void (*ingest_count_fn)(void *arg, struct ingest_batch *b, const Kmemctl__V1__Report *rep);

/*
 * A writer on a connection opened beside st, answering on base's loop.
 * err says why it failed.
 */
int ingest_worker_new(struct event_base *base, struct store *st, uint64_t wait_ms,
		      ingest_count_fn count, ingest_done_fn fn, void *arg,
		      struct ingest_worker **out, char *err, size_t errlen);

/* The commit delay for batches opened from now on ([store] batch_wait). */
void ingest_worker_set_wait(struct ingest_worker *w, uint64_t wait_ms);

/* Hands j to the writer. */
void ingest_worker_submit(struct ingest_worker *w, struct ingest_job *j);

/*
 * Stores and commits every report handed over, hands every batch to fn,
 * then stops the writer and closes its connection.
 */
void ingest_worker_free(struct ingest_worker *w);

#endif

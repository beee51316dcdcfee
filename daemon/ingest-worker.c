// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ingest-worker.h"
#include "loop-thread.h"
#include "report-check.h"
#include "store.h"
#include "text.h"

struct ingest_worker {
	struct event_base *base;
	struct loop_thread t; /* it tells the loop when it has handed something back */
	ingest_count_fn count;
	ingest_done_fn fn;
	void *arg;
	/* under t.lock */
	bool idle; /* waiting with no batch open: the next report wakes it */
	uint64_t wait_ms;
	struct ingest_job *todo, **todo_tail;
	size_t ntodo;
	struct ingest_batch *done, **done_tail;
	/* the writer's */
	struct store *st;
	struct ingest_batch *open; /* the batch begun and not committed */
	bool failed; /* a batch failed since the jobs' ends were asked */
	struct ingest_job **open_tail;
	struct timespec deadline; /* when the open batch commits */
};

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static bool past(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > t->tv_sec || (now.tv_sec == t->tv_sec && now.tv_nsec >= t->tv_nsec);
}

static void store_error(struct ingest_worker *w, struct ingest_batch *b)
{
	w->failed = true;
	snprintf(b->store_error, sizeof(b->store_error), "%s", w->st->ops->error(w->st));
}

/* b goes back to the loop. */
static void hand_back(struct ingest_worker *w, struct ingest_batch *b)
{
	/* no read snapshot kept between batches: checkpoints reset the log */
	w->st->ops->idle(w->st);
	pthread_mutex_lock(&w->t.lock);
	*w->done_tail = b;
	w->done_tail = &b->next;
	loop_thread_tell(&w->t);
	pthread_mutex_unlock(&w->t.lock);
}

static void batch_commit(struct ingest_worker *w)
{
	struct ingest_batch *b = w->open;

	w->open = NULL;
	b->r = w->st->ops->commit(w->st);
	if (b->r < 0)
		store_error(w, b);
	hand_back(w, b);
}

/*
 * The report's samples that start before the host's last stored one
 * ended, and its lockups past what the host's CPUs could report since its
 * last report, are left out (report_trim_samples(), report_trim_events()):
 * by where the host's stored reports end (ends()).
 */
static int trim_by_host(struct ingest_job *j)
{
	struct report_span_bounds sb = { .now_ms = INT64_MIN, .oldest_ms = INT64_MIN };
	struct report_event_bounds eb = { .now_ms = j->now_ms, .oldest_ms = INT64_MIN };
	char why[sizeof(j->why)] = "";

	if (!j->rep->n_probes && !j->rep->n_events)
		return 0;
	if (!j->ends_known)
		return -EIO;
	sb.after_ms = j->ends.samples_ms;
	eb.after_ms = j->ends.report_ms;
	j->samples_left_out = report_trim_samples(j->rep, &sb, j->why, sizeof(j->why));
	j->events_left_out = report_trim_events(j->rep, &eb, why, sizeof(why));
	if (j->events_left_out)
		snprintf(j->why + strlen(j->why), sizeof(j->why) - strlen(j->why), "%s%s",
			 j->samples_left_out ? "; " : "", why);
	return 0;
}

/*
 * Where the hosts of list's reports have their stored reports end, in one
 * question for them all (a round trip each cost PostgreSQL a quarter of
 * its reports a second); what another kmemd stores meanwhile is seen at
 * the next list. Not known: their reports fail, and are sent again.
 */
/* Each job of list linked to the next of its host (same_host), by a table of n of them. */
static void link_hosts(struct ingest_job *list, size_t n)
{
	struct link {
		uint64_t key;
		struct ingest_job *last;
	} * t;
	size_t cap = 16, i;
	uint64_t key;

	while (cap < 2 * n)
		cap *= 2;
	t = calloc(cap, sizeof(*t));
	for (struct ingest_job *j = list; j; j = j->next) {
		j->same_host = NULL;
		if (!t)
			continue;
		key = text_hash(j->rep->facts->host_id);
		for (i = key & (cap - 1); t[i].key; i = (i + 1) & (cap - 1))
			if (t[i].key == key &&
			    !strcmp(t[i].last->rep->facts->host_id, j->rep->facts->host_id))
				break;
		if (t[i].key)
			t[i].last->same_host = j;
		t[i] = (struct link){ key, j };
	}
	/* out of memory: nothing carried, so a later report of a host may be bounded less */
	free(t);
}

static void ends(struct ingest_worker *w, struct ingest_job *list)
{
	const char **hosts;
	struct store_host_ends *e;
	struct ingest_job *j;
	size_t n = 0, i;
	bool ok;

	for (j = list; j; j = j->next)
		n++;
	link_hosts(list, n);
	hosts = calloc(n, sizeof(*hosts));
	e = calloc(n, sizeof(*e));
	for (j = list, i = 0; hosts && j; j = j->next)
		hosts[i++] = j->rep->facts->host_id;
	ok = hosts && e && w->st->ops->host_ends(w->st, hosts, n, e) == 0;
	for (j = list, i = 0; j; j = j->next, i++) {
		j->ends_known = ok;
		if (ok)
			j->ends = e[i];
	}
	w->failed = false;
	free(hosts);
	free(e);
}

/* done stored: the later reports of its host in its list start from where it ends. */
static void carry_ends(const struct ingest_job *done)
{
	struct store_host_ends e = done->ends;
	const Kmemctl__V1__Report *rep = done->rep;

	for (size_t i = 0; i < rep->n_probes; i++)
		if (rep->probes[i]->hist && rep->probes[i]->end_unix_ms > e.samples_ms)
			e.samples_ms = rep->probes[i]->end_unix_ms;
	if (rep->unix_ms > e.report_ms)
		e.report_ms = rep->unix_ms;
	for (struct ingest_job *k = done->same_host; k; k = k->same_host) {
		if (e.samples_ms > k->ends.samples_ms)
			k->ends.samples_ms = e.samples_ms;
		if (e.report_ms > k->ends.report_ms)
			k->ends.report_ms = e.report_ms;
	}
}

/* Stores j in the open batch, opening one first if none is. */
static void store_one(struct ingest_worker *w, struct ingest_job *j, uint64_t wait_ms)
{
	struct ingest_batch *b;
	int64_t t0;

	j->next = NULL;
	if (!w->open) {
		b = &j->batch;
		*b = (struct ingest_batch){ .jobs = j };
		if (w->st->ops->begin(w->st) < 0) {
			b->r = -EIO;
			store_error(w, b);
			b->n = 1;
			hand_back(w, b);
			return;
		}
		w->open = b;
		w->open_tail = &b->jobs;
		clock_gettime(CLOCK_MONOTONIC, &w->deadline);
		w->deadline.tv_sec += (time_t)(wait_ms / 1000);
		w->deadline.tv_nsec += (long)(wait_ms % 1000) * 1000000;
		if (w->deadline.tv_nsec >= 1000000000) {
			w->deadline.tv_sec++;
			w->deadline.tv_nsec -= 1000000000;
		}
	}
	b = w->open;
	*w->open_tail = j;
	w->open_tail = &j->next;
	b->n++;
	t0 = mono_ns();
	j->r = trim_by_host(j);
	if (j->r == 0)
		j->r = w->st->ops->ingest(w->st, j->rep, j->now_ms);
	if (j->r == 0 && j->build)
		j->r = w->st->ops->build_seen(w->st, j->build, j->now_ms);
	j->ingest_ns = (uint64_t)(mono_ns() - t0);
	if (j->r < 0) {
		/* part of it may be in the batch: the batch goes, and its agents send again */
		b->r = -EIO;
		b->failed = j;
		store_error(w, b);
		w->st->ops->rollback(w->st);
		w->open = NULL;
		hand_back(w, b);
		return;
	}
	if (j->r == 0)
		w->count(w->arg, b, j->rep);
	if (b->n == INGEST_BATCH_MAX)
		batch_commit(w);
}

/*
 * A batch's reports are stored when it is due (its deadline, enough
 * reports waiting to fill it, a stop), all at once: the loop wakes the
 * writer for the first report of a batch only, not for each.
 */
static void *run(void *arg)
{
	struct ingest_worker *w = arg;
	struct ingest_job *list, *j;
	uint64_t wait_ms;
	bool due;

	pthread_setname_np(pthread_self(), "kmemd-ingest");
	pthread_mutex_lock(&w->t.lock);
	for (;;) {
		due = !w->open || w->t.stop || w->ntodo >= INGEST_BATCH_MAX || past(&w->deadline);
		if (w->todo && due) {
			list = w->todo;
			w->todo = NULL;
			w->todo_tail = &w->todo;
			w->ntodo = 0;
			wait_ms = w->wait_ms;
			pthread_mutex_unlock(&w->t.lock);
			ends(w, list);
			for (; list; list = j) {
				j = list->next;
				store_one(w, list, wait_ms);
				/* a batch rolled back took what was carried with it */
				if (w->failed && j)
					ends(w, j);
				else if (list->r == 0)
					carry_ends(list);
			}
			pthread_mutex_lock(&w->t.lock);
			continue;
		}
		if (w->open && (w->t.stop || past(&w->deadline))) {
			pthread_mutex_unlock(&w->t.lock);
			batch_commit(w);
			pthread_mutex_lock(&w->t.lock);
			continue;
		}
		if (w->t.stop)
			break;
		if (w->open) {
			pthread_cond_timedwait(&w->t.cond, &w->t.lock, &w->deadline);
		} else {
			w->idle = true;
			pthread_cond_wait(&w->t.cond, &w->t.lock);
		}
	}
	pthread_mutex_unlock(&w->t.lock);
	return NULL;
}

static void on_done(evutil_socket_t fd, short what, void *arg)
{
	struct ingest_worker *w = arg;
	struct ingest_batch *b, *next;
	uint64_t n;

	(void)what;
	(void)!read(fd, &n, sizeof(n));
	pthread_mutex_lock(&w->t.lock);
	b = w->done;
	w->done = NULL;
	w->done_tail = &w->done;
	pthread_mutex_unlock(&w->t.lock);
	for (; b; b = next) {
		next = b->next;
		w->fn(w->arg, b);
	}
}

int ingest_worker_new(struct event_base *base, struct store *st, uint64_t wait_ms,
		      ingest_count_fn count, ingest_done_fn fn, void *arg,
		      struct ingest_worker **out, char *err, size_t errlen)
{
	struct ingest_worker *w = calloc(1, sizeof(*w));
	int r;

	*out = NULL;
	if (!w)
		return -ENOMEM;
	w->base = base;
	w->count = count;
	w->fn = fn;
	w->arg = arg;
	w->wait_ms = wait_ms;
	w->todo_tail = &w->todo;
	w->done_tail = &w->done;
	loop_thread_init(&w->t);
	r = st->ops->open_beside(st, &w->st, err, errlen);
	if (r == 0)
		r = loop_thread_start(&w->t, base, on_done, run, w, err, errlen);
	if (r < 0) {
		ingest_worker_free(w);
		return r;
	}
	*out = w;
	return 0;
}

void ingest_worker_set_wait(struct ingest_worker *w, uint64_t wait_ms)
{
	pthread_mutex_lock(&w->t.lock);
	w->wait_ms = wait_ms;
	pthread_mutex_unlock(&w->t.lock);
}

void ingest_worker_submit(struct ingest_worker *w, struct ingest_job *j)
{
	j->next = NULL;
	pthread_mutex_lock(&w->t.lock);
	*w->todo_tail = j;
	w->todo_tail = &j->next;
	w->ntodo++;
	if (w->idle || w->ntodo >= INGEST_BATCH_MAX) {
		w->idle = false;
		pthread_cond_signal(&w->t.cond);
	}
	pthread_mutex_unlock(&w->t.lock);
}

void ingest_worker_free(struct ingest_worker *w)
{
	if (!w)
		return;
	/* it stores what it was handed and commits before it returns */
	loop_thread_stop(&w->t);
	if (w->t.efd >= 0)
		on_done(w->t.efd, EV_READ, w);
	loop_thread_close(&w->t);
	if (w->st)
		w->st->ops->close(w->st);
	free(w);
}

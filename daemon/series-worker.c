// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <event2/event.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "loop-thread.h"
#include "series-worker.h"
#include "series.h"
#include "store.h"

/* One computation: made by the loop, filled by the worker, handed back. */
struct job {
	struct series_key key;
	int64_t now_ms;
	struct entry *e; /* the loop's; stays while the job is out */
	int r;
	char *json;
	size_t len;
	double compute_s;
	char store_error[256];
	struct job *next;
};

struct waiter {
	series_answer_fn fn;
	void *arg;
};

/* The loop's: what is kept for one set of parameters. */
struct entry {
	bool used;
	struct series_key key;
	char *json; /* the last answer; NULL: none yet */
	size_t len;
	int64_t computed_ms, asked_ms;
	double compute_s;
	struct job *job; /* being computed */
	struct waiter *w; /* waiting for the first answer */
	size_t nw;
};

struct series_worker {
	struct event_base *base;
	struct loop_thread t; /* it tells the loop when it has handed something back */
	struct store *st; /* the worker's only */
	/* under t.lock */
	struct job *todo, **todo_tail, *done;
	/* the loop's */
	struct entry e[SERIES_KEEP];
};

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void compute(struct series_worker *w, struct job *j)
{
	double t = mono_s();
	json_t *o = NULL;

	j->r = series_rollout(w->st, j->key.name, j->key.wave, j->key.from_ms, j->key.to_ms,
			      j->key.step_ms, j->now_ms, &o);
	if (j->r == -EIO)
		snprintf(j->store_error, sizeof(j->store_error), "%s", w->st->ops->error(w->st));
	if (j->r == 0 && json_object_set_new(o, "computed_ms", json_integer(j->now_ms)) < 0)
		j->r = -ENOMEM;
	if (j->r == 0) {
		char *text = json_dumps(o, JSON_COMPACT);

		j->len = text ? strlen(text) : 0;
		/* as reply_json() sends it */
		j->json = text ? realloc(text, j->len + 2) : NULL;
		if (j->json)
			memcpy(j->json + j->len++, "\n", 2);
		else
			free(text);
		j->r = j->json ? 0 : -ENOMEM;
	}
	json_decref(o);
	/* no read transaction left open to hold the WAL back */
	w->st->ops->idle(w->st);
	j->compute_s = mono_s() - t;
}

static void *run(void *arg)
{
	struct series_worker *w = arg;
	struct job *j;

	pthread_setname_np(pthread_self(), "kmemd-series");
	pthread_mutex_lock(&w->t.lock);
	for (;;) {
		while (!w->todo && !w->t.stop)
			pthread_cond_wait(&w->t.cond, &w->t.lock);
		if (w->t.stop)
			break;
		j = w->todo;
		w->todo = j->next;
		if (!w->todo)
			w->todo_tail = &w->todo;
		pthread_mutex_unlock(&w->t.lock);
		compute(w, j);
		pthread_mutex_lock(&w->t.lock);
		j->next = w->done;
		w->done = j;
		loop_thread_tell(&w->t);
	}
	pthread_mutex_unlock(&w->t.lock);
	return NULL;
}

static int queue(struct series_worker *w, struct entry *e, int64_t now_ms)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	j->key = e->key;
	j->now_ms = now_ms;
	j->e = e;
	e->job = j;
	pthread_mutex_lock(&w->t.lock);
	*w->todo_tail = j;
	w->todo_tail = &j->next;
	pthread_cond_signal(&w->t.cond);
	pthread_mutex_unlock(&w->t.lock);
	return 0;
}

static void entry_clear(struct entry *e)
{
	free(e->json);
	free(e->w);
	*e = (struct entry){ 0 };
}

/* Answers everyone waiting on e with a, then forgets them. */
static void answer_waiters(struct entry *e, const struct series_answer *a)
{
	struct waiter *ws = e->w;
	size_t n = e->nw;

	e->w = NULL;
	e->nw = 0;
	for (size_t i = 0; i < n; i++)
		ws[i].fn(ws[i].arg, a);
	free(ws);
}

static void deliver(struct job *j)
{
	struct entry *e = j->e;
	struct series_answer a = { .key = &e->key,
				   .r = j->r,
				   .json = j->json,
				   .len = j->len,
				   .computed_ms = j->now_ms,
				   .store_error = j->store_error,
				   .compute_s = j->compute_s };

	e->job = NULL;
	if (j->r == 0) {
		free(e->json);
		e->json = j->json;
		e->len = j->len;
		e->computed_ms = j->now_ms;
		e->compute_s = j->compute_s;
		answer_waiters(e, &a);
	} else {
		/* the rollout may exist, or reach the wave, by the next request */
		answer_waiters(e, &a);
		entry_clear(e);
	}
	free(j);
}

static void on_done(evutil_socket_t fd, short what, void *arg)
{
	struct series_worker *w = arg;
	struct job *j, *next;
	uint64_t n;

	(void)what;
	(void)!read(fd, &n, sizeof(n));
	pthread_mutex_lock(&w->t.lock);
	j = w->done;
	w->done = NULL;
	pthread_mutex_unlock(&w->t.lock);
	for (; j; j = next) {
		next = j->next;
		deliver(j);
	}
}

int series_worker_new(struct event_base *base, const char *path, struct series_worker **out,
		      char *err, size_t errlen)
{
	struct series_worker *w = calloc(1, sizeof(*w));
	int r;

	*out = NULL;
	if (!w)
		return -ENOMEM;
	w->base = base;
	w->todo_tail = &w->todo;
	loop_thread_init(&w->t);
	r = store_open_reader(path, &w->st, err, errlen);
	if (r == 0)
		r = loop_thread_start(&w->t, base, on_done, run, w, err, errlen);
	if (r < 0) {
		series_worker_free(w);
		return r;
	}
	*out = w;
	return 0;
}

void series_worker_free(struct series_worker *w)
{
	struct series_answer a = { .r = -ECANCELED };
	struct job *j, *next;

	if (!w)
		return;
	loop_thread_stop(&w->t);
	/* what was computed is delivered; what was not is cancelled */
	on_done(w->t.efd, EV_READ, w);
	for (j = w->todo; j; j = next) {
		next = j->next;
		j->e->job = NULL;
		free(j);
	}
	for (size_t i = 0; i < SERIES_KEEP; i++) {
		a.key = &w->e[i].key;
		answer_waiters(&w->e[i], &a);
		entry_clear(&w->e[i]);
	}
	loop_thread_close(&w->t);
	if (w->st)
		w->st->ops->close(w->st);
	free(w);
}

static bool key_equal(const struct series_key *a, const struct series_key *b)
{
	return a->wave == b->wave && a->from_ms == b->from_ms && a->to_ms == b->to_ms &&
	       a->step_ms == b->step_ms && !strcmp(a->name, b->name);
}

static struct entry *find(struct series_worker *w, const struct series_key *key)
{
	for (size_t i = 0; i < SERIES_KEEP; i++)
		if (w->e[i].used && key_equal(&w->e[i].key, key))
			return &w->e[i];
	return NULL;
}

/* A free entry, or the least recently asked for that nobody waits on; NULL: none. */
static struct entry *slot(struct series_worker *w)
{
	struct entry *best = NULL;

	for (size_t i = 0; i < SERIES_KEEP; i++) {
		struct entry *e = &w->e[i];

		if (!e->used)
			return e;
		if (!e->job && (!best || e->asked_ms < best->asked_ms))
			best = e;
	}
	if (best)
		entry_clear(best);
	return best;
}

static int wait_on(struct entry *e, series_answer_fn fn, void *arg)
{
	struct waiter *ws = realloc(e->w, (e->nw + 1) * sizeof(*ws));

	if (!ws)
		return -ENOMEM;
	e->w = ws;
	ws[e->nw++] = (struct waiter){ fn, arg };
	return 0;
}

int series_worker_get(struct series_worker *w, const struct series_key *key, int64_t now_ms,
		      series_answer_fn fn, void *arg)
{
	struct entry *e = find(w, key);
	int r;

	if (e && e->json) {
		struct series_answer a = { .key = &e->key,
					   .json = e->json,
					   .len = e->len,
					   .computed_ms = e->computed_ms,
					   .compute_s = e->compute_s };

		e->asked_ms = now_ms;
		/* a failed queue leaves the kept answer to serve */
		if (!e->job && now_ms - e->computed_ms >= SERIES_FRESH_MS)
			queue(w, e, now_ms);
		fn(arg, &a);
		return 0;
	}
	if (!e) {
		e = slot(w);
		if (!e)
			return -EBUSY;
		e->used = true;
		e->key = *key;
	}
	e->asked_ms = now_ms;
	r = e->job ? 0 : queue(w, e, now_ms);
	if (r == 0)
		r = wait_on(e, fn, arg);
	/* a job out with nobody waiting still leaves its answer here */
	if (r < 0 && !e->job)
		entry_clear(e);
	return r;
}

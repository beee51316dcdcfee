// SPDX-License-Identifier: GPL-2.0
/* The rollout engine's thread (engine-worker.h). */
#include <errno.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine-worker.h"
#include "loop-thread.h"

/* A change as the loop hears it: the pass's rollout and verdict, copied. */
struct change {
	struct store_rollout ro;
	enum rollout_state was;
	bool has_verdict;
	struct store_verdict v;
};

struct engine_worker {
	struct loop_thread t;
	struct store *st; /* the thread's only */
	const char *engine;
	engine_cb changed;
	engine_pass_fn done;
	void *arg;
	/* under t.lock */
	bool due, finished;
	int64_t now_ms;
	/* the loop's from engine_worker_tick() until the pass is heard; the thread's meanwhile */
	bool running;
	int r;
	char store_error[200];
	double pass_s;
	struct change *c;
	size_t n, cap;
};

static void change_clear(struct change *c)
{
	free((char *)c->v.verdict);
	free((char *)c->v.gate);
	free((char *)c->v.reason);
}

/* The thread's engine_cb: what the pass changed, kept for the loop. */
static void keep(void *arg, const struct engine_change *ec)
{
	struct engine_worker *w = arg;
	struct change *c;

	if (w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 4;
		struct change *p = realloc(w->c, cap * sizeof(*p));

		/* a change not heard is still made: only its log line is lost */
		if (!p)
			return;
		w->c = p;
		w->cap = cap;
	}
	c = &w->c[w->n++];
	*c = (struct change){ .was = ec->was, .has_verdict = ec->v != NULL };
	memcpy(c->ro.name, ec->ro->name, sizeof(c->ro.name));
	memcpy(c->ro.reason, ec->ro->reason, sizeof(c->ro.reason));
	c->ro.state = ec->ro->state;
	c->ro.wave = ec->ro->wave;
	c->ro.wave_started_ms = ec->ro->wave_started_ms;
	c->ro.has_reason = ec->ro->has_reason;
	if (ec->v) {
		c->v = (struct store_verdict){ .wave = ec->v->wave,
					       .ts_ms = ec->v->ts_ms,
					       .verdict = strdup(ec->v->verdict ?: ""),
					       .gate = strdup(ec->v->gate ?: ""),
					       .reason = strdup(ec->v->reason ?: "") };
		if (!c->v.verdict || !c->v.gate || !c->v.reason) {
			change_clear(c);
			w->n--;
		}
	}
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void pass(struct engine_worker *w, int64_t now_ms)
{
	double t = mono_s();

	w->r = engine_tick(w->st, now_ms, w->engine, keep, w);
	if (w->r == -EIO)
		snprintf(w->store_error, sizeof(w->store_error), "%s", w->st->ops->error(w->st));
	/* no read transaction left open to hold the WAL back */
	w->st->ops->idle(w->st);
	w->pass_s = mono_s() - t;
}

static void *run(void *arg)
{
	struct engine_worker *w = arg;
	int64_t now;

	pthread_setname_np(pthread_self(), "kmemd-engine");
	pthread_mutex_lock(&w->t.lock);
	for (;;) {
		while (!w->due && !w->t.stop)
			pthread_cond_wait(&w->t.cond, &w->t.lock);
		/* a pass asked for is made, stopping or not */
		if (!w->due)
			break;
		w->due = false;
		now = w->now_ms;
		pthread_mutex_unlock(&w->t.lock);
		pass(w, now);
		pthread_mutex_lock(&w->t.lock);
		w->finished = true;
		loop_thread_tell(&w->t);
	}
	pthread_mutex_unlock(&w->t.lock);
	return NULL;
}

static void on_done(evutil_socket_t fd, short what, void *arg)
{
	struct engine_worker *w = arg;
	struct engine_change ec;
	bool finished;
	uint64_t n;

	(void)what;
	if (fd >= 0)
		(void)!read(fd, &n, sizeof(n));
	pthread_mutex_lock(&w->t.lock);
	finished = w->finished;
	w->finished = false;
	pthread_mutex_unlock(&w->t.lock);
	if (!finished)
		return;
	for (size_t i = 0; i < w->n; i++) {
		ec = (struct engine_change){ .ro = &w->c[i].ro,
					     .was = w->c[i].was,
					     .v = w->c[i].has_verdict ? &w->c[i].v : NULL };
		w->changed(w->arg, &ec);
		change_clear(&w->c[i]);
	}
	w->n = 0;
	w->running = false;
	w->done(w->arg, w->r, w->store_error, w->pass_s);
}

int engine_worker_new(struct event_base *base, struct store *st, const char *engine,
		      engine_cb changed, engine_pass_fn done, void *arg, struct engine_worker **out,
		      char *err, size_t errlen)
{
	struct engine_worker *w = calloc(1, sizeof(*w));
	int r;

	*out = NULL;
	if (!w)
		return -ENOMEM;
	w->engine = engine;
	w->changed = changed;
	w->done = done;
	w->arg = arg;
	loop_thread_init(&w->t);
	r = st->ops->open_beside(st, &w->st, err, errlen);
	if (r == 0)
		r = loop_thread_start(&w->t, base, on_done, run, w, err, errlen);
	if (r < 0) {
		engine_worker_free(w);
		return r;
	}
	*out = w;
	return 0;
}

int engine_worker_tick(struct engine_worker *w, int64_t now_ms)
{
	if (w->running)
		return -EBUSY;
	w->running = true;
	pthread_mutex_lock(&w->t.lock);
	w->now_ms = now_ms;
	w->due = true;
	pthread_cond_signal(&w->t.cond);
	pthread_mutex_unlock(&w->t.lock);
	return 0;
}

void engine_worker_free(struct engine_worker *w)
{
	if (!w)
		return;
	loop_thread_stop(&w->t);
	on_done(-1, EV_READ, w);
	loop_thread_close(&w->t);
	if (w->st)
		w->st->ops->close(w->st);
	for (size_t i = 0; i < w->n; i++)
		change_clear(&w->c[i]);
	free(w->c);
	free(w);
}

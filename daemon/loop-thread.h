/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A thread of kmemd's that works for the event loop (the ingest writer,
 * the series worker) and tells it when it has results: an eventfd the
 * loop reads, so that what the thread hands back is taken on the loop;
 * and the lock and condition its owner's queue is kept under, with the
 * flag that tells the thread to stop. The queue is its owner's.
 */
#ifndef KMEMD_LOOP_THREAD_H
#define KMEMD_LOOP_THREAD_H

#include <event2/event.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct loop_thread {
	int efd; /* -1: not made */
	struct event *done_ev; /* on_done, on the loop */
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* on CLOCK_MONOTONIC, for timed waits */
	bool stop; /* under lock: the thread is to finish and return */
};

/* efd unmade: loop_thread_close() is safe on it before loop_thread_start(). */
void loop_thread_init(struct loop_thread *t);
/*
 * on_done(fd, what, arg) on base's loop whenever the thread calls
 * loop_thread_tell(), then run(arg) on a new thread. err says why it failed.
 */
int loop_thread_start(struct loop_thread *t, struct event_base *base, event_callback_fn on_done,
		      void *(*run)(void *), void *arg, char *err, size_t errlen);
/* From the thread: the loop is to call on_done (once, for any number of tells before it). */
void loop_thread_tell(struct loop_thread *t);
/* The thread told to stop (stop, and cond signalled) and joined, if it started. */
void loop_thread_stop(struct loop_thread *t);
/* After loop_thread_stop(): the event, eventfd, lock and condition go. */
void loop_thread_close(struct loop_thread *t);

#endif

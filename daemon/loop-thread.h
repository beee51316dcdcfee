/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A thread of kmemd's that works for the event loop (the ingest writer,
 * the series worker) and tells it when it has results: an eventfd the
 * loop reads, so that what the thread hands back is taken on the loop.
 * The thread's own queue and its way to stop are its owner's.
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
/* After the owner stopped the thread (joined): the event and eventfd go. */
void loop_thread_close(struct loop_thread *t);

#endif

// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "loop-thread.h"

void loop_thread_init(struct loop_thread *t)
{
	pthread_condattr_t ca;

	*t = (struct loop_thread){ .efd = -1 };
	pthread_mutex_init(&t->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&t->cond, &ca);
	pthread_condattr_destroy(&ca);
}

int loop_thread_start(struct loop_thread *t, struct event_base *base, event_callback_fn on_done,
		      void *(*run)(void *), void *arg, char *err, size_t errlen)
{
	int r;

	t->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (t->efd < 0) {
		r = -errno;
		snprintf(err, errlen, "eventfd: %s", strerror(-r));
		return r;
	}
	t->done_ev = event_new(base, t->efd, EV_READ | EV_PERSIST, on_done, arg);
	if (!t->done_ev || event_add(t->done_ev, NULL) < 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r = -pthread_create(&t->thread, NULL, run, arg);
	t->started = r == 0;
	if (r < 0)
		snprintf(err, errlen, "starting its thread: %s", strerror(-r));
	return r;
}

void loop_thread_tell(struct loop_thread *t)
{
	/* eventfd adds: a failed write only means one is pending already */
	(void)!write(t->efd, &(uint64_t){ 1 }, sizeof(uint64_t));
}

void loop_thread_stop(struct loop_thread *t)
{
	if (!t->started)
		return;
	pthread_mutex_lock(&t->lock);
	t->stop = true;
	pthread_cond_signal(&t->cond);
	pthread_mutex_unlock(&t->lock);
	pthread_join(t->thread, NULL);
	t->started = false;
}

void loop_thread_close(struct loop_thread *t)
{
	if (t->done_ev)
		event_free(t->done_ev);
	if (t->efd >= 0)
		close(t->efd);
	t->done_ev = NULL;
	t->efd = -1;
	pthread_cond_destroy(&t->cond);
	pthread_mutex_destroy(&t->lock);
}

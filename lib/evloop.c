// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <signal.h>
#include <stdint.h>
#include <sys/time.h>
#include <systemd/sd-daemon.h>

#include "evloop.h"
#include "log.h"
#include "macro.h"

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	(void)what;
	log_info("signal %d, shutting down", (int)sig);
	sd_notify(0, "STOPPING=1");
	event_base_loopexit(arg, NULL);
}

int shutdown_signals_add(struct event_base *base, struct shutdown_signals *s)
{
	static const int sigs[] = { SIGTERM, SIGINT };

	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++) {
		s->ev[i] = evsignal_new(base, sigs[i], on_signal, base);
		if (!s->ev[i] || event_add(s->ev[i], NULL) < 0) {
			shutdown_signals_free(s);
			return -ENOMEM;
		}
	}
	return 0;
}

void shutdown_signals_free(struct shutdown_signals *s)
{
	for (size_t i = 0; i < ARRAY_SIZE(s->ev); i++) {
		if (s->ev[i])
			event_free(s->ev[i]);
		s->ev[i] = NULL;
	}
}

static void on_watchdog(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	sd_notify(0, "WATCHDOG=1");
}

struct event *watchdog_start(struct event_base *base)
{
	struct event *ev;
	struct timeval tv;
	uint64_t usec;

	if (sd_watchdog_enabled(0, &usec) <= 0)
		return NULL;
	usec /= 2;
	tv = (struct timeval){ .tv_sec = (time_t)(usec / 1000000),
			       .tv_usec = (suseconds_t)(usec % 1000000) };
	ev = event_new(base, -1, EV_PERSIST, on_watchdog, NULL);
	if (ev && event_add(ev, &tv) < 0) {
		event_free(ev);
		ev = NULL;
	}
	return ev;
}

void stop_signals_hold(bool block)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(block ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL);
}

/* TLS's largest record */
#define RECORD_MAX 16384

void http_one_record(struct evhttp_connection *evcon)
{
	struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
	struct evbuffer *out = bev ? bufferevent_get_output(bev) : NULL;

	if (out && evbuffer_get_length(out) <= RECORD_MAX)
		evbuffer_pullup(out, -1);
}

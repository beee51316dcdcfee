/* SPDX-License-Identifier: GPL-2.0 */
/* Event-loop plumbing shared by the daemons. */
#ifndef KMEMCTL_EVLOOP_H
#define KMEMCTL_EVLOOP_H

#include <stdbool.h>

struct event;
struct event_base;
struct evhttp_connection;

struct shutdown_signals {
	struct event *ev[2];
};

/*
 * Holds SIGTERM, SIGINT and SIGHUP back (block) or lets them in. A daemon
 * holds them from its start until its loop handles them, so that a stop
 * during start ends it through its loop, cleanly, not by the signal.
 * Children inherit the mask, and exec keeps it.
 */
void stop_signals_hold(bool block);

/* SIGTERM and SIGINT end the loop (after telling systemd STOPPING=1). */
int shutdown_signals_add(struct event_base *base, struct shutdown_signals *s);
void shutdown_signals_free(struct shutdown_signals *s);

/*
 * systemd's watchdog (WatchdogSec=), pinged from the loop itself at half
 * the period, so that a loop stuck anywhere stops the pings and gets the
 * daemon restarted. NULL when the watchdog is off (or out of memory).
 */
struct event *watchdog_start(struct event_base *base);

/*
 * Call after queueing a request or reply on evcon: what it queued goes out
 * as one TLS record. evhttp queues a message's header and body as
 * separate chains, and an OpenSSL bufferevent writes a record, a write()
 * and a wakeup of the peer per chain. Messages over one record are left
 * as they are (copying them would gain nothing).
 */
void http_one_record(struct evhttp_connection *evcon);

#endif

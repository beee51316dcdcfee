/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The webhook ([notify] webhook): kmemd POSTs a JSON object to it for each
 * rollout verdict its engine reaches and each mitigation trip a host
 * reports, for a chat room, a pager or a ticket queue. Best effort, never
 * in the way: at most NOTIFY_IN_FLIGHT posts are under way (more are
 * dropped and counted), each has 5 s, none is tried again; /metrics counts
 * them by outcome. With several kmemd each posts what it saw: verdicts the
 * one that runs the engine, trips the one that took the report.
 */
#ifndef KMEMD_NOTIFY_H
#define KMEMD_NOTIFY_H

#include <jansson.h>
#include <stdint.h>

#define NOTIFY_IN_FLIGHT 64

struct event_base;
struct notify;

struct notify_stats {
	uint64_t sent, failed, dropped;
};

/*
 * url: http://HOST[:PORT]/PATH or https://... (then ca, a PEM file, is
 * the only trust: as everywhere in kmemctl, not the system's store). -EINVAL
 * with why in err for a URL or CA kmemd cannot use.
 */
int notify_new(struct event_base *base, const char *url, const char *ca, struct notify **out,
	       char *err, size_t errlen);
void notify_free(struct notify *n);
/* body (stolen) to the webhook, with "kmemd": this kmemd's name, added. n NULL: none. */
void notify_post(struct notify *n, json_t *body);
void notify_stats(const struct notify *n, struct notify_stats *st);

#endif

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The agent's connection to kmemd: HTTPS with the host certificate, one
 * keep-alive connection, one report in flight at a time.
 */
#ifndef KMEM_AGENT_UPLINK_H
#define KMEM_AGENT_UPLINK_H

#include <stddef.h>
#include <stdint.h>

#include "agent.h"
#include "kmemctl/v1/report.pb-c.h"

struct event_base;
struct uplink;

enum uplink_result {
	UPLINK_ACKED,
	UPLINK_REFUSED, /* kmemd answered with a refusal */
	UPLINK_UNREACHABLE, /* no answer: connection, TLS or timeout */
};

/* Called once per uplink_send(); `reply` is NULL unless kmemd answered. */
typedef void (*uplink_done)(enum uplink_result result, const Kmemctl__V1__ReportReply *reply,
			    void *arg);

int uplink_new(struct event_base *base, const struct agent_config *cfg, uplink_done done, void *arg,
	       struct uplink **out);
void uplink_free(struct uplink *u);
/* -EBUSY while a report is in flight. */
int uplink_send(struct uplink *u, const uint8_t *buf, size_t len);

#endif

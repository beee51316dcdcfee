/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The agent's connection to kmemd: HTTPS with the host certificate, one
 * keep-alive connection, one request in flight at a time: a report, or a
 * renewal of the host certificate.
 */
#ifndef KMEM_AGENT_UPLINK_H
#define KMEM_AGENT_UPLINK_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>
#include <openssl/x509.h>
#include <time.h>

#include "agent.h"
#include "kmemctl/v1/enroll.pb-c.h"
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
/* -EBUSY while a request is in flight. */
int uplink_send(struct uplink *u, const uint8_t *buf, size_t len);

/* Called once per uplink_renew(); `reply` is NULL unless kmemd answered with one. */
typedef void (*uplink_renewed)(enum uplink_result result, const Kmemctl__V1__EnrollReply *reply,
			       void *arg);
/* An encoded EnrollRequest to POST /v1/agent/renew; -EBUSY while a request is in flight. */
int uplink_renew(struct uplink *u, const uint8_t *buf, size_t len, uplink_renewed done);
/* The host certificate in use: its validity and CN (the host id). */
void uplink_cert(struct uplink *u, time_t *not_before, time_t *not_after, char cn[65]);
/*
 * cert and key (checked to match) for every connection from now on; the
 * open one is closed once idle. The caller keeps its references.
 */
int uplink_use_cert(struct uplink *u, X509 *cert, EVP_PKEY *key);

#endif

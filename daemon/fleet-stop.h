/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The fleet stop (kmemctl fleet stop, resume): while it holds, every
 * report's reply says so, and every agent turns every mitigation off and
 * holds them off whatever its policy, until a reply says it no longer
 * holds. It is the store's, so every kmemd on it tells its hosts: the one
 * that stopped at once, the others from their next rollout tick. Turning
 * off is the safe direction: it needs an operator's certificate, not a
 * signing key (docs/threat-model.md).
 */
#ifndef KMEMD_FLEET_STOP_H
#define KMEMD_FLEET_STOP_H

#include <jansson.h>

#include "tls.h"

struct http_request;
struct kmemd;

/* k->fleet_stop read again from the store; a change another kmemd made is logged. */
int fleet_stop_refresh(struct kmemd *k);
/* {"stopped", "since_ms", "by", "reason"}, for GET /v1/fleet and the routes' replies. */
json_t *fleet_stop_json(const struct kmemd *k);

/* POST /v1/fleet/stop: {"reason": TEXT} (optional). */
void handle_fleet_stop(struct http_request *req, struct kmemd *k, const struct tls_identity *peer);
/* POST /v1/fleet/resume: no body, or {}. */
void handle_fleet_resume(struct http_request *req, struct kmemd *k,
			 const struct tls_identity *peer);

#endif

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The admin API's JSON, built from the rows the store gives: what
 * kmemctl -j and the dashboard read (docs/protocol.md). Each returns 0 and
 * a new reference in *out, or a negative errno (-ENOENT: no such row).
 */
#ifndef KMEMD_ADMIN_JSON_H
#define KMEMD_ADMIN_JSON_H

#include <jansson.h>
#include <stdbool.h>

#include "store.h"

/* Each host with its labels, policy and mitigation states, by host id. */
int admin_json_hosts(struct store *st, json_t **out);
/* Up to limit of them after the id after, matching match (store.h's hosts_page). */
int admin_json_hosts_page(struct store *st, const char *after, const char *match, unsigned limit,
			  json_t **out);
/* One host, as in admin_json_hosts(). */
int admin_json_host(struct store *st, const char *host_id, json_t **out);
/* Each policy version: its document, signer, and whether it is signed. */
int admin_json_policies(struct store *st, json_t **out);
/* The same, retired versions too when retired (with their "retired_ms"). */
int admin_json_policies_retired(struct store *st, bool retired, json_t **out);
/* Each rollout newest first, with its member count per wave. */
int admin_json_rollouts(struct store *st, json_t **out);
/* The same, archived ones too when archived (with their "archived_ms"). */
int admin_json_rollouts_archived(struct store *st, bool archived, json_t **out);
/*
 * One rollout as in admin_json_rollouts(), the first members_max of its
 * members in plan order (stratum, wave, previous policy, the policy each
 * runs now), how many it has in all and per wave (and how many of those
 * run its policy), and its verdicts oldest first.
 */
int admin_json_rollout_status(struct store *st, const char *name, size_t members_max, json_t **out);
/* Every enrollment secret, newest first, without its hash. */
int admin_json_secrets(struct store *st, json_t **out);
/* Every direct assignment, newest first. */
int admin_json_assignments(struct store *st, json_t **out);
/* The audit rows q selects, newest first (GET /v1/audit's "entries"). */
int admin_json_audit(struct store *st, const struct store_audit_query *q, json_t **out);
/* Every operator certificate kmemd saw or revoked, by name. */
int admin_json_operators(struct store *st, json_t **out);

#endif

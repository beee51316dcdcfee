/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmemd's handlers, as the router (router.h) calls them, with the
 * request and reply helpers (http.h) and the audit (audit.h) they use.
 */
#ifndef KMEMD_SERVER_H
#define KMEMD_SERVER_H

#include <event2/http.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "kmemctl/v1/facts.pb-c.h"

#include "audit.h"
#include "http.h"
#include "kmemd.h"
#include "selector.h"
#include "router.h"
#include "store.h"
#include "tls.h"

/*
 * admin.c: why a signed bundle (what: "policy", "build record") did not
 * verify, from sign.h's policy_verify() or build_record_verify() error.
 */
void verify_reason(int r, const char *what, char *why, size_t len);
/* enroll.c: SHA-256 of data in lowercase hex. */
void sha256_hex(const void *data, size_t len, char hex[65]);
/* What build makes of the store (admin-json.h), or 500 when the store fails. */
void reply_rows(struct http_request *req, struct kmemd *k, int (*build)(struct store *, json_t **));
/* rollouts.c: POST /v1/rollouts, GET /v1/rollouts, POST /v1/rollouts/action. */
void handle_rollouts_post(struct http_request *req, struct kmemd *k,
			  const struct tls_identity *peer);
void handle_rollout_archive(struct http_request *req, struct kmemd *k,
			    const struct tls_identity *peer);
void handle_rollouts_get(struct http_request *req, struct kmemd *k,
			 const struct tls_identity *peer);
void handle_rollout_status(struct http_request *req, struct kmemd *k,
			   const struct tls_identity *peer);
void handle_rollout_action(struct http_request *req, struct kmemd *k,
			   const struct tls_identity *peer);
/* POST /v1/rollouts/plan: what a document's waves could detect; stores nothing. */
void handle_rollouts_plan(struct http_request *req, struct kmemd *k,
			  const struct tls_identity *peer);
void handle_health(struct http_request *req, struct kmemd *k, const struct tls_identity *peer);
/* web.c: the dashboard's files. */
void handle_web_index(struct http_request *req, struct kmemd *k, const struct tls_identity *peer);
void handle_web_static(struct http_request *req, struct kmemd *k, const struct tls_identity *peer);
void handle_report(struct http_request *req, struct kmemd *k, const struct tls_identity *peer);
void handle_policies_get(struct http_request *req, struct kmemd *k,
			 const struct tls_identity *peer);
void handle_policy_retire(struct http_request *req, struct kmemd *k,
			  const struct tls_identity *peer);
void handle_policies_post(struct http_request *req, struct kmemd *k,
			  const struct tls_identity *peer);
void handle_assignments_post(struct http_request *req, struct kmemd *k,
			     const struct tls_identity *peer);
void handle_hosts_get(struct http_request *req, struct kmemd *k, const struct tls_identity *peer);
/* dashboard.c: what the dashboard is drawn from. */
void handle_fleet_get(struct http_request *req, struct kmemd *k, const struct tls_identity *peer);
void handle_host_detail(struct http_request *req, struct kmemd *k, const struct tls_identity *peer);
void handle_rollout_series(struct http_request *req, struct kmemd *k,
			   const struct tls_identity *peer);
void handle_metrics(struct http_request *req, struct kmemd *k, const struct tls_identity *peer);
void handle_telemetry_get(struct http_request *req, struct kmemd *k,
			  const struct tls_identity *peer);
void handle_enroll(struct http_request *req, struct kmemd *k, const struct tls_identity *peer);
void handle_renew(struct http_request *req, struct kmemd *k, const struct tls_identity *peer);
void handle_secrets_get(struct http_request *req, struct kmemd *k, const struct tls_identity *peer);
void handle_assignments_get(struct http_request *req, struct kmemd *k,
			    const struct tls_identity *peer);
void handle_assignment_delete(struct http_request *req, struct kmemd *k,
			      const struct tls_identity *peer);
void handle_forget_post(struct http_request *req, struct kmemd *k, const struct tls_identity *peer);
void handle_secret_post(struct http_request *req, struct kmemd *k, const struct tls_identity *peer);
void handle_secret_revoke(struct http_request *req, struct kmemd *k,
			  const struct tls_identity *peer);
void handle_revoke_post(struct http_request *req, struct kmemd *k, const struct tls_identity *peer);
void handle_reenroll_post(struct http_request *req, struct kmemd *k,
			  const struct tls_identity *peer);

#endif

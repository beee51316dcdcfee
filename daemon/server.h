/* SPDX-License-Identifier: GPL-2.0 */
/* Route table types and reply helpers shared by kmemd's handlers. */
#ifndef KMEMD_SERVER_H
#define KMEMD_SERVER_H

#include <event2/http.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "kmemctl/v1/facts.pb-c.h"

#include "kmemd.h"
#include "selector.h"
#include "store.h"
#include "tls.h"

enum route_role {
	ROLE_ANY, /* no certificate needed (enrollment, health) */
	ROLE_HOST, /* host certificate from the fleet CA */
	ROLE_ADMIN, /* operator certificate */
};

typedef void (*route_handler)(struct evhttp_request *req, struct kmemd *k,
			      const struct tls_identity *peer);

struct route {
	enum evhttp_cmd_type method;
	const char *path;
	enum route_role role;
	route_handler handler;
};

void reply_text(struct evhttp_request *req, int code, const char *reason, const char *text);
void reply_bytes(struct evhttp_request *req, int code, const char *reason, const char *type,
		 const void *data, size_t len);
/* m encoded in a buffer of its own (malloc'ed); NULL when out of memory. */
uint8_t *pack_message(const ProtobufCMessage *m, size_t *len);
/* m encoded, as application/x-protobuf. */
void reply_message(struct evhttp_request *req, int code, const char *reason,
		   const ProtobufCMessage *m);
int64_t kmemd_now_ms(void);
/*
 * A change made by actor (an operator's certificate name, or an enrolling
 * host): a row in the store's audit table and a journal event with
 * message_id and ACTOR=, ACTION=, DETAIL= (and HOST_ID= when host is set).
 */
void kmemd_audit(struct kmemd *k, const char *message_id, const char *actor, const char *action,
		 const char *host, const char *detail);
/* Sends o (stolen) as application/json. */
void reply_json(struct evhttp_request *req, int code, const char *reason, json_t *o);
/* {"error": why} with code. */
void reply_error(struct evhttp_request *req, int code, const char *reason, const char *why);
/* The client's address, and its network's key (daemon/conn.h). */
void kmemd_request_peer(struct evhttp_request *req, char *addr, size_t addrlen, char *key,
			size_t keylen);
/* The body of a JSON request; NULL, with 415 sent, when it is not one. */
const uint8_t *request_json(struct evhttp_request *req, size_t *len);
/* The request body as one buffer (evhttp bounded its size); NULL when empty. */
const uint8_t *request_body(struct evhttp_request *req, size_t *len);
/* The Content-Type is exactly type (parameters after ';' ignored). */
bool content_type_is(struct evhttp_request *req, const char *type);

#define PROTOBUF_TYPE "application/x-protobuf"
#define JSON_TYPE "application/json"

/* What build makes of the store (admin-json.h), or 500 when the store fails. */
void reply_rows(struct evhttp_request *req, struct kmemd *k,
		int (*build)(struct store *, json_t **));
/* rollouts.c: POST /v1/rollouts, GET /v1/rollouts, POST /v1/rollouts/action. */
void handle_rollouts_post(struct evhttp_request *req, struct kmemd *k,
			  const struct tls_identity *peer);
void handle_rollouts_get(struct evhttp_request *req, struct kmemd *k,
			 const struct tls_identity *peer);
void handle_rollout_status(struct evhttp_request *req, struct kmemd *k,
			   const struct tls_identity *peer);
void handle_rollout_action(struct evhttp_request *req, struct kmemd *k,
			   const struct tls_identity *peer);
void handle_health(struct evhttp_request *req, struct kmemd *k, const struct tls_identity *peer);
/* web.c: the dashboard's files. */
void handle_web_index(struct evhttp_request *req, struct kmemd *k, const struct tls_identity *peer);
void handle_web_static(struct evhttp_request *req, struct kmemd *k,
		       const struct tls_identity *peer);
void handle_report(struct evhttp_request *req, struct kmemd *k, const struct tls_identity *peer);
void handle_policies_get(struct evhttp_request *req, struct kmemd *k,
			 const struct tls_identity *peer);
void handle_policies_post(struct evhttp_request *req, struct kmemd *k,
			  const struct tls_identity *peer);
void handle_assignments_post(struct evhttp_request *req, struct kmemd *k,
			     const struct tls_identity *peer);
void handle_hosts_get(struct evhttp_request *req, struct kmemd *k, const struct tls_identity *peer);
/* dashboard.c: what the dashboard is drawn from. */
void handle_fleet_get(struct evhttp_request *req, struct kmemd *k, const struct tls_identity *peer);
void handle_host_detail(struct evhttp_request *req, struct kmemd *k,
			const struct tls_identity *peer);
void handle_rollout_series(struct evhttp_request *req, struct kmemd *k,
			   const struct tls_identity *peer);
void handle_metrics(struct evhttp_request *req, struct kmemd *k, const struct tls_identity *peer);
void handle_telemetry_get(struct evhttp_request *req, struct kmemd *k,
			  const struct tls_identity *peer);
void handle_enroll(struct evhttp_request *req, struct kmemd *k, const struct tls_identity *peer);
void handle_secret_post(struct evhttp_request *req, struct kmemd *k,
			const struct tls_identity *peer);
void handle_secret_revoke(struct evhttp_request *req, struct kmemd *k,
			  const struct tls_identity *peer);
void handle_revoke_post(struct evhttp_request *req, struct kmemd *k,
			const struct tls_identity *peer);
void handle_reenroll_post(struct evhttp_request *req, struct kmemd *k,
			  const struct tls_identity *peer);

#endif

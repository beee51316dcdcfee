// SPDX-License-Identifier: GPL-2.0
/* The route table and dispatch (router.h). */
#include <string.h>

#include "audit.h"
#include "conn.h"
#include "http.h"
#include "kmemd.h"
#include "macro.h"
#include "message-ids.h"
#include "router.h"
#include "server.h"

static const struct route routes[] = {
	{ HTTP_GET, "/v1/health", ROLE_ANY, 0, handle_health },
	{ HTTP_GET, "/", ROLE_ADMIN, 0, handle_web_index },
	{ HTTP_GET, "/static/", ROLE_ADMIN, ROUTE_PREFIX, handle_web_static },
	{ HTTP_POST, "/v1/agent/report", ROLE_HOST, ROUTE_INGEST, handle_report },
	{ HTTP_GET, "/v1/policies", ROLE_ADMIN, 0, handle_policies_get },
	{ HTTP_POST, "/v1/policies", ROLE_ADMIN, ROUTE_AUDITED, handle_policies_post, "policy.add",
	  MID_POLICY_UPLOADED },
	{ HTTP_POST, "/v1/assignments", ROLE_ADMIN, ROUTE_AUDITED, handle_assignments_post,
	  "policy.assign", MID_POLICY_ASSIGNED },
	{ HTTP_GET, "/v1/hosts", ROLE_ADMIN, 0, handle_hosts_get },
	{ HTTP_GET, "/v1/hosts/detail", ROLE_ADMIN, 0, handle_host_detail },
	{ HTTP_GET, "/v1/fleet", ROLE_ADMIN, 0, handle_fleet_get },
	{ HTTP_POST, "/v1/hosts/revoke", ROLE_ADMIN, ROUTE_AUDITED, handle_revoke_post,
	  "host.revoke", MID_HOST_REVOKED },
	{ HTTP_POST, "/v1/hosts/reenroll", ROLE_ADMIN, ROUTE_AUDITED, handle_reenroll_post,
	  "host.reenroll", MID_HOST_REENROLL },
	{ HTTP_GET, "/v1/telemetry", ROLE_ADMIN, 0, handle_telemetry_get },
	{ HTTP_POST, "/v1/enroll", ROLE_ANY, ROUTE_AUDITED, handle_enroll, "host.enroll",
	  MID_HOST_ENROLLED },
	{ HTTP_POST, "/v1/enroll/secrets", ROLE_ADMIN, ROUTE_AUDITED, handle_secret_post,
	  "enroll.secret.add", MID_ENROLL_SECRET_ADDED },
	{ HTTP_POST, "/v1/enroll/secrets/revoke", ROLE_ADMIN, ROUTE_AUDITED, handle_secret_revoke,
	  "enroll.secret.revoke", MID_ENROLL_SECRET_REVOKED },
	{ HTTP_GET, "/metrics", ROLE_ADMIN, 0, handle_metrics },
	{ HTTP_POST, "/v1/rollouts", ROLE_ADMIN, ROUTE_AUDITED, handle_rollouts_post,
	  "rollout.create", MID_ROLLOUT_ACTION },
	{ HTTP_GET, "/v1/rollouts", ROLE_ADMIN, 0, handle_rollouts_get },
	{ HTTP_POST, "/v1/rollouts/plan", ROLE_ADMIN, 0, handle_rollouts_plan },
	{ HTTP_GET, "/v1/rollouts/status", ROLE_ADMIN, 0, handle_rollout_status },
	{ HTTP_GET, "/v1/rollouts/series", ROLE_ADMIN, 0, handle_rollout_series },
	{ HTTP_POST, "/v1/rollouts/action", ROLE_ADMIN, ROUTE_AUDITED, handle_rollout_action,
	  "rollout.action", MID_ROLLOUT_ACTION },
};

/*
 * With a separate admin CA, operators are whoever it vouches for and no
 * one else: the fleet CA, whose key kmemd keeps online for enrollment,
 * cannot make an operator, and the admin CA cannot make a host. Without
 * one, the OU ("host", "admin") of a fleet CA certificate says.
 */
static bool role_allows(STACK_OF(X509) * admin_cas, enum route_role role, struct http_request *req,
			const struct tls_identity *id, int id_result)
{
	bool by_admin_ca = admin_cas && conn_peer_anchored_in(req, admin_cas);

	switch (role) {
	case ROLE_ANY:
		return true;
	case ROLE_HOST:
		return id_result == 0 && !by_admin_ca && strcmp(id->ou, "host") == 0;
	case ROLE_ADMIN:
		return id_result == 0 && router_operator(admin_cas, by_admin_ca, id);
	}
	return false;
}

bool router_operator(STACK_OF(X509) * admin_cas, bool by_admin_ca, const struct tls_identity *id)
{
	return admin_cas ? by_admin_ca : strcmp(id->ou, "admin") == 0;
}

static bool route_matches(const struct route *r, const char *path)
{
	return r->flags & ROUTE_PREFIX ? strncmp(r->path, path, strlen(r->path)) == 0 :
					 strcmp(r->path, path) == 0;
}

/* The route's handler, with what the router does around it by the route's flags. */
static void handle(const struct route *r, struct http_request *req, struct kmemd *k,
		   const struct tls_identity *peer)
{
	if (!(r->flags & ROUTE_AUDITED)) {
		r->handler(req, k, peer);
		return;
	}
	/* the actor is the certificate's; a route open to anyone names its own */
	audit_begin(k, req, r->role == ROLE_ANY ? NULL : peer, r->action, r->message_id);
	r->handler(req, k, peer);
	audit_end(req);
}

void router_dispatch(struct http_request *req, struct kmemd *k, STACK_OF(X509) * admin_cas)
{
	const char *path = req->path;
	enum http_method method = req->method;
	const struct tls_identity *id = NULL;
	bool path_known = false;
	int id_result;

	if (!path) {
		reply_text(req, HTTP_BADREQUEST, "Bad Request", "bad request target");
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(routes); i++) {
		const struct route *r = &routes[i];

		if (!route_matches(r, path))
			continue;
		path_known = true;
		if (r->method != method)
			continue;
		id_result = conn_peer_identity(req, &id);
		if (r->role != ROLE_ANY && id_result < 0) {
			reply_text(req, 401, "Unauthorized", "a client certificate is required");
			return;
		}
		if (!role_allows(admin_cas, r->role, req, id, id_result)) {
			reply_text(req, 403, "Forbidden",
				   "certificate role may not call this route");
			return;
		}
		handle(r, req, k, id_result == 0 ? id : NULL);
		return;
	}
	if (path_known) {
		reply_text(req, HTTP_BADMETHOD, "Method Not Allowed", "method not allowed");
		return;
	}
	reply_text(req, HTTP_NOTFOUND, "Not Found", "no such route");
}

void router_print(FILE *f)
{
	static const char *const roles[] = { "any", "host", "admin" };

	for (size_t i = 0; i < ARRAY_SIZE(routes); i++) {
		const struct route *r = &routes[i];

		fprintf(f, "%s %s %s%s%s%s%s\n", http_method_str(r->method), r->path,
			roles[r->role], r->flags & ROUTE_PREFIX ? " prefix" : "",
			r->flags & ROUTE_INGEST ? " ingest" : "",
			r->flags & ROUTE_AUDITED ? " audited " : "",
			r->flags & ROUTE_AUDITED ? r->action : "");
	}
}

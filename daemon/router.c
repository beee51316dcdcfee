// SPDX-License-Identifier: GPL-2.0
/* The route table and dispatch (router.h). */
#include <string.h>

#include "audit.h"
#include "builds.h"
#include "conn.h"
#include "fleet-stop.h"
#include "http.h"
#include "kmemd.h"
#include "macro.h"
#include "message-ids.h"
#include "operators.h"
#include "router.h"
#include "server.h"

/*
 * Observers read: every GET, and a rollout's plan (computed, not kept).
 * What changes state is an operator's.
 */
static const struct route routes[] = {
	{ HTTP_GET, "/v1/health", ROLE_ANY, 0, handle_health },
	{ HTTP_GET, "/", ROLE_OBSERVER, 0, handle_web_index },
	{ HTTP_GET, "/static/", ROLE_OBSERVER, ROUTE_PREFIX, handle_web_static },
	{ HTTP_POST, "/v1/agent/report", ROLE_HOST, ROUTE_INGEST, handle_report },
	{ HTTP_POST, "/v1/agent/renew", ROLE_HOST, ROUTE_AUDITED, handle_renew, "host.renew",
	  MID_HOST_RENEWED },
	{ HTTP_GET, "/v1/policies", ROLE_OBSERVER, 0, handle_policies_get },
	{ HTTP_POST, "/v1/policies", ROLE_OPERATOR, ROUTE_AUDITED, handle_policies_post,
	  "policy.add", MID_POLICY_UPLOADED },
	{ HTTP_POST, "/v1/policies/retire", ROLE_OPERATOR, ROUTE_AUDITED, handle_policy_retire,
	  "policy.retire", MID_POLICY_RETIRED },
	{ HTTP_POST, "/v1/assignments", ROLE_OPERATOR, ROUTE_AUDITED, handle_assignments_post,
	  "policy.assign", MID_POLICY_ASSIGNED },
	{ HTTP_GET, "/v1/assignments", ROLE_OBSERVER, 0, handle_assignments_get },
	{ HTTP_POST, "/v1/assignments/delete", ROLE_OPERATOR, ROUTE_AUDITED,
	  handle_assignment_delete, "policy.unassign", MID_ASSIGNMENT_DELETED },
	{ HTTP_GET, "/v1/whoami", ROLE_OBSERVER, 0, handle_whoami },
	{ HTTP_GET, "/v1/operators", ROLE_OBSERVER, ROUTE_AUDITED, handle_operators_get,
	  "operator.list", MID_SENSITIVE_READ },
	{ HTTP_POST, "/v1/operators/revoke", ROLE_OPERATOR, ROUTE_AUDITED, handle_operator_revoke,
	  "operator.revoke", MID_OPERATOR_REVOKED },
	{ HTTP_GET, "/v1/audit", ROLE_OBSERVER, ROUTE_AUDITED, handle_audit_get, "audit.read",
	  MID_SENSITIVE_READ },
	{ HTTP_GET, "/v1/hosts", ROLE_OBSERVER, 0, handle_hosts_get },
	{ HTTP_GET, "/v1/hosts/detail", ROLE_OBSERVER, 0, handle_host_detail },
	{ HTTP_GET, "/v1/fleet", ROLE_OBSERVER, 0, handle_fleet_get },
	{ HTTP_POST, "/v1/fleet/stop", ROLE_OPERATOR, ROUTE_AUDITED, handle_fleet_stop,
	  "fleet.stop", MID_FLEET_STOP },
	{ HTTP_POST, "/v1/fleet/resume", ROLE_OPERATOR, ROUTE_AUDITED, handle_fleet_resume,
	  "fleet.resume", MID_FLEET_STOP },
	{ HTTP_POST, "/v1/hosts/revoke", ROLE_OPERATOR, ROUTE_AUDITED, handle_revoke_post,
	  "host.revoke", MID_HOST_REVOKED },
	{ HTTP_POST, "/v1/hosts/reenroll", ROLE_OPERATOR, ROUTE_AUDITED, handle_reenroll_post,
	  "host.reenroll", MID_HOST_REENROLL },
	{ HTTP_POST, "/v1/hosts/forget", ROLE_OPERATOR, ROUTE_AUDITED, handle_forget_post,
	  "host.forget", MID_HOST_FORGOTTEN },
	{ HTTP_GET, "/v1/telemetry", ROLE_OBSERVER, 0, handle_telemetry_get },
	{ HTTP_GET, "/v1/builds", ROLE_OBSERVER, 0, handle_builds_get },
	{ HTTP_GET, "/v1/builds/file", ROLE_OBSERVER, 0, handle_build_file_get },
	{ HTTP_POST, "/v1/builds/records", ROLE_OPERATOR, ROUTE_AUDITED, handle_build_record_post,
	  "build.publish", MID_BUILD_RECORD_PUBLISHED },
	{ HTTP_POST, "/v1/enroll", ROLE_ANY, ROUTE_AUDITED, handle_enroll, "host.enroll",
	  MID_HOST_ENROLLED },
	{ HTTP_GET, "/v1/enroll/secrets", ROLE_OBSERVER, ROUTE_AUDITED, handle_secrets_get,
	  "enroll.secret.list", MID_SENSITIVE_READ },
	{ HTTP_POST, "/v1/enroll/secrets", ROLE_OPERATOR, ROUTE_AUDITED, handle_secret_post,
	  "enroll.secret.add", MID_ENROLL_SECRET_ADDED },
	{ HTTP_POST, "/v1/enroll/secrets/revoke", ROLE_OPERATOR, ROUTE_AUDITED,
	  handle_secret_revoke, "enroll.secret.revoke", MID_ENROLL_SECRET_REVOKED },
	{ HTTP_GET, "/metrics", ROLE_OBSERVER, 0, handle_metrics },
	{ HTTP_POST, "/v1/rollouts", ROLE_OPERATOR, ROUTE_AUDITED, handle_rollouts_post,
	  "rollout.create", MID_ROLLOUT_ACTION },
	{ HTTP_GET, "/v1/rollouts", ROLE_OBSERVER, 0, handle_rollouts_get },
	{ HTTP_POST, "/v1/rollouts/archive", ROLE_OPERATOR, ROUTE_AUDITED, handle_rollout_archive,
	  "rollout.archive", MID_ROLLOUT_ACTION },
	{ HTTP_POST, "/v1/rollouts/plan", ROLE_OBSERVER, 0, handle_rollouts_plan },
	{ HTTP_GET, "/v1/rollouts/status", ROLE_OBSERVER, 0, handle_rollout_status },
	{ HTTP_GET, "/v1/rollouts/series", ROLE_OBSERVER, 0, handle_rollout_series },
	{ HTTP_POST, "/v1/rollouts/action", ROLE_OPERATOR, ROUTE_AUDITED, handle_rollout_action,
	  "rollout.action", MID_ROLLOUT_ACTION },
};

static const char *const role_names[] = {
	[ROLE_ANY] = "any",
	[ROLE_HOST] = "host",
	[ROLE_OBSERVER] = "observer",
	[ROLE_OPERATOR] = "operator",
};

const char *router_role_name(enum route_role role)
{
	return role_names[role];
}

/*
 * With a separate admin CA, operators are whoever it vouches for and no
 * one else: the fleet CA, whose key kmemd keeps online for enrollment,
 * cannot make an operator, and the admin CA cannot make a host. Without
 * one, the OU of a fleet CA certificate says.
 */
enum route_role router_role(STACK_OF(X509) * admin_cas, bool by_admin_ca,
			    const struct tls_identity *id)
{
	if (strcmp(id->ou, "host") == 0)
		return admin_cas && by_admin_ca ? ROLE_ANY : ROLE_HOST;
	if (admin_cas && !by_admin_ca)
		return ROLE_ANY;
	if (strcmp(id->ou, "observer") == 0)
		return ROLE_OBSERVER;
	if (strcmp(id->ou, "operator") == 0 || strcmp(id->ou, "admin") == 0)
		return ROLE_OPERATOR;
	return ROLE_ANY;
}

static enum route_role caller_role(STACK_OF(X509) * admin_cas, struct http_request *req,
				   const struct tls_identity *id, int id_result)
{
	if (id_result != 0)
		return ROLE_ANY;
	return router_role(admin_cas, admin_cas && conn_peer_anchored_in(req, admin_cas), id);
}

/* An operator does what an observer does; a host and an operator share nothing. */
static bool role_allows(enum route_role need, enum route_role caller)
{
	switch (need) {
	case ROLE_ANY:
		return true;
	case ROLE_HOST:
		return caller == ROLE_HOST;
	case ROLE_OBSERVER:
		return caller == ROLE_OBSERVER || caller == ROLE_OPERATOR;
	case ROLE_OPERATOR:
		return caller == ROLE_OPERATOR;
	}
	return false;
}

static const char *refusal(enum route_role need, enum route_role caller)
{
	if (need == ROLE_OPERATOR && caller == ROLE_OBSERVER)
		return "an observer certificate reads only: this route changes state and needs an "
		       "operator";
	if (need == ROLE_HOST)
		return "this route is for hosts' certificates";
	return caller == ROLE_HOST ? "a host certificate may not call this route" :
				     "this certificate has no role kmemd knows (OU observer, "
				     "operator or host, from the CA that makes them)";
}

/* The request being dispatched, for router_caller_role(): one at a time, on kmemd's loop. */
static struct {
	const struct http_request *req;
	enum route_role role;
} dispatching;

enum route_role router_caller_role(const struct http_request *req)
{
	return dispatching.req == req ? dispatching.role : ROLE_ANY;
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
	enum route_role caller;
	bool path_known = false;
	int id_result = conn_peer_identity(req, &id);

	/* a client without a certificate refused is closed: its next try handshakes again */
	req->close = id_result < 0;
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
		if (r->role != ROLE_ANY && id_result < 0) {
			reply_text(req, 401, "Unauthorized", "a client certificate is required");
			return;
		}
		caller = caller_role(admin_cas, req, id, id_result);
		if (!role_allows(r->role, caller)) {
			reply_text(req, 403, "Forbidden", refusal(r->role, caller));
			return;
		}
		/* revoked operators are refused on every request, connected or not */
		if (r->role >= ROLE_OBSERVER && !operators_admit(k, req, id, caller))
			return;
		req->close = false;
		dispatching.req = req;
		dispatching.role = caller;
		handle(r, req, k, id_result == 0 ? id : NULL);
		dispatching.req = NULL;
		return;
	}
	if (path_known) {
		reply_text(req, HTTP_BADMETHOD, "Method Not Allowed", "method not allowed");
		return;
	}
	reply_text(req, HTTP_NOTFOUND, "Not Found", "no such route");
}

json_t *router_allowed(enum route_role role)
{
	json_t *a = json_array();
	char line[128];

	for (size_t i = 0; a && i < ARRAY_SIZE(routes); i++) {
		const struct route *r = &routes[i];

		if (r->role == ROLE_ANY || !role_allows(r->role, role))
			continue;
		snprintf(line, sizeof(line), "%s %s%s", http_method_str(r->method), r->path,
			 r->flags & ROUTE_PREFIX ? "*" : "");
		json_array_append_new(a, json_string(line));
	}
	return a;
}

void router_print(FILE *f)
{
	for (size_t i = 0; i < ARRAY_SIZE(routes); i++) {
		const struct route *r = &routes[i];

		fprintf(f, "%s %s %s%s%s%s%s\n", http_method_str(r->method), r->path,
			role_names[r->role], r->flags & ROUTE_PREFIX ? " prefix" : "",
			r->flags & ROUTE_INGEST ? " ingest" : "",
			r->flags & ROUTE_AUDITED ? " audited " : "",
			r->flags & ROUTE_AUDITED ? r->action : "");
	}
}

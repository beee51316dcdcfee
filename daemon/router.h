/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmemd's routes: the table of what each path and method is, who may call
 * it and how the router treats it (its flags), and the dispatch of a
 * request to its handler. The transport (server.c, conn.c) hands every
 * request it has read whole to router_dispatch().
 */
#ifndef KMEMD_ROUTER_H
#define KMEMD_ROUTER_H

#include <jansson.h>
#include <openssl/x509.h>
#include <stdio.h>

#include "http1.h"
#include "tls.h"

struct kmemd;

/*
 * What a route needs, and what a caller's certificate is (ROLE_ANY: none
 * that kmemd takes). An operator may do whatever an observer may.
 */
enum route_role {
	ROLE_ANY, /* no certificate needed (enrollment, health) */
	ROLE_HOST, /* host certificate from the fleet CA */
	ROLE_OBSERVER, /* operator certificate of either role: reads */
	ROLE_OPERATOR, /* operator certificate with OU "operator" (or "admin"): changes */
};

enum route_flags {
	/* the path names every path under it */
	ROUTE_PREFIX = 1 << 0,
	/* agents' reports: stored by the ingest writer (report.c, ingest-worker.h) */
	ROUTE_INGEST = 1 << 1,
	/* changes state, or reads what is audited: its 2xx answer writes an audit row (audit.h) */
	ROUTE_AUDITED = 1 << 2,
};

typedef void (*route_handler)(struct http_request *req, struct kmemd *k,
			      const struct tls_identity *peer);

struct route {
	enum http_method method;
	const char *path;
	enum route_role role;
	unsigned flags; /* enum route_flags */
	route_handler handler;
	/* ROUTE_AUDITED: the audit row's action and the journal's MESSAGE_ID */
	const char *action, *message_id;
};

/*
 * req to its route's handler, once the caller's certificate may call it.
 * admin_cas: [server] admin_ca's certificates (NULL: the OU names operators).
 */
void router_dispatch(struct http_request *req, struct kmemd *k, STACK_OF(X509) * admin_cas);

/*
 * The role of a verified client certificate, id. With admin_cas, a
 * certificate they vouch for (by_admin_ca) is an observer or operator by
 * its OU, and nothing else is either; without, the fleet CA's OU says
 * (host, observer, operator; "admin" is operator).
 */
enum route_role router_role(STACK_OF(X509) * admin_cas, bool by_admin_ca,
			    const struct tls_identity *id);

/* The caller's role while req is being handled (ROLE_ANY after). */
enum route_role router_caller_role(const struct http_request *req);

const char *router_role_name(enum route_role role);

/* The routes role may call, as ["METHOD PATH", ...] (GET /v1/whoami). */
json_t *router_allowed(enum route_role role);

/* The route table, a route a line: method, path, role, flags, action (kmemd -r). */
void router_print(FILE *f);

#endif

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The audit log of changes, and of reads of what says who may do what or
 * who did (routes flagged ROUTE_AUDITED in router.c): who (the certificate's name; an enrolling
 * host's id), what (the route's action) and the detail its handler gives,
 * as a row in the store's audit table and a journal event with the
 * route's MESSAGE_ID and ACTOR=, ACTION=, DETAIL= (HOST_ID= for a host).
 *
 * Driven by the route table, not by each handler remembering it: around
 * a route flagged ROUTE_AUDITED the router opens an audit, the handler
 * says what it changed (audit_detail()), and the route's 2xx answer
 * writes the row and the journal event before it is sent (http.c). A
 * route that answers 2xx without a detail is still audited, its detail
 * "(none given)", and the omission logged as kmemd's bug.
 */
#ifndef KMEMD_AUDIT_H
#define KMEMD_AUDIT_H

#include "macro.h"
#include "tls.h"

struct http_request;
struct kmemd;

/* The router: req, on a route audited as action under message_id, is being handled. */
void audit_begin(struct kmemd *k, struct http_request *req, const struct tls_identity *peer,
		 const char *action, const char *message_id);
/* The router: its handler returned. An audited route answers before it returns. */
void audit_end(struct http_request *req);

/*
 * The handler: what req changes, should it answer 2xx; host when the
 * change is about one (HOST_ID=, and the actor of an enrollment, which
 * has no certificate).
 */
void audit_detail(struct http_request *req, const char *host, const char *fmt, ...) _printf_(3, 4);

/* http.c: req is answered with code; a 2xx one writes its audit, if it has one, now. */
void audit_answered(struct http_request *req, int code);

/*
 * GET /v1/audit: rows newest first, filtered by actor, action, host, time
 * (from, to) and paged (before, limit; next_before names the next page).
 */
void handle_audit_get(struct http_request *req, struct kmemd *k, const struct tls_identity *peer);

#endif

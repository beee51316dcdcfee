// SPDX-License-Identifier: GPL-2.0
/* The audit log of changes and sensitive reads (audit.h). */
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "admin-json.h"
#include "audit.h"
#include "http.h"
#include "kmemd.h"
#include "log.h"
#include "report-check.h"
#include "requests.h"
#include "store.h"
#include "text.h"

/*
 * The request being handled on an audited route. One at a time: handlers
 * run on kmemd's one event loop, and an audited one answers before it
 * returns.
 */
static struct {
	struct kmemd *k;
	struct http_request *req;
	const char *action, *message_id;
	char actor[96], host[96], detail[1024];
	bool told, answered;
} cur;

static void kmemd_audit(struct kmemd *k, const char *message_id, const char *actor,
			const char *action, const char *host, const char *detail)
{
	char f_actor[128], f_action[64], f_detail[1100], f_host[128];
	const char *fields[] = { f_actor, f_action, f_detail, host ? f_host : NULL, NULL };

	snprintf(f_actor, sizeof(f_actor), "ACTOR=%s", actor);
	snprintf(f_action, sizeof(f_action), "ACTION=%s", action);
	snprintf(f_detail, sizeof(f_detail), "DETAIL=%s", detail);
	snprintf(f_host, sizeof(f_host), "HOST_ID=%s", host ? host : "");
	/* the change is made: a lost audit row still leaves the journal's */
	if (k->store->ops->audit(k->store, kmemd_now_ms(), actor, action, host, detail) < 0)
		log_error("the audit row for %s by '%s' (%s) was not stored: %s", action, actor,
			  detail, k->store->ops->error(k->store));
	log_event(LOG_NOTICE, message_id, fields, "%s by '%s': %s", action, actor, detail);
}

void audit_begin(struct kmemd *k, struct http_request *req, const struct tls_identity *peer,
		 const char *action, const char *message_id)
{
	cur.k = k;
	cur.req = req;
	cur.action = action;
	cur.message_id = message_id;
	snprintf(cur.actor, sizeof(cur.actor), "%s", peer ? peer->cn : "");
	cur.host[0] = cur.detail[0] = '\0';
	cur.told = cur.answered = false;
}

void audit_end(struct http_request *req)
{
	if (cur.req == req && !cur.answered)
		log_error("BUG: %s returned unanswered: a later answer is not audited", cur.action);
	cur.req = NULL;
}

void audit_detail(struct http_request *req, const char *host, const char *fmt, ...)
{
	char raw[sizeof(cur.detail)];
	va_list ap;

	if (cur.req != req) {
		log_error("BUG: a change outside an audited route: %s", fmt);
		return;
	}
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	/*
	 * The detail holds what operators and hosts sent (names, reasons,
	 * patterns): one line, escaped, whatever a route let through, in the
	 * store as in the journal.
	 */
	text_escape(raw, cur.detail, sizeof(cur.detail));
	snprintf(cur.host, sizeof(cur.host), "%s", host ?: "");
	/* an enrolling host has no certificate yet: it is its own actor */
	if (!cur.actor[0])
		snprintf(cur.actor, sizeof(cur.actor), "%s", host ?: "?");
	cur.told = true;
}

void audit_answered(struct http_request *req, int code)
{
	if (cur.req != req || cur.answered)
		return;
	cur.answered = true;
	if (code < 200 || code >= 300)
		return;
	if (!cur.told)
		log_error("BUG: %s answered without saying what it changed", cur.action);
	kmemd_audit(cur.k, cur.message_id, cur.actor[0] ? cur.actor : "?", cur.action,
		    cur.host[0] ? cur.host : NULL, cur.told ? cur.detail : "(none given)");
}

/* A page of the log at most; the next is asked for with ?before= */
#define AUDIT_PAGE_MAX 1000

void handle_audit_get(struct http_request *req, struct kmemd *k, const struct tls_identity *peer)
{
	static const char want[] = "want [?actor=CN][&action=ACTION][&host=ID][&from=MS][&to=MS]"
				   "[&before=ID][&limit=1..1000]";
	_cleanup_query_ struct evkeyvalq q = { 0 };
	struct store_audit_query aq = { .from_ms = STORE_NULL, .to_ms = STORE_NULL, .limit = 100 };
	int64_t limit = aq.limit;
	json_t *rows = NULL;
	size_t n;

	(void)peer;
	if (!request_query(req, &q, want))
		return;
	aq.actor = evhttp_find_header(&q, "actor");
	aq.action = evhttp_find_header(&q, "action");
	aq.host = evhttp_find_header(&q, "host");
	if ((aq.actor && !text_valid(aq.actor, REPORT_HOST_ID_MAX)) ||
	    (aq.action && !text_name_valid(aq.action, REPORT_NAME_MAX)) ||
	    (aq.host && !text_name_valid(aq.host, REPORT_HOST_ID_MAX)) ||
	    query_number(evhttp_find_header(&q, "from"), QUERY_MS_MAX, &aq.from_ms) < 0 ||
	    query_number(evhttp_find_header(&q, "to"), QUERY_MS_MAX, &aq.to_ms) < 0 ||
	    query_number(evhttp_find_header(&q, "before"), INT64_MAX, &aq.before_id) < 0 ||
	    query_number(evhttp_find_header(&q, "limit"), AUDIT_PAGE_MAX, &limit) < 0 ||
	    limit < 1) {
		reply_error(
			req, HTTP_BADREQUEST, "Bad Request",
			"actor is up to 64 printable characters, action and host names of " TEXT_NAME_CHARSET
			"; from and to are unix milliseconds, before an "
			"audit row's id, limit 1 to 1000");
		return;
	}
	aq.limit = (unsigned)limit;
	if (admin_json_audit(k->store, &aq, &rows) < 0) {
		reply_store_failed(req, k);
		return;
	}
	n = json_array_size(rows);
	audit_detail(req, NULL, "actor=%s action=%s host=%s from=%lld to=%lld: %zu rows",
		     aq.actor ?: "*", aq.action ?: "*", aq.host ?: "*",
		     aq.from_ms == STORE_NULL ? -1LL : (long long)aq.from_ms,
		     aq.to_ms == STORE_NULL ? -1LL : (long long)aq.to_ms, n);
	/* a full page may have more after it: the next one starts below its last row */
	reply_json(req, HTTP_OK, "OK",
		   json_pack("{s:o, s:o}", "entries", rows, "next_before",
			     n == aq.limit ? json_incref(json_object_get(
						     json_array_get(rows, n - 1), "id")) :
					     json_null()));
}

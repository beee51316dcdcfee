// SPDX-License-Identifier: GPL-2.0
/* The fleet stop (fleet-stop.h). */
#include <stdio.h>
#include <string.h>

#include "audit.h"
#include "fleet-stop.h"
#include "http.h"
#include "http1.h"
#include "json-text.h"
#include "kmemd.h"
#include "log.h"
#include "server.h"
#include "store.h"
#include "text.h"

#define REASON_MAX 255

int fleet_stop_refresh(struct kmemd *k)
{
	struct store_fleet_stop f;
	int r = k->store->ops->fleet_stop_get(k->store, &f);

	if (r < 0)
		return r;
	if (f.stopped != k->fleet_stop.stopped)
		log_notice("the fleet is %s (by '%s'%s%s): replies to reports say so from now on",
			   f.stopped ? "stopped" : "resumed", f.actor, f.reason[0] ? ": " : "",
			   f.reason);
	k->fleet_stop = f;
	return 0;
}

json_t *fleet_stop_json(const struct kmemd *k)
{
	const struct store_fleet_stop *f = &k->fleet_stop;

	return json_pack("{s:b, s:o, s:o, s:o}", "stopped", f->stopped, "since_ms",
			 f->since_ms == STORE_NULL ? json_null() : json_integer(f->since_ms), "by",
			 f->actor[0] ? json_text(f->actor) : json_null(), "reason",
			 f->reason[0] ? json_text(f->reason) : json_null());
}

static void set(struct http_request *req, struct kmemd *k, const char *actor, bool stopped,
		const char *reason)
{
	struct store_fleet_stop f = { .stopped = stopped, .since_ms = kmemd_now_ms() };
	json_t *o;
	int r;

	snprintf(f.actor, sizeof(f.actor), "%s", actor);
	snprintf(f.reason, sizeof(f.reason), "%s", reason);
	r = k->store->ops->fleet_stop_set(k->store, &f);
	if (r < 0 || fleet_stop_refresh(k) < 0) {
		reply_store_failed(req, k);
		return;
	}
	audit_detail(req, NULL, "%s%s%s", r ? (stopped ? "stopped" : "resumed") : "no change",
		     reason[0] ? ": " : "", reason);
	o = fleet_stop_json(k);
	json_object_set_new(o, "changed", json_boolean(r));
	reply_json(req, HTTP_OK, "OK", o);
}

void handle_fleet_stop(struct http_request *req, struct kmemd *k, const struct tls_identity *peer)
{
	static const char want[] =
		"want {\"reason\": TEXT} (up to 255 printable characters), or {}";
	const char *reason = NULL;
	_cleanup_json_ json_t *o = NULL;

	if (req->body_len) {
		o = request_json_unpack(req, want, true, "{s?s}", "reason", &reason);
		if (!o)
			return;
	}
	if (reason && !text_valid(reason, REASON_MAX)) {
		reply_error(req, HTTP_BADREQUEST, "Bad Request", want);
		return;
	}
	set(req, k, peer->cn, true, reason ?: "");
}

void handle_fleet_resume(struct http_request *req, struct kmemd *k, const struct tls_identity *peer)
{
	_cleanup_json_ json_t *o = NULL;

	if (req->body_len) {
		o = request_json_unpack(req, "want no body, or {}", false, "{}");
		if (!o)
			return;
	}
	set(req, k, peer->cn, false, "");
}

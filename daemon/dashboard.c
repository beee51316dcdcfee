// SPDX-License-Identifier: GPL-2.0
/*
 * The admin API calls the dashboard is drawn from (docs/dashboard.md):
 * fleet counts, a page of hosts, a host with its events and charts, a
 * rollout wave's canaries against its baselines over time. Each answers
 * from indexed queries, so a page costs the same with 10 or 10,000 hosts.
 */
#include <errno.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet-stop.h"
#include "admin-json.h"
#include "json-text.h"
#include "log.h"
#include "requests.h"
#include "rollout.h"
#include "series-worker.h"
#include "series.h"
#include "server.h"
#include "store.h"
#include "text.h"

#define HOSTS_PAGE_MAX 1000
#define HOST_EVENTS 100
#define HOST_WINDOW_MS (6 * 3600 * 1000)

/* Stored names may predate kmemd's checks: json_text() keeps them from failing the page. */
static int add_pair(void *arg, const char *a, const char *b, uint64_t n)
{
	(void)b;
	return json_array_append_new(arg, json_pack("[o, I]", json_text(a), (json_int_t)n)) == 0 ?
		       0 :
		       -ENOMEM;
}

static int add_triple(void *arg, const char *a, const char *b, uint64_t n)
{
	return json_array_append_new(arg, json_pack("[o, o, I]", json_text(a), json_text(b),
						    (json_int_t)n)) == 0 ?
		       0 :
		       -ENOMEM;
}

static int add_total(void *arg, const char *a, const char *b, uint64_t n)
{
	(void)a;
	(void)b;
	*(uint64_t *)arg = n;
	return 0;
}

/*
 * GET /v1/fleet: hosts reporting, by kernel ([release, n]), by policy
 * ([name, version, n]; "" and "" for none), and hosts per mitigation and
 * state ([id, state, n]).
 */
void handle_fleet_get(struct http_request *req, struct kmemd *k, const struct tls_identity *peer)
{
	json_t *kernels = json_array(), *policies = json_array(), *states = json_array();
	struct store *st = k->store;
	uint64_t hosts = 0;
	int r = kernels && policies && states ? 0 : -ENOMEM;

	(void)peer;
	if (r == 0)
		r = st->ops->tally(st, STORE_TALLY_HOSTS, add_total, &hosts);
	if (r == 0)
		r = st->ops->tally(st, STORE_TALLY_KERNELS, add_pair, kernels);
	if (r == 0)
		r = st->ops->tally(st, STORE_TALLY_POLICIES, add_triple, policies);
	if (r == 0)
		r = st->ops->tally(st, STORE_TALLY_STATES, add_triple, states);
	if (r < 0) {
		json_decref(kernels);
		json_decref(policies);
		json_decref(states);
		reply_store_failed(req, k);
		return;
	}
	reply_json(req, HTTP_OK, "OK",
		   json_pack("{s:I, s:o, s:o, s:o, s:o}", "hosts", (json_int_t)hosts, "kernels",
			     kernels, "policies", policies, "mitigations", states, "stop",
			     fleet_stop_json(k)));
}

/*
 * GET /v1/hosts: every host; with ?limit=N[&after=ID][&match=TEXT], up to
 * N hosts after ID whose id, hostname or kernel contain TEXT.
 */
void handle_hosts_get(struct http_request *req, struct kmemd *k, const struct tls_identity *peer)
{
	static const char want[] = "want [?limit=1..1000[&after=ID][&match=TEXT]]";
	const char *after, *match, *limit;
	_cleanup_query_ struct evkeyvalq q = { 0 };
	json_t *rows;
	int64_t n = 0;
	int r;

	(void)peer;
	if (!request_query(req, &q, want))
		return;
	limit = evhttp_find_header(&q, "limit");
	after = evhttp_find_header(&q, "after");
	match = evhttp_find_header(&q, "match");
	if (!limit && !after && !match) {
		reply_rows(req, k, admin_json_hosts);
		return;
	}
	if (query_number(limit ?: "100", HOSTS_PAGE_MAX, &n) < 0 || n < 1 ||
	    (after && strlen(after) >= STORE_ID_MAX) || (match && strlen(match) > 128)) {
		reply_error(req, HTTP_BADREQUEST, "Bad Request", want);
		return;
	}
	r = admin_json_hosts_page(k->store, after, match, (unsigned)n, &rows);
	if (r < 0) {
		reply_store_failed(req, k);
		return;
	}
	reply_json(req, HTTP_OK, "OK", rows);
}

/* Why there is no series (r); what and name say what was asked for. */
static void series_failed(struct http_request *req, int r, const char *what, const char *name,
			  unsigned wave, const char *store_error)
{
	char why[320];

	if (r == -ENOENT) {
		snprintf(why, sizeof(why), "no %s %s", what, name);
		reply_error(req, HTTP_NOTFOUND, "Not Found", why);
	} else if (r == -ERANGE) {
		snprintf(why, sizeof(why), "%s %s has not reached wave %u", what, name, wave);
		reply_error(req, HTTP_BADREQUEST, "Bad Request", why);
	} else if (r == -EINVAL) {
		reply_error(req, HTTP_BADREQUEST, "Bad Request", "from must be before to");
	} else if (r == -ECANCELED) {
		reply_error(req, HTTP_SERVUNAVAIL, "Service Unavailable", "kmemd is stopping");
	} else {
		log_error("store query failed: %s", store_error);
		reply_error(req, HTTP_INTERNAL, "Internal Server Error", "the store failed");
	}
}

/* from, to and step (milliseconds) of q; false when one is not a number. */
static bool window(struct evkeyvalq *q, int64_t *from, int64_t *to, int64_t *step)
{
	return query_number(evhttp_find_header(q, "from"), QUERY_MS_MAX, from) == 0 &&
	       query_number(evhttp_find_header(q, "to"), QUERY_MS_MAX, to) == 0 &&
	       query_number(evhttp_find_header(q, "step"), QUERY_MS_MAX, step) == 0;
}

/*
 * GET /v1/hosts/detail?id=H[&from=MS&to=MS][&step=MS]: the host as in
 * /v1/hosts, its newest events with their stack tops, and its probes and
 * lockups over time (default: the last six hours, or since its first report).
 */
void handle_host_detail(struct http_request *req, struct kmemd *k, const struct tls_identity *peer)
{
	static const char want[] = "want ?id=HOST[&from=MS&to=MS][&step=MS]";
	int64_t now = kmemd_now_ms(), from = 0, to = 0, step = 0;
	_cleanup_query_ struct evkeyvalq q = { 0 };
	const char *id;
	json_t *o;
	int r;

	(void)peer;
	if (!request_query(req, &q, want))
		return;
	id = evhttp_find_header(&q, "id");
	if (!text_name_valid(id, STORE_ID_MAX - 1) || !window(&q, &from, &to, &step)) {
		reply_error(req, HTTP_BADREQUEST, "Bad Request", want);
		return;
	}
	r = series_host(k->store, id, from, to ?: now, HOST_WINDOW_MS, step, HOST_EVENTS, &o);
	if (r < 0)
		series_failed(req, r, "host", id, 0, k->store->ops->error(k->store));
	else
		reply_json(req, HTTP_OK, "OK", o);
}

/* A rollout's series from the worker, to the request that waited for it. */
static void rollout_series_answer(void *arg, const struct series_answer *a)
{
	struct http_request *req = arg;

	if (a->r < 0)
		series_failed(req, a->r, "rollout", a->key->name, (unsigned)(a->key->wave + 1),
			      a->store_error);
	else
		reply_bytes(req, HTTP_OK, "OK", JSON_TYPE, a->json, a->len);
}

/*
 * GET /v1/rollouts/series?name=N[&wave=K][&from=MS&to=MS][&step=MS]: wave
 * K's (1-based; default the current) matched canaries against their
 * baselines over time, from the wave's start to now unless told. Computed
 * off the loop (daemon/series-worker.h): the last answer for the same
 * query, with the time it was computed for; the first waits for its own.
 */
void handle_rollout_series(struct http_request *req, struct kmemd *k,
			   const struct tls_identity *peer)
{
	static const char want[] = "want ?name=ROLLOUT[&wave=K][&from=MS&to=MS][&step=MS]";
	int64_t wave = 0;
	struct series_key key = { 0 };
	_cleanup_query_ struct evkeyvalq q = { 0 };
	const char *name;
	int r;

	(void)peer;
	if (!request_query(req, &q, want))
		return;
	name = evhttp_find_header(&q, "name");
	if (!text_name_valid(name, ROLLOUT_NAME_MAX - 1) ||
	    !window(&q, &key.from_ms, &key.to_ms, &key.step_ms) ||
	    query_number(evhttp_find_header(&q, "wave"), 64, &wave) < 0) {
		reply_error(req, HTTP_BADREQUEST, "Bad Request", want);
		return;
	}
	snprintf(key.name, sizeof(key.name), "%s", name);
	key.wave = (int)wave - 1;
	r = series_worker_get(k->series, &key, kmemd_now_ms(), rollout_series_answer, req);
	if (r < 0)
		reply_error(req, HTTP_SERVUNAVAIL, "Service Unavailable",
			    r == -EBUSY ? "too many rollout series are being computed; try again" :
					  "out of memory");
}

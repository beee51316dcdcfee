// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "evloop.h"
#include "hostcert.h"
#include "hostport.h"
#include "log.h"
#include "macro.h"
#include "text.h"
#include "tls.h"
#include "uplink.h"

/* An idle connection outlives the interval by this much (seconds). */
#define UPLINK_IDLE_SLACK_S 30

struct uplink {
	struct event_base *base;
	SSL_CTX *ctx;
	/*
	 * kmemd's addresses: reports go to srv[order[pos]] until it is
	 * unreachable, then to the next in this host's order
	 */
	struct hostport srv[HOSTPORT_LIST_MAX];
	uint8_t order[HOSTPORT_LIST_MAX];
	size_t nsrv, pos;
	unsigned away; /* reports sent since leaving order[0] */
	/* a reply begins within reply_s, or kmemd did not answer */
	unsigned reply_s;
	struct evhttp_connection *conn;
	struct evhttp_request *req; /* in flight */
	bool renewing; /* it is a renewal, for renewed */
	struct event *deadline;
	uplink_done done;
	uplink_renewed renewed;
	void *arg;
};

/* The host's id as its certificate names it (kmemd checks reports by it), or "". */
static void cert_name(SSL_CTX *ctx, char *buf, size_t size)
{
	X509 *c = SSL_CTX_get0_certificate(ctx);

	if (!c ||
	    X509_NAME_get_text_by_NID(X509_get_subject_name(c), NID_commonName, buf, (int)size) < 0)
		buf[0] = '\0';
}

/* The kmemd reports go to now. */
static const struct hostport *server(const struct uplink *u)
{
	return &u->srv[u->order[u->pos]];
}

static void finish(struct uplink *u, enum uplink_result res, const Kmemctl__V1__ReportReply *rr)
{
	u->req = NULL;
	evtimer_del(u->deadline);
	if (u->renewing)
		u->renewed(res, NULL, u->arg);
	else
		u->done(res, rr, u->arg);
}

static void free_conn(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	evhttp_connection_free(arg);
}

/*
 * The next kmemd for the next report, when there is another: the report
 * that got no answer stays in the spool and goes there, so a host's
 * reports keep their order, and one stored by the kmemd that went is
 * acknowledged again and not stored twice.
 */
static void fail_over(struct uplink *u, const char *why)
{
	const struct hostport *was = server(u);

	if (u->nsrv < 2)
		return;
	u->pos = (u->pos + 1) % u->nsrv;
	u->away = 0;
	log_notice("kmemd at %s:%u %s: reporting to %s:%u", was->host, was->port, why,
		   server(u)->host, server(u)->port);
}

/* The connection, freed once the callback we may be in has returned. */
static void drop_conn(struct uplink *u)
{
	if (u->conn)
		event_base_once(u->base, -1, EV_TIMEOUT, free_conn, u->conn, NULL);
	u->conn = NULL;
}

/* Back to the first kmemd in this host's order, HOSTPORT_FAILBACK_REPORTS reports after leaving it. */
static void fail_back(struct uplink *u)
{
	if (!u->pos || ++u->away <= HOSTPORT_FAILBACK_REPORTS)
		return;
	drop_conn(u);
	u->pos = 0;
	log_notice("trying kmemd at %s:%u again, the first in this host's order", server(u)->host,
		   server(u)->port);
}

/* No reply within reply_s: the report goes again, to the next kmemd. */
static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct uplink *u = arg;
	const struct hostport *was = server(u);

	(void)fd;
	(void)what;
	/* frees the request without calling on_reply, and resets the connection */
	evhttp_cancel_request(u->req);
	evhttp_connection_free(u->conn);
	u->conn = NULL;
	log_warning("kmemd at %s:%u sent no reply within %u s", was->host, was->port, u->reply_s);
	fail_over(u, "did not answer");
	finish(u, UPLINK_UNREACHABLE, NULL);
}

int uplink_new(struct event_base *base, const struct agent_config *cfg, uplink_done done, void *arg,
	       struct uplink **out)
{
	struct tls_config tc = { cfg->cert, cfg->key, cfg->ca, TLS_CLIENT_NONE };
	struct uplink *u = calloc(1, sizeof(*u));
	_cleanup_free_ char *prev = NULL;
	char err[256], name[256];
	int r;

	if (!u)
		return -ENOMEM;
	r = hostport_list(cfg->server, u->srv, HOSTPORT_LIST_MAX, &u->nsrv);
	if (r < 0) {
		free(u);
		return log_error_errno(r, "server '%s' is not host:port, or a list of them",
				       cfg->server ? cfg->server : "(unset)");
	}
	r = tls_client_ctx(&tc, &u->ctx);
	/* stopped between a renewed key and its certificate: the certificate's key is the old */
	if (r < 0 && cfg->key && (prev = hostcert_prev(cfg->key))) {
		tc.key = prev;
		r = tls_client_ctx(&tc, &u->ctx);
		if (r == 0)
			log_warning("the host key does not match the certificate: using '%s', the "
				    "key before a renewal that did not finish",
				    prev);
	}
	if (r < 0) {
		free(u);
		return log_error_errno(r, "TLS setup with cert '%s', key '%s', ca '%s' failed: %s",
				       cfg->cert ? cfg->cert : "(unset)",
				       cfg->key ? cfg->key : "(unset)",
				       cfg->ca ? cfg->ca : "(unset)",
				       tls_error_string(err, sizeof(err)));
	}
	cert_name(u->ctx, name, sizeof(name));
	hostport_order(name, u->srv, u->nsrv, u->order);
	u->base = base;
	u->reply_s = (unsigned)(cfg->interval_ms / 1000) ?: 1;
	u->deadline = evtimer_new(base, on_deadline, u);
	if (!u->deadline) {
		SSL_CTX_free(u->ctx);
		free(u);
		return -ENOMEM;
	}
	u->done = done;
	u->arg = arg;
	*out = u;
	return 0;
}

void uplink_free(struct uplink *u)
{
	if (!u)
		return;
	if (u->conn)
		evhttp_connection_free(u->conn);
	if (u->deadline)
		event_free(u->deadline);
	SSL_CTX_free(u->ctx);
	free(u);
}

static int connect_kmemd(struct uplink *u)
{
	const struct hostport *s = server(u);
	struct bufferevent *bev;
	SSL *ssl;
	int r = tls_client_ssl(u->ctx, s->host, &ssl);

	if (r < 0)
		return r;
	bev = bufferevent_openssl_socket_new(u->base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
					     BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	if (!bev) {
		SSL_free(ssl);
		return -ENOMEM;
	}
	u->conn = evhttp_connection_base_bufferevent_new(u->base, NULL, bev, s->host, s->port);
	if (!u->conn)
		return -ENOMEM;
	/*
	 * evhttp's one timeout is also how long it keeps an idle connection:
	 * one of just an interval was often closed as the next report went out
	 * (collection times vary), making a TLS handshake of every other
	 * report. The reply's own deadline is u->deadline.
	 */
	evhttp_connection_set_timeout(u->conn, (int)u->reply_s + UPLINK_IDLE_SLACK_S);
	return 0;
}

static void on_renew_reply(struct uplink *u, struct evhttp_request *req, struct evbuffer *in,
			   size_t len)
{
	Kmemctl__V1__EnrollReply *er =
		kmemctl__v1__enroll_reply__unpack(NULL, len, evbuffer_pullup(in, -1));
	enum uplink_result res = er && er->status == KMEMCTL__V1__STATUS__STATUS_OK &&
						 evhttp_request_get_response_code(req) == 200 ?
					 UPLINK_ACKED :
					 UPLINK_REFUSED;

	u->req = NULL;
	evtimer_del(u->deadline);
	u->renewed(res, er, u->arg);
	if (er)
		kmemctl__v1__enroll_reply__free_unpacked(er, NULL);
}

/* What kmemd said instead of a reply (a refusal at the connection, say): its first line, escaped. */
static const char *answer_text(struct evbuffer *in, size_t len)
{
	static char out[256];
	char line[200];
	size_t n = len < sizeof(line) - 1 ? len : sizeof(line) - 1;

	evbuffer_copyout(in, line, n);
	line[n] = '\0';
	line[strcspn(line, "\n")] = '\0';
	return text_escape(line, out, sizeof(out));
}

static void on_reply(struct evhttp_request *req, void *arg)
{
	struct uplink *u = arg;
	Kmemctl__V1__ReportReply *rr;
	struct evbuffer *in;
	size_t len;

	if (!req || evhttp_request_get_response_code(req) == 0) {
		/* the connection and its SSL are unusable now: start over next time */
		drop_conn(u);
		ERR_clear_error();
		fail_over(u, "did not answer");
		finish(u, UPLINK_UNREACHABLE, NULL);
		return;
	}
	/*
	 * Full (max_connections) or its store failing: the report, kept,
	 * goes to the next kmemd, as when there is no answer.
	 */
	if (evhttp_request_get_response_code(req) == 503 && u->nsrv > 1) {
		drop_conn(u);
		fail_over(u, "is unavailable (503)");
	}
	in = evhttp_request_get_input_buffer(req);
	len = evbuffer_get_length(in);
	if (u->renewing) {
		on_renew_reply(u, req, in, len);
		return;
	}
	rr = kmemctl__v1__report_reply__unpack(NULL, len, evbuffer_pullup(in, -1));
	if (!rr) {
		log_warning("kmemd answered %d without a report reply: %s",
			    evhttp_request_get_response_code(req), answer_text(in, len));
		finish(u, UPLINK_REFUSED, NULL);
		return;
	}
	finish(u, rr->status == KMEMCTL__V1__STATUS__STATUS_OK ? UPLINK_ACKED : UPLINK_REFUSED, rr);
	kmemctl__v1__report_reply__free_unpacked(rr, NULL);
}

static int post(struct uplink *u, const char *path, const uint8_t *buf, size_t len)
{
	struct evhttp_request *req;
	struct evkeyvalq *h;
	char hostport[300];
	int r;

	if (u->req)
		return -EBUSY;
	fail_back(u);
	if (!u->conn) {
		r = connect_kmemd(u);
		if (r < 0)
			return r;
	}
	req = evhttp_request_new(on_reply, u);
	if (!req)
		return -ENOMEM;
	h = evhttp_request_get_output_headers(req);
	/* an IPv6 address in brackets, as in a URL */
	snprintf(hostport, sizeof(hostport), strchr(server(u)->host, ':') ? "[%s]:%u" : "%s:%u",
		 server(u)->host, server(u)->port);
	evhttp_add_header(h, "Host", hostport);
	evhttp_add_header(h, "Content-Type", "application/x-protobuf");
	evbuffer_add(evhttp_request_get_output_buffer(req), buf, len);
	if (evhttp_make_request(u->conn, req, EVHTTP_REQ_POST, path) < 0)
		return -EIO;
	http_one_record(u->conn);
	u->req = req;
	evtimer_add(u->deadline, &(struct timeval){ .tv_sec = u->reply_s });
	return 0;
}

int uplink_send(struct uplink *u, const uint8_t *buf, size_t len)
{
	int r = u->req ? -EBUSY : 0;

	if (r == 0) {
		u->renewing = false;
		r = post(u, "/v1/agent/report", buf, len);
	}
	return r;
}

int uplink_renew(struct uplink *u, const uint8_t *buf, size_t len, uplink_renewed done)
{
	int r = u->req ? -EBUSY : 0;

	if (r == 0) {
		u->renewing = true;
		u->renewed = done;
		r = post(u, "/v1/agent/renew", buf, len);
	}
	return r;
}

void uplink_cert(struct uplink *u, time_t *not_before, time_t *not_after, char cn[65])
{
	X509 *c = SSL_CTX_get0_certificate(u->ctx);
	struct tm tm;

	*not_before = *not_after = 0;
	cert_name(u->ctx, cn, 65);
	if (c && ASN1_TIME_to_tm(X509_get0_notBefore(c), &tm))
		*not_before = timegm(&tm);
	if (c && ASN1_TIME_to_tm(X509_get0_notAfter(c), &tm))
		*not_after = timegm(&tm);
}

int uplink_use_cert(struct uplink *u, X509 *cert, EVP_PKEY *key)
{
	if (SSL_CTX_use_certificate(u->ctx, cert) != 1 ||
	    SSL_CTX_use_PrivateKey(u->ctx, key) != 1 || SSL_CTX_check_private_key(u->ctx) != 1) {
		ERR_clear_error();
		return -EINVAL;
	}
	/* the open connection holds the old certificate: the next one shows the new */
	if (!u->req)
		drop_conn(u);
	return 0;
}

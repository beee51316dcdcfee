// SPDX-License-Identifier: GPL-2.0
/*
 * The network child: everything that speaks to kmemd, as bgpd's
 * session.c. It runs as the agent's own user with no capabilities, gets
 * encoded reports from the root parent, keeps them in the spool until
 * kmemd acknowledges them, sends them oldest first, backs off with jitter
 * while kmemd is away, and passes back to the parent only kmemd's answers:
 * results and signed policies, which the parent verifies itself.
 *
 * It also renews the host certificate before it expires: once two thirds
 * of its lifetime have passed, between two reports, it makes a new key
 * and asks kmemd for a certificate for it with the current one (POST
 * /v1/agent/renew), uses it for its next connection, and gives key and
 * certificate to the parent, which checks them and keeps them in the
 * configured files ([tls] cert, key) for the next start.
 */
#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <openssl/pem.h>
#include <time.h>

#include "evloop.h"
#include "log.h"
#include "macro.h"
#include "pki.h"
#include "privsep.h"
#include "sandbox.h"
#include "session.h"
#include "spool.h"
#include "uplink.h"

#define BACKOFF_MIN_MS 1000
#define BACKOFF_MAX_MS 60000
/* A renewal kmemd did not give: asked again after this long. */
#define RENEW_RETRY_S 60

struct session {
	const struct agent_config *cfg;
	struct event_base *base;
	struct event *rd, *retry;
	struct uplink *up;
	struct spool spool;
	bool once, spooling;
	int fd;
	struct privsep_peer parent;
	uint64_t in_flight_seq;
	unsigned int failures;
	uint8_t *buf; /* PRIVSEP_MAX_PAYLOAD */
	EVP_PKEY *renew_key; /* the new key while its certificate is asked for */
	time_t renew_after; /* no renewal before this, after one kmemd did not give */
};

static void tell_parent(struct session *s, const struct privsep_result *res)
{
	int r = privsep_send(s->fd, PRIVSEP_RESULT, res, sizeof(*res));

	if (r < 0)
		log_error_errno(r, "telling the parent failed: %m");
}

static void pump(struct session *s);
static bool renew(struct session *s);

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	pump(arg);
}

/* The next attempt after a failure: doubling, capped, with ±25% jitter. */
static void back_off(struct session *s)
{
	unsigned int shift = s->failures < 6 ? s->failures : 6;
	uint64_t ms = (uint64_t)BACKOFF_MIN_MS << shift;
	struct timeval tv;

	if (ms > BACKOFF_MAX_MS)
		ms = BACKOFF_MAX_MS;
	ms = ms * 3 / 4 + (uint64_t)random() % (ms / 2 + 1);
	s->failures++;
	tv.tv_sec = (time_t)(ms / 1000);
	tv.tv_usec = (suseconds_t)(ms % 1000) * 1000;
	evtimer_add(s->retry, &tv);
}

static void on_done(enum uplink_result res, const Kmemctl__V1__ReportReply *rr, void *arg)
{
	struct session *s = arg;
	struct privsep_result out = { .seq = s->in_flight_seq, .outcome = res };
	_cleanup_free_ uint8_t *pol = NULL;
	size_t len;
	int r;

	if (rr) {
		out.acked_seq = rr->acked_seq;
		out.interval_s = rr->report_interval_s;
		out.fleet_stop = rr->fleet_stop;
	}
	switch (res) {
	case UPLINK_ACKED:
		s->failures = 0;
		if (s->spooling)
			spool_ack(&s->spool, rr->acked_seq);
		/* stored, but not all of it (names past kmemd's bounds) */
		if (rr->reason && rr->reason[0])
			log_warning("kmemd stored report %llu, not all of it: %s",
				    (unsigned long long)s->in_flight_seq, rr->reason);
		break;
	case UPLINK_REFUSED:
		log_warning("kmemd refused report %llu: %s", (unsigned long long)s->in_flight_seq,
			    rr && rr->reason ? rr->reason : "no reason given");
		/* resending a malformed report cannot help */
		if (s->spooling && rr && rr->status == KMEMCTL__V1__STATUS__STATUS_MALFORMED) {
			spool_ack(&s->spool, s->in_flight_seq);
			s->spool.dropped++;
		}
		break;
	case UPLINK_UNREACHABLE:
		log_warning("kmemd at '%s' is unreachable", s->cfg->server);
		break;
	}
	/* under a fleet stop no policy is applied: none reaches the parent before the stop does */
	if (rr && rr->policy && !rr->fleet_stop) {
		len = kmemctl__v1__signed_policy__get_packed_size(rr->policy);
		pol = len && len <= PRIVSEP_MAX_POLICY ? malloc(len) : NULL;
		if (pol) {
			kmemctl__v1__signed_policy__pack(rr->policy, pol);
			r = privsep_send(s->fd, PRIVSEP_POLICY, pol, len);
			if (r < 0)
				log_error_errno(r, "passing kmemd's policy on failed: %m");
		} else {
			log_warning("kmemd sent a policy of %zu bytes; dropped", len);
		}
	}
	/* the parent verifies them: this child holds no key it could trust them with */
	for (size_t i = 0; rr && i < rr->n_build_records; i++) {
		if (!rr->build_records[i].len ||
		    rr->build_records[i].len > PRIVSEP_MAX_BUILD_RECORD) {
			log_warning("kmemd sent a build record bundle of %zu bytes; dropped",
				    rr->build_records[i].len);
			continue;
		}
		r = privsep_send(s->fd, PRIVSEP_BUILD_RECORD, rr->build_records[i].data,
				 rr->build_records[i].len);
		if (r < 0)
			log_error_errno(r, "passing kmemd's build record on failed: %m");
	}
	if (s->spooling) {
		out.spooled = s->spool.n;
		out.dropped = s->spool.dropped;
	}
	tell_parent(s, &out);
	if (s->once)
		return;
	if (res != UPLINK_ACKED)
		back_off(s);
	else if (!renew(s))
		pump(s);
}

/* key and cert, PEM each with its NUL, to the parent to keep. */
static void keep(struct session *s, EVP_PKEY *key, const char *cert_pem)
{
	_cleanup_free_ char *key_pem = NULL;
	_cleanup_free_ uint8_t *msg = NULL;
	size_t kl, cl = strlen(cert_pem) + 1;
	int r = pki_key_pem(key, &key_pem);

	if (r == 0) {
		kl = strlen(key_pem) + 1;
		msg = malloc(kl + cl);
		r = msg ? 0 : -ENOMEM;
	}
	if (r == 0) {
		memcpy(msg, key_pem, kl);
		memcpy(msg + kl, cert_pem, cl);
		r = privsep_send(s->fd, PRIVSEP_CERT, msg, kl + cl);
		explicit_bzero(msg, kl + cl);
	}
	if (key_pem)
		explicit_bzero(key_pem, strlen(key_pem));
	if (r < 0)
		log_error_errno(r, "giving the renewed certificate to the parent failed: %m");
}

static void on_renewed(enum uplink_result res, const Kmemctl__V1__EnrollReply *er, void *arg)
{
	struct session *s = arg;
	X509 *x = NULL;
	BIO *b;

	if (res == UPLINK_ACKED && er->cert_pem) {
		b = BIO_new_mem_buf(er->cert_pem, -1);
		x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
		BIO_free(b);
	}
	if (x && uplink_use_cert(s->up, x, s->renew_key) == 0) {
		log_notice("the host certificate is renewed: new connections use the new one");
		keep(s, s->renew_key, er->cert_pem);
	} else {
		log_warning("kmemd did not renew the host certificate (%s): asking again in %d s",
			    res == UPLINK_UNREACHABLE ? "no answer" :
			    er && er->reason	      ? er->reason :
							"no certificate for the new key",
			    RENEW_RETRY_S);
		s->renew_after = time(NULL) + RENEW_RETRY_S;
	}
	X509_free(x);
	EVP_PKEY_free(s->renew_key);
	s->renew_key = NULL;
	pump(s);
}

/*
 * Asks for a certificate for a new key when two thirds of the current
 * one's lifetime have passed: true while that is under way (the next
 * report waits for it).
 */
static bool renew(struct session *s)
{
	Kmemctl__V1__EnrollRequest er = KMEMCTL__V1__ENROLL_REQUEST__INIT;
	_cleanup_free_ uint8_t *body = NULL;
	_cleanup_free_ char *csr = NULL;
	time_t nb, na, now = time(NULL);
	char cn[65];
	size_t len;
	int r;

	uplink_cert(s->up, &nb, &na, cn);
	if (!s->cfg->renew || now < s->renew_after || !na || na <= nb ||
	    now < nb + (na - nb) / 3 * 2)
		return false;
	r = pki_keygen(PKI_ROLE_HOST, &s->renew_key);
	if (r == 0)
		r = pki_make_csr(s->renew_key, cn, &csr);
	if (r == 0) {
		er.host_id = cn;
		er.csr_pem = csr;
		len = kmemctl__v1__enroll_request__get_packed_size(&er);
		body = malloc(len);
		r = body ? 0 : -ENOMEM;
	}
	if (r == 0) {
		kmemctl__v1__enroll_request__pack(&er, body);
		r = uplink_renew(s->up, body, len, on_renewed);
	}
	if (r == 0) {
		log_notice("the host certificate expires in %lld s: asking kmemd for a new one",
			   (long long)(na - now));
		return true;
	}
	log_error_errno(r, "asking for a renewed host certificate failed: %m");
	EVP_PKEY_free(s->renew_key);
	s->renew_key = NULL;
	s->renew_after = now + RENEW_RETRY_S;
	return false;
}

/* Sends the oldest spooled report unless one is in flight or a retry waits. */
static void pump(struct session *s)
{
	_cleanup_free_ void *data = NULL;
	size_t len;
	int r;

	if (evtimer_pending(s->retry, NULL))
		return;
	r = spool_oldest(&s->spool, &s->in_flight_seq, &data, &len);
	if (r == -ENOENT)
		return;
	if (r < 0) {
		log_error_errno(r, "spooled report %llu is unreadable, dropped: %m",
				(unsigned long long)s->spool.entries[0].seq);
		spool_ack(&s->spool, s->spool.entries[0].seq);
		s->spool.dropped++;
		pump(s);
		return;
	}
	r = uplink_send(s->up, data, len);
	if (r == -EBUSY)
		return;
	if (r < 0) {
		log_error_errno(r, "sending report %llu failed: %m",
				(unsigned long long)s->in_flight_seq);
		back_off(s);
	}
}

static void on_report(struct session *s, const uint8_t *p, size_t len)
{
	uint64_t seq;
	int r;

	if (len <= sizeof(seq)) {
		log_error("the parent sent a report without a body");
		return;
	}
	memcpy(&seq, p, sizeof(seq));
	p += sizeof(seq);
	len -= sizeof(seq);
	if (!s->spooling) {
		s->in_flight_seq = seq;
		r = uplink_send(s->up, p, len);
		if (r < 0) {
			struct privsep_result out = { .seq = seq, .outcome = UPLINK_UNREACHABLE };

			log_error_errno(r, "sending report %llu failed: %m",
					(unsigned long long)seq);
			tell_parent(s, &out);
		}
		return;
	}
	r = spool_add(&s->spool, seq, p, len);
	if (r < 0)
		log_error_errno(r, "spooling report %llu failed: %m", (unsigned long long)seq);
	pump(s);
}

static void on_parent(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;
	enum privsep_type type;
	ssize_t n;

	(void)what;
	for (;;) {
		n = privsep_recv(fd, PRIVSEP_NETWORK, &s->parent, &type, s->buf,
				 PRIVSEP_MAX_PAYLOAD);
		if (n == -EAGAIN)
			return;
		if (n == -EBADMSG || n == -EPERM) {
			log_error_errno((int)n, "message from the parent refused: %m");
			continue;
		}
		/* the parent is gone: so is the reason to run */
		if (n < 0 || type == 0) {
			event_base_loopexit(s->base, NULL);
			return;
		}
		if (type == PRIVSEP_REPORT)
			on_report(s, s->buf, (size_t)n);
	}
}

/*
 * Root's part first (the host key), then the agent's user for good, then
 * the sandbox's file system, the spool in it, and last the filter.
 */
static int set_up(struct session *s, const char *spool_dir, uid_t uid, gid_t gid)
{
	int r;

	r = uplink_new(s->base, s->cfg, on_done, s, &s->up);
	if (r < 0)
		return r;
	r = privsep_drop_privileges(uid, gid);
	if (r < 0)
		return log_error_errno(r, "dropping privileges to uid %u failed: %m",
				       (unsigned)uid);
	prctl(PR_SET_NAME, "kmem-agent-net", 0, 0, 0);
	r = sandbox_enter(s->once ? NULL : spool_dir, &s->parent.uid);
	if (r == -EOPNOTSUPP)
		log_warning("the network child has no namespaces of its own (unprivileged user "
			    "namespaces are off): it keeps the unit's view of the file system");
	else if (r < 0)
		return log_error_errno(r, "building the network child's file system failed: %m");
	if (!s->once) {
		r = spool_open(&s->spool, spool_dir, s->cfg->spool_max);
		if (r < 0)
			return log_error_errno(r, "opening the spool '%s' failed: %m", spool_dir);
		s->spooling = true;
		if (s->spool.skipped)
			log_warning("spool '%s': %llu files that are not reports were skipped",
				    spool_dir, (unsigned long long)s->spool.skipped);
	}
	s->rd = event_new(s->base, s->fd, EV_READ | EV_PERSIST, on_parent, s);
	s->retry = evtimer_new(s->base, on_retry, s);
	if (!s->rd || !s->retry)
		return -ENOMEM;
	event_add(s->rd, NULL);
	r = sandbox_filter();
	if (r == -EOPNOTSUPP)
		log_warning("the network child has no system call filter: the kernel has no "
			    "seccomp");
	else if (r < 0)
		return log_error_errno(r,
				       "loading the network child's system call filter failed: %m");
	return 0;
}

int session_main(const struct agent_config *cfg, int fd, const struct privsep_peer *parent,
		 const char *spool_dir, bool once, uid_t uid, gid_t gid)
{
	struct session s = { .cfg = cfg, .once = once, .fd = fd, .parent = *parent };
	int r = -ENOMEM;

	/* the parent's stop signals end the child as they come */
	stop_signals_hold(false);
	srandom((unsigned int)getpid());
	s.buf = malloc(PRIVSEP_MAX_PAYLOAD);
	s.base = event_base_new();
	if (s.buf && s.base)
		r = set_up(&s, spool_dir, uid, gid);
	if (r == 0) {
		/* what a previous run left */
		if (s.spooling)
			pump(&s);
		r = event_base_dispatch(s.base) < 0 ? -EIO : 0;
	}
	if (s.rd)
		event_free(s.rd);
	if (s.retry)
		event_free(s.retry);
	uplink_free(s.up);
	EVP_PKEY_free(s.renew_key);
	if (s.spooling)
		spool_close(&s.spool);
	if (s.base)
		event_base_free(s.base);
	free(s.buf);
	return r;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * The control process (control.h): everything a local client sends is
 * read, checked and parsed here, under the agent's user, and the root
 * parent sees only struct privsep_request.
 */
#include <errno.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <grp.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "control.h"
#include "ctl.h"
#include "evloop.h"
#include "exit-codes.h"
#include "log.h"
#include "macro.h"
#include "pbjson.h"
#include "privsep.h"
#include "kmemctl/v1/report.pb-c.h"
#include "uplink.h"

#define RECENT_MAX 16
/* refused connections are logged at most once per period */
#define REFUSED_LOG_PERIOD_S 60

struct control;

struct client {
	struct control *ctl;
	int fd;
	uint32_t id; /* the parent answers this connection by it */
	bool watch;
	bool denied; /* answered, with the refusal only */
	bool pending; /* a request at the parent: nothing more is read until it answers */
	struct event *ev;
	struct client *next;
};

struct control {
	struct event_base *base;
	struct evconnlistener *listener;
	struct event *rd, *quiet;
	struct privsep_peer parent;
	int fd;
	gid_t group;
	bool standalone;
	struct client *clients;
	unsigned int nclients;
	unsigned int nrefusing; /* refused connections waiting for their answer */
	uint32_t next_id;
	uint64_t refused, unlogged; /* connections over the bound: since start, not yet logged */
	struct privsep_state state; /* the parent's, as it last told */
	uint8_t *last; /* the last report, encoded */
	size_t last_len;
	json_t *recent; /* the last RECENT_MAX events reported */
	uint8_t *buf; /* PRIVSEP_MAX_PAYLOAD: a message from the parent */
	char *msg; /* CTL_MAX_MSG: a request */
};

static void client_drop(struct control *ctl, struct client *c)
{
	struct client **p;

	for (p = &ctl->clients; *p && *p != c; p = &(*p)->next)
		;
	if (*p)
		*p = c->next;
	event_free(c->ev);
	close(c->fd);
	free(c);
	ctl->nclients--;
}

/* Never blocks: a client too slow to take a message loses it. */
static void client_send(struct client *c, json_t *msg)
{
	char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;

	if (text && send(c->fd, text, strlen(text), MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		log_debug("control client fd %d missed a message: %m", c->fd);
	free(text);
	json_decref(msg);
}

static void client_error(struct client *c, const char *why)
{
	client_send(c, json_pack("{s:b, s:s}", "ok", 0, "error", why));
}

static const char *const outcome_names[] = {
	[UPLINK_ACKED] = "acknowledged",
	[UPLINK_REFUSED] = "refused",
	[UPLINK_UNREACHABLE] = "unreachable",
};

static const char *kmemd_last(const struct control *ctl)
{
	const struct privsep_result *res = &ctl->state.result;

	if (ctl->standalone)
		return "none: standalone, no [agent] server";
	if (res->seq && res->outcome < ARRAY_SIZE(outcome_names) && outcome_names[res->outcome])
		return outcome_names[res->outcome];
	return "none yet";
}

/* The agent's own state, beside the last report, for `kmemctl status`. */
static json_t *agent_json(const struct control *ctl)
{
	const struct privsep_state *st = &ctl->state;
	json_t *guard = json_array();
	uint32_t i;

	for (i = 0; guard && i < st->nguard; i++)
		json_array_append_new(guard, json_string(st->guard[i]));
	return json_pack("{s:s, s:b, s:s?, s:{s:s, s:I}, s:o*, s:O, s:{s:s, s:I, s:I, s:I}}",
			 "version", KMEMCTL_VERSION, "disabled", st->off == PRIVSEP_OFF_CMDLINE,
			 "off", privsep_off_reason(st->off), "policy", "name", st->policy_name,
			 "version", (json_int_t)st->policy_version, "guard", guard, "recent_events",
			 ctl->recent, "kmemd", "last", kmemd_last(ctl), "acked_seq",
			 (json_int_t)st->result.acked_seq, "spooled",
			 (json_int_t)st->result.spooled, "dropped", (json_int_t)st->result.dropped);
}

/* {"ok": true, "agent": ..., "report": ...}: the report as kmemd got it. */
static json_t *status_json(const struct control *ctl)
{
	Kmemctl__V1__Report *rep = NULL;
	json_t *o;

	if (ctl->last_len)
		rep = kmemctl__v1__report__unpack(NULL, ctl->last_len, ctl->last);
	o = json_pack("{s:b, s:o*, s:o*}", "ok", 1, "agent", agent_json(ctl), "report",
		      rep ? pbjson_from_message(&rep->base) : json_null());
	if (rep)
		kmemctl__v1__report__free_unpacked(rep, NULL);
	return o;
}

/* A checked request for the parent; the client waits for its answer. */
static void forward(struct control *ctl, struct client *c, const struct ctl_request *req)
{
	_cleanup_free_ struct privsep_request *out = calloc(1, sizeof(*out));
	int r;

	if (!out) {
		client_error(c, "out of memory");
		return;
	}
	out->client = c->id;
	out->cmd = req->cmd;
	out->doc = req->doc;
	r = privsep_send(ctl->fd, PRIVSEP_REQUEST, out, sizeof(*out));
	if (r < 0) {
		log_error_errno(r, "forwarding a request to the parent failed: %m");
		client_error(c, "the agent did not take the request; try again");
		return;
	}
	c->pending = true;
	event_del(c->ev);
}

static void handle(struct control *ctl, struct client *c, const struct ctl_request *req)
{
	switch (req->cmd) {
	case CTL_STATUS:
		client_send(c, status_json(ctl));
		break;
	case CTL_WATCH:
		c->watch = true;
		client_send(c, json_pack("{s:b}", "ok", 1));
		break;
	case CTL_SET:
	case CTL_DISABLE:
	case CTL_ENABLE:
		forward(ctl, c, req);
		break;
	}
}

static void on_client(evutil_socket_t fd, short what, void *arg)
{
	struct client *c = arg;
	struct control *ctl = c->ctl;
	struct ctl_request req;
	char why[256];
	ssize_t n;

	(void)what;
	n = recv(fd, ctl->msg, CTL_MAX_MSG, MSG_DONTWAIT | MSG_TRUNC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		client_drop(ctl, c);
		return;
	}
	if (c->denied) {
		client_error(c, "permission denied: root or group " CTL_GROUP " only");
		return;
	}
	if ((size_t)n > CTL_MAX_MSG) {
		client_error(c, "request too large");
		return;
	}
	if (ctl_parse_request(ctl->msg, (size_t)n, &req, why, sizeof(why)) < 0) {
		client_error(c, why);
		return;
	}
	handle(ctl, c, &req);
}

static void on_quiet(evutil_socket_t fd, short what, void *arg)
{
	static const struct timeval period = { .tv_sec = REFUSED_LOG_PERIOD_S };
	struct control *ctl = arg;

	(void)fd;
	(void)what;
	if (!ctl->unlogged)
		return;
	log_warning("control socket: %llu more connections refused in the last %d s (%llu since "
		    "start; at most %d at once)",
		    (unsigned long long)ctl->unlogged, REFUSED_LOG_PERIOD_S,
		    (unsigned long long)ctl->refused, CTL_MAX_CLIENTS);
	ctl->unlogged = 0;
	evtimer_add(ctl->quiet, &period);
}

/*
 * A refused connection's answer, once its request is in (or a second
 * passed): a unix socket closed with data unread resets its peer, which
 * would then lose the answer.
 */
static void on_refused(evutil_socket_t fd, short what, void *arg)
{
	struct control *ctl = arg;
	char why[128], discard[64];
	int n;

	(void)what;
	while (recv(fd, discard, sizeof(discard), MSG_DONTWAIT | MSG_TRUNC) > 0)
		;
	n = snprintf(
		why, sizeof(why),
		"{\"ok\":false,\"error\":\"too many control connections: at most %d at once\"}",
		CTL_MAX_CLIENTS);
	if (send(fd, why, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		log_debug("a refused control client missed why: %m");
	close(fd);
	ctl->nrefusing--;
}

/*
 * One connection over the bound: told why and closed, counted, logged now
 * and then. As many again may wait for their answer; past that, a
 * connection is closed at once.
 */
static void refuse(struct control *ctl, int fd)
{
	static const struct timeval period = { .tv_sec = REFUSED_LOG_PERIOD_S };
	static const struct timeval wait = { .tv_sec = 1 };

	ctl->refused++;
	if (ctl->nrefusing >= CTL_MAX_CLIENTS ||
	    event_base_once(ctl->base, fd, EV_READ, on_refused, ctl, &wait) < 0)
		close(fd);
	else
		ctl->nrefusing++;
	if (evtimer_pending(ctl->quiet, NULL)) {
		ctl->unlogged++;
		return;
	}
	log_warning("control socket: a connection refused, %d are open already", CTL_MAX_CLIENTS);
	evtimer_add(ctl->quiet, &period);
}

static bool peer_allowed(const struct control *ctl, int fd)
{
	struct ucred cred = { .uid = (uid_t)-1 };
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
	    ctl_peer_allowed(&cred, ctl->group))
		return true;
	log_notice("control socket: uid %d refused (root or group " CTL_GROUP " only)",
		   (int)cred.uid);
	return false;
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
		      void *arg)
{
	struct control *ctl = arg;
	int sndbuf = CTL_MAX_MSG * 2;
	struct client *c;

	(void)l;
	(void)sa;
	(void)salen;
	if (ctl->nclients >= CTL_MAX_CLIENTS) {
		refuse(ctl, fd);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return;
	}
	*c = (struct client){ .ctl = ctl, .fd = fd, .id = ++ctl->next_id, .next = ctl->clients };
	c->denied = !peer_allowed(ctl, fd);
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	c->ev = event_new(ctl->base, fd, EV_READ | EV_PERSIST, on_client, c);
	if (!c->ev || event_add(c->ev, NULL) < 0) {
		if (c->ev)
			event_free(c->ev);
		close(fd);
		free(c);
		return;
	}
	ctl->clients = c;
	ctl->nclients++;
}

/* Events outlive their report in kmemctl status: the newest RECENT_MAX. */
static void keep_recent(struct control *ctl, const Kmemctl__V1__Report *rep)
{
	size_t i;

	for (i = 0; i < rep->n_events; i++)
		json_array_append_new(ctl->recent, pbjson_from_message(&rep->events[i]->base));
	while (json_array_size(ctl->recent) > RECENT_MAX)
		json_array_remove(ctl->recent, 0);
}

/* A report the parent made: kept for status, and to every watcher. */
static void on_report(struct control *ctl, const uint8_t *p, size_t len)
{
	Kmemctl__V1__Report *rep;
	struct client *c;

	if (len <= sizeof(uint64_t))
		return;
	ctl->last_len = len - sizeof(uint64_t);
	memcpy(ctl->last, p + sizeof(uint64_t), ctl->last_len);
	rep = kmemctl__v1__report__unpack(NULL, ctl->last_len, ctl->last);
	if (rep) {
		keep_recent(ctl, rep);
		kmemctl__v1__report__free_unpacked(rep, NULL);
	}
	for (c = ctl->clients; c; c = c->next)
		if (c->watch)
			client_send(c, status_json(ctl));
}

static json_t *reply_json(const struct privsep_reply *rep)
{
	json_t *outcomes;
	uint32_t i;

	if (rep->kind == PRIVSEP_REPLY_ERROR)
		return json_pack("{s:b, s:s}", "ok", 0, "error", rep->error);
	if (rep->kind == PRIVSEP_REPLY_SWITCH)
		return json_pack("{s:b, s:b}", "ok", 1, "changed", rep->changed);
	outcomes = json_array();
	for (i = 0; outcomes && i < rep->n; i++)
		json_array_append_new(outcomes,
				      json_pack("{s:s, s:s, s:s}", "id", rep->out[i].id, "result",
						policy_result_name(rep->out[i].result), "why",
						rep->out[i].why));
	return json_pack("{s:b, s:o*}", "ok", rep->ok, "outcomes", outcomes);
}

/* The parent's answer to a forwarded request: to its client, which may ask again. */
static void on_reply(struct control *ctl, const struct privsep_reply *rep)
{
	struct client *c;

	for (c = ctl->clients; c && c->id != rep->client; c = c->next)
		;
	if (!c || !c->pending)
		return;
	client_send(c, reply_json(rep));
	c->pending = false;
	event_add(c->ev, NULL);
}

static int take(struct control *ctl, enum privsep_type type, size_t len)
{
	if (type == PRIVSEP_REPORT) {
		on_report(ctl, ctl->buf, len);
	} else if (type == PRIVSEP_STATE) {
		if (privsep_check_state((const struct privsep_state *)ctl->buf) < 0)
			return -EBADMSG;
		memcpy(&ctl->state, ctl->buf, sizeof(ctl->state));
	} else if (type == PRIVSEP_REPLY) {
		if (privsep_check_reply((const struct privsep_reply *)ctl->buf) < 0)
			return -EBADMSG;
		on_reply(ctl, (const struct privsep_reply *)ctl->buf);
	}
	return 0;
}

static void on_parent(evutil_socket_t fd, short what, void *arg)
{
	struct control *ctl = arg;
	enum privsep_type type;
	ssize_t n;

	(void)what;
	for (;;) {
		n = privsep_recv(fd, PRIVSEP_CONTROL, &ctl->parent, &type, ctl->buf,
				 PRIVSEP_MAX_PAYLOAD);
		if (n == -EAGAIN)
			return;
		if (n >= 0 && type != 0)
			n = take(ctl, type, (size_t)n);
		if (n == -EBADMSG || n == -EPERM) {
			log_error_errno((int)n, "message from the parent refused: %m");
			continue;
		}
		/* the parent is gone: so is the reason to run */
		if (n < 0 || type == 0) {
			event_base_loopexit(ctl->base, NULL);
			return;
		}
	}
}

/* Its user for good, its name for ps, and no way for another process of the user in. */
static int setup(const char *arg, struct control *ctl)
{
	unsigned int uid, gid;
	int level, standalone, r;
	struct group *gr;

	if (sscanf(arg, "%u:%u:%d:%d", &uid, &gid, &level, &standalone) != 4)
		return log_error_errno(-EINVAL, "control process: bad arguments '%s'", arg);
	log_set_max_level(level);
	/* the group is looked up while the files are the parent's */
	gr = getgrnam(CTL_GROUP);
	ctl->group = gr ? gr->gr_gid : (gid_t)-1;
	ctl->parent = (struct privsep_peer){ getppid(), getuid(), PRIVSEP_PARENT };
	ctl->standalone = standalone;
	r = privsep_drop_privileges(uid, gid);
	if (r < 0)
		return log_error_errno(r, "control process: dropping to uid %u failed: %m", uid);
	if (prctl(PR_SET_NAME, "kmem-agent-ctl", 0, 0, 0) < 0 ||
	    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return log_error_errno(negative_errno(), "control process: prctl failed: %m");
	return 0;
}

static int serve(struct control *ctl)
{
	struct shutdown_signals sigs = { 0 };
	int r;

	ctl->base = event_base_new();
	if (!ctl->base)
		return -ENOMEM;
	ctl->listener = evconnlistener_new(ctl->base, on_accept, ctl, LEV_OPT_CLOSE_ON_FREE, -1,
					   CONTROL_LISTEN_FD);
	ctl->rd = event_new(ctl->base, ctl->fd, EV_READ | EV_PERSIST, on_parent, ctl);
	ctl->quiet = evtimer_new(ctl->base, on_quiet, ctl);
	if (!ctl->listener || !ctl->rd || !ctl->quiet)
		return -ENOMEM;
	event_add(ctl->rd, NULL);
	r = shutdown_signals_add(ctl->base, &sigs);
	/* held since the parent's start (the mask passes through exec) */
	stop_signals_hold(false);
	if (r == 0 && event_base_dispatch(ctl->base) < 0)
		r = -EIO;
	shutdown_signals_free(&sigs);
	return r;
}

static void control_free(struct control *ctl)
{
	while (ctl->clients)
		client_drop(ctl, ctl->clients);
	if (ctl->listener)
		evconnlistener_free(ctl->listener);
	if (ctl->rd)
		event_free(ctl->rd);
	if (ctl->quiet)
		event_free(ctl->quiet);
	if (ctl->base)
		event_base_free(ctl->base);
	close(ctl->fd);
	json_decref(ctl->recent);
	free(ctl->last);
	free(ctl->buf);
	free(ctl->msg);
}

int control_main(const char *arg)
{
	struct control ctl = { .fd = CONTROL_CHANNEL_FD };
	int r;

	/* nothing but the two descriptors it was given, and stdio */
	close_range(CONTROL_CHANNEL_FD + 1, ~0U, 0);
	signal(SIGPIPE, SIG_IGN);
	r = setup(arg, &ctl);
	ctl.recent = json_array();
	ctl.last = malloc(PRIVSEP_MAX_PAYLOAD);
	ctl.buf = malloc(PRIVSEP_MAX_PAYLOAD);
	ctl.msg = malloc(CTL_MAX_MSG);
	if (r == 0 && (!ctl.recent || !ctl.last || !ctl.buf || !ctl.msg))
		r = log_error_errno(-ENOMEM, "control process: out of memory");
	if (r == 0) {
		r = serve(&ctl);
		if (r < 0)
			log_error_errno(r, "control process: serving the socket failed: %m");
	}
	control_free(&ctl);
	/* with its descriptors closed it holds nothing another process could use */
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	return r < 0 ? EXIT_ERROR : EXIT_OK;
}

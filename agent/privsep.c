// SPDX-License-Identifier: GPL-2.0
/*
 * Parent/child messages: framing and the checks made before a payload is
 * used (privsep.h).
 */
#include <errno.h>
#include <grp.h>
#include <stdbool.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctl.h"
#include "macro.h"
#include "privsep.h"

#define SIDE(s) (1U << (s))

/*
 * Who may send each type to whom, with how long a payload. A type with
 * more than one receiver goes the same way to each.
 */
static const struct {
	unsigned from, to; /* SIDE() masks */
	uint32_t min, max;
} rules[PRIVSEP_TYPES] = {
	[PRIVSEP_REPORT] = { SIDE(PRIVSEP_PARENT), SIDE(PRIVSEP_NETWORK) | SIDE(PRIVSEP_CONTROL), 1,
			     PRIVSEP_MAX_PAYLOAD },
	[PRIVSEP_RESULT] = { SIDE(PRIVSEP_NETWORK), SIDE(PRIVSEP_PARENT),
			     sizeof(struct privsep_result), sizeof(struct privsep_result) },
	[PRIVSEP_POLICY] = { SIDE(PRIVSEP_NETWORK), SIDE(PRIVSEP_PARENT), 1, PRIVSEP_MAX_POLICY },
	[PRIVSEP_CERT] = { SIDE(PRIVSEP_NETWORK), SIDE(PRIVSEP_PARENT), 4, PRIVSEP_MAX_CERT },
	[PRIVSEP_BUILD_RECORD] = { SIDE(PRIVSEP_NETWORK), SIDE(PRIVSEP_PARENT), 1,
				   PRIVSEP_MAX_BUILD_RECORD },
	[PRIVSEP_STATE] = { SIDE(PRIVSEP_PARENT), SIDE(PRIVSEP_CONTROL),
			    sizeof(struct privsep_state), sizeof(struct privsep_state) },
	[PRIVSEP_REQUEST] = { SIDE(PRIVSEP_CONTROL), SIDE(PRIVSEP_PARENT),
			      sizeof(struct privsep_request), sizeof(struct privsep_request) },
	[PRIVSEP_REPLY] = { SIDE(PRIVSEP_PARENT), SIDE(PRIVSEP_CONTROL),
			    sizeof(struct privsep_reply), sizeof(struct privsep_reply) },
};

int privsep_pair(int fds[2])
{
	int one = 1, i;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) < 0)
		return negative_errno();
	for (i = 0; i < 2; i++)
		if (setsockopt(fds[i], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0) {
			int r = negative_errno();

			close(fds[0]);
			close(fds[1]);
			return r;
		}
	return 0;
}

int privsep_send(int fd, enum privsep_type type, const void *data, size_t len)
{
	struct privsep_hdr hdr = { .type = type, .len = (uint32_t)len };
	struct iovec iov[2] = {
		{ .iov_base = &hdr, .iov_len = sizeof(hdr) },
		{ .iov_base = (void *)data, .iov_len = len },
	};
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };
	ssize_t n;

	if (type <= 0 || type >= PRIVSEP_TYPES || len < rules[type].min || len > rules[type].max)
		return -EINVAL;
	do
		n = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return negative_errno();
	return (size_t)n == sizeof(hdr) + len ? 0 : -EIO;
}

/* Closes descriptors a peer tried to pass: nothing here takes any. */
static void close_passed_fds(struct msghdr *msg)
{
	struct cmsghdr *c;
	size_t n, i;
	int *fds;

	for (c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		fds = (int *)CMSG_DATA(c);
		n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < n; i++)
			close(fds[i]);
	}
}

ssize_t privsep_recv(int fd, enum privsep_side self, const struct privsep_peer *peer,
		     enum privsep_type *type, void *buf, size_t size)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(16 * sizeof(int))];
	} control;
	struct privsep_hdr hdr;
	struct iovec iov[2] = {
		{ .iov_base = &hdr, .iov_len = sizeof(hdr) },
		{ .iov_base = buf, .iov_len = size },
	};
	struct msghdr msg = {
		.msg_iov = iov,
		.msg_iovlen = 2,
		.msg_control = &control,
		.msg_controllen = sizeof(control),
	};
	const struct ucred *cred = NULL;
	struct cmsghdr *c;
	bool fds = false;
	ssize_t n;

	*type = 0;
	do
		n = recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return negative_errno();
	for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
		    c->cmsg_len == CMSG_LEN(sizeof(struct ucred)))
			cred = (const struct ucred *)CMSG_DATA(c);
		else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			fds = true;
	}
	if (fds)
		close_passed_fds(&msg);
	if (n == 0 && !cred)
		return 0;
	if (!cred || cred->pid != peer->pid || cred->uid != peer->uid)
		return -EPERM;
	if (fds || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || (size_t)n < sizeof(hdr) ||
	    hdr.len != (size_t)n - sizeof(hdr))
		return -EBADMSG;
	if (hdr.type == 0 || hdr.type >= PRIVSEP_TYPES || !(rules[hdr.type].to & SIDE(self)) ||
	    !(rules[hdr.type].from & SIDE(peer->side)) || hdr.len < rules[hdr.type].min ||
	    hdr.len > rules[hdr.type].max)
		return -EBADMSG;
	*type = hdr.type;
	return hdr.len;
}

const char *privsep_off_reason(enum privsep_off off)
{
	static const char *const reasons[PRIVSEP_OFFS] = {
		[PRIVSEP_OFF_CMDLINE] = "kmemctl.disable=1",
		[PRIVSEP_OFF_SWITCH] = "the local kill switch (kmemctl disable)",
		[PRIVSEP_OFF_FLEET] = "kmemd's fleet stop (kmemctl fleet stop)",
	};

	return (unsigned)off < PRIVSEP_OFFS ? reasons[off] : NULL;
}

static bool terminated(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}

/* An id as policy_doc_parse() takes it: terminated, and of [a-z0-9_-]. */
static bool id_ok(const char *id, size_t size)
{
	return terminated(id, size) && policy_id_valid(id);
}

static int check_mitigation(const struct policy_mitigation *m)
{
	size_t i;

	if (!id_ok(m->id, sizeof(m->id)) || m->nparams > POLICY_MAX_PARAMS ||
	    (unsigned)m->mode > POLICY_MODE_ON)
		return -EBADMSG;
	for (i = 0; i < m->nparams; i++)
		if (!id_ok(m->params[i].key, sizeof(m->params[i].key)))
			return -EBADMSG;
	return 0;
}

static int check_probe(const struct policy_probe *p)
{
	if (!id_ok(p->id, sizeof(p->id)) || p->enabled < -1 || p->enabled > 1 ||
	    p->threshold_ns < -1)
		return -EBADMSG;
	return 0;
}

int privsep_check_request(const struct privsep_request *req)
{
	const struct policy_doc *doc = &req->doc;
	size_t i;

	if (req->cmd == CTL_DISABLE || req->cmd == CTL_ENABLE)
		return 0;
	if (req->cmd != CTL_SET || doc->nmitigations > POLICY_MAX_ENTRIES ||
	    doc->nprobes > POLICY_MAX_ENTRIES)
		return -EBADMSG;
	for (i = 0; i < doc->nmitigations; i++)
		if (check_mitigation(&doc->mitigations[i]) < 0)
			return -EBADMSG;
	for (i = 0; i < doc->nprobes; i++)
		if (check_probe(&doc->probes[i]) < 0)
			return -EBADMSG;
	return 0;
}

int privsep_check_state(const struct privsep_state *st)
{
	uint32_t i;

	if (st->off >= PRIVSEP_OFFS || st->nguard > GUARD_MAX ||
	    !terminated(st->policy_name, sizeof(st->policy_name)))
		return -EBADMSG;
	for (i = 0; i < st->nguard; i++)
		if (!terminated(st->guard[i], sizeof(st->guard[i])))
			return -EBADMSG;
	return 0;
}

int privsep_check_reply(const struct privsep_reply *rep)
{
	uint32_t i;

	if (rep->kind > PRIVSEP_REPLY_OUTCOMES || rep->n > ARRAY_SIZE(rep->out) ||
	    !terminated(rep->error, sizeof(rep->error)))
		return -EBADMSG;
	for (i = 0; i < rep->n; i++)
		if (!terminated(rep->out[i].id, sizeof(rep->out[i].id)) ||
		    !terminated(rep->out[i].why, sizeof(rep->out[i].why)) ||
		    (unsigned)rep->out[i].result > POLICY_FAILED)
			return -EBADMSG;
	return 0;
}

int privsep_drop_privileges(uid_t uid, gid_t gid)
{
	if (geteuid() == 0 && (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 ||
			       setresuid(uid, uid, uid) < 0))
		return negative_errno();
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return negative_errno();
	/* a root that cannot come back */
	if (uid != 0 && setuid(0) == 0)
		return -EPERM;
	return 0;
}

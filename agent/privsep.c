// SPDX-License-Identifier: GPL-2.0
/*
 * Parent/child messages: framing and the checks made before a payload is
 * used (privsep.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "macro.h"
#include "privsep.h"

static const struct {
	enum privsep_side to;
	uint32_t min, max;
} rules[PRIVSEP_TYPES] = {
	[PRIVSEP_REPORT] = { PRIVSEP_CHILD, 1, PRIVSEP_MAX_PAYLOAD },
	[PRIVSEP_RESULT] = { PRIVSEP_PARENT, sizeof(struct privsep_result),
			     sizeof(struct privsep_result) },
	[PRIVSEP_POLICY] = { PRIVSEP_PARENT, 1, PRIVSEP_MAX_POLICY },
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
		n = sendmsg(fd, &msg, MSG_NOSIGNAL);
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
	if (hdr.type == 0 || hdr.type >= PRIVSEP_TYPES || rules[hdr.type].to != self ||
	    hdr.len < rules[hdr.type].min || hdr.len > rules[hdr.type].max)
		return -EBADMSG;
	*type = hdr.type;
	return hdr.len;
}

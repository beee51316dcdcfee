// SPDX-License-Identifier: GPL-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "macro.h"
#include "ctl.h"
#include "privsep.h"

static uint8_t buf[PRIVSEP_MAX_PAYLOAD];

/* This process, speaking as side. */
static struct privsep_peer self_peer(enum privsep_side side)
{
	return (struct privsep_peer){ .pid = getpid(), .uid = getuid(), .side = side };
}

/* A packet as a buggy or hostile peer might write it. */
static void raw(int fd, uint32_t type, uint32_t len, const void *data, size_t n)
{
	struct privsep_hdr hdr = { .type = type, .len = len };
	uint8_t pkt[sizeof(hdr) + 256];

	assert_true(n <= 256);
	memcpy(pkt, &hdr, sizeof(hdr));
	memcpy(pkt + sizeof(hdr), data, n);
	assert_int_equal(send(fd, pkt, sizeof(hdr) + n, 0), (ssize_t)(sizeof(hdr) + n));
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static void test_roundtrip(void **state)
{
	struct privsep_result res = { .seq = 7, .acked_seq = 7, .spooled = 2, .dropped = 1 };
	struct privsep_peer parent = self_peer(PRIVSEP_PARENT), net = self_peer(PRIVSEP_NETWORK);
	enum privsep_type type;
	int fds[2];

	(void)state;
	assert_int_equal(privsep_pair(fds), 0);
	assert_int_equal(privsep_recv(fds[1], PRIVSEP_NETWORK, &parent, &type, buf, sizeof(buf)),
			 -EAGAIN);
	assert_int_equal(privsep_send(fds[0], PRIVSEP_REPORT, "report", 6), 0);
	assert_int_equal(privsep_recv(fds[1], PRIVSEP_NETWORK, &parent, &type, buf, sizeof(buf)),
			 6);
	assert_int_equal(type, PRIVSEP_REPORT);
	assert_memory_equal(buf, "report", 6);

	assert_int_equal(privsep_send(fds[1], PRIVSEP_RESULT, &res, sizeof(res)), 0);
	assert_int_equal(privsep_recv(fds[0], PRIVSEP_PARENT, &net, &type, buf, sizeof(buf)),
			 sizeof(res));
	assert_int_equal(type, PRIVSEP_RESULT);
	assert_memory_equal(buf, &res, sizeof(res));

	/* the largest report fits the default socket buffers */
	memset(buf, 0xab, sizeof(buf));
	assert_int_equal(privsep_send(fds[0], PRIVSEP_REPORT, buf, PRIVSEP_MAX_PAYLOAD), 0);
	memset(buf, 0, sizeof(buf));
	assert_int_equal(privsep_recv(fds[1], PRIVSEP_NETWORK, &parent, &type, buf, sizeof(buf)),
			 PRIVSEP_MAX_PAYLOAD);
	assert_int_equal(buf[PRIVSEP_MAX_PAYLOAD - 1], 0xab);

	/* the sender refuses what the receiver would */
	assert_int_equal(privsep_send(fds[0], PRIVSEP_REPORT, buf, 0), -EINVAL);
	assert_int_equal(privsep_send(fds[0], PRIVSEP_REPORT, buf, PRIVSEP_MAX_PAYLOAD + 1),
			 -EINVAL);
	assert_int_equal(privsep_send(fds[0], PRIVSEP_RESULT, &res, sizeof(res) - 1), -EINVAL);
	assert_int_equal(privsep_send(fds[0], (enum privsep_type)0, buf, 1), -EINVAL);
	assert_int_equal(privsep_send(fds[0], PRIVSEP_TYPES, buf, 1), -EINVAL);

	close(fds[0]);
	assert_int_equal(privsep_recv(fds[1], PRIVSEP_NETWORK, &parent, &type, buf, sizeof(buf)),
			 0);
	assert_int_equal(type, 0);
	close(fds[1]);
}

/*
 * Malformed packets are refused one by one, and the valid message after
 * them still arrives.
 */
static void test_malformed(void **state)
{
	struct privsep_peer me = self_peer(PRIVSEP_NETWORK);
	struct privsep_result res = { 0 };
	enum privsep_type type;
	uint8_t big[200] = { 0 };
	int fds[2];

	(void)state;
	assert_int_equal(privsep_pair(fds), 0);
	assert_int_equal(send(fds[1], "abc", 3, 0), 3);
	raw(fds[1], PRIVSEP_POLICY, 10, "12345", 5);
	raw(fds[1], 99, 5, "12345", 5);
	raw(fds[1], 0, 5, "12345", 5);
	raw(fds[1], PRIVSEP_RESULT, sizeof(res) - 1, &res, sizeof(res) - 1);
	raw(fds[1], PRIVSEP_POLICY, 0, "", 0);
	/* REPORT goes to the child, never to the parent */
	raw(fds[1], PRIVSEP_REPORT, 5, "12345", 5);
	raw(fds[1], PRIVSEP_POLICY, sizeof(big), big, sizeof(big));
	assert_int_equal(privsep_send(fds[1], PRIVSEP_POLICY, "signed", 6), 0);
	for (int i = 0; i < 7; i++)
		assert_int_equal(privsep_recv(fds[0], PRIVSEP_PARENT, &me, &type, buf, sizeof(buf)),
				 -EBADMSG);
	/* more than the receiver's buffer: cut by the kernel, so refused */
	assert_int_equal(privsep_recv(fds[0], PRIVSEP_PARENT, &me, &type, buf, 100), -EBADMSG);
	assert_int_equal(privsep_recv(fds[0], PRIVSEP_PARENT, &me, &type, buf, sizeof(buf)), 6);
	assert_int_equal(type, PRIVSEP_POLICY);
	assert_memory_equal(buf, "signed", 6);
	close(fds[0]);
	close(fds[1]);
}

/* Descriptors passed along a message are refused and closed, not leaked. */
static void test_passed_fd(void **state)
{
	struct privsep_peer me = self_peer(PRIVSEP_NETWORK);
	struct privsep_hdr hdr = { .type = PRIVSEP_POLICY, .len = 1 };
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} control;
	uint8_t pkt[sizeof(hdr) + 1];
	struct iovec iov = { .iov_base = pkt, .iov_len = sizeof(pkt) };
	struct msghdr msg = { .msg_iov = &iov,
			      .msg_iovlen = 1,
			      .msg_control = &control,
			      .msg_controllen = sizeof(control) };
	struct cmsghdr *c;
	enum privsep_type type;
	int fds[2], passed, before;

	(void)state;
	assert_int_equal(privsep_pair(fds), 0);
	memcpy(pkt, &hdr, sizeof(hdr));
	pkt[sizeof(hdr)] = 'x';
	passed = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(passed >= 0);
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &passed, sizeof(int));
	assert_int_equal(sendmsg(fds[1], &msg, 0), (ssize_t)sizeof(pkt));
	close(passed);
	before = count_fds();
	assert_int_equal(privsep_recv(fds[0], PRIVSEP_PARENT, &me, &type, buf, sizeof(buf)),
			 -EBADMSG);
	assert_int_equal(count_fds(), before);
	close(fds[0]);
	close(fds[1]);
}

/* Only the expected process may speak: the kernel says who sent what. */
static void test_sender(void **state)
{
	struct privsep_result res = { .seq = 1 };
	struct privsep_peer peer;
	enum privsep_type type;
	int fds[2], status;
	pid_t pid, other;

	(void)state;
	assert_int_equal(privsep_pair(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		_exit(privsep_send(fds[1], PRIVSEP_RESULT, &res, sizeof(res)) ||
		      privsep_send(fds[1], PRIVSEP_RESULT, &res, sizeof(res)));
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(status, 0);
	other = fork();
	assert_true(other >= 0);
	if (other == 0) {
		close(fds[0]);
		_exit(privsep_send(fds[1], PRIVSEP_RESULT, &res, sizeof(res)) ? 1 : 0);
	}
	assert_int_equal(waitpid(other, &status, 0), other);
	assert_int_equal(status, 0);
	close(fds[1]);

	peer = (struct privsep_peer){ .pid = pid, .uid = getuid(), .side = PRIVSEP_NETWORK };
	assert_int_equal(privsep_recv(fds[0], PRIVSEP_PARENT, &peer, &type, buf, sizeof(buf)),
			 sizeof(res));
	/* the right pid under another uid */
	peer.uid = getuid() + 1;
	assert_int_equal(privsep_recv(fds[0], PRIVSEP_PARENT, &peer, &type, buf, sizeof(buf)),
			 -EPERM);
	/* another process */
	peer.uid = getuid();
	assert_int_equal(privsep_recv(fds[0], PRIVSEP_PARENT, &peer, &type, buf, sizeof(buf)),
			 -EPERM);
	assert_int_equal(type, 0);
	assert_int_equal(privsep_recv(fds[0], PRIVSEP_PARENT, &peer, &type, buf, sizeof(buf)), 0);
	close(fds[0]);
}

/*
 * Each channel takes only its own types: requests from the control
 * process, never results or policies; the network child sends no request.
 */
static void test_sides(void **state)
{
	static struct privsep_request req = { .client = 3, .cmd = CTL_DISABLE };
	static struct privsep_state st = { .policy_name = "base" };
	struct privsep_peer parent = self_peer(PRIVSEP_PARENT), ctl = self_peer(PRIVSEP_CONTROL),
			    net = self_peer(PRIVSEP_NETWORK);
	struct privsep_result res = { 0 };
	enum privsep_type type;
	int fds[2];

	(void)state;
	assert_int_equal(privsep_pair(fds), 0);
	assert_int_equal(privsep_send(fds[1], PRIVSEP_REQUEST, &req, sizeof(req)), 0);
	assert_int_equal(privsep_recv(fds[0], PRIVSEP_PARENT, &ctl, &type, buf, sizeof(buf)),
			 sizeof(req));
	assert_int_equal(type, PRIVSEP_REQUEST);
	/* a request on the network child's channel, a result on the control process's */
	assert_int_equal(privsep_send(fds[1], PRIVSEP_REQUEST, &req, sizeof(req)), 0);
	assert_int_equal(privsep_recv(fds[0], PRIVSEP_PARENT, &net, &type, buf, sizeof(buf)),
			 -EBADMSG);
	assert_int_equal(privsep_send(fds[1], PRIVSEP_RESULT, &res, sizeof(res)), 0);
	assert_int_equal(privsep_recv(fds[0], PRIVSEP_PARENT, &ctl, &type, buf, sizeof(buf)),
			 -EBADMSG);
	assert_int_equal(privsep_send(fds[1], PRIVSEP_POLICY, "signed", 6), 0);
	assert_int_equal(privsep_recv(fds[0], PRIVSEP_PARENT, &ctl, &type, buf, sizeof(buf)),
			 -EBADMSG);
	/* the parent's state goes to the control process, not the network child */
	assert_int_equal(privsep_send(fds[0], PRIVSEP_STATE, &st, sizeof(st)), 0);
	assert_int_equal(privsep_recv(fds[1], PRIVSEP_CONTROL, &parent, &type, buf, sizeof(buf)),
			 sizeof(st));
	assert_int_equal(privsep_send(fds[0], PRIVSEP_STATE, &st, sizeof(st)), 0);
	assert_int_equal(privsep_recv(fds[1], PRIVSEP_NETWORK, &parent, &type, buf, sizeof(buf)),
			 -EBADMSG);
	/* and reports to both */
	assert_int_equal(privsep_send(fds[0], PRIVSEP_REPORT, "report", 6), 0);
	assert_int_equal(privsep_recv(fds[1], PRIVSEP_CONTROL, &parent, &type, buf, sizeof(buf)),
			 6);
	close(fds[0]);
	close(fds[1]);
}

/* The content checks: every string terminated, every count and enum in range. */
static void test_checks(void **state)
{
	static struct privsep_request req;
	static struct privsep_state st;
	static struct privsep_reply rep;

	(void)state;
	req = (struct privsep_request){ .cmd = CTL_SET };
	strcpy(req.doc.mitigations[0].id, "rstat-yield");
	req.doc.mitigations[0].mode = POLICY_MODE_ON;
	req.doc.mitigations[0].nparams = 1;
	strcpy(req.doc.mitigations[0].params[0].key, "every_cpus");
	req.doc.nmitigations = 1;
	strcpy(req.doc.probes[0].id, "vmap-purge");
	req.doc.probes[0].enabled = -1;
	req.doc.probes[0].threshold_ns = 5;
	req.doc.nprobes = 1;
	assert_int_equal(privsep_check_request(&req), 0);
	req.doc.mitigations[0].params[0].key[0] = '/';
	assert_int_equal(privsep_check_request(&req), -EBADMSG);
	req.doc.mitigations[0].params[0].key[0] = 'e';
	memset(req.doc.mitigations[0].id, 'a', sizeof(req.doc.mitigations[0].id));
	assert_int_equal(privsep_check_request(&req), -EBADMSG);
	strcpy(req.doc.mitigations[0].id, "rstat-yield");
	req.doc.mitigations[0].mode = 7;
	assert_int_equal(privsep_check_request(&req), -EBADMSG);
	req.doc.mitigations[0].mode = POLICY_MODE_OFF;
	req.doc.nprobes = POLICY_MAX_ENTRIES + 1;
	assert_int_equal(privsep_check_request(&req), -EBADMSG);
	req.doc.nprobes = 1;
	req.doc.probes[0].enabled = 2;
	assert_int_equal(privsep_check_request(&req), -EBADMSG);
	req.doc.probes[0].enabled = 1;
	req.cmd = CTL_STATUS;
	assert_int_equal(privsep_check_request(&req), -EBADMSG);
	req.cmd = CTL_ENABLE;
	assert_int_equal(privsep_check_request(&req), 0);

	st = (struct privsep_state){ .nguard = 1, .guard[0] = "rstat-yield" };
	assert_int_equal(privsep_check_state(&st), 0);
	st.nguard = GUARD_MAX + 1;
	assert_int_equal(privsep_check_state(&st), -EBADMSG);
	st.nguard = 0;
	memset(st.policy_name, 'x', sizeof(st.policy_name));
	assert_int_equal(privsep_check_state(&st), -EBADMSG);

	rep = (struct privsep_reply){ .kind = PRIVSEP_REPLY_OUTCOMES, .n = 1 };
	assert_int_equal(privsep_check_reply(&rep), 0);
	rep.out[0].result = 9;
	assert_int_equal(privsep_check_reply(&rep), -EBADMSG);
	rep.out[0].result = POLICY_APPLIED;
	memset(rep.out[0].why, 'x', sizeof(rep.out[0].why));
	assert_int_equal(privsep_check_reply(&rep), -EBADMSG);
	rep.n = 0;
	assert_int_equal(privsep_check_reply(&rep), 0);
	rep.n = 2 * POLICY_MAX_ENTRIES + 1;
	assert_int_equal(privsep_check_reply(&rep), -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip), cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_passed_fd), cmocka_unit_test(test_sender),
		cmocka_unit_test(test_sides),	  cmocka_unit_test(test_checks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The channel between the agent's root parent and its unprivileged network
 * child, as OpenBSD bgpd's imsg: a SOCK_SEQPACKET socketpair, one message
 * per packet, a fixed header, and a table saying which side may send which
 * type with how long a payload. Every received message is checked before
 * its payload is looked at: the sender's credentials, which the kernel
 * attaches (SO_PASSCRED), must be the expected peer's; the packet must not
 * have been cut; type, direction and length must match the table.
 *
 * The parent gives the child encoded Reports to send; the child gives the
 * parent only what kmemd said: results, and SignedPolicy bundles, which the
 * parent verifies against its pinned keys itself. Nothing the child sends
 * can make the parent do more than a valid signed policy could.
 */
#ifndef KMEM_AGENT_PRIVSEP_H
#define KMEM_AGENT_PRIVSEP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "report-size.h"

enum privsep_side { PRIVSEP_PARENT, PRIVSEP_CHILD };

enum privsep_type {
	PRIVSEP_REPORT = 1, /* parent -> child: an encoded Report to send */
	PRIVSEP_RESULT, /* child -> parent: struct privsep_result */
	PRIVSEP_POLICY, /* child -> parent: an encoded SignedPolicy from kmemd */
	PRIVSEP_TYPES,
};

struct privsep_result {
	uint64_t seq; /* the report it concerns */
	uint64_t acked_seq; /* kmemd acknowledged reports up to here */
	uint32_t outcome; /* enum uplink_result */
	uint32_t interval_s; /* kmemd's report interval, 0: keep */
	uint64_t spooled; /* reports waiting in the child's spool */
	uint64_t dropped; /* reports the full spool dropped, since start */
};

struct privsep_hdr {
	uint32_t type;
	uint32_t len; /* of the payload that follows */
};

/*
 * An encoded Report behind its seq (lib/report-size.h, which kmemd's
 * max_request is checked against); within a unix socket's default send
 * buffer, so no sysctl is needed.
 */
#define PRIVSEP_MAX_PAYLOAD REPORT_MAX_SIZE
#define PRIVSEP_MAX_POLICY (64U << 10)

/* Who may send on a channel end: the peer's pid and uid. */
struct privsep_peer {
	pid_t pid;
	uid_t uid;
};

/* A SOCK_SEQPACKET pair; both ends get SO_PASSCRED. */
int privsep_pair(int fds[2]);

int privsep_send(int fd, enum privsep_type type, const void *data, size_t len);

/*
 * Receives one message addressed to `self` from `peer` into buf (at least
 * PRIVSEP_MAX_PAYLOAD bytes for REPORT and POLICY). Returns the payload
 * length with *type set; 0 with *type 0 at end of file; -EAGAIN when
 * nothing is pending; -EPERM when another process sent it; -EBADMSG when
 * it was cut, too long or too short for its type, or of a type this side
 * does not take. A refused message is consumed: the next call reads the
 * next one.
 */
ssize_t privsep_recv(int fd, enum privsep_side self, const struct privsep_peer *peer,
		     enum privsep_type *type, void *buf, size_t size);

#endif

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
 * parent only what kmemd said: results, SignedPolicy bundles, which the
 * parent verifies against its pinned keys itself, and the host's renewed
 * key and certificate, which the parent checks against the fleet CA and
 * the host id before it keeps them. Nothing the child sends can make the
 * parent do more than a valid signed policy could, or hold a certificate
 * the child could not already use.
 */
#ifndef KMEM_AGENT_PRIVSEP_H
#define KMEM_AGENT_PRIVSEP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "guard.h"
#include "policy.h"
#include "policydoc.h"
#include "report-size.h"

/* The processes; a channel joins the parent with one of the others. */
enum privsep_side {
	PRIVSEP_PARENT, /* root */
	PRIVSEP_NETWORK, /* session.c: kmemd */
	PRIVSEP_CONTROL, /* control.c: the control socket */
	PRIVSEP_SIDES,
};

enum privsep_type {
	PRIVSEP_REPORT = 1, /* parent -> network, control: seq + an encoded Report */
	PRIVSEP_RESULT, /* network -> parent: struct privsep_result */
	PRIVSEP_POLICY, /* network -> parent: an encoded SignedPolicy from kmemd */
	PRIVSEP_STATE, /* parent -> control: struct privsep_state */
	PRIVSEP_REQUEST, /* control -> parent: struct privsep_request */
	PRIVSEP_REPLY, /* parent -> control: struct privsep_reply */
	PRIVSEP_CERT, /* network -> parent: a renewed key and certificate, PEM, NUL after each */
	PRIVSEP_BUILD_RECORD, /* network -> parent: a signed build record bundle from kmemd */
	PRIVSEP_TYPES,
};

struct privsep_result {
	uint64_t seq; /* the report it concerns */
	uint64_t acked_seq; /* kmemd acknowledged reports up to here */
	uint32_t outcome; /* enum uplink_result */
	uint32_t interval_s; /* kmemd's report interval, 0: keep */
	uint64_t spooled; /* reports waiting in the child's spool */
	uint64_t dropped; /* reports the full spool dropped, since start */
	uint32_t fleet_stop; /* UPLINK_ACKED: kmemd's reply said the fleet is stopped */
	uint32_t pad;
};

/* Why the parent applies nothing now. */
enum privsep_off {
	PRIVSEP_ON,
	PRIVSEP_OFF_CMDLINE,
	PRIVSEP_OFF_SWITCH,
	PRIVSEP_OFF_FLEET,
	PRIVSEP_OFFS,
};

/* "kmemctl.disable=1", "the local kill switch (kmemctl disable)", ...; NULL when on. */
const char *privsep_off_reason(enum privsep_off off);

/* The parent's state, for `kmemctl status`: sent whenever it may change. */
struct privsep_state {
	uint32_t off; /* enum privsep_off */
	uint32_t nguard;
	uint64_t policy_version;
	char policy_name[POLICY_NAME_MAX + 1];
	char guard[GUARD_MAX][POLICY_ID_MAX + 1]; /* armed */
	struct privsep_result result; /* the network child's last word on kmemd */
};

/* A checked control request: the only ones the parent acts on. */
struct privsep_request {
	uint32_t client; /* the control process's number for the connection */
	uint32_t cmd; /* CTL_SET, CTL_DISABLE or CTL_ENABLE */
	struct policy_doc doc; /* CTL_SET */
};

enum privsep_reply_kind { PRIVSEP_REPLY_ERROR, PRIVSEP_REPLY_SWITCH, PRIVSEP_REPLY_OUTCOMES };

struct privsep_reply {
	uint32_t client;
	uint32_t kind; /* enum privsep_reply_kind */
	uint32_t ok; /* OUTCOMES: no entry failed */
	uint32_t changed; /* SWITCH */
	uint32_t n; /* OUTCOMES: entries in out */
	char error[160]; /* ERROR */
	struct policy_outcome out[2 * POLICY_MAX_ENTRIES];
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
/* A host key and its certificate in PEM: about 1 KiB; a CA chain is not sent. */
#define PRIVSEP_MAX_CERT (16U << 10)
/* a bundle of a 16 KiB record and its signature, as the agent reads them from disk */
#define PRIVSEP_MAX_BUILD_RECORD (64U << 10)

/* Who may send on a channel end: the peer's pid and uid, and which process it is. */
struct privsep_peer {
	pid_t pid;
	uid_t uid;
	enum privsep_side side;
};

/* A SOCK_SEQPACKET pair; both ends get SO_PASSCRED. */
int privsep_pair(int fds[2]);

/*
 * Never blocks: -EAGAIN when the peer's queue is full (a peer that stops
 * reading cannot stall the parent's loop). -EINVAL for a message the
 * table does not allow with that length.
 */
int privsep_send(int fd, enum privsep_type type, const void *data, size_t len);

/*
 * Receives one message addressed to `self` from `peer` into buf (at least
 * PRIVSEP_MAX_PAYLOAD bytes for REPORT and POLICY). Returns the payload
 * length with *type set; 0 with *type 0 at end of file; -EAGAIN when
 * nothing is pending; -EPERM when another process sent it; -EBADMSG when
 * it was cut, too long or too short for its type, or of a type that peer
 * may not send or this side does not take. A refused message is
 * consumed: the next call reads the next one.
 */
ssize_t privsep_recv(int fd, enum privsep_side self, const struct privsep_peer *peer,
		     enum privsep_type *type, void *buf, size_t size);

/*
 * The checks of a payload's content, made after privsep_recv() accepted
 * its type and length and before anything of it is used: -EBADMSG when a
 * string is not terminated within its field, a count or an enum is out of
 * range, or a request is one the parent does not take.
 */
int privsep_check_request(const struct privsep_request *req);
int privsep_check_state(const struct privsep_state *st);
int privsep_check_reply(const struct privsep_reply *rep);

/*
 * Drops to uid/gid for good when running as root: no supplementary
 * groups, no way back, no new privileges. Not root: no new privileges
 * only. Each child makes itself undumpable once set up, so that the other
 * one, under the same user, cannot trace it.
 */
int privsep_drop_privileges(uid_t uid, gid_t gid);

#endif

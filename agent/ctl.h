/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The agent's local control socket (/run/kmem-agent/ctl.sock): a
 * SOCK_SEQPACKET socket, one JSON object per message, for `kmemctl` on the
 * host. Only root and members of the kmemctl group get an answer (checked
 * with SO_PEERCRED when they connect).
 *
 * Requests:
 *   {"cmd": "status"}		the last report, as JSON, with the agent's state
 *   {"cmd": "set", "policy": DOC}	apply DOC (a policy document, docs/policy.md)
 *				now, as a local override, through the same journal
 *				as a signed policy
 *   {"cmd": "watch"}		every report from now on, one message each
 *   {"cmd": "disable"}		the local kill switch: every mitigation off, and
 *				no policy applied until "enable" (kept across
 *				restarts in the state directory)
 *   {"cmd": "enable"}		release it: the last known good policy again
 * Replies: {"ok": true, ...} or {"ok": false, "error": "why"}.
 */
#ifndef KMEM_AGENT_CTL_H
#define KMEM_AGENT_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "policydoc.h"

#define CTL_SOCK "/run/kmem-agent/ctl.sock"
#define CTL_GROUP "kmemctl"
#define CTL_MAX_MSG (128U << 10)
/* connections served at once; one more is told so and closed */
#define CTL_MAX_CLIENTS 32

enum ctl_cmd { CTL_STATUS = 1, CTL_SET, CTL_WATCH, CTL_DISABLE, CTL_ENABLE };

struct ctl_request {
	enum ctl_cmd cmd;
	struct policy_doc doc; /* CTL_SET */
};

/* -EINVAL with a one-line reason in err for anything but a valid request. */
int ctl_parse_request(const char *buf, size_t len, struct ctl_request *req, char *err,
		      size_t errlen);

/*
 * May this peer use the socket? Root, or a member (primary or
 * supplementary) of group; group (gid_t)-1: root only.
 */
bool ctl_peer_allowed(const struct ucred *cred, gid_t group);

/*
 * A listening socket at path (its directory is created), mode 0660 and
 * group-owned by group when it is not (gid_t)-1; or the one systemd passed
 * (socket activation). Returns the fd or a negative errno.
 */
int ctl_listen(const char *path, gid_t group);

#endif

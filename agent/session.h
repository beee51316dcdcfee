/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The agent's network child (session.c).
 */
#ifndef KMEM_AGENT_SESSION_H
#define KMEM_AGENT_SESSION_H

#include <stdbool.h>
#include <sys/types.h>

#include "agent.h"
#include "privsep.h"

/*
 * Drops to uid/gid for good when running as root: no supplementary
 * groups, no way back, no new privileges. A no-op when not root.
 */
int session_drop_privileges(uid_t uid, gid_t gid);

/*
 * Runs the child's loop on fd until the parent closes it: loads the TLS
 * credentials, drops to uid/gid, opens the spool. once: no spool, each
 * report is sent as it comes (kmem-agent -o).
 */
int session_main(const struct agent_config *cfg, int fd, const struct privsep_peer *parent,
		 const char *spool_dir, bool once, uid_t uid, gid_t gid);

#endif

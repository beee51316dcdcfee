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
 * Runs the child's loop on fd until the parent closes it: loads the TLS
 * credentials, drops to uid/gid, enters its sandbox (sandbox.h), opens
 * the spool. once: no spool, each report is sent as it comes
 * (kmem-agent -o).
 */
int session_main(const struct agent_config *cfg, int fd, const struct privsep_peer *parent,
		 const char *spool_dir, bool once, uid_t uid, gid_t gid);

#endif

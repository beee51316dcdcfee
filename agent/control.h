/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The control process (control.c): the control socket's server, as
 * bgpd's control.c. The parent starts it by running its own binary again
 * (`kmem-agent -X UID:GID:LOGLEVEL:STANDALONE`, not for people) with the
 * listening socket at fd 3 and its channel to the parent at fd 4. It
 * drops to the agent's user at once, serves at most CTL_MAX_CLIENTS
 * connections, checks each peer's credentials, parses their JSON
 * (ctl_parse_request()), answers status and watch from what the parent
 * sent it, and forwards only checked set, disable and enable requests to
 * the parent, as struct privsep_request.
 */
#ifndef KMEM_AGENT_CONTROL_H
#define KMEM_AGENT_CONTROL_H

#define CONTROL_LISTEN_FD 3
#define CONTROL_CHANNEL_FD 4

/* Runs the control process; arg is what follows -X. Returns an exit code. */
int control_main(const char *arg);

#endif

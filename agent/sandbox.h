/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The network child's sandbox (sandbox.c), entered after it has read its
 * host key and dropped to the agent's user:
 *
 * - a file system of its own: an unprivileged user namespace (the agent's
 *   unit has no CAP_SYS_ADMIN, and the child no capability at all) with a
 *   mount namespace whose root is an empty, read-only tmpfs holding only
 *   the spool, the resolver's files (/etc/hosts, /etc/resolv.conf,
 *   /etc/nsswitch.conf, /etc/host.conf, /etc/gai.conf, those that exist)
 *   and journald's socket, each bind-mounted nosuid, nodev, noexec; the
 *   NSS modules nsswitch.conf names for hosts are loaded before;
 * - a system call filter of what the child's loop needs; anything else
 *   kills it (SIGSYS, which the parent logs, and the kernel audits).
 */
#ifndef KMEM_AGENT_SANDBOX_H
#define KMEM_AGENT_SANDBOX_H

/*
 * Moves into the empty file system. spool: a directory to keep, or NULL.
 * *parent_uid becomes the parent's uid as the kernel shows it inside the
 * namespace (unless it is ours, the overflow uid: the parent's pid is
 * what tells it apart then). -EOPNOTSUPP when the kernel gives no user
 * namespace (turned off, or its capabilities refused): the view is as it
 * was, and the caller runs on in it. Any other error leaves a half-made
 * view: the caller ends.
 */
int sandbox_enter(const char *spool, uid_t *parent_uid);

/*
 * The system call filter, for good; the last step of the child's setup.
 * -EOPNOTSUPP when the kernel has no seccomp: the caller runs on without.
 */
int sandbox_filter(void);

#endif

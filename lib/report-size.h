/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The size bound of a Report, shared by the agent, which never sends a
 * longer one, and kmemd, which refuses a [server] max_request below it: a
 * report kmemd answers 413 would stay at the head of the agent's spool.
 */
#ifndef KMEMCTL_REPORT_SIZE_H
#define KMEMCTL_REPORT_SIZE_H

/*
 * An encoded Report with the 8-byte seq the agent's parent puts before it
 * for its network child (PRIVSEP_MAX_PAYLOAD): a report itself is shorter.
 */
#define REPORT_MAX_SIZE (128U << 10)

#endif

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Signed build records for kmemctl.ko (docs/agent.md, "Build records"):
 * the bundles in [agent] builds, verified with the pinned policy keys,
 * and each record that could concern the running kernel written to the
 * module through kernel.c.
 */
#ifndef KMEM_AGENT_BUILDS_H
#define KMEM_AGENT_BUILDS_H

#include <time.h>

#include "rootfs.h"
#include "sign.h"

/* What one pass did with the bundles it found. */
struct builds_tally {
	unsigned int admitted; /* the module took the record */
	unsigned int refused; /* unreadable, unsigned, malformed, or the module said no */
	unsigned int skipped; /* verified, but for another build or kmemctl version */
};

/*
 * Every *.bundle in dir, in name order; each one is logged, and none stops
 * the rest. A missing dir holds no bundles. Returns the tally.
 */
struct builds_tally builds_admit(const struct rootfs *rfs, const struct keyring *kr,
				 const char *dir, time_t now);

#endif

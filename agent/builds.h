/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Signed build records for kmemctl.ko (docs/agent.md, "Build records"):
 * the bundles in [agent] builds, verified with the pinned policy keys,
 * and each record that could concern the running kernel written to the
 * module through kernel.c.
 */
#ifndef KMEM_AGENT_BUILDS_H
#define KMEM_AGENT_BUILDS_H

#include <stddef.h>
#include <stdint.h>
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

/*
 * A bundle kmemd handed on (ReportReply.build_records): when a pinned key
 * signed it and its record parses, kept in dir (the agent's state, never
 * the operator's [agent] builds) under its content's digest, so it is
 * admitted at every start as well. 1: kept now, 0: kept before, or a
 * negative errno: refused (logged).
 */
int builds_keep(const struct keyring *kr, const char *dir, const uint8_t *buf, size_t len,
		time_t now);

#endif

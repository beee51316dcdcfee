/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Which policy each host is to run (docs/rollouts.md): the newest rollout
 * that reached the host has the say (its policy while it runs, holds, is
 * paused or done; its rollback target once it rolls back or is aborted),
 * else the newest direct assignment whose selector matches the host.
 *
 * Decided in memory, from assignments with their selectors parsed and
 * rollouts with their members by host, as the store last had them: loaded
 * at start and again whenever desired_refresh() finds the store changed.
 * A host's answer is kept until they change or its facts do, so a report
 * costs a hash lookup whatever the number of assignments and rollouts.
 *
 * Used from kmemd's event loop only.
 */
#ifndef KMEMD_DESIRED_H
#define KMEMD_DESIRED_H

#include <stdint.h>

#include "kmemctl/v1/facts.pb-c.h"
#include "store.h"

struct desired;

/* Rows of the store a load left out: a selector or a rollout document kmemd cannot read. */
struct desired_skipped {
	unsigned n;
	char first[512]; /* which row the first was, and why */
};

int desired_new(struct desired **out);
void desired_free(struct desired *d);

/*
 * Loads again what changed in st since the last load (everything the
 * first time), as st's changes() tells: one cheap query when nothing did.
 * 1 when something was loaded, 0 when nothing had changed; -EIO (st's
 * error() says why) or -ENOMEM, and d stays as it was. skipped: the rows
 * this load left out, for the caller to log.
 */
int desired_refresh(struct desired *d, struct store *st, struct desired_skipped *skipped);

/* The policy the host of f is to run: 0 with name and version, -ENOENT when none. */
int desired_policy(struct desired *d, const Kmemctl__V1__HostFacts *f, char name[STORE_ID_MAX],
		   uint64_t *version);

#endif

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Collectors: every read of a kernel file a report needs, run off the
 * event loop by one collector thread, each round under a deadline.
 *
 * The hosts the agent runs on are the ones that stall, and a read of
 * /proc or /sys can block for as long as the kernel holds a lock. So the
 * loop only starts a round and waits on an eventfd; when the deadline
 * ([agent] collector_timeout) passes first, the report goes out with the
 * collectors that finished and names the rest as failed. A collector that
 * never returns keeps the thread: later rounds are refused (-EBUSY) and
 * their reports name it, until it comes back. Nothing a late round read
 * is used, and nothing is lost by that: probe histograms are running
 * totals, and the next delta includes what the late round saw.
 *
 * Collector results are the thread's until it marks them done; the loop
 * reads only the done ones, so the two never touch the same data.
 */
#ifndef KMEM_AGENT_COLLECT_H
#define KMEM_AGENT_COLLECT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent.h"
#include "facts.h"
#include "rootfs.h"
#include "states.h"
#include "telemetry.h"

enum collector {
	COLLECT_PROBES, /* our own sysfs first: fastest, and its counts matter most */
	COLLECT_STATES,
	COLLECT_FACTS,
	COLLECT_TLB,
	COLLECT_PRESSURE,
	COLLECT_MEMSTAT,
	COLLECT_N,
};

struct collect_out {
	int rc[COLLECT_N]; /* 0, or the collector's negative errno */
	struct telemetry_read probes;
	struct states states;
	struct facts facts;
	uint64_t tlb_shootdowns;
	uint32_t psi_some, psi_full;
	uint64_t memstat_ns; /* one read of memory.stat */
};

struct collect {
	const struct rootfs *rfs;
	const struct agent_config *cfg;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool started, request, stop; /* under lock */
	atomic_bool stopping; /* stop, seen by a round between two collectors */
	int efd; /* the thread adds 1 when a round is over */
	atomic_uint done; /* bit per collector done in this round */
	atomic_int running; /* the collector running now, -1: none */
	struct collect_out out;
};

const char *collect_name(enum collector c);

/* Starts the thread. The eventfd is c->efd. */
int collect_init(struct collect *c, const struct rootfs *rfs, const struct agent_config *cfg);

/*
 * Starts a round. -EBUSY when the last one has not ended: a collector
 * (collect_running()) is stuck.
 */
int collect_start(struct collect *c);

/* The collectors done in this round; their results in c->out are stable. */
static inline unsigned collect_done(struct collect *c)
{
	return atomic_load_explicit(&c->done, memory_order_acquire);
}

static inline int collect_running(struct collect *c)
{
	return atomic_load_explicit(&c->running, memory_order_relaxed);
}

/*
 * Ends the thread: a round under way stops after the collector running
 * now, and the thread is joined. -EBUSY when that collector has not
 * returned within grace_ms: it is stuck in the kernel, where a read cannot
 * be cancelled, and the thread still reads c, its rootfs and its config.
 * The caller must then leave all three as they are and end the process
 * without freeing them.
 */
int collect_stop(struct collect *c, uint64_t grace_ms);

/* Closes the eventfd; only after collect_stop() returned 0. */
void collect_free(struct collect *c);

/* Reading a memory.stat file, as the rstat flush makes readers wait: ns. */
int collect_memstat(const struct rootfs *rfs, const char *path, uint64_t *ns);

#endif

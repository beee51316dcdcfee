/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The network child's spool: encoded reports waiting for kmemd's
 * acknowledgement, one file per report named by its seq, in a directory
 * the child owns. Reports are sent oldest first and removed once kmemd
 * acknowledged them. The spool is bounded in bytes: adding a report to a
 * full spool drops the oldest ones first, and every drop is counted, so
 * kmemd learns how many reports it will never see.
 *
 * A file written in part (the agent died mid-write) never shows: reports
 * are written to a temporary name and renamed (statefile.c). Files that are not reports
 * (foreign names, empty or oversized files) are skipped at load and
 * counted, never deleted.
 */
#ifndef KMEM_AGENT_SPOOL_H
#define KMEM_AGENT_SPOOL_H

#include <stddef.h>
#include <stdint.h>

struct spool_entry {
	uint64_t seq;
	uint64_t size;
};

struct spool {
	int dirfd;
	uint64_t max_bytes;
	uint64_t bytes;
	uint64_t dropped; /* reports dropped to stay within max_bytes */
	uint64_t skipped; /* files at load that were not reports */
	struct spool_entry *entries; /* by seq, oldest first */
	size_t n, cap;
};

/* Opens (creating) dir and loads what a previous run left there. */
int spool_open(struct spool *s, const char *dir, uint64_t max_bytes);
void spool_close(struct spool *s);

/*
 * Adds report seq. Drops the oldest reports until it fits; -EFBIG when the
 * report alone is larger than the spool (it is then dropped and counted).
 * seq must be above every seq in the spool.
 */
int spool_add(struct spool *s, uint64_t seq, const void *data, size_t len);

/* The oldest report: its seq and contents (malloc'ed); -ENOENT when empty. */
int spool_oldest(struct spool *s, uint64_t *seq, void **data, size_t *len);

/* Removes every report with seq <= acked. */
int spool_ack(struct spool *s, uint64_t acked);

/* The highest seq spooled in dir, 0 for none, without opening the spool. */
int spool_newest_seq(const char *dir, uint64_t *seq);

#endif

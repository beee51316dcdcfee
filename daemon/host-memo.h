/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a store connection last wrote for each host, so that a report that
 * changes nothing of a host's row or states writes nothing there, and one
 * newer than any stored skips the duplicate lookup. Valid while this
 * connection is the only one that writes those rows: one kmemd per SQLite
 * file, all ingest through its writer. A rolled-back batch clears it.
 */
#ifndef KMEMD_HOST_MEMO_H
#define KMEMD_HOST_MEMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kmemctl/v1/report.pb-c.h"

struct host_memo_entry {
	uint64_t facts; /* host_memo_facts() of the row as written; 0: not known */
	int64_t seen_ms; /* its last_seen_ms as written */
	uint64_t states; /* host_memo_states() as written; 0: not known */
	bool time_known;
	int64_t max_unix_ms; /* time_known: no counters row of the host is later */
	bool end_known;
	int64_t samples_end_ms; /* end_known: no sample of the host ends later; INT64_MIN: none */
};

struct host_memo {
	struct host_memo_slot *slot;
	size_t cap, n; /* cap: a power of two, or 0 */
};

/* host's entry, zeroed when new; NULL when out of memory. */
struct host_memo_entry *host_memo_get(struct host_memo *m, const char *host);
void host_memo_clear(struct host_memo *m);

/*
 * Hashes of what a report writes to the host's row (all but times and seq,
 * with what it waits for) and to its states.
 */
uint64_t host_memo_facts(const Kmemctl__V1__Report *rep);
uint64_t host_memo_states(const Kmemctl__V1__Report *rep);

#endif

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The names hosts may give probes and mitigations. Each name kmemd keeps
 * becomes rows, a dashboard series and a /metrics label, so the set is
 * bounded: the module's own names always, and beyond them at most
 * [limits] names per kind for the fleet, of which one host may bring in
 * at most [limits] host_names. A sample, state or event with a name past
 * those bounds is dropped from the report (the rest of it is stored) and
 * counted; the reply tells the agent, which logs it.
 *
 * Names are kept in the store (names table) so that the bounds hold
 * across restarts and, with several kmemd on one database, for the fleet.
 */
#ifndef KMEMD_NAMES_H
#define KMEMD_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "kmemctl/v1/report.pb-c.h"

enum name_kind { NAME_PROBE, NAME_MITIGATION, NAME_KINDS };

struct names;
struct store;

struct names_limits {
	unsigned fleet; /* names per kind beyond the module's */
	unsigned host; /* of them, brought in by one host */
};

/* The module's names, and those the store holds. */
int names_new(struct store *st, const struct names_limits *lim, struct names **out);
void names_free(struct names *n);
void names_set_limits(struct names *n, const struct names_limits *lim);

/*
 * The names a report uses, checked and admitted: new names within the
 * bounds are added (to the store at once, before the report is stored);
 * samples and states past them are moved to the end of their arrays and
 * left out of the counts (so the report must be freed as a whole, as
 * kmemd's arena does, not by its counts), event names past them are
 * blanked. Returns how many
 * were left out, with why set when any was; a negative errno when the
 * store failed.
 */
int names_admit(struct names *n, Kmemctl__V1__Report *rep, int64_t now_ms, char *why, size_t len);

/* For /metrics: names known beyond the module's, and what was dropped since start. */
void names_counts(const struct names *n, enum name_kind k, uint64_t *known_out, uint64_t *dropped);
const char *names_kind_name(enum name_kind k);

#endif

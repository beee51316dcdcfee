/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Enactment, in the root parent: enact() is the one function that changes
 * a mitigation of kmemctl.ko. Signed policies, local overrides, the kill
 * switch, the guard's reverts, the quarantines at start, the module's
 * trips and boot confirmation all go through it, so every change is made
 * and logged one way, as bpftune logs each tunable it changes.
 *
 * A change is: the intent into <state_dir>/intent (synced; an intent found
 * at the next start names the change a dead run cut short,
 * enact_recover()), before `mode on` the boot confirmation record
 * (confirm.h), then `reset` when a tripped mitigation is turned on, the
 * params in one write, the mode, each through kernel.c; the intent goes
 * once the write returned. What the module reports afterwards is the
 * outcome, logged with MESSAGE_ID by source and the fields MITIGATION,
 * POLICY, MODE, OLD and NEW ("off every_cpus=1" -> "on every_cpus=4"),
 * SOURCE and REASON.
 */
#ifndef KMEM_AGENT_ENACT_H
#define KMEM_AGENT_ENACT_H

#include <stddef.h>

#include "confirm.h"
#include "policy.h"

enum enact_source {
	ENACT_POLICY, /* a signed policy */
	ENACT_LOCAL, /* a local override from the control socket */
	ENACT_KILL_SWITCH, /* `kmemctl disable` */
	ENACT_GUARD, /* a lockup in the guard window */
	ENACT_QUARANTINE, /* a change the previous run died in */
	ENACT_CONFIRMATION, /* the host died while the mitigation was new */
	ENACT_TRIP, /* the module's breaker turned it off itself */
};

/* "policy", "local", "kill-switch", "guard", "quarantine", "confirmation", "trip" */
const char *enact_source_name(enum enact_source s);

struct enactor {
	const struct rootfs *rfs;
	int state_dirfd;
	char boot_id[CONFIRM_BOOT_ID_LEN + 1]; /* "": unknown, and nothing is turned on */
};

/*
 * Makes m so (mode and params; reset first when it is tripped and turned
 * on), for source under policy v; reason says why (REASON=), or NULL.
 * ENACT_TRIP writes nothing: the module turned it off, which is logged.
 * The outcome in o: unchanged, applied (what the module reports after
 * the writes: the mode, every param, not tripped), skipped (no such
 * mitigation, or on asked of one unsupported or native here) or failed.
 * Returns 0, or a negative errno when the intent journal could not be
 * written (then nothing further was written).
 */
int enact(const struct enactor *e, const struct policy_mitigation *m, enum enact_source source,
	  const struct policy_version *v, const char *reason, struct policy_outcome *o);

/*
 * A document's mitigations through enact() (ids in quarantined are
 * skipped), then its probes. One outcome per entry, in its order,
 * mitigations first. Returns 0, or enact()'s error, after which nothing
 * more is applied.
 */
int enact_doc(const struct enactor *e, const struct policy_doc *doc, enum enact_source source,
	      const struct policy_version *v, const char *const *quarantined,
	      struct policy_outcome *out, size_t *nout);

/*
 * At start: 1 with id set when a change was under way when the previous
 * run ended (the journal is then cleared), 0 when none was, -EBADMSG for
 * an intent that does not name a mitigation.
 */
int enact_recover(int state_dirfd, char *id, size_t idlen);

#endif

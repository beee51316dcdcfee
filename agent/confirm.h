/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Boot confirmation, in the root parent: a mitigation the agent turns on
 * is new until it has run a guard window in one boot, and a host that dies
 * while one is new must not turn it on again at its next boot.
 *
 * Before the agent writes `mode on` it records, in <state_dir>/confirm
 * (replaced atomically, file and directory synced), that it is turning
 * that mitigation on: the boot id (/proc/sys/kernel/random/boot_id), the
 * time (CLOCK_MONOTONIC, which runs on across agent restarts within a
 * boot) and the policy it runs under. The record is marked confirmed once
 * guard_window has passed in the same boot with the mitigation still on,
 * and removed when the mitigation goes off. At start a pending record of
 * another boot means the host died while the mitigation was new.
 *
 * One line per mitigation:
 *   "<id> pending|confirmed <boot id> <since_ms> <policy name|-> <version>"
 */
#ifndef KMEM_AGENT_CONFIRM_H
#define KMEM_AGENT_CONFIRM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel.h"
#include "policy.h"
#include "rootfs.h"

#define CONFIRM_FILE "confirm"
#define CONFIRM_BOOT_ID_LEN 36 /* a UUID as the kernel prints it */
#define CONFIRM_MAX KERNEL_MAX_IDS

struct confirm_entry {
	char id[POLICY_ID_MAX + 1];
	bool confirmed;
	char boot_id[CONFIRM_BOOT_ID_LEN + 1];
	uint64_t since_ms; /* monotonic, in that boot */
	struct policy_version policy;
};

struct confirm {
	struct confirm_entry e[CONFIRM_MAX];
	size_t n;
};

/* This boot's id into buf (CONFIRM_BOOT_ID_LEN + 1); -EBADMSG if it is not a UUID. */
int confirm_boot_id(const struct rootfs *rfs, char *buf, size_t size);

/*
 * The records into c: 0 (none is 0 too), or -EBADMSG when the file does
 * not parse whole (c then holds nothing: which mitigations it named is
 * unknown), or another negative errno from reading it.
 */
int confirm_load(int dirfd, struct confirm *c);
/* c replaces the file (removes it when c is empty), durably. */
int confirm_save(int dirfd, const struct confirm *c);
/* The entry for id, or NULL. */
struct confirm_entry *confirm_find(struct confirm *c, const char *id);

/* A pending record for id, on disk before the caller writes `mode on`. */
int confirm_begin(int dirfd, const char *id, const char *boot_id, uint64_t now_ms,
		  const struct policy_version *v);
/* id went off (or never went on): its record goes. */
int confirm_end(int dirfd, const char *id);

/*
 * At start: the pending records of another boot (every pending one when
 * boot_id is "", unknown) are the mitigations the host died with while
 * they were new; they move to lost (up to CONFIRM_MAX). Confirmed records
 * of another boot are done with and dropped. Returns whether c changed.
 */
bool confirm_start(struct confirm *c, const char *boot_id, struct confirm_entry *lost,
		   size_t *nlost);

/*
 * A report round read the module's mitigations (km, n of them) at
 * round_ms: a pending record of this boot whose window has passed by then,
 * with its mitigation on, is confirmed (its id into done, up to
 * CONFIRM_MAX); one whose mitigation was off and that is older than the
 * read goes. Returns whether c changed.
 */
bool confirm_round(struct confirm *c, const char *boot_id, uint64_t round_ms, uint64_t window_ms,
		   const struct kernel_mitigation *km, size_t n, char done[][POLICY_ID_MAX + 1],
		   size_t *ndone);

#endif

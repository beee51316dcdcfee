/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Accepting and applying signed policies, in the root parent.
 *
 * policy_check() decides whether a bundle may run here: signature by a
 * pinned key, not expired, not issued in the future, not older than the
 * bundle that runs now, a valid name (policy_name_valid()) and a valid
 * document. enact_doc() (enact.h) then applies it. A mitigation that
 * harmed the host under a policy version (a change a dead run cut short,
 * a guard revert, a trip, a host that died while it was new) is
 * quarantined under that version: not touched again until another
 * version arrives.
 */
#ifndef KMEM_AGENT_POLICY_H
#define KMEM_AGENT_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "kernel.h"
#include "policydoc.h"
#include "sign.h"

#define POLICY_WHY_MAX 192

struct policy_version {
	char name[128];
	uint64_t version; /* 0 with name "": no policy yet */
};

/*
 * 0 with *payload (free with kmemctl__v1__policy_payload__free_unpacked)
 * and *doc set, or a negative errno with a one-line reason in why:
 * -EBADMSG, -ENOKEY, -EKEYEXPIRED, -ETIME (policy_verify()), -ESTALE
 * (older than cur), -EINVAL (the name or the document).
 */
int policy_check(const struct keyring *kr, const uint8_t *buf, size_t len, time_t now,
		 const struct policy_version *cur, Kmemctl__V1__PolicyPayload **payload,
		 struct policy_doc *doc, char *why, size_t whylen);

enum policy_result {
	POLICY_UNCHANGED, /* already as asked */
	POLICY_APPLIED,
	POLICY_SKIPPED, /* not applied: unknown here, unsupported, native, quarantined */
	POLICY_FAILED, /* the module refused a write */
};

/* "unchanged", "applied", "skipped", "failed"; "?" for anything else. */
const char *policy_result_name(enum policy_result r);

struct policy_outcome {
	char id[POLICY_ID_MAX + 1];
	enum policy_result result;
	char why[POLICY_WHY_MAX];
};

/* id is in ids (NULL-terminated, or NULL). */
bool policy_listed(const char *const *ids, const char *id);

/*
 * Quarantine: mitigations that harmed the host, per policy version. They
 * are not touched again until a new version of the policy arrives (the
 * operator's next decision).
 */
int policy_quarantine_add(int state_dirfd, const char *id, const struct policy_version *v);
/* The ids quarantined under v, NULL-terminated in ids (max entries incl. the NULL). */
int policy_quarantine_list(int state_dirfd, const struct policy_version *v,
			   char store[][POLICY_ID_MAX + 1], const char **ids, size_t max);

/*
 * Last known good: the bundle that runs, as kmemd sent it, applied again
 * at start when kmemd cannot be reached (and verified again: keys rotate).
 */
int policy_store(int state_dirfd, const uint8_t *buf, size_t len);
/* -ENOENT when none was stored; *buf is malloc'ed. */
int policy_load(int state_dirfd, uint8_t **buf, size_t *len);

#endif

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The policy document: what a signed policy asks of a host's kmemctl.ko
 * (docs/policy.md). It travels as JSON inside PolicyPayload.document_json;
 * kmemd checks it when an operator submits it and the agent checks it
 * again before applying anything.
 *
 * Validation is strict where a typo would silently do nothing (unknown
 * keys, values of the wrong type, out-of-range numbers) and lenient where
 * the fleet is mixed: a mitigation or probe id this build does not know is
 * kept, since a newer module may have it, and the agent reports what it
 * could not apply. Ids and param keys may only use [a-z0-9_-], so none can
 * name a path outside the module's sysfs directory.
 */
#ifndef KMEMCTL_POLICYDOC_H
#define KMEMCTL_POLICYDOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define POLICY_ID_MAX 32
#define POLICY_NAME_MAX 63
/* the rule policy_name_valid() enforces, for messages */
#define POLICY_NAME_RULE "1 to 63 of [A-Za-z0-9._-]"
#define POLICY_MAX_ENTRIES 16
#define POLICY_MAX_PARAMS 8

enum policy_mode { POLICY_MODE_KEEP, POLICY_MODE_OFF, POLICY_MODE_ON };

struct policy_param {
	char key[POLICY_ID_MAX + 1];
	uint64_t value;
};

struct policy_mitigation {
	char id[POLICY_ID_MAX + 1];
	enum policy_mode mode;
	struct policy_param params[POLICY_MAX_PARAMS];
	size_t nparams;
};

struct policy_probe {
	char id[POLICY_ID_MAX + 1];
	int enabled; /* -1: keep */
	int64_t threshold_ns; /* -1: keep */
};

struct policy_doc {
	struct policy_mitigation mitigations[POLICY_MAX_ENTRIES];
	size_t nmitigations;
	struct policy_probe probes[POLICY_MAX_ENTRIES];
	size_t nprobes;
};

/*
 * Parses and checks a document. On error returns -EINVAL (or -ENOMEM) and
 * writes a one-line reason naming the offending key to err.
 */
int policy_doc_parse(const char *json, size_t len, struct policy_doc *doc, char *err,
		     size_t errlen);

/*
 * kmemd's check on upload, stricter than an agent's: every mitigation,
 * param and probe must be one this release's module has, and every param
 * in the module's range. -EINVAL with a reason naming the key.
 */
int policy_doc_check_known(const struct policy_doc *doc, char *err, size_t errlen);

/*
 * Whether applying back after doc undoes what doc changed: every
 * mitigation doc sets a mode or params for must have its mode stated in
 * back, and every probe doc enables or disables its enabled (a key left
 * out of a policy is left as it is on the host). -EINVAL naming the first
 * one left behind.
 */
int policy_doc_undoes(const struct policy_doc *doc, const struct policy_doc *back, char *err,
		      size_t errlen);

/* true when id is a valid mitigation, probe or param name */
bool policy_id_valid(const char *id);

/*
 * true when name may name a policy: 1 to POLICY_NAME_MAX of [A-Za-z0-9._-].
 * kmemd takes no other on upload and refuses reports that carry another
 * (it becomes an SQL key and a Prometheus label); kmemctl policy sign and
 * the agent refuse the bundle up front.
 */
bool policy_name_valid(const char *name);

#endif

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The module's mitigations as a report carries them: what kernel.c reads,
 * as MitigationState messages (proto/kmemctl/v1/mitigation.proto), with
 * who set each mode.
 */
#ifndef KMEM_AGENT_STATES_H
#define KMEM_AGENT_STATES_H

#include "buildrec.h"
#include "kernel.h"
#include "kmemctl/v1/mitigation.pb-c.h"

struct states {
	struct kernel_mitigation km[KERNEL_MAX_IDS];
	Kmemctl__V1__MitigationState pb[KERNEL_MAX_IDS];
	Kmemctl__V1__MitigationState *pbp[KERNEL_MAX_IDS];
	Kmemctl__V1__MitigationState__ParamsEntry params[KERNEL_MAX_IDS][KERNEL_MAX_KV];
	Kmemctl__V1__MitigationState__ParamsEntry *paramsp[KERNEL_MAX_IDS][KERNEL_MAX_KV];
	char values[KERNEL_MAX_IDS][KERNEL_MAX_KV][24];
	Kmemctl__V1__MitigationState__StatsEntry stats[KERNEL_MAX_IDS][KERNEL_MAX_KV];
	Kmemctl__V1__MitigationState__StatsEntry *statsp[KERNEL_MAX_IDS][KERNEL_MAX_KV];
	size_t n;
	size_t unreadable; /* mitigations whose files did not parse, left out */
	/* the ids unsupported until a build record vouches for this build */
	char *waiting[KERNEL_MAX_IDS];
	size_t nwaiting;
	/* while one waits: the module's build file, for the record; "" otherwise */
	char build_file[BUILDREC_MAX];
};

/* Who set id's mode: a Kmemctl__V1__ModeSource value. */
typedef Kmemctl__V1__ModeSource (*states_source)(const char *id, void *arg);

/*
 * Fills s (pointers into s itself: keep it alive while the messages are
 * used). -ENOENT when the module is not loaded.
 */
int states_collect(const struct rootfs *rfs, struct states *s, states_source source, void *arg);

#endif

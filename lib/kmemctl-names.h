/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The module's interface as userspace looks it up, expanded from its one
 * description in kmod/uapi/kmemctl.h: names of the mitigation, probe,
 * state and trip-cause numbers, and the params with their ranges. For the
 * agent, kmemd, kmemctl and the static test programs in tests/vm/progs,
 * so header-only.
 */
#ifndef KMEMCTL_NAMES_H
#define KMEMCTL_NAMES_H

#include "uapi/kmemctl.h"

#define KMEMCTL_MIT_NAME(e, name) [KMEMCTL_MIT_##e] = name,
#define KMEMCTL_PROBE_NAME(e, id, second) [KMEMCTL_PROBE_##e] = id,
#define KMEMCTL_PROBE_SECOND(e, id, second) [KMEMCTL_PROBE_##e] = second,
#define KMEMCTL_STATE_NAME(e, name) [KMEMCTL_STATE_##e] = name,
#define KMEMCTL_TRIP_NAME(e, n, name) [KMEMCTL_TRIP_##e] = name,
#define KMEMCTL_EV_SOURCE(e, type, source) [KMEMCTL_EV_##e] = KMEMCTL_SOURCE_##source,
#define KMEMCTL_PARAM_ROW(mit, param, key, def, min, max) { KMEMCTL_MIT_##mit, key, def, min, max },

/* NULL for a number this build does not know (a newer module). */
static inline const char *kmemctl_mitigation_name(unsigned int source)
{
	static const char *const names[] = { KMEMCTL_MITIGATIONS(KMEMCTL_MIT_NAME) };

	return source < KMEMCTL_MIT_COUNT ? names[source] : 0;
}

static inline const char *kmemctl_probe_name(unsigned int source)
{
	static const char *const names[] = { KMEMCTL_PROBES(KMEMCTL_PROBE_NAME) };

	return source < KMEMCTL_PROBE_COUNT ? names[source] : 0;
}

/* The name of a probe's secondary histogram, "" for none; NULL as above. */
static inline const char *kmemctl_probe_second(unsigned int source)
{
	static const char *const seconds[] = { KMEMCTL_PROBES(KMEMCTL_PROBE_SECOND) };

	return source < KMEMCTL_PROBE_COUNT ? seconds[source] : 0;
}

/* What mitigations/<id>/state shows, or NULL as above. */
static inline const char *kmemctl_state_name(unsigned int state)
{
	static const char *const names[] = { KMEMCTL_STATES(KMEMCTL_STATE_NAME) };

	return state < KMEMCTL_STATE_COUNT ? names[state] : 0;
}

/* The cause in a TRIP record's flags as reasons name it, or NULL. */
static inline const char *kmemctl_trip_cause_name(unsigned int cause)
{
	static const char *const names[] = { KMEMCTL_TRIP_CAUSES(KMEMCTL_TRIP_NAME) };

	return cause < sizeof(names) / sizeof(names[0]) ? names[cause] : 0;
}

/*
 * What the source field of a record of this type numbers:
 * KMEMCTL_SOURCE_NONE also for a type this build does not know.
 */
static inline enum kmemctl_event_source kmemctl_event_source(unsigned int type)
{
	static const enum kmemctl_event_source sources[] = { KMEMCTL_EVENTS(KMEMCTL_EV_SOURCE) };

	return type < sizeof(sources) / sizeof(sources[0]) ? sources[type] : KMEMCTL_SOURCE_NONE;
}

/* A mitigation parameter and its range, as the module enforces it. */
struct kmemctl_param {
	enum kmemctl_mitigation mitigation;
	const char *key;
	unsigned long long def, min, max;
};

/* Every mitigation parameter, indexed by enum kmemctl_param_id. */
static inline const struct kmemctl_param *kmemctl_params(void)
{
	static const struct kmemctl_param params[KMEMCTL_PARAM_COUNT] = { KMEMCTL_PARAMS(
		KMEMCTL_PARAM_ROW) };

	return params;
}

/* NULL when this build's module has no such mitigation parameter. */
static inline const struct kmemctl_param *kmemctl_param_find(const char *mitigation,
							     const char *key)
{
	const struct kmemctl_param *p = kmemctl_params();

	for (unsigned int i = 0; i < KMEMCTL_PARAM_COUNT; i++)
		if (!__builtin_strcmp(kmemctl_mitigation_name(p[i].mitigation), mitigation) &&
		    !__builtin_strcmp(p[i].key, key))
			return &p[i];
	return 0;
}

#endif

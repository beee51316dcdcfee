/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The configuration that tests/unit/test-ini.c and tests/fuzz/fuzz-ini.c
 * parse: a row of every type, numbers and durations with and without
 * bounds, so a zero duration and the largest number are written out too.
 */
#ifndef KMEM_TEST_INI_CONF_H
#define KMEM_TEST_INI_CONF_H

#include <stddef.h>

#include "ini.h"

struct conf {
	char *server;
	char *state_dir;
	uint64_t interval_ms;
	uint64_t grace_ms;
	uint64_t spool_max;
	uint64_t workers;
	uint64_t limit;
	bool verbose;
	int level;
	struct ini_map labels;
};

static const char *const levels[] = { "err", "warning", "info", "debug", NULL };

static const struct ini_option table[] = {
	{ "agent", "server", INI_STRING, offsetof(struct conf, server) },
	{ "agent", "state_dir", INI_PATH, offsetof(struct conf, state_dir) },
	{ "agent", "interval", INI_DURATION, offsetof(struct conf, interval_ms), 1000, 3600000 },
	{ "agent", "grace", INI_DURATION, offsetof(struct conf, grace_ms), 0, 0 },
	{ "agent", "spool_max", INI_SIZE, offsetof(struct conf, spool_max), 4096, 0 },
	{ "agent", "workers", INI_UINT, offsetof(struct conf, workers), 1, 64 },
	{ "agent", "limit", INI_UINT, offsetof(struct conf, limit), 0, 0 },
	{ "agent", "verbose", INI_BOOL, offsetof(struct conf, verbose) },
	{ "agent", "log_level", INI_ENUM, offsetof(struct conf, level), .choices = levels },
	{ "labels", "*", INI_MAP, offsetof(struct conf, labels) },
};

static inline void conf_defaults(struct conf *c)
{
	*c = (struct conf){ .interval_ms = 10000, .spool_max = 8 << 20, .workers = 1, .level = 2 };
}

#endif

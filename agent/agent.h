/* SPDX-License-Identifier: GPL-2.0 */
#ifndef KMEM_AGENT_H
#define KMEM_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ini.h"

#define AGENT_CONF "/etc/kmemctl/agent.conf"

struct agent_config {
	char *host_id; /* default: /etc/machine-id */
	char *server; /* kmemd host:port */
	uint64_t interval_ms;
	char *state_dir;
	uint64_t spool_max; /* bytes */
	uint64_t guard_window_ms;
	uint64_t collector_timeout_ms;
	char *cert, *key, *ca;
	bool renew; /* renew the host certificate from kmemd before it expires */
	char *keys_dir; /* pinned policy keys */
	char *policy_file; /* a signed bundle on disk, NULL: none */
	char *module; /* kmemctl.ko to load: a name or a path; "": none */
	char *builds_dir; /* signed build record bundles */
	char *user; /* the network child runs as this user */
	char *control; /* the control socket's path */
	char *memstat; /* the memory.stat file to time, NULL: a default */
	int log_level;
	struct ini_map labels;
};

extern const struct ini_option agent_options[];
extern const size_t agent_n_options;
void agent_config_defaults(struct agent_config *c);
/* What no single option can say wrong; logged. */
int agent_config_check(const struct agent_config *c);

#endif

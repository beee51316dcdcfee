// SPDX-License-Identifier: GPL-2.0
#include <stddef.h>
#include <string.h>
#include <syslog.h>

#include "agent.h"
#include "ctl.h"
#include "log.h"
#include "macro.h"
#include "hostport.h"
#include "report-check.h"
#include "text.h"

static const char *const log_levels[] = { "emerg",  "alert", "crit",  "err", "warning",
					  "notice", "info",  "debug", NULL };

#define OPT(sec, key, type, field, ...)                                           \
	{                                                                         \
		sec, key, type, offsetof(struct agent_config, field), __VA_ARGS__ \
	}

const struct ini_option agent_options[] = {
	OPT("agent", "host_id", INI_STRING, host_id),
	OPT("agent", "server", INI_STRING, server),
	OPT("agent", "interval", INI_DURATION, interval_ms, 1000, 3600000),
	OPT("agent", "state_dir", INI_PATH, state_dir),
	OPT("agent", "spool_max", INI_SIZE, spool_max, 64 << 10, 1ULL << 32),
	OPT("agent", "guard_window", INI_DURATION, guard_window_ms, 0, 86400000),
	OPT("agent", "collector_timeout", INI_DURATION, collector_timeout_ms, 10, 60000),
	OPT("agent", "user", INI_STRING, user),
	OPT("agent", "module", INI_STRING, module),
	OPT("agent", "builds", INI_PATH, builds_dir),
	OPT("agent", "control", INI_PATH, control),
	OPT("agent", "memstat", INI_PATH, memstat),
	OPT("tls", "cert", INI_PATH, cert),
	OPT("tls", "key", INI_PATH, key),
	OPT("tls", "ca", INI_PATH, ca),
	OPT("tls", "renew", INI_BOOL, renew),
	OPT("policy", "keys_dir", INI_PATH, keys_dir),
	OPT("policy", "file", INI_PATH, policy_file),
	OPT("log", "level", INI_ENUM, log_level, .choices = log_levels),
	OPT("labels", "*", INI_MAP, labels),
};

const size_t agent_n_options = ARRAY_SIZE(agent_options);

/* What kmemd would refuse in every report: better said now, at the line that says it. */
int agent_config_check(const struct agent_config *c)
{
	const struct ini_map *m = &c->labels;
	struct hostport hp[HOSTPORT_LIST_MAX];
	size_t n;

	if (c->server && hostport_list(c->server, hp, HOSTPORT_LIST_MAX, &n) < 0)
		return log_error_errno(-EINVAL,
				       "[agent] server '%s' is not HOST:PORT, or up to %d of them "
				       "separated by commas, each once",
				       c->server, HOSTPORT_LIST_MAX);
	if (c->host_id && !text_host_id_valid(c->host_id, REPORT_HOST_ID_MAX))
		return log_error_errno(
			-EINVAL, "[agent] host_id '%s' is not 1 to %d of " TEXT_HOST_ID_GRAMMAR,
			c->host_id, REPORT_HOST_ID_MAX);
	if (m->n > REPORT_LABELS_MAX)
		return log_error_errno(-EINVAL, "[labels] has %zu labels, more than %d", m->n,
				       REPORT_LABELS_MAX);
	for (size_t i = 0; i < m->n; i++) {
		if (!text_name_valid(m->keys[i], REPORT_NAME_MAX))
			return log_error_errno(-EINVAL, "[labels] key '%s' is not 1 to %d of %s",
					       m->keys[i], REPORT_NAME_MAX, TEXT_NAME_CHARSET);
		if (!text_valid(m->values[i], REPORT_TEXT_MAX))
			return log_error_errno(-EINVAL,
					       "[labels] %s: the value is not text without control "
					       "characters of at most %d bytes",
					       m->keys[i], REPORT_TEXT_MAX);
	}
	return 0;
}

void agent_config_defaults(struct agent_config *c)
{
	*c = (struct agent_config){
		.interval_ms = 10000,
		.spool_max = 16 << 20,
		.guard_window_ms = 600000,
		.collector_timeout_ms = 2000,
		.log_level = LOG_INFO,
		.renew = true,
	};
	c->state_dir = strdup("/var/lib/kmem-agent");
	c->keys_dir = strdup("/etc/kmemctl/keys");
	c->user = strdup("kmem-agent");
	c->module = strdup("kmemctl");
	c->builds_dir = strdup("/etc/kmemctl/builds");
	c->control = strdup(CTL_SOCK);
}

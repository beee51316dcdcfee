// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <syslog.h>

#include "kmemd.h"
#include "log.h"
#include "macro.h"
#include "report-size.h"

static const char *const log_levels[] = { "emerg",  "alert", "crit",  "err", "warning",
					  "notice", "info",  "debug", NULL };

#define OPT(sec, key, type, field, ...)                                           \
	{                                                                         \
		sec, key, type, offsetof(struct kmemd_config, field), __VA_ARGS__ \
	}

const struct ini_option kmemd_options[] = {
	OPT("server", "listen", INI_STRING, listen),
	OPT("server", "cert", INI_PATH, cert),
	OPT("server", "key", INI_PATH, key),
	OPT("server", "ca", INI_PATH, ca),
	OPT("server", "admin_ca", INI_PATH, admin_ca),
	OPT("server", "max_connections", INI_UINT, max_connections, 1, 1000000),
	OPT("server", "max_handshakes", INI_UINT, max_handshakes, 1, 100000),
	OPT("server", "max_request", INI_SIZE, max_request, 1024, 64 << 20),
	OPT("server", "max_headers", INI_UINT, max_headers, 4, 1000),
	OPT("server", "io_timeout", INI_DURATION, io_timeout_ms, 100, 3600000),
	OPT("server", "web_root", INI_PATH, web_root),
	OPT("ca", "key", INI_PATH, ca_key),
	OPT("enroll", "host_cert_days", INI_UINT, host_cert_days, 1, 3650),
	OPT("enroll", "rate", INI_UINT, enroll_rate, 1, 100000),
	OPT("store", "path", INI_PATH, store_path),
	OPT("store", "retention", INI_DURATION, retention_ms, 3600000, 0),
	OPT("store", "raw_retention", INI_DURATION, raw_retention_ms, 3600000, 0),
	OPT("store", "batch_wait", INI_DURATION, batch_wait_ms, 1, 1000),
	OPT("rollout", "tick", INI_DURATION, rollout_tick_ms, 100, 3600000),
	OPT("policy", "require_signature", INI_BOOL, require_signature),
	OPT("policy", "keys_dir", INI_PATH, keys_dir),
	OPT("log", "level", INI_ENUM, log_level, .choices = log_levels),
};

const size_t kmemd_n_options = ARRAY_SIZE(kmemd_options);

int kmemd_config_check(const struct kmemd_config *c)
{
	if (c->raw_retention_ms > c->retention_ms)
		return log_error_errno(-EINVAL,
				       "[store] raw_retention is longer than retention: hourly "
				       "rollups would outlive nothing");
	if (c->max_request < REPORT_MAX_SIZE)
		return log_error_errno(-EINVAL,
				       "[server] max_request is below %uK, the largest report an "
				       "agent sends: kmemd would answer it 413 and it would block "
				       "the agent's spool",
				       REPORT_MAX_SIZE >> 10);
	return 0;
}

void kmemd_config_defaults(struct kmemd_config *c)
{
	*c = (struct kmemd_config){
		.max_connections = 20000,
		.max_handshakes = 64,
		.max_request = 1 << 20,
		.max_headers = 64,
		.io_timeout_ms = 30000,
		.retention_ms = 30ULL * 86400000,
		.raw_retention_ms = 2ULL * 86400000,
		.require_signature = true,
		.host_cert_days = 365,
		.batch_wait_ms = 5,
		.rollout_tick_ms = 60000,
		.enroll_rate = 10,
		.log_level = LOG_INFO,
	};
	c->listen = strdup("127.0.0.1:8443");
	c->store_path = strdup("/var/lib/kmemd/kmemd.sqlite");
	c->keys_dir = strdup("/etc/kmemctl/keys");
	c->web_root = strdup(KMEMD_WEB_ROOT);
}

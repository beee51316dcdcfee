// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/resource.h>
#include <syslog.h>

#include "kmemd.h"
#include "log.h"
#include "macro.h"
#include "report-size.h"
#include "store.h"

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
	OPT("server", "max_operators", INI_UINT, max_operators, 1, 10000),
	OPT("server", "max_handshakes", INI_UINT, max_handshakes, 1, 100000),
	OPT("server", "max_anonymous", INI_UINT, max_anonymous, 1, 100000),
	OPT("server", "max_per_address", INI_UINT, max_per_address, 1, 100000),
	OPT("server", "max_request", INI_SIZE, max_request, 1024, 64 << 20),
	OPT("server", "max_bodies", INI_SIZE, max_bodies, 1 << 20, 1ULL << 40),
	OPT("server", "max_headers", INI_UINT, max_headers, 4, 1000),
	OPT("server", "io_timeout", INI_DURATION, io_timeout_ms, 100, 3600000),
	OPT("server", "handshake_timeout", INI_DURATION, handshake_timeout_ms, 100, 600000),
	OPT("server", "request_timeout", INI_DURATION, request_timeout_ms, 100, 3600000),
	OPT("server", "web_root", INI_PATH, web_root),
	OPT("ca", "key", INI_PATH, ca_key),
	OPT("enroll", "host_cert_days", INI_UINT, host_cert_days, 1, 3650),
	OPT("enroll", "rate", INI_UINT, enroll_rate, 1, 100000),
	OPT("enroll", "global_rate", INI_UINT, enroll_global_rate, 1, 1000000),
	OPT("limits", "names", INI_UINT, names_max, 0, 100000),
	OPT("limits", "host_names", INI_UINT, host_names_max, 0, 100000),
	OPT("store", "path", INI_PATH, store_path),
	OPT("store", "url", INI_STRING, store_url),
	OPT("store", "retention", INI_DURATION, retention_ms, 3600000, 0),
	OPT("store", "raw_retention", INI_DURATION, raw_retention_ms, 3600000, 0),
	OPT("store", "batch_wait", INI_DURATION, batch_wait_ms, 1, 1000),
	OPT("rollout", "tick", INI_DURATION, rollout_tick_ms, 100, 3600000),
	OPT("notify", "webhook", INI_STRING, webhook),
	OPT("notify", "ca", INI_PATH, webhook_ca),
	OPT("policy", "require_signature", INI_BOOL, require_signature),
	OPT("policy", "keys_dir", INI_PATH, keys_dir),
	OPT("log", "level", INI_ENUM, log_level, .choices = log_levels),
};

const size_t kmemd_n_options = ARRAY_SIZE(kmemd_options);

const char *kmemd_store_where(const struct kmemd_config *c)
{
	return c->store_url ?: c->store_path;
}

int kmemd_config_check(const struct kmemd_config *c)
{
	/* a URL of another database would be taken for a SQLite file's name */
	if (c->store_url && store_backend(c->store_url) != &store_pg_ops)
		return log_error_errno(-EINVAL,
				       "[store] url is not a postgresql:// URL (a SQLite store is "
				       "[store] path)");
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
	if (c->max_bodies < c->max_request)
		return log_error_errno(-EINVAL,
				       "[server] max_bodies is below max_request: the largest "
				       "request could never be read");
	return kmemd_config_check_fds(c);
}

/*
 * Every connection kmemd admits holds a descriptor: the bounds must fit
 * the limit kmemd can raise itself to (the hard RLIMIT_NOFILE, systemd's
 * LimitNOFILE=), with KMEMD_FDS_RESERVED for the store, logs and listener.
 */
int kmemd_config_check_fds(const struct kmemd_config *c)
{
	uint64_t need = c->max_connections + c->max_operators + c->max_handshakes +
			c->max_anonymous + KMEMD_FDS_RESERVED;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_max == RLIM_INFINITY ||
	    need <= rl.rlim_max)
		return 0;
	return log_error_errno(-EINVAL,
			       "[server] max_connections %llu, max_operators %llu, max_handshakes "
			       "%llu and max_anonymous %llu need %llu descriptors, more than the "
			       "limit of %llu (LimitNOFILE=): lower them or raise the limit",
			       (unsigned long long)c->max_connections,
			       (unsigned long long)c->max_operators,
			       (unsigned long long)c->max_handshakes,
			       (unsigned long long)c->max_anonymous, (unsigned long long)need,
			       (unsigned long long)rl.rlim_max);
}

/* 20,000 hosts, or as many as the descriptor limit holds beside the rest. */
static uint64_t default_connections(const struct kmemd_config *c)
{
	uint64_t others =
		c->max_operators + c->max_handshakes + c->max_anonymous + KMEMD_FDS_RESERVED;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_max == RLIM_INFINITY ||
	    rl.rlim_max >= 20000 + others)
		return 20000;
	return rl.rlim_max > others + 1 ? rl.rlim_max - others : 1;
}

void kmemd_config_defaults(struct kmemd_config *c)
{
	*c = (struct kmemd_config){
		.max_operators = 64,
		.max_handshakes = 64,
		.max_anonymous = 256,
		.max_per_address = 32,
		.handshake_timeout_ms = 10000,
		.request_timeout_ms = 30000,
		.max_request = 1 << 20,
		.max_bodies = 64 << 20,
		.max_headers = 64,
		.io_timeout_ms = 30000,
		.retention_ms = 30ULL * 86400000,
		.raw_retention_ms = 2ULL * 86400000,
		.require_signature = true,
		.host_cert_days = 365,
		.batch_wait_ms = 5,
		.rollout_tick_ms = 60000,
		.enroll_rate = 10,
		.enroll_global_rate = 600,
		.names_max = 256,
		.host_names_max = 16,
		.log_level = LOG_INFO,
	};
	c->max_connections = default_connections(c);
	c->listen = strdup("127.0.0.1:8443");
	c->store_path = strdup("/var/lib/kmemd/kmemd.sqlite");
	c->keys_dir = strdup("/etc/kmemctl/keys");
	c->web_root = strdup(KMEMD_WEB_ROOT);
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Logging for the daemons and the CLI. Library code never logs: it returns
 * a negative errno and the caller logs once, with context.
 *
 * Under systemd (stderr connected to the journal, see JOURNAL_STREAM) entries
 * go to journald with structured fields, so auditable events carry a fixed
 * MESSAGE_ID (lib/message-ids.h) and show up in `journalctl -x` with their
 * catalog text. Anywhere else they go to stderr as one line each.
 */
#ifndef KMEMCTL_LOG_H
#define KMEMCTL_LOG_H

#include <stdbool.h>
#include <stdint.h>
#include <syslog.h>

#include "macro.h"

enum log_target {
	LOG_TARGET_AUTO,
	LOG_TARGET_STDERR,
	LOG_TARGET_JOURNAL,
};

void log_setup(const char *ident, enum log_target target);
void log_set_max_level(int level);
int log_get_max_level(void);
/* Parses "err", "warning", "info", "debug" (syslog names); -EINVAL otherwise. */
int log_level_from_string(const char *s);
const char *log_level_to_string(int level);
bool log_to_journal(void);

/*
 * Emit one entry. `message_id` may be NULL; `fields` is NULL or a
 * NULL-terminated array of "KEY=value" strings added to the journal entry
 * (and appended as key=value on stderr). Returns `error` so callers can
 * write `return log_error_errno(r, ...)`; %m prints strerror(-error).
 */
int log_emit(int level, int error, const char *message_id, const char *const *fields,
	     const char *file, int line, const char *func, const char *fmt, ...) _printf_(8, 9);

#define log_full_errno(level, error, ...) \
	log_emit(level, error, NULL, NULL, __FILE__, __LINE__, __func__, __VA_ARGS__)
#define log_debug(...) log_full_errno(LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...) log_full_errno(LOG_INFO, 0, __VA_ARGS__)
#define log_notice(...) log_full_errno(LOG_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) log_full_errno(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...) log_full_errno(LOG_ERR, 0, __VA_ARGS__)
#define log_warning_errno(error, ...) log_full_errno(LOG_WARNING, error, __VA_ARGS__)
#define log_error_errno(error, ...) log_full_errno(LOG_ERR, error, __VA_ARGS__)

/*
 * Messages a peer can cause at will (a refused report, a failed accept)
 * pass at most `burst` times per interval each; the first to pass after
 * some were held back says how many. Zero-initialized: 10 per 10 s.
 */
struct log_ratelimit {
	uint64_t interval_ms, burst;
	uint64_t start_ms, passed, suppressed;
};

bool log_ratelimit_pass(struct log_ratelimit *rl);

#define log_ratelimited(rl, level, ...) \
	(log_ratelimit_pass(rl) ? (void)log_full_errno(level, 0, __VA_ARGS__) : (void)0)

/* An auditable event: fixed MESSAGE_ID plus structured fields. */
#define log_event(level, message_id, fields, ...) \
	log_emit(level, 0, message_id, fields, __FILE__, __LINE__, __func__, __VA_ARGS__)

#endif

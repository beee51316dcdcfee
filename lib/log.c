// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <systemd/sd-journal.h>

#include "log.h"
#include "text.h"

#define LOG_MAX_FIELDS 16
#define LOG_FIELD_MAX 1280

static const char *log_ident = "kmemctl";
static int log_max_level = LOG_INFO;
static bool log_journal;

static const char *const level_names[] = {
	[LOG_EMERG] = "emerg", [LOG_ALERT] = "alert",	  [LOG_CRIT] = "crit",
	[LOG_ERR] = "err",     [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
	[LOG_INFO] = "info",   [LOG_DEBUG] = "debug",
};

/* systemd sets JOURNAL_STREAM to "dev:ino" of the stream it connected us to. */
static bool stderr_is_journal(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2)
		return false;
	if (fstat(STDERR_FILENO, &st) < 0)
		return false;
	return st.st_dev == dev && st.st_ino == ino;
}

void log_setup(const char *ident, enum log_target target)
{
	log_ident = ident;
	switch (target) {
	case LOG_TARGET_AUTO:
		log_journal = stderr_is_journal();
		break;
	case LOG_TARGET_STDERR:
		log_journal = false;
		break;
	case LOG_TARGET_JOURNAL:
		log_journal = true;
		break;
	}
}

bool log_to_journal(void)
{
	return log_journal;
}

void log_set_max_level(int level)
{
	log_max_level = level;
}

int log_get_max_level(void)
{
	return log_max_level;
}

int log_level_from_string(const char *s)
{
	for (size_t i = 0; i < ARRAY_SIZE(level_names); i++)
		if (strcmp(s, level_names[i]) == 0)
			return (int)i;
	return -EINVAL;
}

const char *log_level_to_string(int level)
{
	if (level < 0 || (size_t)level >= ARRAY_SIZE(level_names))
		return "unknown";
	return level_names[level];
}

static void emit_journal(int level, const char *message_id, const char *const *fields,
			 const char *file, int line, const char *func, const char *msg)
{
	struct iovec iov[LOG_MAX_FIELDS + 8];
	char prio[32], mid[64], ident[128], code_file[512], code_line[32], code_func[256];
	char *text;
	size_t n = 0;

	if (asprintf(&text, "MESSAGE=%s", msg) < 0)
		return;
	snprintf(prio, sizeof(prio), "PRIORITY=%d", level);
	snprintf(ident, sizeof(ident), "SYSLOG_IDENTIFIER=%s", log_ident);
	snprintf(code_file, sizeof(code_file), "CODE_FILE=%s", file);
	snprintf(code_line, sizeof(code_line), "CODE_LINE=%d", line);
	snprintf(code_func, sizeof(code_func), "CODE_FUNC=%s", func);
	iov[n++] = (struct iovec){ text, strlen(text) };
	iov[n++] = (struct iovec){ prio, strlen(prio) };
	iov[n++] = (struct iovec){ ident, strlen(ident) };
	iov[n++] = (struct iovec){ code_file, strlen(code_file) };
	iov[n++] = (struct iovec){ code_line, strlen(code_line) };
	iov[n++] = (struct iovec){ code_func, strlen(code_func) };
	if (message_id) {
		snprintf(mid, sizeof(mid), "MESSAGE_ID=%s", message_id);
		iov[n++] = (struct iovec){ mid, strlen(mid) };
	}
	for (size_t i = 0; fields && fields[i] && i < LOG_MAX_FIELDS; i++)
		iov[n++] = (struct iovec){ (void *)fields[i], strlen(fields[i]) };
	sd_journal_sendv(iov, (int)n);
	free(text);
}

static void emit_stderr(int level, const char *const *fields, const char *msg)
{
	flockfile(stderr);
	fprintf(stderr, "%s: %s", log_ident, msg);
	if (level <= LOG_WARNING)
		fprintf(stderr, " [%s]", level_names[level]);
	for (size_t i = 0; fields && fields[i] && i < LOG_MAX_FIELDS; i++)
		fprintf(stderr, " %s", fields[i]);
	fputc('\n', stderr);
	funlockfile(stderr);
}

/*
 * Values in messages and fields may come from peers (a host id, a
 * hostname, a reason): escaped, one entry stays one line, whatever they
 * hold. The key of a field is ours and stays as it is.
 */
static void escape_fields(const char *const *fields, char out[][LOG_FIELD_MAX],
			  const char *escaped[LOG_MAX_FIELDS + 1])
{
	size_t i;

	for (i = 0; fields && fields[i] && i < LOG_MAX_FIELDS; i++) {
		const char *eq = strchr(fields[i], '=');
		size_t key = eq ? (size_t)(eq - fields[i]) + 1 : 0;

		if (key >= LOG_FIELD_MAX)
			key = 0;
		memcpy(out[i], fields[i], key);
		text_escape(fields[i] + key, out[i] + key, LOG_FIELD_MAX - key);
		escaped[i] = out[i];
	}
	escaped[i] = NULL;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

bool log_ratelimit_pass(struct log_ratelimit *rl)
{
	uint64_t now = mono_ms(), interval = rl->interval_ms ?: 10000, burst = rl->burst ?: 10;

	if (!rl->start_ms || now - rl->start_ms >= interval) {
		if (rl->suppressed)
			log_notice("%llu messages like the next were held back in the last %llu s",
				   (unsigned long long)rl->suppressed,
				   (unsigned long long)(now - rl->start_ms) / 1000);
		rl->start_ms = now;
		rl->passed = 0;
		rl->suppressed = 0;
	}
	if (rl->passed >= burst) {
		rl->suppressed++;
		return false;
	}
	rl->passed++;
	return true;
}

int log_emit(int level, int error, const char *message_id, const char *const *fields,
	     const char *file, int line, const char *func, const char *fmt, ...)
{
	char field_text[LOG_MAX_FIELDS][LOG_FIELD_MAX];
	const char *escaped[LOG_MAX_FIELDS + 1];
	char raw[2048], msg[2048];
	va_list ap;
	int saved = errno;

	if (level > log_max_level)
		return error;
	if (error != 0)
		errno = error < 0 ? -error : error;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	text_escape(raw, msg, sizeof(msg));
	escape_fields(fields, field_text, escaped);
	if (log_journal)
		emit_journal(level, message_id, escaped, file, line, func, msg);
	else
		emit_stderr(level, escaped, msg);
	errno = saved;
	return error;
}

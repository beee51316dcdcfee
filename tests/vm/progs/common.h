/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the VM test programs. Exit status: 0 success, 1 error,
 * 2 usage error (and, for evread, a timeout).
 */
#ifndef KMT_PROGS_COMMON_H
#define KMT_PROGS_COMMON_H

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXIT_USAGE 2

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

extern const char *prog;

static inline void usage_error(const char *fmt, ...)
	__attribute__((noreturn, format(printf, 1, 2)));
static inline void usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (try '%s -h')\n", prog);
	exit(EXIT_USAGE);
}

/* "prog: what: strerror(err)" on stderr. */
static inline void warn_errno(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void warn_errno(int err, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ": %s\n", strerror(err));
}

/* getopt() returned '?' or ':' (the option string starts with ':'). */
static inline void bad_option(int opt) __attribute__((noreturn));
static inline void bad_option(int opt)
{
	if (opt == ':')
		usage_error("option -%c needs an argument", optopt);
	usage_error("unknown option -%c", optopt);
}

/* A decimal number in [min, max] for option -opt, or a usage error. */
static inline uint64_t parse_num(const char *arg, char opt, uint64_t min, uint64_t max)
{
	unsigned long long v;
	char *end;

	errno = 0;
	if (arg[0] < '0' || arg[0] > '9')
		usage_error("-%c: '%s' is not a number", opt, arg);
	v = strtoull(arg, &end, 10);
	if (*end != '\0')
		usage_error("-%c: '%s' is not a number", opt, arg);
	if (errno == ERANGE || v < min || v > max)
		usage_error("-%c: %s is out of range %" PRIu64 "..%" PRIu64, opt, arg, min, max);
	return v;
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif

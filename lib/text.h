/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Text from outside: what a host, a client or a file may put in a string
 * that kmemctl stores, logs or shows. Checked once where it comes in
 * (text_valid, text_name_valid); what was stored before the checks, or
 * comes from a store another program wrote, is made safe where it goes
 * out (text_sanitize, text_escape), so one bad string never breaks a page
 * or a log for everyone.
 */
#ifndef KMEMCTL_TEXT_H
#define KMEMCTL_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The charset of names: probes, mitigations, counters, host ids, labels. */
#define TEXT_NAME_CHARSET "[A-Za-z0-9._-]"

/* len bytes of s are well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF). */
bool text_utf8_valid(const char *s, size_t len);

/*
 * s is NUL-terminated, at most max bytes, well-formed UTF-8 and free of
 * control characters (C0, DEL and C1), which would forge lines in logs
 * and move terminals' cursors. NULL is the empty string.
 */
bool text_valid(const char *s, size_t max);

/* s is 1 to max characters of TEXT_NAME_CHARSET. */
bool text_name_valid(const char *s, size_t max);

/*
 * A host id: 1 to max characters of TEXT_NAME_CHARSET, the first a letter
 * or digit, so that none is ".", ".." or taken for an option ("-rf") where
 * it names a file or an argument.
 */
#define TEXT_HOST_ID_GRAMMAR "[A-Za-z0-9][A-Za-z0-9._-]*"
bool text_host_id_valid(const char *s, size_t max);

/*
 * A copy of s (len bytes) as well-formed UTF-8: each byte of an invalid
 * sequence becomes U+FFFD. NULL when out of memory.
 */
char *text_sanitize(const char *s, size_t len);

/*
 * s as one line for a log or a terminal, NUL-terminated in out (size
 * bytes, truncated): backslash, control characters and bytes of invalid
 * UTF-8 become C-style escapes (\n, \t, \\, \xHH), the rest is copied.
 * Returns out.
 */
char *text_escape(const char *s, char *out, size_t size);

/*
 * why (len bytes) says what was refused, printf-style; returns -EINVAL,
 * for parsers that refuse with a reason: `return text_refuse(...)`.
 */
int text_refuse(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A duration of s seconds for people: "45s", "30m", "1.5h", "21h", "3d". */
const char *text_duration(double s, char *buf, size_t len);

/* FNV-1a of s, never 0 (which hash tables keep for an empty slot). */
uint64_t text_hash(const char *s);

#endif

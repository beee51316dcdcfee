// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

/*
 * The length of the well-formed UTF-8 sequence at p (n bytes left), with
 * its code point in *cp; 0 when there is none (RFC 3629, table 3-7 of
 * the Unicode standard).
 */
static size_t utf8_seq(const unsigned char *p, size_t n, uint32_t *cp)
{
	size_t len, i;
	uint32_t c, min;

	if (p[0] < 0x80) {
		*cp = p[0];
		return 1;
	}
	if ((p[0] & 0xe0) == 0xc0)
		len = 2, c = p[0] & 0x1f, min = 0x80;
	else if ((p[0] & 0xf0) == 0xe0)
		len = 3, c = p[0] & 0x0f, min = 0x800;
	else if ((p[0] & 0xf8) == 0xf0)
		len = 4, c = p[0] & 0x07, min = 0x10000;
	else
		return 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (p[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

static bool is_control(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp < 0xa0);
}

int text_refuse(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

bool text_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, n;
	uint32_t cp;

	while (i < len) {
		n = utf8_seq(p + i, len - i, &cp);
		if (!n)
			return false;
		i += n;
	}
	return true;
}

bool text_valid(const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = s ? strnlen(s, max + 1) : 0, i = 0, n;
	uint32_t cp;

	if (len > max)
		return false;
	while (i < len) {
		n = utf8_seq(p + i, len - i, &cp);
		if (!n || is_control(cp))
			return false;
		i += n;
	}
	return true;
}

bool text_name_valid(const char *s, size_t max)
{
	size_t len = s ? strnlen(s, max + 1) : 0, i;

	if (!len || len > max)
		return false;
	for (i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '_' || s[i] == '-'))
			return false;
	return true;
}

bool text_host_id_valid(const char *s, size_t max)
{
	return text_name_valid(s, max) &&
	       ((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') ||
		(s[0] >= '0' && s[0] <= '9'));
}

char *text_sanitize(const char *s, size_t len)
{
	static const char replacement[] = "\xef\xbf\xbd";
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, o = 0, n;
	uint32_t cp;
	char *out;

	/* each byte grows to at most three */
	out = malloc(len * 3 + 1);
	if (!out)
		return NULL;
	while (i < len) {
		n = utf8_seq(p + i, len - i, &cp);
		if (n) {
			memcpy(out + o, s + i, n);
			o += n;
			i += n;
		} else {
			memcpy(out + o, replacement, 3);
			o += 3;
			i++;
		}
	}
	out[o] = '\0';
	return out;
}

/* The escape for one code point or invalid byte at p, into e (at least 9 bytes). */
static size_t escape_one(const unsigned char *p, size_t left, char *e, size_t *used)
{
	uint32_t cp;
	size_t n = utf8_seq(p, left, &cp);

	*used = n ? n : 1;
	if (n && !is_control(cp) && cp != '\\') {
		memcpy(e, p, n);
		return n;
	}
	if (cp == '\n' && n)
		return (size_t)snprintf(e, 5, "\\n");
	if (cp == '\t' && n)
		return (size_t)snprintf(e, 5, "\\t");
	if (cp == '\\' && n)
		return (size_t)snprintf(e, 5, "\\\\");
	/* a C1 control is two bytes: both escaped */
	if (n == 2)
		return (size_t)snprintf(e, 9, "\\x%02x\\x%02x", p[0], p[1]);
	return (size_t)snprintf(e, 5, "\\x%02x", p[0]);
}

char *text_escape(const char *s, char *out, size_t size)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t len = strlen((const char *)p), i = 0, o = 0, used, n;
	char e[9];

	if (!size)
		return out;
	while (i < len) {
		n = escape_one(p + i, len - i, e, &used);
		if (o + n >= size)
			break;
		memcpy(out + o, e, n);
		o += n;
		i += used;
	}
	out[o] = '\0';
	return out;
}

const char *text_duration(double s, char *buf, size_t len)
{
	if (s < 120)
		snprintf(buf, len, "%.0fs", s);
	else if (s < 2 * 3600)
		snprintf(buf, len, "%.0fm", s / 60);
	else if (s < 2 * 86400)
		snprintf(buf, len, "%.2gh", s / 3600);
	else
		snprintf(buf, len, "%.0fd", s / 86400);
	return buf;
}

uint64_t text_hash(const char *s)
{
	uint64_t h = 14695981039346656037ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h ?: 1;
}

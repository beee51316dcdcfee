/* SPDX-License-Identifier: GPL-2.0 */
/*
 * JSON from text kmemctl did not check itself: rows a store built, or
 * strings a host sent before kmemd checked them. jansson refuses invalid
 * UTF-8 outright, so one such string would fail a whole page; these
 * replace what is not UTF-8 with U+FFFD instead (lib/text.h).
 */
#ifndef KMEMCTL_JSON_TEXT_H
#define KMEMCTL_JSON_TEXT_H

#include <jansson.h>
#include <stdint.h>

/*
 * A count or sum of what hosts sent, as JSON's integer: one saturated past
 * it (hist_merge() stops at UINT64_MAX) is the largest, never negative as
 * a cast would make it.
 */
_Static_assert(sizeof(json_int_t) == sizeof(int64_t), "json_int_t is 64 bits");
static inline json_int_t json_count(uint64_t v)
{
	return v > INT64_MAX ? INT64_MAX : (json_int_t)v;
}

/* A JSON string of s (NULL: ""); NULL only when out of memory. */
json_t *json_text(const char *s);

/* The JSON document text, its invalid UTF-8 replaced; NULL when it is not JSON. */
json_t *json_loads_lossy(const char *text);

/*
 * Every string value in j, escaped for a terminal (text_escape()): what
 * kmemctl prints as text is then one line per value, whatever a host put
 * in it.
 */
void json_escape_strings(json_t *j);

#endif

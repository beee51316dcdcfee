// SPDX-License-Identifier: GPL-2.0
#include <stdlib.h>
#include <string.h>

#include "json-text.h"
#include "macro.h"
#include "text.h"

json_t *json_text(const char *s)
{
	_cleanup_free_ char *clean = NULL;
	json_t *j = json_string(s ? s : "");

	if (j)
		return j;
	clean = text_sanitize(s, strlen(s));
	return clean ? json_string(clean) : NULL;
}

void json_escape_strings(json_t *j)
{
	const char *key, *s;
	json_t *v;
	size_t i;
	char buf[4096];

	if (json_is_string(j)) {
		s = json_string_value(j);
		if (!text_valid(s, strlen(s)))
			json_string_set(j, text_escape(s, buf, sizeof(buf)));
	} else if (json_is_array(j)) {
		json_array_foreach(j, i, v) json_escape_strings(v);
	} else if (json_is_object(j)) {
		json_object_foreach(j, key, v) json_escape_strings(v);
	}
}

json_t *json_loads_lossy(const char *text)
{
	_cleanup_free_ char *clean = NULL;
	json_t *j = json_loads(text, 0, NULL);

	if (j || text_utf8_valid(text, strlen(text)))
		return j;
	clean = text_sanitize(text, strlen(text));
	return clean ? json_loads(clean, 0, NULL) : NULL;
}

// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fnmatch.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "selector.h"
#include "text.h"

static int string_into(json_t *v, const char *key, char *out, size_t len, char *err, size_t errlen)
{
	const char *s = json_string_value(v);

	if (!s || !s[0] || strlen(s) >= len) {
		snprintf(err, errlen, "\"%s\" must be a string of 1 to %zu characters", key,
			 len - 1);
		return -EINVAL;
	}
	strcpy(out, s);
	return 0;
}

static int cpus_into(json_t *v, const char *key, uint32_t *out, char *err, size_t errlen)
{
	if (!json_is_integer(v) || json_integer_value(v) < 1 ||
	    json_integer_value(v) > UINT32_MAX) {
		snprintf(err, errlen, "\"%s\" must be a positive integer", key);
		return -EINVAL;
	}
	*out = (uint32_t)json_integer_value(v);
	return 0;
}

static int labels_into(json_t *v, struct selector *s, char *err, size_t errlen)
{
	const char *key;
	json_t *val;

	if (!json_is_object(v) || !json_object_size(v)) {
		snprintf(err, errlen, "\"labels\" must be a non-empty object of strings");
		return -EINVAL;
	}
	json_object_foreach(v, key, val)
	{
		if (s->nlabels == SELECTOR_MAX_LABELS) {
			snprintf(err, errlen, "\"labels\": at most %d", SELECTOR_MAX_LABELS);
			return -EINVAL;
		}
		if (!key[0] || strlen(key) >= sizeof(s->labels[0].key)) {
			snprintf(err, errlen, "\"labels\": a key must have 1 to %zu characters",
				 sizeof(s->labels[0].key) - 1);
			return -EINVAL;
		}
		strcpy(s->labels[s->nlabels].key, key);
		if (string_into(val, key, s->labels[s->nlabels].value, sizeof(s->labels[0].value),
				err, errlen) < 0)
			return -EINVAL;
		s->nlabels++;
	}
	return 0;
}

static int parse_key(const char *key, json_t *v, struct selector *s, char *err, size_t errlen)
{
	if (!strcmp(key, "all")) {
		if (!json_is_true(v)) {
			snprintf(err, errlen, "\"all\" can only be true");
			return -EINVAL;
		}
		s->all = true;
		return 0;
	}
	if (!strcmp(key, "host"))
		return string_into(v, key, s->host, sizeof(s->host), err, errlen);
	if (!strcmp(key, "labels"))
		return labels_into(v, s, err, errlen);
	if (!strcmp(key, "kernel_release"))
		return string_into(v, key, s->kernel_release, sizeof(s->kernel_release), err,
				   errlen);
	if (!strcmp(key, "build_id"))
		return string_into(v, key, s->build_id, sizeof(s->build_id), err, errlen);
	if (!strcmp(key, "kasan")) {
		if (!json_is_boolean(v)) {
			snprintf(err, errlen, "\"kasan\" must be true or false");
			return -EINVAL;
		}
		s->kasan = json_is_true(v);
		return 0;
	}
	if (!strcmp(key, "min_cpus"))
		return cpus_into(v, key, &s->min_cpus, err, errlen);
	if (!strcmp(key, "max_cpus"))
		return cpus_into(v, key, &s->max_cpus, err, errlen);
	snprintf(err, errlen, "unknown key \"%s\"", key);
	return -EINVAL;
}

int selector_parse(const char *json, size_t len, struct selector *s, char *err, size_t errlen)
{
	json_error_t je;
	char near[4 * JSON_ERROR_TEXT_LENGTH]; /* jansson quotes the input, control bytes too */
	json_t *root, *v;
	const char *key;
	int r = 0;

	memset(s, 0, sizeof(*s));
	s->kasan = -1;
	root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(root)) {
		snprintf(err, errlen, "a selector is a JSON object%s%s", root ? "" : ": ",
			 root ? "" : text_escape(je.text, near, sizeof(near)));
		json_decref(root);
		return -EINVAL;
	}
	json_object_foreach(root, key, v)
	{
		r = parse_key(key, v, s, err, errlen);
		if (r < 0) {
			/* reasons quote the sender's keys: one printable line, whatever they hold */
			snprintf(near, sizeof(near), "%s", err);
			text_escape(near, err, errlen);
			break;
		}
	}
	if (r == 0 && !json_object_size(root)) {
		snprintf(err, errlen, "an empty selector: say {\"all\": true} to reach every host");
		r = -EINVAL;
	} else if (r == 0 && s->all && json_object_size(root) > 1) {
		snprintf(err, errlen, "\"all\" goes alone");
		r = -EINVAL;
	} else if (r == 0 && s->min_cpus && s->max_cpus && s->min_cpus > s->max_cpus) {
		snprintf(err, errlen, "\"min_cpus\" is above \"max_cpus\"");
		r = -EINVAL;
	}
	json_decref(root);
	return r;
}

static const char *label(const Kmemctl__V1__HostFacts *f, const char *key)
{
	size_t i;

	for (i = 0; i < f->n_labels; i++)
		if (!strcmp(f->labels[i]->key, key))
			return f->labels[i]->value;
	return NULL;
}

bool selector_match(const struct selector *s, const Kmemctl__V1__HostFacts *f)
{
	const char *v;
	size_t i;

	if (s->all)
		return true;
	if (s->host[0] && strcmp(s->host, f->host_id))
		return false;
	for (i = 0; i < s->nlabels; i++) {
		v = label(f, s->labels[i].key);
		if (!v || strcmp(v, s->labels[i].value))
			return false;
	}
	if (s->kernel_release[0] && fnmatch(s->kernel_release, f->kernel_release, 0))
		return false;
	if (s->build_id[0] && strcmp(s->build_id, f->kernel_build_id))
		return false;
	if (s->kasan >= 0 && (bool)s->kasan != (bool)f->kasan)
		return false;
	if (s->min_cpus && f->possible_cpus < s->min_cpus)
		return false;
	if (s->max_cpus && f->possible_cpus > s->max_cpus)
		return false;
	return true;
}

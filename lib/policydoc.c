// SPDX-License-Identifier: GPL-2.0
/*
 * Policy documents, parsed with jansson and checked field by field.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "kmemctl-names.h"
#include "macro.h"
#include "policydoc.h"
#include "text.h"

static void jsonp(json_t **j)
{
	json_decref(*j);
}

bool policy_id_valid(const char *id)
{
	size_t n = strlen(id), i;

	if (!n || n > POLICY_ID_MAX || id[0] == '-')
		return false;
	for (i = 0; i < n; i++)
		if (!((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= '0' && id[i] <= '9') ||
		      id[i] == '-' || id[i] == '_'))
			return false;
	return true;
}

bool policy_name_valid(const char *name)
{
	return text_name_valid(name, POLICY_NAME_MAX);
}

/* Only the keys in allowed (NULL-terminated) may appear in obj. */
static int check_keys(json_t *obj, const char *const *allowed, const char *where, char *err,
		      size_t errlen)
{
	const char *key, *const *a;
	json_t *v;

	json_object_foreach(obj, key, v)
	{
		for (a = allowed; *a; a++)
			if (!strcmp(key, *a))
				break;
		if (!*a)
			return text_refuse(err, errlen, "%s: unknown key \"%s\"", where, key);
	}
	return 0;
}

static int parse_mitigation(const char *id, json_t *obj, struct policy_mitigation *m, char *err,
			    size_t errlen)
{
	static const char *const keys[] = { "mode", "params", NULL };
	json_t *mode, *params, *v;
	const char *key, *s;
	char where[64];
	json_int_t n;
	int r;

	if (!json_is_object(obj))
		return text_refuse(err, errlen, "mitigations.%s: not an object", id);
	snprintf(where, sizeof(where), "mitigations.%s", id);
	r = check_keys(obj, keys, where, err, errlen);
	if (r < 0)
		return r;
	strcpy(m->id, id);
	mode = json_object_get(obj, "mode");
	if (mode) {
		s = json_string_value(mode);
		if (s && !strcmp(s, "on"))
			m->mode = POLICY_MODE_ON;
		else if (s && !strcmp(s, "off"))
			m->mode = POLICY_MODE_OFF;
		else
			return text_refuse(err, errlen,
					   "mitigations.%s.mode: want \"on\" or \"off\"", id);
	}
	params = json_object_get(obj, "params");
	if (!params)
		return 0;
	if (!json_is_object(params))
		return text_refuse(err, errlen, "mitigations.%s.params: not an object", id);
	json_object_foreach(params, key, v)
	{
		if (!policy_id_valid(key))
			return text_refuse(err, errlen, "mitigations.%s.params: bad key \"%s\"", id,
					   key);
		if (m->nparams == POLICY_MAX_PARAMS)
			return text_refuse(err, errlen, "mitigations.%s.params: more than %d", id,
					   POLICY_MAX_PARAMS);
		if (!json_is_integer(v) || (n = json_integer_value(v)) < 0)
			return text_refuse(err, errlen,
					   "mitigations.%s.params.%s: want a non-negative integer",
					   id, key);
		strcpy(m->params[m->nparams].key, key);
		m->params[m->nparams++].value = (uint64_t)n;
	}
	return 0;
}

static int parse_probe(const char *id, json_t *obj, struct policy_probe *p, char *err,
		       size_t errlen)
{
	static const char *const keys[] = { "enabled", "threshold_ns", NULL };
	char where[64];
	json_t *v;
	int r;

	if (!json_is_object(obj))
		return text_refuse(err, errlen, "probes.%s: not an object", id);
	snprintf(where, sizeof(where), "probes.%s", id);
	r = check_keys(obj, keys, where, err, errlen);
	if (r < 0)
		return r;
	strcpy(p->id, id);
	p->enabled = -1;
	p->threshold_ns = -1;
	v = json_object_get(obj, "enabled");
	if (v && !json_is_boolean(v))
		return text_refuse(err, errlen, "probes.%s.enabled: want true or false", id);
	if (v)
		p->enabled = json_is_true(v);
	v = json_object_get(obj, "threshold_ns");
	if (v && (!json_is_integer(v) || json_integer_value(v) < 0))
		return text_refuse(err, errlen,
				   "probes.%s.threshold_ns: want a non-negative integer", id);
	if (v)
		p->threshold_ns = json_integer_value(v);
	return 0;
}

int policy_doc_parse(const char *json, size_t len, struct policy_doc *doc, char *err, size_t errlen)
{
	static const char *const keys[] = { "mitigations", "probes", NULL };
	_cleanup_(jsonp) json_t *root = NULL;
	json_error_t jerr;
	char near[4 * JSON_ERROR_TEXT_LENGTH]; /* jansson quotes the input, control bytes too */
	const char *id;
	json_t *section, *v;
	int r;

	*doc = (struct policy_doc){ 0 };
	root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return text_refuse(err, errlen, "not JSON: %s at line %d column %d",
				   text_escape(jerr.text, near, sizeof(near)), jerr.line,
				   jerr.column);
	if (!json_is_object(root))
		return text_refuse(err, errlen, "the document is not a JSON object");
	r = check_keys(root, keys, "document", err, errlen);
	if (r < 0)
		return r;
	section = json_object_get(root, "mitigations");
	if (section && !json_is_object(section))
		return text_refuse(err, errlen, "mitigations: not an object");
	json_object_foreach(section, id, v)
	{
		if (!policy_id_valid(id))
			return text_refuse(err, errlen, "mitigations: bad id \"%s\"", id);
		if (doc->nmitigations == POLICY_MAX_ENTRIES)
			return text_refuse(err, errlen, "mitigations: more than %d",
					   POLICY_MAX_ENTRIES);
		r = parse_mitigation(id, v, &doc->mitigations[doc->nmitigations++], err, errlen);
		if (r < 0)
			return r;
	}
	section = json_object_get(root, "probes");
	if (section && !json_is_object(section))
		return text_refuse(err, errlen, "probes: not an object");
	json_object_foreach(section, id, v)
	{
		if (!policy_id_valid(id))
			return text_refuse(err, errlen, "probes: bad id \"%s\"", id);
		if (doc->nprobes == POLICY_MAX_ENTRIES)
			return text_refuse(err, errlen, "probes: more than %d", POLICY_MAX_ENTRIES);
		r = parse_probe(id, v, &doc->probes[doc->nprobes++], err, errlen);
		if (r < 0)
			return r;
	}
	return 0;
}

/* "a, b, c": the names the module has, for an error that says what is. */
static void known_names(const char *(*name)(unsigned int), unsigned int n, char *buf, size_t size)
{
	size_t off = 0;

	buf[0] = '\0';
	for (unsigned int i = 0; i < n && off < size; i++)
		off += (size_t)snprintf(buf + off, size - off, "%s%s", i ? ", " : "", name(i));
}

int policy_doc_check_known(const struct policy_doc *doc, char *err, size_t errlen)
{
	const struct kmemctl_param *p;
	char known[256];
	size_t i, j;
	unsigned int k;

	for (i = 0; i < doc->nmitigations; i++) {
		const struct policy_mitigation *m = &doc->mitigations[i];

		for (k = 0; k < KMEMCTL_MIT_COUNT && strcmp(kmemctl_mitigation_name(k), m->id); k++)
			;
		if (k == KMEMCTL_MIT_COUNT) {
			known_names(kmemctl_mitigation_name, KMEMCTL_MIT_COUNT, known,
				    sizeof(known));
			return text_refuse(err, errlen,
					   "mitigations: unknown mitigation \"%s\" (known: %s)",
					   m->id, known);
		}
		for (j = 0; j < m->nparams; j++) {
			p = kmemctl_param_find(m->id, m->params[j].key);
			if (!p)
				return text_refuse(err, errlen,
						   "mitigations.%s.params: unknown param \"%s\"",
						   m->id, m->params[j].key);
			if (m->params[j].value < p->min || m->params[j].value > p->max)
				return text_refuse(
					err, errlen,
					"mitigations.%s.params.%s: %llu is out of range [%llu, "
					"%llu]",
					m->id, p->key, (unsigned long long)m->params[j].value,
					p->min, p->max);
		}
	}
	for (i = 0; i < doc->nprobes; i++) {
		for (k = 0;
		     k < KMEMCTL_PROBE_COUNT && strcmp(kmemctl_probe_name(k), doc->probes[i].id);
		     k++)
			;
		if (k == KMEMCTL_PROBE_COUNT) {
			known_names(kmemctl_probe_name, KMEMCTL_PROBE_COUNT, known, sizeof(known));
			return text_refuse(err, errlen, "probes: unknown probe \"%s\" (known: %s)",
					   doc->probes[i].id, known);
		}
	}
	return 0;
}

int policy_doc_undoes(const struct policy_doc *doc, const struct policy_doc *back, char *err,
		      size_t errlen)
{
	size_t i, j;

	for (i = 0; i < doc->nmitigations; i++) {
		const struct policy_mitigation *m = &doc->mitigations[i];

		if (m->mode == POLICY_MODE_KEEP && !m->nparams)
			continue;
		for (j = 0; j < back->nmitigations && strcmp(back->mitigations[j].id, m->id); j++)
			;
		if (j == back->nmitigations || back->mitigations[j].mode == POLICY_MODE_KEEP)
			return text_refuse(err, errlen, "mitigations.%s: the mode is not stated",
					   m->id);
	}
	for (i = 0; i < doc->nprobes; i++) {
		if (doc->probes[i].enabled < 0)
			continue;
		for (j = 0; j < back->nprobes && strcmp(back->probes[j].id, doc->probes[i].id); j++)
			;
		if (j == back->nprobes || back->probes[j].enabled < 0)
			return text_refuse(err, errlen, "probes.%s: enabled is not stated",
					   doc->probes[i].id);
	}
	return 0;
}

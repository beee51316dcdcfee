// SPDX-License-Identifier: GPL-2.0
/*
 * What every backend of kmemd's store shares (store.h): which backend a
 * configured store is, and the rows' helpers.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

const struct store_ops *store_backend(const char *where)
{
	if (!strncmp(where, "postgresql://", 13) || !strncmp(where, "postgres://", 11))
		return &store_pg_ops;
	return &store_sqlite_ops;
}

int store_open(const char *where, struct store **out, char *err, size_t errlen)
{
	return store_backend(where)->open(where, out, err, errlen);
}

int store_open_reader(const char *where, struct store **out, char *err, size_t errlen)
{
	return store_backend(where)->open_reader(where, out, err, errlen);
}

void store_rollout_clear(struct store_rollout *r)
{
	free(r->spec_json);
	free(r->evidence_json);
	r->spec_json = NULL;
	r->evidence_json = NULL;
}

void store_policy_clear(struct store_policy *p)
{
	free(p->document_json);
	free(p->bundle);
	p->document_json = NULL;
	p->bundle = NULL;
}

char *store_labels_json(const Kmemctl__V1__HostFacts *f)
{
	json_t *o = json_object();
	char *text;
	size_t i;

	for (i = 0; o && i < f->n_labels; i++)
		json_object_set_new(o, f->labels[i]->key, json_string(f->labels[i]->value));
	text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return text;
}

int store_waiting_json(const Kmemctl__V1__Report *rep, char **out)
{
	json_t *a;
	size_t i;

	*out = NULL;
	if (!rep->n_waiting_for_record)
		return 0;
	a = json_array();
	for (i = 0; a && i < rep->n_waiting_for_record; i++)
		json_array_append_new(a, json_string(rep->waiting_for_record[i]));
	*out = a ? json_dumps(a, JSON_COMPACT) : NULL;
	json_decref(a);
	return *out ? 0 : -ENOMEM;
}

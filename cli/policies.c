// SPDX-License-Identifier: GPL-2.0
/*
 * kmemctl policy's fleet verbs, against kmemd (the offline ones, keygen,
 * sign, verify and validate, are in policy.c):
 *   kmemctl policy create BUNDLE		upload a signed bundle
 *   kmemctl policy list
 *   kmemctl policy show NAME [VERSION]	the newest version without one
 *   kmemctl policy diff NAME V1 V2		what V2 changes from V1
 */
#include <event2/http.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "kmemctl.h"
#include "macro.h"
#include "output.h"
#include "remote.h"
int policy_create(int argc, char **argv)
{
	json_t *reply = NULL;
	int r = remote_post_file(argc, argv, "kmemctl policy create BUNDLE", "/v1/policies",
				 "application/x-protobuf", &reply);

	if (r != EXIT_OK || !reply)
		return r;
	printf("policy %s version %lld uploaded\n", str(reply, "name"), num(reply, "version"));
	json_decref(reply);
	return EXIT_OK;
}

/* Every version kmemd has, oldest first per name. */
/* Every version kmemd has; retired ones too when retired. */
static int fetch(json_t **all, bool retired)
{
	return remote_call(EVHTTP_REQ_GET, retired ? "/v1/policies?retired=1" : "/v1/policies",
			   NULL, NULL, 0, all);
}

int policy_list(int argc, char **argv)
{
	static const char *const heads[] = {
		"NAME", "VERSION", "SIGNED BY", "KEY", "UPLOADED", NULL
	};
	json_t *all = NULL, *p;
	struct table *t;
	char ago[32];
	size_t i;
	int r;

	if (argc > 2 || (argc == 2 && strcmp(argv[1], "--all"))) {
		fprintf(stderr, "usage: kmemctl policy list [--all]\n");
		return EXIT_USAGE;
	}
	r = fetch(&all, argc == 2);
	if (r != EXIT_OK)
		return r;
	if (cli.json) {
		out_json(json_pack("{s:o}", "policies", all ?: json_array()), cli.pretty);
		return EXIT_OK;
	}
	t = table_new(heads);
	json_array_foreach(all, i, p)
	{
		table_cell(t, "%s", str(p, "name"));
		table_cell(t, "%lld%s", num(p, "version"),
			   json_object_get(p, "retired_ms") ? " (retired)" : "");
		table_cell(t, "%s",
			   json_is_true(json_object_get(p, "signed")) ? str(p, "signer") :
									"(unsigned)");
		table_cell(t, "%s", str(p, "key_id")[0] ? str(p, "key_id") : "-");
		table_cell(t, "%s", out_ago(num(p, "created_ms"), ago, sizeof(ago)));
	}
	table_print(t, stdout, cli.color);
	json_decref(all);
	return EXIT_OK;
}

/* Version v of name (0: the newest) from all, or NULL (said). */
static json_t *find(json_t *all, const char *name, long long v)
{
	json_t *p, *found = NULL;
	size_t i;

	json_array_foreach(all, i, p) if (!strcmp(str(p, "name"), name) &&
					  (!v || num(p, "version") == v)) found = p;
	if (!found && v)
		fprintf(stderr, "kmemctl: kmemd has no policy %s version %lld\n", name, v);
	else if (!found)
		fprintf(stderr, "kmemctl: kmemd has no policy %s\n", name);
	return found;
}

static int parse_version(const char *s, long long *v)
{
	char *end;

	*v = strtoll(s, &end, 10);
	if (*s && !*end && *v > 0)
		return 0;
	fprintf(stderr, "kmemctl: '%s' is not a policy version (1, 2, ...)\n", s);
	return -1;
}

int policy_show(int argc, char **argv)
{
	json_t *all = NULL, *p;
	long long v = 0;
	char *doc;
	int r;

	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: kmemctl policy show NAME [VERSION]\n");
		return EXIT_USAGE;
	}
	if (argc == 3 && parse_version(argv[2], &v) < 0)
		return EXIT_USAGE;
	r = fetch(&all, true);
	if (r != EXIT_OK)
		return r;
	p = find(all, argv[1], v);
	if (!p) {
		json_decref(all);
		return EXIT_ERROR;
	}
	if (cli.json) {
		out_json(json_pack("{s:O}", "policy", p), cli.pretty);
	} else {
		printf("policy    %s version %lld\n", str(p, "name"), num(p, "version"));
		printf("signed    %s\n", json_is_true(json_object_get(p, "signed")) ?
						 str(p, "signer") :
						 "no: agents will not take it");
		doc = json_dumps(json_object_get(p, "document"), JSON_INDENT(2) | JSON_SORT_KEYS);
		printf("\n%s\n", doc ? doc : "");
		free(doc);
	}
	json_decref(all);
	return EXIT_OK;
}

/* Each leaf of o as "path = value", into lines. */
static void flatten(json_t *o, const char *path, json_t *lines)
{
	const char *key;
	char sub[512];
	json_t *v;

	if (json_is_object(o)) {
		json_object_foreach(o, key, v)
		{
			snprintf(sub, sizeof(sub), "%s%s%s", path, path[0] ? "." : "", key);
			flatten(v, sub, lines);
		}
		return;
	}
	{
		char *val = json_dumps(o, JSON_ENCODE_ANY | JSON_COMPACT);

		json_array_append_new(lines, json_sprintf("%s = %s", path, val ? val : "?"));
		free(val);
	}
}

static int by_text(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The lines of a document, sorted, as C strings kept alive by *keep. */
static const char **lines_of(json_t *doc, json_t **keep, size_t *n)
{
	const char **l;
	size_t i;

	*keep = json_array();
	flatten(doc, "", *keep);
	*n = json_array_size(*keep);
	l = calloc(*n ?: 1, sizeof(*l));
	for (i = 0; l && i < *n; i++)
		l[i] = json_string_value(json_array_get(*keep, i));
	if (l)
		qsort(l, *n, sizeof(*l), by_text);
	return l;
}

int policy_diff(int argc, char **argv)
{
	json_t *all = NULL, *a, *b, *ka = NULL, *kb = NULL, *changes;
	const char **la = NULL, **lb = NULL;
	long long va, vb;
	size_t na, nb, i = 0, j = 0;
	int r;

	if (argc != 4) {
		fprintf(stderr, "usage: kmemctl policy diff NAME V1 V2\n");
		return EXIT_USAGE;
	}
	if (parse_version(argv[2], &va) < 0 || parse_version(argv[3], &vb) < 0)
		return EXIT_USAGE;
	r = fetch(&all, true);
	if (r != EXIT_OK)
		return r;
	a = find(all, argv[1], va);
	b = a ? find(all, argv[1], vb) : NULL;
	if (!b) {
		json_decref(all);
		return EXIT_ERROR;
	}
	la = lines_of(json_object_get(a, "document"), &ka, &na);
	lb = lines_of(json_object_get(b, "document"), &kb, &nb);
	changes = json_array();
	while (la && lb && (i < na || j < nb)) {
		int c = i == na ? 1 : j == nb ? -1 : strcmp(la[i], lb[j]);

		if (!c) {
			i++;
			j++;
		} else if (c < 0) {
			json_array_append_new(changes, json_sprintf("- %s", la[i++]));
		} else {
			json_array_append_new(changes, json_sprintf("+ %s", lb[j++]));
		}
	}
	if (cli.json) {
		out_json(json_pack("{s:s, s:I, s:I, s:O}", "name", argv[1], "from", va, "to", vb,
				   "changes", changes),
			 cli.pretty);
	} else {
		printf("policy %s, version %lld -> %lld\n", argv[1], va, vb);
		json_array_foreach(changes, i, a) printf("%s\n", json_string_value(a));
		if (!json_array_size(changes))
			printf("(the same document)\n");
	}
	json_decref(changes);
	free(la);
	free(lb);
	json_decref(ka);
	json_decref(kb);
	json_decref(all);
	return EXIT_OK;
}

int policy_retire(int argc, char **argv)
{
	json_t *reply = NULL;
	char *end = NULL;
	long long v = argc == 3 ? strtoll(argv[2], &end, 10) : 0;
	int r;

	if (argc != 3 || !end || *end || v < 1) {
		fprintf(stderr, "usage: kmemctl policy retire NAME VERSION\n");
		return EXIT_USAGE;
	}
	r = remote_json(EVHTTP_REQ_POST, "/v1/policies/retire",
			json_pack("{s:s, s:I}", "name", argv[1], "version", (json_int_t)v), &reply);
	if (r != EXIT_OK)
		return r;
	if (cli.json) {
		out_json(reply, cli.pretty);
		return EXIT_OK;
	}
	printf("policy %s version %lld retired: policy list leaves it out (--all shows it), and it "
	       "is assigned and rolled out no more\n",
	       argv[1], v);
	json_decref(reply);
	return EXIT_OK;
}

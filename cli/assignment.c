// SPDX-License-Identifier: GPL-2.0
/*
 * kmemctl assignment: a signed policy version for the hosts a selector
 * chooses, directly, without waves or gates (rollouts are for that).
 *   kmemctl assignment create NAME@VERSION all | host=ID | KEY=VALUE... | JSON
 *   kmemctl assignment list
 *   kmemctl assignment show ID
 *   kmemctl assignment delete ID
 * KEY=VALUE pairs are labels; JSON is a selector as POST /v1/assignments
 * takes it (daemon/selector.h).
 */
#include <errno.h>
#include <event2/http.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kmemctl.h"
#include "output.h"
#include "remote.h"

static int create_usage(void)
{
	fprintf(stderr, "usage: kmemctl assignment create NAME@VERSION all | host=ID | "
			"LABEL=VALUE... | SELECTOR-JSON\n");
	return EXIT_USAGE;
}

/* argv's selector words as JSON; NULL (with why on stderr) when they are not one. */
static json_t *selector_of(int argc, char **argv)
{
	json_t *sel, *labels;
	json_error_t je;

	if (argc == 1 && argv[0][0] == '{') {
		sel = json_loads(argv[0], JSON_REJECT_DUPLICATES, &je);
		if (!json_is_object(sel)) {
			fprintf(stderr,
				"kmemctl assignment create: the selector is not a JSON object: %s\n",
				je.text);
			json_decref(sel);
			return NULL;
		}
		return sel;
	}
	if (argc == 1 && !strcmp(argv[0], "all"))
		return json_pack("{s:b}", "all", 1);
	if (argc == 1 && !strncmp(argv[0], "host=", 5) && argv[0][5])
		return json_pack("{s:s}", "host", argv[0] + 5);
	labels = json_object();
	for (int i = 0; i < argc; i++) {
		char *eq = strchr(argv[i], '=');

		if (!eq || eq == argv[i] || !eq[1]) {
			fprintf(stderr, "kmemctl assignment create: '%s' is not LABEL=VALUE\n",
				argv[i]);
			json_decref(labels);
			return NULL;
		}
		*eq = '\0';
		json_object_set_new(labels, argv[i], json_string(eq + 1));
		*eq = '=';
	}
	return json_pack("{s:o}", "labels", labels);
}

static int assignment_create(int argc, char **argv)
{
	json_t *reply = NULL, *sel;
	char *at, *end = NULL;
	long long version;
	int r;

	if (argc < 3)
		return create_usage();
	at = strrchr(argv[1], '@');
	version = at ? strtoll(at + 1, &end, 10) : 0;
	if (!at || at == argv[1] || !end || *end || version < 1) {
		fprintf(stderr, "kmemctl assignment create: '%s' is not NAME@VERSION\n", argv[1]);
		return EXIT_USAGE;
	}
	sel = selector_of(argc - 2, argv + 2);
	if (!sel)
		return EXIT_USAGE;
	*at = '\0';
	r = remote_json(EVHTTP_REQ_POST, "/v1/assignments",
			json_pack("{s:s, s:I, s:o}", "policy", argv[1], "version",
				  (json_int_t)version, "selector", sel),
			&reply);
	*at = '@';
	if (r != EXIT_OK)
		return r;
	if (cli.json) {
		out_json(reply, cli.pretty);
		return EXIT_OK;
	}
	printf("assignment %lld: %s to the hosts it selects, at their next report\n",
	       num(reply, "id"), argv[1]);
	json_decref(reply);
	return EXIT_OK;
}

/* GET /v1/assignments, and the one with id (0: all). */
static int fetch(long long id, json_t **out)
{
	json_t *all = NULL, *a;
	size_t i;
	int r = remote_call(EVHTTP_REQ_GET, "/v1/assignments", NULL, NULL, 0, &all);

	*out = NULL;
	if (r != EXIT_OK || !id) {
		*out = all;
		return r;
	}
	json_array_foreach(all, i, a) if (num(a, "id") == id) *out = json_incref(a);
	json_decref(all);
	if (!*out) {
		fprintf(stderr, "kmemctl: kmemd has no assignment %lld\n", id);
		return EXIT_ERROR;
	}
	return EXIT_OK;
}

static void selector_text(json_t *a, char *buf, size_t len)
{
	char *s = json_dumps(json_object_get(a, "selector"), JSON_COMPACT | JSON_SORT_KEYS);

	snprintf(buf, len, "%s", s ? s : "?");
	free(s);
}

static int assignment_list(int argc, char **argv)
{
	static const char *const heads[] = { "ID", "POLICY", "SELECTOR", "CREATED", NULL };
	json_t *all = NULL, *a;
	char sel[512], ago[32];
	struct table *t;
	size_t i;
	int r;

	(void)argv;
	if (argc != 1) {
		fprintf(stderr, "usage: kmemctl assignment list\n");
		return EXIT_USAGE;
	}
	r = fetch(0, &all);
	if (r != EXIT_OK)
		return r;
	if (cli.json) {
		out_json(json_pack("{s:o}", "assignments", all), cli.pretty);
		return EXIT_OK;
	}
	t = table_new(heads);
	json_array_foreach(all, i, a)
	{
		selector_text(a, sel, sizeof(sel));
		table_cell(t, "%lld", num(a, "id"));
		table_cell(t, "%s@%lld", str(a, "policy"), num(a, "version"));
		table_cell(t, "%s", sel);
		table_cell(t, "%s", out_ago(num(a, "created_ms"), ago, sizeof(ago)));
	}
	table_print(t, stdout, cli.color);
	json_decref(all);
	return EXIT_OK;
}

/* argv[1] as an assignment id; 0 (with the usage on stderr) when it is not one. */
static long long id_arg(int argc, char **argv)
{
	char *end = NULL;
	long long id = argc == 2 ? strtoll(argv[1], &end, 10) : 0;

	if (argc != 2 || !end || *end || id <= 0) {
		fprintf(stderr, "usage: kmemctl assignment %s ID (as assignment list shows it)\n",
			argv[0]);
		return 0;
	}
	return id;
}

static int assignment_show(int argc, char **argv)
{
	long long id = id_arg(argc, argv);
	json_t *a = NULL;
	char sel[512], ago[32];
	int r;

	if (!id)
		return EXIT_USAGE;
	r = fetch(id, &a);
	if (r != EXIT_OK)
		return r;
	if (cli.json) {
		out_json(json_pack("{s:o}", "assignment", a), cli.pretty);
		return EXIT_OK;
	}
	selector_text(a, sel, sizeof(sel));
	printf("assignment %lld\npolicy     %s version %lld\nselector   %s\ncreated    %s\n", id,
	       str(a, "policy"), num(a, "version"), sel,
	       out_ago(num(a, "created_ms"), ago, sizeof(ago)));
	json_decref(a);
	return EXIT_OK;
}

static int assignment_delete(int argc, char **argv)
{
	long long id = id_arg(argc, argv);
	json_t *reply = NULL;
	int r;

	if (!id)
		return EXIT_USAGE;
	r = remote_json(EVHTTP_REQ_POST, "/v1/assignments/delete",
			json_pack("{s:I}", "id", (json_int_t)id), &reply);
	if (r != EXIT_OK)
		return r;
	if (cli.json) {
		out_json(reply, cli.pretty);
		return EXIT_OK;
	}
	printf("assignment %lld deleted: the hosts it chose keep what they run until another "
	       "assignment or a rollout says otherwise\n",
	       id);
	json_decref(reply);
	return EXIT_OK;
}

int do_assignment(int argc, char **argv)
{
	static const struct cmd verbs[] = {
		{ "create", assignment_create, "a policy version to the hosts a selector chooses" },
		{ "list", assignment_list, "the direct assignments, newest first" },
		{ "show", assignment_show, "one assignment" },
		{ "delete", assignment_delete, "an assignment decides nothing from now on" },
		{ NULL, NULL, NULL },
	};

	return cmd_dispatch("assignment", verbs, argc, argv);
}

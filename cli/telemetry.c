// SPDX-License-Identifier: GPL-2.0
/*
 * kmemctl telemetry query PROBE [host=ID] [label=KEY:VALUE] [from=MS] [to=MS]:
 * one probe's latency histogram merged over those hosts and times, from
 * kmemd.
 */
#include <event2/http.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kmemctl.h"
#include "output.h"
#include "remote.h"

static long long num(json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

static int telemetry_query(int argc, char **argv)
{
	static const char *const keys[] = { "host", "label", "from", "to", NULL };
	static const char *const heads[] = { "UP TO (NS)", "COUNT", NULL };
	char path[2048];
	json_t *reply = NULL, *b;
	struct table *t;
	size_t n, i;
	int r;

	if (argc < 2 || strchr(argv[1], '=')) {
		fprintf(stderr, "usage: kmemctl telemetry query PROBE [host=ID] [label=KEY:VALUE] "
				"[from=MS] [to=MS]\n");
		return EXIT_USAGE;
	}
	n = (size_t)snprintf(path, sizeof(path), "/v1/telemetry?probe=");
	for (int a = 1; a < argc; a++) {
		char *eq = strchr(argv[a], '='), *enc;
		size_t k;

		for (k = 0; a > 1 && keys[k]; k++)
			if (eq && !strncmp(argv[a], keys[k], (size_t)(eq - argv[a])) &&
			    strlen(keys[k]) == (size_t)(eq - argv[a]))
				break;
		if (a > 1 && !keys[k]) {
			fprintf(stderr,
				"kmemctl telemetry query: '%s': want host=, label=, from= or to=\n",
				argv[a]);
			return EXIT_USAGE;
		}
		enc = evhttp_uriencode(a > 1 ? eq + 1 : argv[a], -1, 0);
		if (!enc)
			return EXIT_ERROR;
		if (a > 1)
			n += (size_t)snprintf(path + n, n < sizeof(path) ? sizeof(path) - n : 0,
					      "&%.*s=", (int)(eq - argv[a]), argv[a]);
		n += (size_t)snprintf(path + n, n < sizeof(path) ? sizeof(path) - n : 0, "%s", enc);
		free(enc);
	}
	if (n >= sizeof(path)) {
		fprintf(stderr, "kmemctl telemetry query: the query is too long\n");
		return EXIT_USAGE;
	}
	r = remote_call(EVHTTP_REQ_GET, path, NULL, NULL, 0, &reply);
	if (r != EXIT_OK)
		return r;
	if (cli.json) {
		out_json(json_pack("{s:o}", "telemetry", reply), cli.pretty);
		return EXIT_OK;
	}
	printf("probe     %s over %lld hosts, %lld samples\n",
	       json_string_value(json_object_get(reply, "probe")), num(reply, "hosts"),
	       num(reply, "count"));
	printf("latency   p50 %lld ns, p90 %lld ns, p99 %lld ns, max %lld ns\n\n",
	       num(reply, "p50_ns"), num(reply, "p90_ns"), num(reply, "p99_ns"),
	       num(reply, "max_ns"));
	t = table_new(heads);
	json_array_foreach(json_object_get(reply, "buckets"), i, b)
	{
		table_cell(t, "%lld", (long long)json_integer_value(json_array_get(b, 0)));
		table_cell(t, "%lld", (long long)json_integer_value(json_array_get(b, 1)));
	}
	table_print(t, stdout, cli.color);
	json_decref(reply);
	return EXIT_OK;
}

int do_telemetry(int argc, char **argv)
{
	static const struct cmd verbs[] = {
		{ "query", telemetry_query, "a probe's latency over hosts and time, from kmemd" },
		{ NULL, NULL, NULL },
	};

	return cmd_dispatch("telemetry", verbs, argc, argv);
}

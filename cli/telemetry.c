// SPDX-License-Identifier: GPL-2.0
/*
 * kmemctl telemetry query PROBE [host=ID] [label=KEY:VALUE] [from=MS] [to=MS]:
 * one probe's latency histogram merged over those hosts and times, from
 * kmemd. kmemctl telemetry watch: this host's, live (local.c).
 */
#include <event2/http.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kmemctl.h"
#include "output.h"
#include "remote.h"

static int telemetry_query(int argc, char **argv)
{
	static const char *const keys[] = { "host", "label", "from", "to", NULL };
	static const char *const heads[] = { "UP TO", "COUNT", NULL };
	char path[2048], b[4][32];
	json_t *reply = NULL, *v;
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
	printf("probe     %s over %lld host%s, %lld samples\n",
	       json_string_value(json_object_get(reply, "probe")), num(reply, "hosts"),
	       num(reply, "hosts") == 1 ? "" : "s", num(reply, "count"));
	if (num(reply, "hosts_scaled") > 0)
		printf("weighed   %lld host%s claiming more than 10 median hosts' values, as 10 "
		       "median hosts\n",
		       num(reply, "hosts_scaled"), num(reply, "hosts_scaled") == 1 ? "" : "s");
	printf("latency   p50 %s, p90 %s, p99 %s, max %s\n\n",
	       out_ns((unsigned long long)num(reply, "p50_ns"), b[0], sizeof(b[0])),
	       out_ns((unsigned long long)num(reply, "p90_ns"), b[1], sizeof(b[1])),
	       out_ns((unsigned long long)num(reply, "p99_ns"), b[2], sizeof(b[2])),
	       out_ns((unsigned long long)num(reply, "max_ns"), b[3], sizeof(b[3])));
	t = table_new(heads);
	json_array_foreach(json_object_get(reply, "buckets"), i, v)
	{
		table_cell(t, "%s",
			   out_ns((unsigned long long)json_integer_value(json_array_get(v, 0)),
				  b[0], sizeof(b[0])));
		table_cell(t, "%lld", (long long)json_integer_value(json_array_get(v, 1)));
	}
	table_print(t, stdout, cli.color);
	json_decref(reply);
	return EXIT_OK;
}

int do_telemetry(int argc, char **argv)
{
	static const struct cmd verbs[] = {
		{ "query", telemetry_query, "a probe's latency over hosts and time, from kmemd" },
		{ "watch", local_telemetry_watch, "this host's probes at each report, live" },
		{ NULL, NULL, NULL },
	};

	return cmd_dispatch("telemetry", verbs, argc, argv);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * kmemctl fleet: the fleet-wide stop.
 *   kmemctl fleet stop [--reason TEXT]	every agent turns every mitigation off and holds
 *   kmemctl fleet resume			they apply their policies again
 *   kmemctl fleet status			whether it holds, and how many hosts say so
 */
#include <event2/http.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "kmemctl.h"
#include "output.h"
#include "remote.h"

/* The stop's state as kmemd answered it, for people. */
static void print_stop(json_t *stop)
{
	char ago[32];

	if (!json_is_true(json_object_get(stop, "stopped"))) {
		printf("the fleet runs its policies");
		if (str(stop, "by")[0])
			printf(" (resumed by %s %s)", str(stop, "by"),
			       out_ago(num(stop, "since_ms"), ago, sizeof(ago)));
		printf("\n");
		return;
	}
	printf("the fleet is STOPPED: every agent holds every mitigation off (by %s %s%s%s)\n",
	       str(stop, "by"), out_ago(num(stop, "since_ms"), ago, sizeof(ago)),
	       str(stop, "reason")[0] ? ": " : "", str(stop, "reason"));
}

static int fleet_set(int argc, char **argv, bool stop)
{
	json_t *reply = NULL, *body = json_object();
	int r;

	if (stop && argc == 3 && !strcmp(argv[1], "--reason")) {
		json_object_set_new(body, "reason", json_string(argv[2]));
	} else if (argc != 1) {
		json_decref(body);
		fprintf(stderr, "usage: kmemctl fleet %s\n",
			stop ? "stop [--reason TEXT]" : "resume");
		return EXIT_USAGE;
	}
	r = remote_json(EVHTTP_REQ_POST, stop ? "/v1/fleet/stop" : "/v1/fleet/resume", body,
			&reply);
	if (r != EXIT_OK)
		return r;
	if (cli.json) {
		out_json(reply, cli.pretty);
		return EXIT_OK;
	}
	if (!json_is_true(json_object_get(reply, "changed")))
		printf("no change: ");
	print_stop(reply);
	if (json_is_true(json_object_get(reply, "changed")))
		printf(stop ? "each agent turns its mitigations off at its next report\n" :
			      "each agent applies its policy again at its next report\n");
	json_decref(reply);
	return EXIT_OK;
}

static int fleet_stop(int argc, char **argv)
{
	return fleet_set(argc, argv, true);
}

static int fleet_resume(int argc, char **argv)
{
	return fleet_set(argc, argv, false);
}

/* How many hosts report being held off by the stop, from GET /v1/hosts. */
static long long held(json_t *hosts, long long *reporting)
{
	long long n = 0;
	json_t *h;
	size_t i;

	*reporting = 0;
	json_array_foreach(hosts, i, h)
	{
		if (json_is_true(json_object_get(h, "revoked")) || !num(h, "last_seq"))
			continue;
		(*reporting)++;
		n += !strcmp(str(h, "off"), "fleet-stop");
	}
	return n;
}

static int fleet_status(int argc, char **argv)
{
	json_t *fleet = NULL, *hosts = NULL, *stop;
	long long n, reporting;
	int r;

	(void)argv;
	if (argc != 1) {
		fprintf(stderr, "usage: kmemctl fleet status\n");
		return EXIT_USAGE;
	}
	r = remote_call(EVHTTP_REQ_GET, "/v1/fleet", NULL, NULL, 0, &fleet);
	if (r == EXIT_OK)
		r = remote_call(EVHTTP_REQ_GET, "/v1/hosts", NULL, NULL, 0, &hosts);
	if (r != EXIT_OK) {
		json_decref(fleet);
		return r;
	}
	stop = json_incref(json_object_get(fleet, "stop"));
	n = held(hosts, &reporting);
	json_decref(fleet);
	json_decref(hosts);
	if (cli.json) {
		out_json(json_pack("{s:o, s:I, s:I}", "stop", stop, "hosts", (json_int_t)reporting,
				   "hosts_stopped", (json_int_t)n),
			 cli.pretty);
		return EXIT_OK;
	}
	print_stop(stop);
	printf("%lld of %lld hosts report the fleet stop holding their mitigations off\n", n,
	       reporting);
	json_decref(stop);
	return EXIT_OK;
}

int do_fleet(int argc, char **argv)
{
	static const struct cmd verbs[] = {
		{ "stop", fleet_stop, "every agent turns every mitigation off and holds them" },
		{ "resume", fleet_resume, "agents apply their policies again" },
		{ "status", fleet_status, "whether the stop holds, and on how many hosts" },
		{ NULL, NULL, NULL },
	};

	return cmd_dispatch("fleet", verbs, argc, argv);
}

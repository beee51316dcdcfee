// SPDX-License-Identifier: GPL-2.0
/*
 * kmemctl host: the fleet's hosts as kmemd last heard from them.
 *   kmemctl host list [FILTER...]	FILTER: kernel=PATTERN, build=ID,
 *					policy=NAME[@VERSION] or none, kasan=yes|no,
 *					or LABEL=VALUE
 *   kmemctl host show HOST
 */
#include <event2/http.h>
#include <fnmatch.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kmemctl.h"
#include "output.h"
#include "remote.h"

/* Whether host h passes the filter KEY=VALUE. */
static bool pass(json_t *h, const char *key, const char *value)
{
	json_t *p = json_object_get(h, "policy");
	char pol[256];

	if (!strcmp(key, "kernel"))
		return !fnmatch(value, str(h, "kernel_release"), 0);
	if (!strcmp(key, "build"))
		return !strcmp(value, str(h, "build_id"));
	if (!strcmp(key, "kasan"))
		return json_is_true(json_object_get(h, "kasan")) == !strcmp(value, "yes");
	if (!strcmp(key, "policy") && !strcmp(value, "none"))
		return !str(p, "name")[0];
	if (!strcmp(key, "policy")) {
		snprintf(pol, sizeof(pol), "%s@%lld", str(p, "name"), num(p, "version"));
		return !strcmp(value, str(p, "name")) || !strcmp(value, pol);
	}
	return !strcmp(value, str(json_object_get(h, "labels"), key));
}

/* The mitigations reported on, comma separated. */
static void mitigations_on(json_t *h, char *buf, size_t len)
{
	json_t *m;
	size_t i, n = 0;

	buf[0] = '\0';
	json_array_foreach(json_object_get(h, "mitigations"), i,
			   m) if (!strcmp(str(m, "state"), "on"))
		n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%s", n ? "," : "",
				      str(m, "id"));
	if (!buf[0])
		snprintf(buf, len, "-");
}

static int host_list(int argc, char **argv)
{
	static const char *const heads[] = { "HOST", "KERNEL",	  "CPUS", "POLICY",
					     "ON",   "LAST SEEN", NULL };
	json_t *hosts = NULL, *kept, *h, *p;
	struct table *t;
	char on[256], ago[32];
	size_t i;
	int r;

	for (int a = 1; a < argc; a++)
		if (!strchr(argv[a], '=') || argv[a][0] == '=') {
			fprintf(stderr,
				"kmemctl host list: '%s' is not a filter: want kernel=PATTERN, "
				"build=ID, policy=NAME[@VERSION], kasan=yes|no or LABEL=VALUE\n",
				argv[a]);
			return EXIT_USAGE;
		}
	r = remote_call(EVHTTP_REQ_GET, "/v1/hosts", NULL, NULL, 0, &hosts);
	if (r != EXIT_OK)
		return r;
	kept = json_array();
	json_array_foreach(hosts, i, h)
	{
		bool ok = true;

		for (int a = 1; ok && a < argc; a++) {
			char *eq = strchr(argv[a], '=');

			*eq = '\0';
			ok = pass(h, argv[a], eq + 1);
			*eq = '=';
		}
		if (ok)
			json_array_append(kept, h);
	}
	json_decref(hosts);
	if (cli.json) {
		out_json(json_pack("{s:o}", "hosts", kept), cli.pretty);
		return EXIT_OK;
	}
	t = table_new(heads);
	json_array_foreach(kept, i, h)
	{
		p = json_object_get(h, "policy");
		mitigations_on(h, on, sizeof(on));
		table_cell(t, "%s", str(h, "host_id"));
		table_cell(t, "%s", str(h, "kernel_release"));
		table_cell(t, "%lld", num(h, "online_cpus"));
		if (str(p, "name")[0])
			table_cell(t, "%s@%lld", str(p, "name"), num(p, "version"));
		else
			table_cell(t, "-");
		table_cell(t, "%s", on);
		table_cell(t, "%s", out_ago(num(h, "last_seen_ms"), ago, sizeof(ago)));
	}
	table_print(t, stdout, cli.color);
	json_decref(kept);
	return EXIT_OK;
}

/* What holds a host's mitigations off, after its policy; "" when nothing does. */
static const char *off_text(const char *off)
{
	if (!strcmp(off, "cmdline"))
		return ", not applied: kmemctl.disable=1";
	if (!strcmp(off, "local"))
		return ", not applied: the local kill switch (kmemctl disable)";
	if (!strcmp(off, "fleet-stop"))
		return ", not applied: the fleet stop";
	return "";
}

static int host_show(int argc, char **argv)
{
	static const char *const heads[] = {
		"MITIGATION", "STATE", "MODE", "SOURCE", "REASON", NULL
	};
	json_t *hosts = NULL, *h, *found = NULL, *m, *p;
	const char *key;
	struct table *t;
	char ago[32];
	size_t i;
	int r;

	if (argc != 2) {
		fprintf(stderr, "usage: kmemctl host show HOST\n");
		return EXIT_USAGE;
	}
	r = remote_call(EVHTTP_REQ_GET, "/v1/hosts", NULL, NULL, 0, &hosts);
	if (r != EXIT_OK)
		return r;
	json_array_foreach(hosts, i, h) if (!strcmp(str(h, "host_id"), argv[1]))
		found = json_incref(h);
	json_decref(hosts);
	if (!found) {
		fprintf(stderr, "kmemctl: kmemd knows no host '%s'\n", argv[1]);
		return EXIT_ERROR;
	}
	if (cli.json) {
		out_json(json_pack("{s:o}", "host", found), cli.pretty);
		return EXIT_OK;
	}
	p = json_object_get(found, "policy");
	printf("host      %s (%s)%s\n", str(found, "host_id"), str(found, "hostname"),
	       json_is_true(json_object_get(found, "revoked")) ? ", revoked" : "");
	printf("kernel    %s, build %s%s\n", str(found, "kernel_release"), str(found, "build_id"),
	       json_is_true(json_object_get(found, "kasan")) ? ", KASAN" : "");
	printf("cpus      %lld online, %lld possible; %lld MiB\n", num(found, "online_cpus"),
	       num(found, "possible_cpus"), num(found, "mem_total") >> 20);
	printf("module    %s\n",
	       str(found, "module_version")[0] ? str(found, "module_version") : "(not loaded)");
	printf("policy    %s", str(p, "name")[0] ? str(p, "name") : "(none)");
	if (str(p, "name")[0])
		printf(" version %lld", num(p, "version"));
	printf("%s", off_text(str(found, "off")));
	printf("\nlabels   ");
	json_object_foreach(json_object_get(found, "labels"), key, m)
		printf(" %s=%s", key, json_string_value(m));
	printf("\nseen      %s (report %lld)\n\n",
	       out_ago(num(found, "last_seen_ms"), ago, sizeof(ago)), num(found, "last_seq"));
	t = table_new(heads);
	json_array_foreach(json_object_get(found, "mitigations"), i, m)
	{
		table_cell(t, "%s", str(m, "id"));
		table_state(t, str(m, "state"));
		table_cell(t, "%s", str(m, "mode"));
		table_cell(t, "%s", str(m, "source"));
		table_cell(t, "%s", str(m, "reason"));
	}
	table_print(t, stdout, cli.color);
	json_decref(found);
	return EXIT_OK;
}

/* POST {"host": HOST} to path; text says what became of it. */
static int host_post(int argc, char **argv, const char *path, const char *text)
{
	json_t *reply = NULL;
	int r;

	if (argc != 2) {
		fprintf(stderr, "usage: kmemctl host %s HOST\n", argv[0]);
		return EXIT_USAGE;
	}
	r = remote_json(EVHTTP_REQ_POST, path, json_pack("{s:s}", "host", argv[1]), &reply);
	if (r != EXIT_OK)
		return r;
	if (cli.json)
		out_json(reply, cli.pretty);
	else {
		printf("host %s %s\n", argv[1], text);
		json_decref(reply);
	}
	return EXIT_OK;
}

static int host_revoke(int argc, char **argv)
{
	return host_post(argc, argv, "/v1/hosts/revoke",
			 "revoked: kmemd refuses its reports and enrollments from now on");
}

/* kmemd's newest 100 events of a host, with their stack tops (GET /v1/hosts/detail). */
static int host_events(int argc, char **argv)
{
	static const char *const heads[] = { "WHEN", "KIND",	"CPU",	     "DURATION", "TASK",
					     "OF",   "MESSAGE", "STACK TOP", NULL };
	json_t *reply = NULL, *e;
	char path[160], ago[32], dur[32];
	struct table *t;
	size_t i;
	int r;

	if (argc != 2) {
		fprintf(stderr, "usage: kmemctl host events HOST\n");
		return EXIT_USAGE;
	}
	/* a host id is of [A-Za-z0-9._-]: nothing in it needs escaping, and kmemd checks it */
	snprintf(path, sizeof(path), "/v1/hosts/detail?id=%.64s", argv[1]);
	r = remote_get(path, &reply);
	if (r != EXIT_OK || !reply)
		return r;
	t = table_new(heads);
	json_array_foreach(json_object_get(reply, "events"), i, e)
	{
		table_cell(t, "%s", out_ago(num(e, "unix_ms"), ago, sizeof(ago)));
		table_state(t, str(e, "kind"));
		table_cell(t, "%lld", num(e, "cpu"));
		table_cell(t, "%s",
			   num(e, "duration_ns") ? out_ns((unsigned long long)num(e, "duration_ns"),
							  dur, sizeof(dur)) :
						   "-");
		if (str(e, "comm")[0])
			table_cell(t, "%s[%lld]", str(e, "comm"), num(e, "pid"));
		else
			table_cell(t, "-");
		table_cell(t, "%s",
			   str(e, "mitigation")[0] ? str(e, "mitigation") :
			   str(e, "probe")[0]	   ? str(e, "probe") :
						     "-");
		table_cell(t, "%s", str(e, "message"));
		table_cell(t, "%s",
			   json_string_value(json_array_get(json_object_get(e, "stack"), 0)) ?:
											       "-");
	}
	table_print(t, stdout, cli.color);
	json_decref(reply);
	return EXIT_OK;
}

static int host_forget(int argc, char **argv)
{
	return host_post(argc, argv, "/v1/hosts/forget",
			 "forgotten: its row, states and enrollment are gone from kmemd");
}

static int host_reenroll(int argc, char **argv)
{
	return host_post(argc, argv, "/v1/hosts/reenroll",
			 "may enroll once more (a reinstall): its next enrollment takes the id");
}

int do_host(int argc, char **argv)
{
	static const struct cmd verbs[] = {
		{ "list", host_list, "hosts, filtered by facts and labels" },
		{ "show", host_show, "one host: facts, labels, policy, mitigations" },
		{ "revoke", host_revoke, "kmemd refuses the host's reports and enrollments" },
		{ "reenroll", host_reenroll, "the host id may enroll once more (a reinstall)" },
		{ "forget", host_forget, "kmemd forgets a decommissioned host (silent an hour)" },
		{ "events", host_events, "a host's newest events: lockups, stalls, trips" },
		{ NULL, NULL, NULL },
	};

	return cmd_dispatch("host", verbs, argc, argv);
}

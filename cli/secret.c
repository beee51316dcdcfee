// SPDX-License-Identifier: GPL-2.0
/*
 * kmemctl secret: enrollment secrets on kmemd (POST /v1/enroll/secrets and
 * /v1/enroll/secrets/revoke). create prints the secret alone on stdout, so
 * that it can go straight into the file `kmemctl enroll -S` reads on new
 * hosts; kmemd keeps only its SHA-256 and cannot show it again.
 */
#include <event2/http.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ini.h"
#include "kmemctl.h"
#include "output.h"
#include "remote.h"

/* A week, as kmemd's own default: long enough to bring a batch of hosts up. */
#define DEFAULT_EXPIRES "7d"

struct secret_args {
	const char *expires, *hosts;
	uint64_t ms;
	long long uses;
};

static int secret_usage(void)
{
	fprintf(stderr, "usage: kmemctl secret create [--expires DURATION|never] [--uses N] "
			"[--hosts PATTERN]\n");
	return EXIT_USAGE;
}

static int secret_parse(int argc, char **argv, struct secret_args *a)
{
	char *end = NULL;

	for (int i = 1; i < argc; i += 2) {
		if (i + 1 == argc)
			return secret_usage();
		if (!strcmp(argv[i], "--expires") || !strcmp(argv[i], "-e"))
			a->expires = argv[i + 1];
		else if (!strcmp(argv[i], "--uses"))
			a->uses = strtoll(argv[i + 1], &end, 10);
		else if (!strcmp(argv[i], "--hosts"))
			a->hosts = argv[i + 1];
		else
			return secret_usage();
		if (end && (*end || a->uses < 1)) {
			fprintf(stderr, "kmemctl: --uses '%s': want a positive number\n",
				argv[i + 1]);
			return EXIT_USAGE;
		}
		end = NULL;
	}
	if (strcmp(a->expires, "never") && (ini_parse_duration(a->expires, &a->ms) < 0 ||
					    a->ms < 1000 || a->ms / 1000 > INT32_MAX)) {
		fprintf(stderr,
			"kmemctl: --expires '%s': want a duration from 1s, such as 1h or 7d, "
			"or never\n",
			a->expires);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

static int secret_create(int argc, char **argv)
{
	struct secret_args a = { .expires = DEFAULT_EXPIRES };
	json_t *reply = NULL, *req;
	int r = secret_parse(argc, argv, &a);

	if (r != EXIT_OK)
		return r;
	req = json_pack("{s:I}", "expires_in_s", (json_int_t)(a.ms / 1000));
	if (req && a.uses)
		json_object_set_new(req, "uses", json_integer(a.uses));
	if (req && a.hosts)
		json_object_set_new(req, "hosts", json_string(a.hosts));
	r = remote_json(EVHTTP_REQ_POST, "/v1/enroll/secrets", req, &reply);
	if (r != EXIT_OK)
		return r;
	if (cli.json) {
		out_json(reply, cli.pretty);
		return EXIT_OK;
	}
	printf("%s\n", str(reply, "secret"));
	fprintf(stderr, "kmemctl: secret %lld, %s%s", num(reply, "id"),
		a.ms ? "expires in " : "never expires", a.ms ? a.expires : "");
	if (a.uses)
		fprintf(stderr, ", enrolls at most %lld hosts", a.uses);
	if (a.hosts)
		fprintf(stderr, ", only host ids matching '%s'", a.hosts);
	fprintf(stderr,
		"; kmemd keeps only its SHA-256. Revoke it with: kmemctl secret revoke %lld\n",
		num(reply, "id"));
	json_decref(reply);
	return EXIT_OK;
}

static int secret_revoke(int argc, char **argv)
{
	json_t *reply = NULL;
	char *end = NULL;
	long long id;
	int r;

	id = argc == 2 ? strtoll(argv[1], &end, 10) : 0;
	if (argc != 2 || !end || *end || id <= 0) {
		fprintf(stderr, "usage: kmemctl secret revoke ID (the id that create printed)\n");
		return EXIT_USAGE;
	}
	r = remote_json(EVHTTP_REQ_POST, "/v1/enroll/secrets/revoke",
			json_pack("{s:I}", "id", (json_int_t)id), &reply);
	if (r != EXIT_OK)
		return r;
	if (cli.json)
		out_json(reply, cli.pretty);
	else {
		printf("secret %lld revoked: it enrolls no more hosts\n", id);
		json_decref(reply);
	}
	return EXIT_OK;
}

static int secret_list(int argc, char **argv)
{
	static const char *const heads[] = { "ID", "STATE", "USES", "HOSTS", "EXPIRES", NULL };
	json_t *reply, *sec;
	char ago[32];
	struct table *t;
	size_t i;
	int r;

	(void)argv;
	r = remote_show(argc, "kmemctl secret list", "/v1/enroll/secrets", &reply);
	if (r != EXIT_OK || !reply)
		return r;
	t = table_new(heads);
	json_array_foreach(json_object_get(reply, "secrets"), i, sec)
	{
		bool expired = num(sec, "expires_ms") && num(sec, "expires_ms") < out_now_ms();
		bool spent = num(sec, "max_uses") && num(sec, "uses") >= num(sec, "max_uses");

		table_cell(t, "%lld", num(sec, "id"));
		table_state(t, json_is_true(json_object_get(sec, "revoked")) ? "revoked" :
			       expired					     ? "expired" :
			       spent					     ? "spent" :
									       "active");
		if (num(sec, "max_uses"))
			table_cell(t, "%lld/%lld", num(sec, "uses"), num(sec, "max_uses"));
		else
			table_cell(t, "%lld", num(sec, "uses"));
		table_cell(t, "%s", str(sec, "hosts")[0] ? str(sec, "hosts") : "any");
		if (!num(sec, "expires_ms"))
			table_cell(t, "never");
		else if (expired)
			table_cell(t, "%s", out_ago(num(sec, "expires_ms"), ago, sizeof(ago)));
		else
			table_cell(t, "%s", out_until(num(sec, "expires_ms"), ago, sizeof(ago)));
	}
	table_print(t, stdout, cli.color);
	json_decref(reply);
	return EXIT_OK;
}

int do_secret(int argc, char **argv)
{
	static const struct cmd verbs[] = {
		{ "create", secret_create, "a new enrollment secret, printed once" },
		{ "list", secret_list,
		  "every enrollment secret: uses, pattern, expiry (not the secret)" },
		{ "revoke", secret_revoke, "an enrollment secret enrolls no more hosts" },
		{ NULL, NULL, NULL },
	};

	return cmd_dispatch("secret", verbs, argc, argv);
}

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

#include "ini.h"
#include "kmemctl.h"
#include "output.h"
#include "remote.h"

/* A week, as kmemd's own default: long enough to bring a batch of hosts up. */
#define DEFAULT_EXPIRES "7d"

static int secret_create(int argc, char **argv)
{
	const char *expires = DEFAULT_EXPIRES;
	json_t *reply = NULL;
	uint64_t ms = 0;
	int r;

	if (argc == 3 && (!strcmp(argv[1], "--expires") || !strcmp(argv[1], "-e")))
		expires = argv[2];
	else if (argc != 1) {
		fprintf(stderr, "usage: kmemctl secret create [--expires DURATION|never]\n");
		return EXIT_USAGE;
	}
	if (strcmp(expires, "never") &&
	    (ini_parse_duration(expires, &ms) < 0 || ms < 1000 || ms / 1000 > INT32_MAX)) {
		fprintf(stderr,
			"kmemctl: --expires '%s': want a duration from 1s, such as 1h or 7d, "
			"or never\n",
			expires);
		return EXIT_USAGE;
	}
	r = remote_json(EVHTTP_REQ_POST, "/v1/enroll/secrets",
			json_pack("{s:I}", "expires_in_s", (json_int_t)(ms / 1000)), &reply);
	if (r != EXIT_OK)
		return r;
	if (cli.json) {
		out_json(reply, cli.pretty);
		return EXIT_OK;
	}
	printf("%s\n", str(reply, "secret"));
	fprintf(stderr,
		"kmemctl: secret %lld, %s%s; kmemd keeps only its SHA-256. "
		"Revoke it with: kmemctl secret revoke %lld\n",
		num(reply, "id"), ms ? "expires in " : "never expires", ms ? expires : "",
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

int do_secret(int argc, char **argv)
{
	static const struct cmd verbs[] = {
		{ "create", secret_create, "a new enrollment secret, printed once" },
		{ "revoke", secret_revoke, "an enrollment secret enrolls no more hosts" },
		{ NULL, NULL, NULL },
	};

	return cmd_dispatch("secret", verbs, argc, argv);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * Who may do what on kmemd, and who did:
 *   kmemctl whoami				this certificate's name, role and routes
 *   kmemctl audit list [--actor CN] [--action ACTION] [--host ID]
 *			[--since DURATION] [--until DURATION] [--limit N]
 *   kmemctl operator list			operator certificates kmemd saw or revoked
 *   kmemctl operator revoke NAME | --cert FILE | --fingerprint SHA256
 */
#include <errno.h>
#include <event2/http.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fileio.h"
#include "ini.h"
#include "kmemctl.h"
#include "macro.h"
#include "output.h"
#include "remote.h"

int do_whoami(int argc, char **argv)
{
	json_t *reply, *route;
	char when[32];
	size_t i;
	int r;

	(void)argv;
	r = remote_show(argc, "kmemctl whoami", "/v1/whoami", &reply);
	if (r != EXIT_OK || !reply)
		return r;
	printf("name        %s\n", str(reply, "name"));
	printf("role        %s (%s)\n", str(reply, "role"),
	       json_is_true(json_object_get(reply, "may_change")) ? "reads and changes" :
								    "reads only");
	printf("certificate %.16s, expires %s\n", str(reply, "fingerprint"),
	       out_until(num(reply, "not_after_ms"), when, sizeof(when)));
	printf("may call:\n");
	json_array_foreach(json_object_get(reply, "routes"), i, route)
		printf("  %s\n", json_string_value(route));
	json_decref(reply);
	return EXIT_OK;
}

static int audit_usage(void)
{
	fprintf(stderr, "usage: kmemctl audit list [--actor CN] [--action ACTION] [--host ID] "
			"[--since DURATION] [--until DURATION] [--limit N]\n");
	return EXIT_USAGE;
}

/* "&KEY=VALUE" onto q, the value escaped for a URL. */
static int query_add(char *q, size_t len, const char *key, const char *value)
{
	_cleanup_free_ char *v = evhttp_encode_uri(value);
	size_t n = strlen(q);

	if (!v || (size_t)snprintf(q + n, len - n, "%c%s=%s", n ? '&' : '?', key, v) >= len - n)
		return -ENOSPC;
	return 0;
}

/* --since/--until DURATION: that long ago, in unix ms. */
static int ago_ms(const char *opt, const char *s, char out[32])
{
	uint64_t ms;

	if (ini_parse_duration(s, &ms) < 0 || ms > (uint64_t)out_now_ms()) {
		fprintf(stderr, "kmemctl audit list: %s '%s': want a duration, such as 30m or 7d\n",
			opt, s);
		return -EINVAL;
	}
	snprintf(out, 32, "%lld", out_now_ms() - (long long)ms);
	return 0;
}

static int audit_list(int argc, char **argv)
{
	static const char *const opts[][2] = {
		{ "--actor", "actor" }, { "--action", "action" }, { "--host", "host" },
		{ "--since", "from" },	{ "--until", "to" },	  { "--limit", "limit" },
	};
	static const char *const heads[] = { "WHEN", "ACTOR", "ACTION", "HOST", "DETAIL", NULL };
	char path[1024] = "", ms[32], ago[32];
	json_t *reply = NULL, *e;
	const char *key, *value;
	struct table *t;
	size_t i, k;
	int r;

	for (int a = 1; a < argc; a += 2) {
		for (k = 0; k < ARRAY_SIZE(opts) && strcmp(argv[a], opts[k][0]); k++)
			;
		if (k == ARRAY_SIZE(opts) || a + 1 == argc)
			return audit_usage();
		key = opts[k][1];
		value = argv[a + 1];
		if ((!strcmp(key, "from") || !strcmp(key, "to")) && ago_ms(argv[a], value, ms) < 0)
			return EXIT_USAGE;
		if (!strcmp(key, "from") || !strcmp(key, "to"))
			value = ms;
		if (query_add(path, sizeof(path), key, value) < 0)
			return audit_usage();
	}
	memmove(path + strlen("/v1/audit"), path, strlen(path) + 1);
	memcpy(path, "/v1/audit", strlen("/v1/audit"));
	r = remote_get(path, &reply);
	if (r != EXIT_OK || !reply)
		return r;
	t = table_new(heads);
	json_array_foreach(json_object_get(reply, "entries"), i, e)
	{
		table_cell(t, "%s", out_ago(num(e, "ts_ms"), ago, sizeof(ago)));
		table_cell(t, "%s", str(e, "actor"));
		table_cell(t, "%s", str(e, "action"));
		table_cell(t, "%s", str(e, "host")[0] ? str(e, "host") : "-");
		table_cell(t, "%s", str(e, "detail"));
	}
	table_print(t, stdout, cli.color);
	if (!json_is_null(json_object_get(reply, "next_before")))
		fprintf(stderr, "kmemctl: more rows are older than these: -j gives next_before\n");
	json_decref(reply);
	return EXIT_OK;
}

int do_audit(int argc, char **argv)
{
	static const struct cmd verbs[] = {
		{ "list", audit_list, "who changed or read what on kmemd, newest first" },
		{ NULL, NULL, NULL },
	};

	return cmd_dispatch("audit", verbs, argc, argv);
}

static int operator_list(int argc, char **argv)
{
	static const char *const heads[] = { "NAME",	  "ROLE",    "CERTIFICATE", "EXPIRES",
					     "LAST SEEN", "REVOKED", NULL };
	json_t *reply, *o;
	char when[32], ago[32];
	struct table *t;
	size_t i;
	int r;

	(void)argv;
	r = remote_show(argc, "kmemctl operator list", "/v1/operators", &reply);
	if (r != EXIT_OK || !reply)
		return r;
	t = table_new(heads);
	json_array_foreach(json_object_get(reply, "operators"), i, o)
	{
		bool revoked = !json_is_null(json_object_get(o, "revoked_ms"));

		table_cell(t, "%s", str(o, "name")[0] ? str(o, "name") : "?");
		table_cell(t, "%s", str(o, "role")[0] ? str(o, "role") : "?");
		table_cell(t, "%.16s", str(o, "fingerprint"));
		table_cell(t, "%s",
			   json_is_null(json_object_get(o, "not_after_ms")) ?
				   "?" :
				   out_until(num(o, "not_after_ms"), when, sizeof(when)));
		table_cell(t, "%s",
			   json_is_null(json_object_get(o, "last_seen_ms")) ?
				   "never" :
				   out_ago(num(o, "last_seen_ms"), ago, sizeof(ago)));
		if (revoked)
			table_cell(t, "by %s", str(o, "revoked_by"));
		else
			table_cell(t, "-");
	}
	table_print(t, stdout, cli.color);
	json_decref(reply);
	return EXIT_OK;
}

static int operator_revoke(int argc, char **argv)
{
	_cleanup_free_ char *pem = NULL;
	json_t *reply = NULL, *body;
	size_t len;
	int r;

	if (argc == 2 && argv[1][0] != '-') {
		body = json_pack("{s:s}", "name", argv[1]);
	} else if (argc == 3 && !strcmp(argv[1], "--fingerprint")) {
		body = json_pack("{s:s}", "fingerprint", argv[2]);
	} else if (argc == 3 && !strcmp(argv[1], "--cert")) {
		r = read_file_max(argv[2], 16U << 10, &pem, &len);
		if (r < 0) {
			fprintf(stderr, "kmemctl operator revoke: cannot read '%s': %s\n", argv[2],
				strerror(-r));
			return EXIT_USAGE;
		}
		body = json_pack("{s:s}", "certificate", pem);
	} else {
		fprintf(stderr,
			"usage: kmemctl operator revoke NAME | --cert FILE | --fingerprint SHA256\n");
		return EXIT_USAGE;
	}
	r = remote_json(EVHTTP_REQ_POST, "/v1/operators/revoke", body, &reply);
	if (r != EXIT_OK)
		return r;
	if (cli.json) {
		out_json(reply, cli.pretty);
		return EXIT_OK;
	}
	if (json_object_get(reply, "fingerprint"))
		printf("certificate %.16s%s%s revoked%s: every kmemd refuses it from now on\n",
		       str(reply, "fingerprint"), str(reply, "name")[0] ? " of " : "",
		       str(reply, "name"), num(reply, "revoked") ? "" : " already");
	else
		printf("%lld certificate%s of %s revoked: every kmemd refuses %s from now on\n",
		       num(reply, "revoked"), num(reply, "revoked") == 1 ? "" : "s",
		       str(reply, "name"), num(reply, "revoked") == 1 ? "it" : "them");
	json_decref(reply);
	return EXIT_OK;
}

int do_operator(int argc, char **argv)
{
	static const struct cmd verbs[] = {
		{ "list", operator_list, "operator certificates kmemd saw or revoked" },
		{ "revoke", operator_revoke, "refuse an operator's certificates on every kmemd" },
		{ NULL, NULL, NULL },
	};

	return cmd_dispatch("operator", verbs, argc, argv);
}

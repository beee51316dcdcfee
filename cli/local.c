// SPDX-License-Identifier: GPL-2.0
/*
 * kmemctl on a host, through kmem-agent's control socket (agent/ctl.h):
 *   kmemctl status [--json]
 *   kmemctl mitigation set ID on|off [KEY=VALUE]...
 *   kmemctl probe set ID on|off [threshold=NS]
 *   kmemctl watch
 * KMEMCTL_AGENT_SOCKET names another socket (tests, several agents).
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl.h"
#include "kmemctl.h"
#include "log.h"
#include "macro.h"

static int ctl_connect(void)
{
	const char *path = getenv("KMEMCTL_AGENT_SOCKET") ?: CTL_SOCK;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, r;

	if (strlen(path) >= sizeof(sa.sun_path))
		return log_error_errno(-ENAMETOOLONG, "socket path '%s': %m", path);
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return log_error_errno(negative_errno(), "socket: %m");
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = negative_errno();
		close(fd);
		return log_error_errno(r, "kmem-agent's control socket '%s': %m", path);
	}
	return fd;
}

/* No agent listening is "not reachable"; one that will not have us, "refused". */
static int connect_exit(int r)
{
	return r == -EACCES || r == -EPERM ? EXIT_REFUSED : EXIT_UNREACHABLE;
}

/* One reply; NULL (logged) on a broken socket or a reply that is not JSON. */
static json_t *ctl_recv(int fd)
{
	_cleanup_free_ char *buf = malloc(CTL_MAX_MSG);
	json_error_t je;
	json_t *o;
	ssize_t n;

	if (!buf)
		return NULL;
	n = recv(fd, buf, CTL_MAX_MSG, MSG_TRUNC);
	if (n <= 0) {
		log_error("kmem-agent closed the control socket");
		return NULL;
	}
	if ((size_t)n > CTL_MAX_MSG) {
		log_error("kmem-agent's reply is larger than %u bytes", CTL_MAX_MSG);
		return NULL;
	}
	o = json_loadb(buf, (size_t)n, 0, &je);
	if (!json_is_object(o)) {
		json_decref(o);
		log_error("kmem-agent's reply is not a JSON object");
		return NULL;
	}
	return o;
}

/* Send req (stolen), return the reply; NULL after logging the agent's error. */
static json_t *ctl_call(int fd, json_t *req)
{
	char *text = json_dumps(req, JSON_COMPACT);
	json_t *rep = NULL;

	json_decref(req);
	if (!text)
		return NULL;
	if (send(fd, text, strlen(text), MSG_NOSIGNAL) < 0)
		log_error_errno(negative_errno(), "sending to kmem-agent failed: %m");
	else
		rep = ctl_recv(fd);
	free(text);
	if (rep && !json_is_true(json_object_get(rep, "ok")) &&
	    json_is_string(json_object_get(rep, "error"))) {
		log_error("kmem-agent: %s", json_string_value(json_object_get(rep, "error")));
		json_decref(rep);
		return NULL;
	}
	return rep;
}

static const char *str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

/* "MITIGATION_STATE_ON" -> "on" */
static const char *enum_tail(const char *s, const char *prefix)
{
	size_t n = strlen(prefix);
	static char buf[4][32];
	static int k;
	char *b = buf[k++ % 4];
	size_t i;

	if (strncmp(s, prefix, n))
		return s;
	snprintf(b, sizeof(buf[0]), "%s", s + n);
	for (i = 0; b[i]; i++)
		b[i] = b[i] == '_' ? '-' : (char)(b[i] | 0x20);
	return b;
}

static void print_status(json_t *st)
{
	json_t *agent = json_object_get(st, "agent"), *rep = json_object_get(st, "report");
	json_t *kmemd = json_object_get(agent, "kmemd"), *pol = json_object_get(agent, "policy");
	json_t *facts = json_object_get(rep, "facts"), *v;
	size_t i;

	printf("agent     %s%s\n", str(agent, "version"),
	       json_is_true(json_object_get(agent, "disabled")) ? " (kmemctl.disable=1)" : "");
	printf("host      %s, kernel %s\n", str(facts, "host_id"), str(facts, "kernel_release"));
	printf("policy    %s version %lld\n", str(pol, "name")[0] ? str(pol, "name") : "(none)",
	       json_integer_value(json_object_get(pol, "version")));
	printf("kmemd     %s, acked %lld, %lld spooled, %lld dropped\n", str(kmemd, "last"),
	       json_integer_value(json_object_get(kmemd, "acked_seq")),
	       json_integer_value(json_object_get(kmemd, "spooled")),
	       json_integer_value(json_object_get(kmemd, "dropped")));
	if (!json_is_object(rep)) {
		printf("no report yet\n");
		return;
	}
	printf("report    %lld\n", json_integer_value(json_object_get(rep, "seq")));
	json_array_foreach(json_object_get(rep, "collectors_failed"), i, v)
		printf("failed    %s\n", json_string_value(v));
	if (!json_array_size(json_object_get(rep, "mitigations"))) {
		printf("\nno mitigations reported: kmemctl.ko is not loaded\n");
	} else {
		printf("\n%-20s %-12s %-5s %-10s %s\n", "MITIGATION", "STATE", "MODE", "SOURCE",
		       "REASON");
		json_array_foreach(json_object_get(rep, "mitigations"), i, v)
			printf("%-20s %-12s %-5s %-10s %s\n", str(v, "id"),
			       enum_tail(str(v, "state"), "MITIGATION_STATE_"),
			       enum_tail(str(v, "mode"), "MITIGATION_MODE_"),
			       enum_tail(str(v, "source"), "MODE_SOURCE_"), str(v, "reason"));
	}
	if (json_array_size(json_object_get(rep, "probes")))
		printf("\n%-20s %10s %14s\n", "PROBE", "COUNT", "MAX_NS");
	json_array_foreach(json_object_get(rep, "probes"), i, v)
	{
		json_t *h = json_object_get(v, "hist");

		printf("%-20s %10lld %14lld\n", str(v, "probe"),
		       json_integer_value(json_object_get(h, "count")),
		       json_integer_value(json_object_get(h, "max_ns")));
	}
	json_array_foreach(json_object_get(agent, "recent_events"), i, v)
		printf("%s%s %s\n", i ? "" : "\nRECENT EVENTS\n",
		       enum_tail(str(v, "kind"), "EVENT_KIND_"), str(v, "message"));
}

int do_local_status(int argc, char **argv)
{
	bool json = argc == 2 && !strcmp(argv[1], "--json");
	json_t *rep;
	int fd;

	if (argc > 2 || (argc == 2 && !json)) {
		fprintf(stderr, "usage: kmemctl status [--json]\n");
		return EXIT_USAGE;
	}
	fd = ctl_connect();
	if (fd < 0)
		return connect_exit(fd);
	rep = ctl_call(fd, json_pack("{s:s}", "cmd", "status"));
	close(fd);
	if (!rep)
		return EXIT_ERROR;
	if (json) {
		json_dumpf(rep, stdout, JSON_INDENT(2));
		putchar('\n');
	} else {
		print_status(rep);
	}
	json_decref(rep);
	return EXIT_OK;
}

static int parse_onoff(const char *s, bool *on)
{
	if (!strcmp(s, "on") || !strcmp(s, "off")) {
		*on = !strcmp(s, "on");
		return 0;
	}
	fprintf(stderr, "kmemctl: '%s' must be on or off\n", s);
	return -EINVAL;
}

/* KEY=VALUE with a non-negative integer VALUE, into obj; the agent checks the rest. */
static int parse_kv(const char *arg, json_t *obj)
{
	const char *eq = strchr(arg, '=');
	char key[64], *end;
	unsigned long long v;

	if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof(key)) {
		fprintf(stderr, "kmemctl: '%s' is not KEY=VALUE\n", arg);
		return -EINVAL;
	}
	errno = 0;
	v = strtoull(eq + 1, &end, 10);
	if (errno || end == eq + 1 || *end || eq[1] == '-' || v > INT64_MAX) {
		fprintf(stderr, "kmemctl: '%s': the value must be a non-negative integer\n", arg);
		return -EINVAL;
	}
	snprintf(key, sizeof(key), "%.*s", (int)(eq - arg), arg);
	json_object_set_new(obj, key, json_integer((json_int_t)v));
	return 0;
}

static int set_and_report(json_t *policy)
{
	json_t *rep, *v;
	size_t i;
	int fd, r = EXIT_OK;

	fd = ctl_connect();
	if (fd < 0) {
		json_decref(policy);
		return connect_exit(fd);
	}
	rep = ctl_call(fd, json_pack("{s:s, s:o}", "cmd", "set", "policy", policy));
	close(fd);
	if (!rep)
		return EXIT_ERROR;
	json_array_foreach(json_object_get(rep, "outcomes"), i, v)
	{
		printf("%s: %s%s%s\n", str(v, "id"), str(v, "result"), str(v, "why")[0] ? ": " : "",
		       str(v, "why"));
		if (!strcmp(str(v, "result"), "failed") || !strcmp(str(v, "result"), "skipped"))
			r = EXIT_ERROR;
	}
	json_decref(rep);
	return r;
}

static int mitigation_set(int argc, char **argv)
{
	json_t *m, *params;
	bool on;
	int i;

	if (argc < 3 || parse_onoff(argv[2], &on) < 0) {
		fprintf(stderr, "usage: kmemctl mitigation set ID on|off [KEY=VALUE]...\n");
		return EXIT_USAGE;
	}
	params = json_object();
	for (i = 3; i < argc; i++)
		if (parse_kv(argv[i], params) < 0) {
			json_decref(params);
			return EXIT_USAGE;
		}
	m = json_pack("{s:s}", "mode", on ? "on" : "off");
	if (json_object_size(params))
		json_object_set(m, "params", params);
	json_decref(params);
	return set_and_report(json_pack("{s:{s:o}}", "mitigations", argv[1], m));
}

static int probe_set(int argc, char **argv)
{
	json_t *p, *kv;
	bool on;

	if (argc < 3 || argc > 4 || parse_onoff(argv[2], &on) < 0) {
		fprintf(stderr, "usage: kmemctl probe set ID on|off [threshold_ns=NS]\n");
		return EXIT_USAGE;
	}
	p = json_pack("{s:b}", "enabled", on);
	if (argc == 4) {
		kv = json_object();
		if (parse_kv(argv[3], kv) < 0 || !json_object_get(kv, "threshold_ns")) {
			json_decref(kv);
			json_decref(p);
			return EXIT_USAGE;
		}
		json_object_update(p, kv);
		json_decref(kv);
	}
	return set_and_report(json_pack("{s:{s:o}}", "probes", argv[1], p));
}

int do_mitigation(int argc, char **argv)
{
	static const struct cmd verbs[] = {
		{ "set", mitigation_set, "turn a mitigation on or off here, with params" },
		{ NULL, NULL, NULL },
	};

	return cmd_dispatch("mitigation", verbs, argc, argv);
}

int do_probe(int argc, char **argv)
{
	static const struct cmd verbs[] = {
		{ "set", probe_set, "turn a probe on or off here, with a threshold" },
		{ NULL, NULL, NULL },
	};

	return cmd_dispatch("probe", verbs, argc, argv);
}

/* Every report the agent makes from now on, one JSON object per line. */
int do_watch(int argc, char **argv)
{
	json_t *rep;
	int fd;

	(void)argv;
	if (argc > 1) {
		fprintf(stderr, "usage: kmemctl watch\n");
		return EXIT_USAGE;
	}
	fd = ctl_connect();
	if (fd < 0)
		return connect_exit(fd);
	rep = ctl_call(fd, json_pack("{s:s}", "cmd", "watch"));
	while (rep) {
		json_decref(rep);
		rep = ctl_recv(fd);
		if (rep) {
			json_dumpf(rep, stdout, JSON_COMPACT);
			putchar('\n');
			fflush(stdout);
		}
	}
	close(fd);
	return EXIT_ERROR;
}

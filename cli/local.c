// SPDX-License-Identifier: GPL-2.0
/*
 * kmemctl on a host, through kmem-agent's control socket (agent/ctl.h):
 *   kmemctl status [--json]
 *   kmemctl facts
 *   kmemctl mitigation list|show ID|set ID on|off [KEY=VALUE]...
 *   kmemctl probe list|show ID|enable ID [threshold_ns=NS]|disable ID
 *   kmemctl telemetry watch, kmemctl watch
 *   kmemctl disable|enable		the local kill switch
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
#include "hist.h"
#include "json-text.h"
#include "macro.h"
#include "output.h"

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
	if (!cli.json)
		json_escape_strings(o);
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

static void mitigation_table(json_t *rep);
static void probe_table(json_t *rep);

static void print_status(json_t *st)
{
	json_t *agent = json_object_get(st, "agent"), *rep = json_object_get(st, "report");
	json_t *kmemd = json_object_get(agent, "kmemd"), *pol = json_object_get(agent, "policy");
	json_t *facts = json_object_get(rep, "facts"), *v;
	size_t i;

	printf("agent     %s%s%s%s\n", str(agent, "version"), str(agent, "off")[0] ? " (off: " : "",
	       str(agent, "off"), str(agent, "off")[0] ? ")" : "");
	printf("host      %s, kernel %s\n", str(facts, "host_id"), str(facts, "kernel_release"));
	printf("module    %s\n",
	       str(facts, "module_version")[0] ? str(facts, "module_version") : "(not loaded)");
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
		putchar('\n');
		mitigation_table(rep);
	}
	if (json_array_size(json_object_get(rep, "probes"))) {
		putchar('\n');
		probe_table(rep);
	}
	json_array_foreach(json_object_get(agent, "recent_events"), i, v)
		printf("%s%s %s\n", i ? "" : "\nRECENT EVENTS\n",
		       enum_tail(str(v, "kind"), "EVENT_KIND_"), str(v, "message"));
}

int do_local_status(int argc, char **argv)
{
	bool json = cli.json || (argc == 2 && !strcmp(argv[1], "--json"));
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
		out_json(rep, cli.pretty || !cli.json);
	} else {
		print_status(rep);
		json_decref(rep);
	}
	return EXIT_OK;
}

/* The agent's status, or NULL with *exit set (said). */
static json_t *status_of(int *exit)
{
	json_t *rep;
	int fd = ctl_connect();

	if (fd < 0) {
		*exit = connect_exit(fd);
		return NULL;
	}
	rep = ctl_call(fd, json_pack("{s:s}", "cmd", "status"));
	close(fd);
	*exit = rep ? EXIT_OK : EXIT_ERROR;
	return rep;
}

/* A report's histogram, as lib/hist.h has it. */
static void hist_of(json_t *j, struct hist *h)
{
	unsigned first = (unsigned)json_integer_value(json_object_get(j, "first_bucket"));
	json_t *c;
	size_t i;

	memset(h, 0, sizeof(*h));
	json_array_foreach(json_object_get(j, "counts"), i, c) if (first + i < HIST_BUCKETS)
		h->buckets[first + i] = (uint64_t)json_integer_value(c);
	h->count = (uint64_t)json_integer_value(json_object_get(j, "count"));
	h->sum_ns = (uint64_t)json_integer_value(json_object_get(j, "sum_ns"));
	h->max_ns = (uint64_t)json_integer_value(json_object_get(j, "max_ns"));
}

static void probe_table(json_t *rep)
{
	static const char *const heads[] = { "PROBE", "COUNT", "P50", "P99", "MAX", NULL };
	struct table *t = table_new(heads);
	char b[3][32];
	struct hist h;
	json_t *v;
	size_t i;

	json_array_foreach(json_object_get(rep, "probes"), i, v)
	{
		hist_of(json_object_get(v, "hist"), &h);
		table_cell(t, "%s", str(v, "probe"));
		table_cell(t, "%llu", (unsigned long long)h.count);
		table_cell(t, "%s", h.count ? out_ns(hist_quantile(&h, 0.5), b[0], 32) : "-");
		table_cell(t, "%s", h.count ? out_ns(hist_quantile(&h, 0.99), b[1], 32) : "-");
		table_cell(t, "%s", h.count ? out_ns(h.max_ns, b[2], 32) : "-");
	}
	table_print(t, stdout, cli.color);
}

/* The entry of array key in the last report whose field names id; NULL. */
static json_t *entry(json_t *st, const char *key, const char *field, const char *id)
{
	json_t *v;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(st, "report"), key), i,
			   v) if (!strcmp(str(v, field), id)) return v;
	return NULL;
}

/*
 * `mitigation show ID`, `probe show ID`: the entry of the last report's
 * array key whose field is ID, for the caller to print, with *st holding
 * it (json_decref after). NULL with *exit set when nothing is left to do:
 * bad usage, no agent, no such entry, or printed as JSON (-j).
 */
static json_t *show(int argc, char **argv, const char *object, const char *key, const char *field,
		    json_t **st, int *exit)
{
	json_t *e = NULL;

	*st = NULL;
	if (argc != 2) {
		fprintf(stderr, "usage: kmemctl %s show ID\n", object);
		*exit = EXIT_USAGE;
		return NULL;
	}
	*st = status_of(exit);
	if (*st)
		e = entry(*st, key, field, argv[1]);
	if (*st && !e) {
		fprintf(stderr, "kmemctl: this host's last report has no %s '%s'\n", object,
			argv[1]);
		*exit = EXIT_ERROR;
	} else if (e && cli.json) {
		out_json(json_pack("{s:O}", object, e), cli.pretty);
		*exit = EXIT_OK;
		e = NULL;
	}
	if (!e) {
		json_decref(*st);
		*st = NULL;
	}
	return e;
}

static void mitigation_table(json_t *rep)
{
	static const char *const heads[] = {
		"MITIGATION", "STATE", "MODE", "SOURCE", "REASON", NULL
	};
	struct table *t = table_new(heads);
	json_t *v;
	size_t i;

	json_array_foreach(json_object_get(rep, "mitigations"), i, v)
	{
		table_cell(t, "%s", str(v, "id"));
		table_state(t, enum_tail(str(v, "state"), "MITIGATION_STATE_"));
		table_cell(t, "%s", enum_tail(str(v, "mode"), "MITIGATION_MODE_"));
		table_cell(t, "%s", enum_tail(str(v, "source"), "MODE_SOURCE_"));
		table_cell(t, "%s", str(v, "reason"));
	}
	table_print(t, stdout, cli.color);
}

/*
 * `mitigation list`, `probe list`: the last report's array key, as JSON
 * (-j) or by table().
 */
static int list(int argc, const char *object, const char *key, void (*table)(json_t *rep))
{
	json_t *st, *rep;
	int r;

	if (argc != 1) {
		fprintf(stderr, "usage: kmemctl %s list\n", object);
		return EXIT_USAGE;
	}
	st = status_of(&r);
	if (!st)
		return r;
	rep = json_object_get(st, "report");
	if (cli.json)
		out_json(json_pack("{s:O}", key, json_object_get(rep, key) ?: json_array()),
			 cli.pretty);
	else
		table(rep);
	json_decref(st);
	return EXIT_OK;
}

static int mitigation_list(int argc, char **argv)
{
	(void)argv;
	return list(argc, "mitigation", "mitigations", mitigation_table);
}

static int mitigation_show(int argc, char **argv)
{
	const char *key;
	json_t *st, *m, *v;
	int r;

	m = show(argc, argv, "mitigation", "mitigations", "id", &st, &r);
	if (!m)
		return r;
	printf("mitigation %s\nstate      %s\nmode       %s (from %s)\nreason     %s\n",
	       str(m, "id"), enum_tail(str(m, "state"), "MITIGATION_STATE_"),
	       enum_tail(str(m, "mode"), "MITIGATION_MODE_"),
	       enum_tail(str(m, "source"), "MODE_SOURCE_"), str(m, "reason"));
	json_object_foreach(json_object_get(m, "params"), key, v)
		printf("param      %s = %s\n", key, json_string_value(v));
	json_object_foreach(json_object_get(m, "stats"), key, v)
		printf("stat       %s = %lld\n", key, (long long)json_integer_value(v));
	json_decref(st);
	return EXIT_OK;
}

static int probe_list(int argc, char **argv)
{
	(void)argv;
	return list(argc, "probe", "probes", probe_table);
}

static int probe_show(int argc, char **argv)
{
	static const char *const heads[] = { "UP TO", "COUNT", NULL };
	struct table *t;
	json_t *st, *p;
	struct hist h;
	char b[32];
	int r;

	p = show(argc, argv, "probe", "probes", "probe", &st, &r);
	if (!p)
		return r;
	hist_of(json_object_get(p, "hist"), &h);
	printf("probe %s: %llu in the last interval, max %s\n\n", argv[1],
	       (unsigned long long)h.count, out_ns(h.max_ns, b, sizeof(b)));
	t = table_new(heads);
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		if (h.buckets[i]) {
			table_cell(t, "%s", out_ns(hist_upper(i), b, sizeof(b)));
			table_cell(t, "%llu", (unsigned long long)h.buckets[i]);
		}
	table_print(t, stdout, cli.color);
	json_decref(st);
	return EXIT_OK;
}

static int facts(int argc, char **argv)
{
	json_t *st, *f, *v;
	const char *key;
	int r;

	(void)argv;
	if (argc != 1) {
		fprintf(stderr, "usage: kmemctl facts\n");
		return EXIT_USAGE;
	}
	st = status_of(&r);
	if (!st)
		return r;
	f = json_object_get(json_object_get(st, "report"), "facts");
	if (cli.json) {
		out_json(json_pack("{s:O}", "facts", f ?: json_object()), cli.pretty);
		json_decref(st);
		return EXIT_OK;
	}
	json_object_foreach(f, key, v)
	{
		if (json_is_array(v))
			printf("%-16s %zu entries\n", key, json_array_size(v));
		else if (json_is_object(v)) {
			const char *k;
			json_t *x;

			json_object_foreach(v, k, x)
				printf("%-16s %s=%s\n", key, k, json_string_value(x));
		} else {
			char *text = json_dumps(v, JSON_ENCODE_ANY);

			printf("%-16s %s\n", key,
			       json_is_string(v) ? json_string_value(v) :
			       text		 ? text :
						   "?");
			free(text);
		}
	}
	json_decref(st);
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
			if (json_object_size(kv))
				fprintf(stderr, "kmemctl: '%s': want threshold_ns=NS\n", argv[3]);
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
		{ "list", mitigation_list, "this host's mitigations: state, mode, source, reason" },
		{ "show", mitigation_show, "one mitigation with its params and counters" },
		{ "set", mitigation_set, "turn a mitigation on or off here, with params" },
		{ NULL, NULL, NULL },
	};

	return cmd_dispatch("mitigation", verbs, argc, argv);
}

/* probe enable|disable ID [threshold_ns=NS]: probe set ID on|off. */
static int probe_switch(int argc, char **argv)
{
	char *args[5] = { "set", NULL, !strcmp(argv[0], "enable") ? "on" : "off", NULL, NULL };

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: kmemctl probe %s ID [threshold_ns=NS]\n", argv[0]);
		return EXIT_USAGE;
	}
	args[1] = argv[1];
	args[3] = argc == 3 ? argv[2] : NULL;
	return probe_set(argc + 1, args);
}

int do_probe(int argc, char **argv)
{
	static const struct cmd verbs[] = {
		{ "list", probe_list,
		  "this host's probes: count, p50, p99, max of the last interval" },
		{ "show", probe_show, "one probe's histogram of the last interval" },
		{ "enable", probe_switch, "turn a probe on here, with a threshold" },
		{ "disable", probe_switch, "turn a probe off here" },
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

int do_facts(int argc, char **argv)
{
	return facts(argc, argv);
}

/* Each report from now on as the probe table, refreshed in place on a terminal. */
int local_telemetry_watch(int argc, char **argv)
{
	bool tty = isatty(STDOUT_FILENO) && !cli.json;
	json_t *rep, *report;
	int fd;

	(void)argv;
	if (argc != 1) {
		fprintf(stderr, "usage: kmemctl telemetry watch\n");
		return EXIT_USAGE;
	}
	fd = ctl_connect();
	if (fd < 0)
		return connect_exit(fd);
	rep = ctl_call(fd, json_pack("{s:s}", "cmd", "watch"));
	while (rep) {
		json_decref(rep);
		rep = ctl_recv(fd);
		if (!rep)
			break;
		/* each message is the status: the agent and its newest report */
		report = json_object_get(rep, "report");
		if (cli.json) {
			out_json(json_pack("{s:O}", "probes",
					   json_object_get(report, "probes") ?: json_array()),
				 false);
		} else {
			if (tty)
				printf("\033[H\033[2J");
			printf("report %lld\n",
			       (long long)json_integer_value(json_object_get(report, "seq")));
			probe_table(report);
			putchar('\n');
		}
		fflush(stdout);
	}
	close(fd);
	return EXIT_ERROR;
}

/* kmemctl disable|enable: the agent's local kill switch. */
int do_switch(int argc, char **argv)
{
	bool off = !strcmp(argv[0], "disable");
	json_t *rep;
	int fd;

	if (argc != 1) {
		fprintf(stderr, "usage: kmemctl %s\n", argv[0]);
		return EXIT_USAGE;
	}
	fd = ctl_connect();
	if (fd < 0)
		return connect_exit(fd);
	rep = ctl_call(fd, json_pack("{s:s}", "cmd", argv[0]));
	close(fd);
	if (!rep)
		return EXIT_ERROR;
	if (!json_is_true(json_object_get(rep, "changed")))
		printf("the kill switch was already %s\n", off ? "on" : "off");
	else if (off)
		printf("kill switch on: every mitigation is off and no policy is applied until "
		       "`kmemctl enable`\n");
	else
		printf("kill switch off: the last known good policy is applied again\n");
	json_decref(rep);
	return EXIT_OK;
}

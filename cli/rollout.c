// SPDX-License-Identifier: GPL-2.0
/*
 * kmemctl rollout: kmemd's rollouts (docs/rollouts.md).
 *   kmemctl rollout plan FILE		what its waves could detect, storing nothing
 *   kmemctl rollout start FILE|NAME	create one from its document and start it
 *   kmemctl rollout list
 *   kmemctl rollout status NAME [--watch]
 *   kmemctl rollout pause|resume|promote|abort NAME
 */
#include <errno.h>
#include <event2/http.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kmemctl.h"
#include "output.h"
#include "remote.h"
#include "text.h"

#define WATCH_S 2

static double real(json_t *o, const char *key)
{
	return json_number_value(json_object_get(o, key));
}

/* The document in a file, or NULL after saying why. */
static json_t *load(const char *path)
{
	json_error_t je;
	json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &je);

	if (!doc)
		fprintf(stderr, "kmemctl: %s:%d: %s\n", path, je.line, je.text);
	return doc;
}

/* "NAME" or a file with the rollout document: its name, after creating it. */
static int create(const char *arg, char *name, size_t len)
{
	json_t *doc, *reply = NULL;
	struct stat sb;
	int r;

	if (stat(arg, &sb) < 0) {
		snprintf(name, len, "%s", arg);
		return EXIT_OK;
	}
	doc = load(arg);
	if (!doc)
		return EXIT_ERROR;
	snprintf(name, len, "%s", str(doc, "name"));
	r = remote_json(EVHTTP_REQ_POST, "/v1/rollouts", doc, &reply);
	json_decref(reply);
	return r;
}

static int action(const char *name, const char *what, json_t **reply)
{
	return remote_json(EVHTTP_REQ_POST, "/v1/rollouts/action",
			   json_pack("{s:s, s:s}", "name", name, "action", what), reply);
}

static int usage(const char *verb, const char *args)
{
	fprintf(stderr, "usage: kmemctl rollout %s %s\n", verb, args);
	return EXIT_USAGE;
}

/* A plan's warnings, each on a line of stderr. */
static void warnings(json_t *plan)
{
	size_t i;
	json_t *w;

	json_array_foreach(json_object_get(plan, "warnings"), i, w)
		fprintf(stderr, "warning: %s\n", json_string_value(w) ?: "");
}

/* "45s", "30m", "1.5h", "21h", "3d"; "-" for null (never) */
static const char *duration(json_t *v, char *buf, size_t len)
{
	double s = json_number_value(v);

	if (!json_is_number(v)) {
		snprintf(buf, len, "-");
		return buf;
	}
	return text_duration(s, buf, len);
}

/* A number of a reply that is null when infinite: "-" then. */
static const char *maybe(json_t *v, const char *fmt, char *buf, size_t len)
{
	if (json_is_number(v))
		snprintf(buf, len, fmt, json_number_value(v));
	else
		snprintf(buf, len, "-");
	return buf;
}

static void print_plan(json_t *reply)
{
	static const char *const heads[] = { "WAVE",	   "CANARIES",	  "BASELINES",
					     "BAKE",	   "EXPECTED",	  "NEEDED",
					     "DETECTABLE", "BAKE NEEDED", NULL };
	json_t *plan = json_object_get(reply, "plan"), *w, *o;
	char a[32], b[32];
	const char *key;
	struct table *t;
	size_t i;

	printf("rollout   %s: %lld hosts\n", str(reply, "name"), num(reply, "members"));
	printf("detects   %gx with power %g, each final look at alpha %.3g\n\n",
	       real(plan, "detect_ratio"), real(plan, "power"), real(plan, "alpha_look"));
	t = table_new(heads);
	json_array_foreach(json_object_get(plan, "waves"), i, w)
	{
		table_cell(t, "%lld", num(w, "wave"));
		table_cell(t, "%lld", num(w, "canaries"));
		table_cell(t, "%lld", num(w, "baselines"));
		table_cell(t, "%s", duration(json_object_get(w, "bake_s"), a, sizeof(a)));
		if (!json_is_true(json_object_get(w, "final_look"))) {
			/* no baseline is left: health and ceilings judge it */
			for (int k = 0; k < 4; k++)
				table_cell(t, "-");
			continue;
		}
		table_cell(t, "%.3g", real(w, "mu0_at_bake_end"));
		table_cell(t, "%s", maybe(json_object_get(w, "mu_needed"), "%.3g", a, sizeof(a)));
		table_cell(t, "%s",
			   maybe(json_object_get(w, "detectable_ratio"), "%.1fx", b, sizeof(b)));
		table_cell(t, "%s", duration(json_object_get(w, "bake_needed_s"), a, sizeof(a)));
	}
	table_print(t, stdout, cli.color);
	printf("\nEXPECTED and NEEDED are canary lockups by the bake's end, from wave 1 on;\n"
	       "the fleet's lockups per host-hour over the 7 days before:\n");
	json_object_foreach(json_object_get(plan, "rates"), key, o)
		printf("  %s: %.0f in %.4g host-hours, %s\n", key, real(o, "events"),
		       real(o, "hours"),
		       maybe(json_object_get(o, "per_host_hour"), "%.3g", a, sizeof(a)));
	printf("a %gx policy reaches every host with probability at most %.3g\n",
	       real(plan, "detect_ratio"), real(plan, "p_reach_all_at_most"));
	warnings(plan);
}

/* FILE: what its waves could detect over the hosts its selector picks now. */
static int rollout_plan(int argc, char **argv)
{
	json_t *doc, *reply = NULL;
	int r;

	if (argc != 2)
		return usage("plan", "FILE");
	doc = load(argv[1]);
	if (!doc)
		return EXIT_ERROR;
	r = remote_json(EVHTTP_REQ_POST, "/v1/rollouts/plan", doc, &reply);
	if (r != EXIT_OK)
		return r;
	if (cli.json)
		out_json(reply, cli.pretty);
	else {
		print_plan(reply);
		json_decref(reply);
	}
	return EXIT_OK;
}

static int rollout_start(int argc, char **argv)
{
	char name[128];
	json_t *reply = NULL;
	int r;

	if (argc != 2)
		return usage("start", "FILE|NAME");
	r = create(argv[1], name, sizeof(name));
	if (r == EXIT_OK)
		r = action(name, "start", &reply);
	if (r != EXIT_OK)
		return r;
	warnings(json_object_get(reply, "plan"));
	if (cli.json)
		out_json(reply, cli.pretty);
	else {
		printf("rollout %s %s: %s\n", name, str(reply, "state"), str(reply, "reason"));
		json_decref(reply);
	}
	return EXIT_OK;
}

static int act(int argc, char **argv)
{
	json_t *reply = NULL;
	int r;

	if (argc != 2)
		return usage(argv[0], "NAME");
	r = action(argv[1], argv[0], &reply);
	if (r != EXIT_OK)
		return r;
	if (cli.json)
		out_json(reply, cli.pretty);
	else {
		printf("rollout %s %s in wave %lld: %s\n", argv[1], str(reply, "state"),
		       num(reply, "wave") + 1, str(reply, "reason"));
		json_decref(reply);
	}
	return EXIT_OK;
}

/* Members summed over every wave: the whole rollout. */
static long long members(json_t *ro)
{
	long long n = 0;
	size_t i;
	json_t *v;

	json_array_foreach(json_object_get(ro, "members"), i, v)
		n += json_is_integer(v) ? json_integer_value(v) : 0;
	return n;
}

static int rollout_list(int argc, char **argv)
{
	static const char *const heads[] = { "NAME",  "POLICY", "STATE", "WAVE",
					     "HOSTS", "REASON", NULL };
	json_t *reply = NULL, *ro, *spec;
	struct table *t;
	size_t i;
	int r;

	if (argc > 2 || (argc == 2 && strcmp(argv[1], "--all")))
		return usage("list", "[--all]");
	r = remote_call(EVHTTP_REQ_GET, argc == 2 ? "/v1/rollouts?archived=1" : "/v1/rollouts",
			NULL, NULL, 0, &reply);
	if (r != EXIT_OK)
		return r;
	if (cli.json) {
		out_json(json_pack("{s:o}", "rollouts", reply ?: json_array()), cli.pretty);
		return EXIT_OK;
	}
	t = table_new(heads);
	json_array_foreach(reply, i, ro)
	{
		spec = json_object_get(ro, "spec");
		table_cell(t, "%s%s", str(ro, "name"),
			   json_object_get(ro, "archived_ms") ? " (archived)" : "");
		table_cell(t, "%s@%lld", str(spec, "policy"), num(spec, "version"));
		table_state(t, str(ro, "state"));
		table_cell(t, "%lld/%zu", num(ro, "wave") + 1,
			   json_array_size(json_object_get(ro, "waves")));
		table_cell(t, "%lld", members(ro));
		table_cell(t, "%s", str(ro, "reason"));
	}
	table_print(t, stdout, cli.color);
	json_decref(reply);
	return EXIT_OK;
}

/* The members wave k reaches in all, and of them how many run the policy. */
static void wave_counts(json_t *st, unsigned k, long long *reached, long long *running)
{
	json_t *w;
	size_t i;

	*reached = *running = 0;
	json_array_foreach(json_object_get(st, "wave_hosts"), i, w)
	{
		if (i > k)
			break;
		*reached += num(w, "members");
		*running += num(w, "running");
	}
}

/* What the lockup tests had seen at a verdict (docs/rollouts.md, "The statistics"). */
static void print_evidence(json_t *e)
{
	char a[32], b[32];

	if (!e)
		return;
	if (json_object_get(e, "mu0"))
		printf("  evidence  expected %.3g canary lockups, %s needed to detect %gx with "
		       "power %g; detectable: %s\n",
		       real(e, "mu0"), maybe(json_object_get(e, "mu_needed"), "%.3g", a, sizeof(a)),
		       real(e, "detect_ratio"), real(e, "power"),
		       json_is_number(json_object_get(e, "detectable_ratio")) ?
			       maybe(json_object_get(e, "detectable_ratio"), "%.2gx", b,
				     sizeof(b)) :
			       "none up to 1000x");
	printf("  sequential likelihood ratio %.3g, fails at %.3g\n", real(e, "lr"),
	       real(e, "lr_threshold"));
}

/*
 * A verdict's count of canaries, baselines or unmatched hosts: its side's
 * "hosts" (its "unmatched_hosts"), or, in verdicts stored before verdicts
 * named at most GATES_HOSTS_NAMED of each, the length of the list.
 */
static long long hosts(json_t *d, json_t *side, const char *list)
{
	json_t *n = json_object_get(side, side == d ? "unmatched_hosts" : "hosts");

	return n ? json_integer_value(n) : (long long)json_array_size(json_object_get(d, list));
}

/* The numbers of the last verdict, in lines. */
static void print_numbers(json_t *v)
{
	json_t *d = json_object_get(v, "detail"), *c = json_object_get(d, "canary"),
	       *b = json_object_get(d, "baseline"), *lat, *s, *o;
	const char *key;

	printf("  canaries  %lld hosts, %.3g host-hours, %lld lockups\n", hosts(d, c, "canaries"),
	       real(c, "hours"), num(c, "events"));
	printf("  baselines %lld hosts, %.3g host-hours, %lld lockups\n", hosts(d, b, "baselines"),
	       real(b, "hours"), num(b, "events"));
	if (json_object_get(d, "lockup_p"))
		printf("  lockup rate test p = %.3g\n", real(d, "lockup_p"));
	lat = json_object_get(d, "latency");
	json_object_foreach(lat, key, o)
	{
		printf("  %s: %lld canaries, %lld baselines", key, num(o, "canaries"),
		       num(o, "baselines"));
		if ((s = json_object_get(o, "p99")))
			printf("; p99 p = %.3g, P(slower) = %.2f", real(s, "p"), real(s, "effect"));
		if ((s = json_object_get(o, "max")))
			printf("; max p = %.3g, P(slower) = %.2f", real(s, "p"), real(s, "effect"));
		putchar('\n');
	}
	json_object_foreach(json_object_get(d, "strata"), key, o)
		printf("  stratum %s: %lld canaries, %lld baselines\n", key, num(o, "canaries"),
		       num(o, "baselines"));
	if (hosts(d, d, "unmatched"))
		printf("  unmatched (not compared): %lld canaries\n", hosts(d, d, "unmatched"));
	print_evidence(json_object_get(json_object_get(d, "evidence"), "lockups"));
}

static void print_status(json_t *st)
{
	static const char *const wave_heads[] = { "WAVE",    "TARGET",	"BAKE",
						  "REACHED", "RUNNING", NULL };
	static const char *const verdict_heads[] = { "WHEN", "WAVE",   "VERDICT",
						     "GATE", "REASON", NULL };
	json_t *spec = json_object_get(st, "spec"), *w, *v, *g = json_object_get(st, "gates");
	long long reached, running;
	struct table *t;
	char ago[32], hard[32] = "none";
	size_t i;

	printf("rollout   %s: %s@%lld\n", str(st, "name"), str(spec, "policy"),
	       num(spec, "version"));
	printf("state     %s, wave %lld of %zu since %s\n", str(st, "state"), num(st, "wave") + 1,
	       json_array_size(json_object_get(st, "waves")),
	       out_ago(num(st, "wave_started_ms"), ago, sizeof(ago)));
	printf("reason    %s\n", str(st, "reason"));
	if (json_is_integer(json_object_get(g, "max_hard_lockups")))
		snprintf(hard, sizeof(hard), "%lld", num(g, "max_hard_lockups"));
	printf("gates     detect %gx with power %g (underpowered: %s), lockup_alpha %g, hard_alpha "
	       "%g,\n          min_exposure_h %g, min_hosts %lld, max_hard_lockups %s, holdback "
	       "%lld%%\n\n",
	       real(g, "detect_ratio"), real(g, "power"), str(g, "underpowered"),
	       real(g, "lockup_alpha"), real(g, "hard_alpha"), real(g, "min_exposure_h"),
	       num(g, "min_hosts"), hard, num(g, "holdback_percent"));
	t = table_new(wave_heads);
	json_array_foreach(json_object_get(st, "waves"), i, w)
	{
		wave_counts(st, (unsigned)i, &reached, &running);
		table_cell(t, "%zu%s", i + 1,
			   json_is_true(json_object_get(w, "release")) ? " (release)" : "");
		if (json_object_get(w, "percent"))
			table_cell(t, "%lld%%", num(w, "percent"));
		else
			table_cell(t, "%lld hosts", num(w, "count"));
		table_cell(t, "%llds", num(w, "bake_s"));
		table_cell(t, "%lld", reached);
		table_cell(t, "%lld", running);
	}
	table_print(t, stdout, cli.color);
	if (!json_array_size(json_object_get(st, "verdicts")))
		return;
	putchar('\n');
	t = table_new(verdict_heads);
	json_array_foreach(json_object_get(st, "verdicts"), i, v)
	{
		table_cell(t, "%s", out_ago(num(v, "ts_ms"), ago, sizeof(ago)));
		table_cell(t, "%lld", num(v, "wave") + 1);
		table_state(t, str(v, "verdict"));
		table_cell(t, "%s", str(v, "gate")[0] ? str(v, "gate") : "-");
		table_cell(t, "%s", str(v, "reason"));
	}
	table_print(t, stdout, cli.color);
	printf("\nlast verdict's numbers:\n");
	print_numbers(json_array_get(json_object_get(st, "verdicts"),
				     json_array_size(json_object_get(st, "verdicts")) - 1));
}

static bool finished(const char *state)
{
	return !strcmp(state, "done") || !strcmp(state, "rolled-back") || !strcmp(state, "aborted");
}

static int rollout_status(int argc, char **argv)
{
	bool watch = argc == 3 && !strcmp(argv[2], "--watch");
	char path[256], *name;
	json_t *st = NULL;
	int r;

	if (argc != 2 && !watch)
		return usage("status", "NAME [--watch]");
	name = evhttp_uriencode(argv[1], -1, 0);
	if (!name)
		return EXIT_ERROR;
	snprintf(path, sizeof(path), "/v1/rollouts/status?name=%s", name);
	free(name);
	for (;;) {
		r = remote_call(EVHTTP_REQ_GET, path, NULL, NULL, 0, &st);
		if (r != EXIT_OK)
			return r;
		if (!watch || finished(str(st, "state")))
			break;
		/* on a terminal the status refreshes in place; elsewhere only the end shows */
		if (isatty(STDOUT_FILENO) && !cli.json) {
			printf("\033[H\033[2J");
			print_status(st);
			fflush(stdout);
		}
		json_decref(st);
		sleep(WATCH_S);
	}
	/* a rollout watched to its end says how it ended */
	r = watch && strcmp(str(st, "state"), "done") ? EXIT_REFUSED : EXIT_OK;
	if (cli.json)
		out_json(st, cli.pretty);
	else {
		print_status(st);
		json_decref(st);
	}
	return r;
}

/*
 * A wave's canaries against their baselines over time (GET
 * /v1/rollouts/series): per step and side, the lockups, host-hours and
 * each latency probe's p99.
 */
static int rollout_series(int argc, char **argv)
{
	json_t *reply = NULL, *series, *side, *probes, *p, *when;
	char path[200], ago[32], ns[32];
	const char *probe;
	char *end = NULL;
	long long wave = 0;
	struct table *t;
	size_t i, s, k;
	int r;

	if (argc == 4 && !strcmp(argv[2], "--wave"))
		wave = strtoll(argv[3], &end, 10);
	if ((argc != 2 && argc != 4) || (argc == 4 && (!end || *end || wave < 1)))
		return usage("series", "NAME [--wave K]");
	if (wave)
		snprintf(path, sizeof(path), "/v1/rollouts/series?name=%.64s&wave=%lld", argv[1],
			 wave);
	else
		snprintf(path, sizeof(path), "/v1/rollouts/series?name=%.64s", argv[1]);
	r = remote_get(path, &reply);
	if (r != EXIT_OK || !reply)
		return r;
	series = json_object_get(reply, "series");
	probes = json_object_get(series, "probes");
	printf("rollout %s, wave %lld: canaries against their baselines\n", argv[1],
	       num(reply, "wave") + 1);
	{
		const char *heads[4 + 8 + 1] = { "STEP", "SIDE", "LOCKUPS", "HOST-HOURS" };

		json_array_foreach(probes, k, p) if (k < 8) heads[4 + k] = json_string_value(p);
		heads[4 + (json_array_size(probes) < 8 ? json_array_size(probes) : 8)] = NULL;
		t = table_new(heads);
	}
	json_array_foreach(json_object_get(series, "t"), i, when)
	{
		json_array_foreach(json_object_get(series, "sides"), s, side)
		{
			table_cell(t, "%s", out_ago(json_integer_value(when), ago, sizeof(ago)));
			table_cell(t, "%s", str(side, "name"));
			table_cell(t, "%lld",
				   (long long)json_integer_value(
					   json_array_get(json_object_get(side, "lockups"), i)));
			table_cell(t, "%.3f",
				   json_number_value(
					   json_array_get(json_object_get(side, "hours"), i)));
			json_array_foreach(probes, k, p)
			{
				json_t *v;

				if (k >= 8)
					break;
				probe = json_string_value(p);
				v = json_array_get(
					json_object_get(
						json_object_get(json_object_get(side, "probes"),
								probe),
						"p99_ns"),
					i);
				table_cell(t, "%s",
					   json_is_integer(v) ?
						   out_ns((unsigned long long)json_integer_value(v),
							  ns, sizeof(ns)) :
						   "-");
			}
		}
	}
	table_print(t, stdout, cli.color);
	json_decref(reply);
	return EXIT_OK;
}

static int rollout_archive(int argc, char **argv)
{
	json_t *reply = NULL;
	int r;

	if (argc != 2)
		return usage("archive", "NAME");
	r = remote_json(EVHTTP_REQ_POST, "/v1/rollouts/archive",
			json_pack("{s:s}", "name", argv[1]), &reply);
	if (r != EXIT_OK)
		return r;
	if (cli.json) {
		out_json(reply, cli.pretty);
		return EXIT_OK;
	}
	printf("rollout %s archived: rollout list leaves it out (--all shows it); its hosts keep "
	       "what it decided\n",
	       argv[1]);
	json_decref(reply);
	return EXIT_OK;
}

int do_rollout(int argc, char **argv)
{
	static const struct cmd verbs[] = {
		{ "plan", rollout_plan,
		  "what FILE's waves could detect over the hosts it picks now" },
		{ "start", rollout_start,
		  "create a rollout from FILE and start it, or start NAME" },
		{ "list", rollout_list, "every rollout: state, wave, hosts" },
		{ "status", rollout_status, "waves, gates and verdicts with their numbers" },
		{ "pause", act, "stop promoting (health still rolls back)" },
		{ "resume", act, "promote again" },
		{ "promote", act, "start the next wave now" },
		{ "abort", act, "send every host reached back to the rollback policy" },
		{ "archive", rollout_archive, "a finished rollout out of the lists" },
		{ "series", rollout_series, "a wave's canaries and baselines over time" },
		{ NULL, NULL, NULL },
	};

	return cmd_dispatch("rollout", verbs, argc, argv);
}

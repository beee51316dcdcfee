// SPDX-License-Identifier: GPL-2.0
/* kmemctl: one CLI for the host and the fleet, `kmemctl OBJECT VERB [ARGS]`. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "kmemctl.h"
#include "log.h"
#include "macro.h"
#include "output.h"

struct cli_options cli;

static int do_help(int argc, char **argv);

static int do_version(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	printf("kmemctl %s\n", KMEMCTL_VERSION);
	return EXIT_OK;
}

static const struct cmd objects[] = {
	{ "pki", do_pki, "create the fleet CA and issue certificates" },
	{ "policy", do_policy, "sign, check and upload policies; kmemd's versions" },
	{ "build", do_build, "verify kernel builds: check copies, make and sign records" },
	{ "enroll", do_enroll, "get this host's certificate from kmemd" },
	{ "secret", do_secret, "enrollment secrets on kmemd: create, revoke" },
	{ "status", do_local_status, "this host: the agent, mitigations, probes" },
	{ "facts", do_facts, "this host's kernel, CPUs, memory and labels" },
	{ "mitigation", do_mitigation, "this host's mitigations: list, show, set" },
	{ "probe", do_probe, "this host's probes: list, show, enable, disable" },
	{ "watch", do_watch, "follow this host's reports as JSON lines" },
	{ "disable", do_switch, "kill switch: every mitigation off here, no policy applied" },
	{ "enable", do_switch, "release the kill switch: the policy again" },
	{ "host", do_host, "the fleet's hosts, as kmemd knows them" },
	{ "assignment", do_assignment, "a policy straight to the hosts a selector chooses" },
	{ "rollout", do_rollout, "move a policy across the fleet in waves" },
	{ "fleet", do_fleet, "stop every mitigation everywhere, and resume" },
	{ "telemetry", do_telemetry, "probe latency: across the fleet, or live here" },
	{ "audit", do_audit, "who changed or read what on kmemd" },
	{ "operator", do_operator, "operator certificates: list, revoke" },
	{ "whoami", do_whoami, "this certificate's name and role on kmemd" },
	{ "help", do_help, "show this help" },
	{ "version", do_version, "print the version" },
};

static void list_cmds(FILE *out, const struct cmd *cmds, size_t n)
{
	for (size_t i = 0; i < n && cmds[i].name; i++)
		fprintf(out, "  %-10s %s\n", cmds[i].name, cmds[i].help);
}

static int do_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	printf("usage: kmemctl [OPTIONS] OBJECT VERB [ARGS]\n\nobjects:\n");
	list_cmds(stdout, objects, ARRAY_SIZE(objects));
	printf("\noptions:\n"
	       "  -j, --json         JSON output (with a \"schema\" version)\n"
	       "  -p, --pretty       indented JSON output\n"
	       "      --color WHEN   auto (a terminal, no NO_COLOR), always or never\n"
	       "  -c, --config FILE  kmemd's address and certificates\n"
	       "                     (default $XDG_CONFIG_HOME/kmemctl/config)\n"
	       "  -s, --server HOST:PORT, --ca FILE, --cert FILE, --key FILE\n"
	       "                     kmemd and the operator certificate, over the config\n"
	       "\n`kmemctl OBJECT help` lists an object's verbs; kmemctl(8) has the rest.\n");
	return EXIT_OK;
}

int cmd_dispatch(const char *object, const struct cmd *cmds, int argc, char **argv)
{
	size_t n = 0;

	/* argv[0] is the object; the verb follows */
	argc--;
	argv++;
	while (cmds[n].name)
		n++;
	if (argc < 1) {
		fprintf(stderr, "kmemctl %s: missing verb; one of:\n", object);
		list_cmds(stderr, cmds, n);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[0], "help") || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) {
		printf("usage: kmemctl [OPTIONS] %s VERB [ARGS]\n\nverbs:\n", object);
		list_cmds(stdout, cmds, n);
		return EXIT_OK;
	}
	for (size_t i = 0; i < n; i++)
		if (strcmp(cmds[i].name, argv[0]) == 0)
			return cmds[i].fn(argc, argv);
	fprintf(stderr, "kmemctl %s: unknown verb '%s'; one of:\n", object, argv[0]);
	list_cmds(stderr, cmds, n);
	return EXIT_USAGE;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "pretty", no_argument, NULL, 'p' },
		{ "color", required_argument, NULL, 'C' },
		{ "config", required_argument, NULL, 'c' },
		{ "server", required_argument, NULL, 's' },
		{ "ca", required_argument, NULL, 'A' },
		{ "cert", required_argument, NULL, 'E' },
		{ "key", required_argument, NULL, 'K' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	const char *color = NULL;
	int c;

	log_setup("kmemctl", LOG_TARGET_STDERR);
	opterr = 0;
	/* "+": options end at the object; the verbs have their own */
	while ((c = getopt_long(argc, argv, "+jpc:s:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			cli.json = true;
			break;
		case 'p':
			cli.json = cli.pretty = true;
			break;
		case 'C':
			if (strcmp(optarg, "auto") && strcmp(optarg, "always") &&
			    strcmp(optarg, "never")) {
				fprintf(stderr, "kmemctl: --color %s: want auto, always or never\n",
					optarg);
				return EXIT_USAGE;
			}
			color = optarg;
			break;
		case 'c':
			cli.config = optarg;
			break;
		case 's':
			cli.server = optarg;
			break;
		case 'A':
			cli.ca = optarg;
			break;
		case 'E':
			cli.cert = optarg;
			break;
		case 'K':
			cli.key = optarg;
			break;
		case 'h':
			return do_help(0, NULL);
		case 'V':
			return do_version(0, NULL);
		default:
			fprintf(stderr, "kmemctl: unknown option '%s'; `kmemctl help` lists them\n",
				argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	out_color_setup(color, &cli.color);
	argc -= optind;
	argv += optind;
	if (argc < 1) {
		do_help(0, NULL);
		return EXIT_USAGE;
	}
	for (size_t i = 0; i < ARRAY_SIZE(objects); i++)
		if (strcmp(objects[i].name, argv[0]) == 0)
			return objects[i].fn(argc, argv);
	fprintf(stderr, "kmemctl: unknown object '%s'; one of:\n", argv[0]);
	list_cmds(stderr, objects, ARRAY_SIZE(objects));
	return EXIT_USAGE;
}

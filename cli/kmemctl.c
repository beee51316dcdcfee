// SPDX-License-Identifier: GPL-2.0
/* kmemctl: one CLI for the host and the fleet, `kmemctl OBJECT VERB [ARGS]`. */
#include <stdio.h>
#include <string.h>

#include "kmemctl.h"
#include "log.h"
#include "macro.h"

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
	{ "policy", do_policy, "create signing keys, sign and verify policy bundles" },
	{ "enroll", do_enroll, "get this host's certificate from kmemd" },
	{ "status", do_local_status, "this host: the agent, mitigations, probes" },
	{ "mitigation", do_mitigation, "set a mitigation on this host" },
	{ "probe", do_probe, "set a probe on this host" },
	{ "watch", do_watch, "follow this host's reports as JSON lines" },
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
	printf("usage: kmemctl OBJECT VERB [ARGS]\n\nobjects:\n");
	list_cmds(stdout, objects, ARRAY_SIZE(objects));
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
	for (size_t i = 0; i < n; i++)
		if (strcmp(cmds[i].name, argv[0]) == 0)
			return cmds[i].fn(argc, argv);
	fprintf(stderr, "kmemctl %s: unknown verb '%s'; one of:\n", object, argv[0]);
	list_cmds(stderr, cmds, n);
	return EXIT_USAGE;
}

int main(int argc, char **argv)
{
	log_setup("kmemctl", LOG_TARGET_STDERR);
	if (argc < 2) {
		do_help(0, NULL);
		return EXIT_USAGE;
	}
	for (size_t i = 0; i < ARRAY_SIZE(objects); i++)
		if (strcmp(objects[i].name, argv[1]) == 0)
			return objects[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "kmemctl: unknown object '%s'; one of:\n", argv[1]);
	list_cmds(stderr, objects, ARRAY_SIZE(objects));
	return EXIT_USAGE;
}

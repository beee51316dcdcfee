/* SPDX-License-Identifier: GPL-2.0 */
#ifndef KMEMCTL_CLI_H
#define KMEMCTL_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "exit-codes.h"

struct keyring;

/* The options before the object, for every object. */
struct cli_options {
	bool json, pretty; /* -j, -p (implies -j) */
	bool color; /* out_color_setup() */
	const char *config; /* --config: kmemd's address and certificates */
	const char *server, *ca, *cert, *key; /* override the config */
};

extern struct cli_options cli;

struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
};

/*
 * Run the verb of argv[1] (argv[0] is the object) from cmds, with the
 * verb as its argv[0]; helpful errors list the valid ones.
 */
int cmd_dispatch(const char *object, const struct cmd *cmds, int argc, char **argv);

int do_pki(int argc, char **argv);
int do_enroll(int argc, char **argv);
int do_secret(int argc, char **argv);
int do_policy(int argc, char **argv);
int do_local_status(int argc, char **argv);
int do_mitigation(int argc, char **argv);
int do_probe(int argc, char **argv);
int do_watch(int argc, char **argv);
int do_facts(int argc, char **argv);
int do_switch(int argc, char **argv);
int local_telemetry_watch(int argc, char **argv);
/* policies.c: kmemctl policy's verbs against kmemd. */
int policy_create(int argc, char **argv);
int policy_list(int argc, char **argv);
int policy_show(int argc, char **argv);
int policy_diff(int argc, char **argv);
int policy_retire(int argc, char **argv);
int do_host(int argc, char **argv);
int do_rollout(int argc, char **argv);
int do_telemetry(int argc, char **argv);
int do_build(int argc, char **argv);
/* access.c: who may do what on kmemd, and who did. */
int do_whoami(int argc, char **argv);
int do_audit(int argc, char **argv);
int do_operator(int argc, char **argv);
/* fleet.c: the fleet-wide stop. */
int do_fleet(int argc, char **argv);
int do_assignment(int argc, char **argv);
/*
 * Write data to path ("-" or NULL: stdout) through a temporary file renamed
 * over it, so readers never see half of it.
 */
int write_out(const char *path, const void *data, size_t len);
/*
 * `-K KEYS_DIR BUNDLE` of the verify verbs: the keys (at least one) into kr
 * and the bundle into buf; -EINVAL for a usage error, another error once
 * logged (kr then freed).
 */
int read_signed(int argc, char **argv, struct keyring *kr, char **buf, size_t *len);

#endif

/* SPDX-License-Identifier: GPL-2.0 */
#ifndef KMEMCTL_CLI_H
#define KMEMCTL_CLI_H

/* Exit codes, documented in kmemctl(8). */
enum {
	EXIT_OK = 0,
	EXIT_ERROR = 1,
	EXIT_USAGE = 2,
	EXIT_UNREACHABLE = 3,
	EXIT_REFUSED = 4,
};

struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
};

/* Run the verb of argv[0] from cmds; helpful errors list the valid ones. */
int cmd_dispatch(const char *object, const struct cmd *cmds, int argc, char **argv);

int do_pki(int argc, char **argv);

#endif

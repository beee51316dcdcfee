// SPDX-License-Identifier: GPL-2.0
/*
 * ifdesc: the module's interface as its one description says
 * (kmod/uapi/kmemctl.h), for the tests to hold the loaded module to:
 *
 *   ifdesc
 *
 * prints, each list in its order,
 *   mitigation <id>
 *   param <mitigation> <key> <default> <min> <max>
 *   state <state>
 *   probe <id> <second histogram, or ->
 */
#include "common.h"
#include "kmemctl-names.h"

const char *prog = "ifdesc";

int main(int argc, char **argv)
{
	const struct kmemctl_param *p = kmemctl_params();
	unsigned int i;

	(void)argv;
	if (argc != 1)
		usage_error("takes no arguments");
	for (i = 0; i < KMEMCTL_MIT_COUNT; i++)
		printf("mitigation %s\n", kmemctl_mitigation_name(i));
	for (i = 0; i < KMEMCTL_PARAM_COUNT; i++)
		printf("param %s %s %llu %llu %llu\n", kmemctl_mitigation_name(p[i].mitigation),
		       p[i].key, p[i].def, p[i].min, p[i].max);
	for (i = 0; i < KMEMCTL_STATE_COUNT; i++)
		printf("state %s\n", kmemctl_state_name(i));
	for (i = 0; i < KMEMCTL_PROBE_COUNT; i++)
		printf("probe %s %s\n", kmemctl_probe_name(i),
		       *kmemctl_probe_second(i) ? kmemctl_probe_second(i) : "-");
	return fflush(stdout) ? 1 : 0;
}

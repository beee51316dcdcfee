// SPDX-License-Identifier: GPL-2.0
/*
 * server-order KEY SERVERS: the order in which a host named KEY uses the
 * kmemd of SERVERS ("host:port,..." as an agent's [agent] server), as
 * indexes into SERVERS from 0, one per line: for tests to name hosts that
 * start on a given kmemd.
 */
#include <stdint.h>
#include <stdio.h>

#include "hostport.h"

int main(int argc, char **argv)
{
	struct hostport hp[HOSTPORT_LIST_MAX];
	uint8_t order[HOSTPORT_LIST_MAX];
	size_t n;

	if (argc != 3 || hostport_list(argv[2], hp, HOSTPORT_LIST_MAX, &n) < 0) {
		fprintf(stderr, "usage: server-order KEY HOST:PORT[,HOST:PORT...]\n");
		return 2;
	}
	hostport_order(argv[1], hp, n, order);
	for (size_t i = 0; i < n; i++)
		printf("%u\n", order[i]);
	return 0;
}

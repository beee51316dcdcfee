/* SPDX-License-Identifier: GPL-2.0 */
#ifndef KMEMCTL_HOSTPORT_H
#define KMEMCTL_HOSTPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Split "host:port" or "[v6addr]:port" from a config file. Port 0 is taken
 * only with allow_zero (listen on any free port). -EINVAL on anything else.
 */
int hostport_split(const char *s, char *host, size_t size, uint16_t *port, bool allow_zero);

/* Addresses of kmemd a client may use. */
#define HOSTPORT_LIST_MAX 8

struct hostport {
	char host[256];
	uint16_t port;
};

/*
 * One or more "host:port" separated by commas (blanks around each
 * ignored), none twice: n in out. -EINVAL when one is not host:port or is
 * empty, -E2BIG past max.
 */
int hostport_list(const char *s, struct hostport *out, size_t max, size_t *n);

/*
 * The order in which the client named key (a host's id) uses the n
 * addresses of hp: order[0] first, order[1] when it fails, and so on. By
 * rendezvous hashing of key with each address: a fleet spreads evenly over
 * the addresses, the hosts of one that fails spread evenly over the others
 * (not all onto the one after it), and an address added to the list takes
 * hosts only for itself. n is at most HOSTPORT_LIST_MAX.
 */
void hostport_order(const char *key, const struct hostport *hp, size_t n, uint8_t *order);
/*
 * Reports sent elsewhere before a client that left order[0] tries it
 * again: without it, hosts never went back to a kmemd that had been down
 * or slow, and the survivors of a failure filled up while it stood idle
 * (at 100,000 hosts on seven kmemd, past their max_connections).
 */
#define HOSTPORT_FAILBACK_REPORTS 10

#endif

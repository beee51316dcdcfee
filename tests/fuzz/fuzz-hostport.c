// SPDX-License-Identifier: GPL-2.0
/*
 * hostport_split(), for "host:port" from configuration files and the
 * command line. What it accepts must come back the same when written out
 * again: "[host]:port" when the host has a ':' or starts with '['. And
 * hostport_list(), for kmemd's addresses: each it takes is one
 * hostport_split() takes, none twice, within the list's bound.
 */
#include <string.h>

#include "fuzz.h"
#include "hostport.h"

static void check(const char *s, bool allow_zero)
{
	char host[64], again[64], text[96];
	uint16_t port, port2;

	if (hostport_split(s, host, sizeof(host), &port, allow_zero) < 0)
		return;
	FUZZ_CHECK(host[0] != '\0');
	FUZZ_CHECK(port || allow_zero);
	if (strchr(host, ':') || host[0] == '[')
		snprintf(text, sizeof(text), "[%s]:%u", host, port);
	else
		snprintf(text, sizeof(text), "%s:%u", host, port);
	FUZZ_CHECK(hostport_split(text, again, sizeof(again), &port2, allow_zero) == 0);
	FUZZ_CHECK(!strcmp(host, again) && port == port2);
}

static void check_list(const char *s)
{
	struct hostport hp[HOSTPORT_LIST_MAX];
	char text[300], host[256];
	uint16_t port;
	size_t n;

	if (hostport_list(s, hp, HOSTPORT_LIST_MAX, &n) < 0)
		return;
	FUZZ_CHECK(n >= 1 && n <= HOSTPORT_LIST_MAX);
	for (size_t i = 0; i < n; i++) {
		FUZZ_CHECK(hp[i].host[0] && hp[i].port);
		if (strchr(hp[i].host, ':') || hp[i].host[0] == '[')
			snprintf(text, sizeof(text), "[%.255s]:%u", hp[i].host, hp[i].port);
		else
			snprintf(text, sizeof(text), "%.255s:%u", hp[i].host, hp[i].port);
		FUZZ_CHECK(hostport_split(text, host, sizeof(host), &port, false) == 0);
		FUZZ_CHECK(!strcmp(host, hp[i].host) && port == hp[i].port);
		for (size_t j = 0; j < i; j++)
			FUZZ_CHECK(hp[j].port != hp[i].port || strcmp(hp[j].host, hp[i].host));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_string(data, size);

	check(s, false);
	check(s, true);
	check_list(s);
	free(s);
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * hostport_split(), for "host:port" from configuration files and the
 * command line. What it accepts must come back the same when written out
 * again: "[host]:port" when the host has a ':' or starts with '['.
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_string(data, size);

	check(s, false);
	check(s, true);
	free(s);
	return 0;
}

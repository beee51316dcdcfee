// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hostport.h"

int hostport_split(const char *s, char *host, size_t size, uint16_t *port, bool allow_zero)
{
	const char *colon = s ? strrchr(s, ':') : NULL, *h = s;
	size_t len;
	char *end;
	long p;

	if (!colon || colon == s)
		return -EINVAL;
	len = (size_t)(colon - s);
	if (s[0] == '[') {
		if (colon[-1] != ']' || len < 3)
			return -EINVAL;
		h = s + 1;
		len -= 2;
	} else if (memchr(s, ':', len)) {
		return -EINVAL; /* a bare IPv6 address needs brackets */
	}
	if (len >= size)
		return -EINVAL;
	if (colon[1] < '0' || colon[1] > '9')
		return -EINVAL;
	p = strtol(colon + 1, &end, 10);
	if (*end || p > 65535 || (p == 0 && !allow_zero))
		return -EINVAL;
	memcpy(host, h, len);
	host[len] = '\0';
	*port = (uint16_t)p;
	return 0;
}

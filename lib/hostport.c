// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
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

int hostport_list(const char *s, struct hostport *out, size_t max, size_t *n)
{
	char item[300];
	const char *p = s, *end;
	size_t len;

	*n = 0;
	if (!s)
		return -EINVAL;
	for (;;) {
		p += strspn(p, " \t");
		end = p + strcspn(p, ",");
		len = (size_t)(end - p);
		while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			len--;
		if (!len || len >= sizeof(item))
			return -EINVAL;
		if (*n == max)
			return -E2BIG;
		memcpy(item, p, len);
		item[len] = '\0';
		if (hostport_split(item, out[*n].host, sizeof(out[*n].host), &out[*n].port, false) <
		    0)
			return -EINVAL;
		for (size_t i = 0; i < *n; i++)
			if (out[i].port == out[*n].port && !strcmp(out[i].host, out[*n].host))
				return -EINVAL;
		(*n)++;
		if (!*end)
			return 0;
		p = end + 1;
	}
}

/* FNV-1a over s and its terminating NUL, continuing from h. */
static uint64_t fnv1a(uint64_t h, const char *s)
{
	do
		h = (h ^ (uint8_t)*s) * 0x100000001b3ULL;
	while (*s++);
	return h;
}

/* A 64-bit finaliser (MurmurHash3's): FNV's low bits alone spread poorly. */
static uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	return h ^ (h >> 33);
}

void hostport_order(const char *key, const struct hostport *hp, size_t n, uint8_t *order)
{
	uint64_t w[HOSTPORT_LIST_MAX], k = fnv1a(0xcbf29ce484222325ULL, key);
	size_t i, j;
	char port[8];

	for (i = 0; i < n && i < HOSTPORT_LIST_MAX; i++) {
		snprintf(port, sizeof(port), "%u", hp[i].port);
		w[i] = mix(fnv1a(fnv1a(k, hp[i].host), port));
		/* by weight, heaviest first: an insertion sort of at most 8 */
		for (j = i; j > 0 && w[order[j - 1]] < w[i]; j--)
			order[j] = order[j - 1];
		order[j] = (uint8_t)i;
	}
}

// SPDX-License-Identifier: GPL-2.0
/*
 * Writes kmemctl's bash completion from its template, with @MITIGATIONS@
 * and @PROBES@ replaced by the module's ids from the interface's one
 * description (kmod/uapi/kmemctl.h), so completion offers what the module
 * has. Run by the build:
 *   completion-gen TEMPLATE OUTPUT
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kmemctl-names.h"

static const char *mitigation(unsigned int i)
{
	return kmemctl_mitigation_name(i);
}

static const char *probe(unsigned int i)
{
	return kmemctl_probe_name(i);
}

static const struct {
	const char *token;
	const char *(*name)(unsigned int i);
} lists[] = {
	{ "@MITIGATIONS@", mitigation },
	{ "@PROBES@", probe },
};

/* The template with every token replaced; 1 if a token is missing from it. */
static int expand(FILE *in, FILE *out)
{
	unsigned int found = 0, i, k;
	char line[4096];
	const char *at;
	char *p;

	while (fgets(line, sizeof(line), in)) {
		for (p = line; *p;) {
			for (k = 0; k < sizeof(lists) / sizeof(lists[0]); k++)
				if (!strncmp(p, lists[k].token, strlen(lists[k].token)))
					break;
			if (k == sizeof(lists) / sizeof(lists[0])) {
				at = strchr(p + 1, '@');
				fwrite(p, 1, at ? (size_t)(at - p) : strlen(p), out);
				p += at ? (size_t)(at - p) : strlen(p);
				continue;
			}
			for (i = 0; lists[k].name(i); i++)
				fprintf(out, "%s%s", i ? " " : "", lists[k].name(i));
			found |= 1u << k;
			p += strlen(lists[k].token);
		}
	}
	for (k = 0; k < sizeof(lists) / sizeof(lists[0]); k++)
		if (!(found & 1u << k)) {
			fprintf(stderr, "completion-gen: the template lacks %s\n", lists[k].token);
			return 1;
		}
	return 0;
}

int main(int argc, char **argv)
{
	FILE *in, *out;
	int r;

	if (argc != 3) {
		fprintf(stderr, "usage: completion-gen TEMPLATE OUTPUT\n");
		return 2;
	}
	in = fopen(argv[1], "r");
	if (!in) {
		fprintf(stderr, "completion-gen: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	out = fopen(argv[2], "w");
	if (!out) {
		fprintf(stderr, "completion-gen: %s: %s\n", argv[2], strerror(errno));
		fclose(in);
		return 1;
	}
	r = expand(in, out);
	if (ferror(in) || fclose(out)) {
		fprintf(stderr, "completion-gen: writing %s failed\n", argv[2]);
		r = 1;
	}
	fclose(in);
	if (r)
		remove(argv[2]);
	return r;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * /proc/interrupts' TLB row and /proc/pressure/memory (procstat.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "procstat.h"

/* A big host's /proc/interrupts runs to megabytes: read it a line at a time. */
int procstat_tlb_shootdowns(const struct rootfs *rfs, uint64_t *total)
{
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_free_ char *line = NULL;
	unsigned long long v;
	unsigned int cpus = 0, i;
	size_t cap = 0;
	char *p, *end;
	int fd;

	fd = rootfs_open(rfs, "/proc/interrupts", O_RDONLY);
	if (fd < 0)
		return fd;
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return negative_errno();
	}
	if (getline(&line, &cap, f) < 0)
		return -EBADMSG;
	/* the header names one column per online CPU: "CPU0 CPU1 ..." */
	for (p = strtok(line, " \t\n"); p; p = strtok(NULL, " \t\n")) {
		if (strncmp(p, "CPU", 3))
			return -EBADMSG;
		cpus++;
	}
	if (!cpus)
		return -EBADMSG;
	while (getline(&line, &cap, f) >= 0) {
		p = line + strspn(line, " ");
		if (strncmp(p, "TLB:", 4))
			continue;
		p += 4;
		*total = 0;
		for (i = 0; i < cpus; i++) {
			p += strspn(p, " ");
			/* strtoull() would take "-1" */
			if (*p < '0' || *p > '9')
				return -EBADMSG;
			errno = 0;
			v = strtoull(p, &end, 10);
			if (end == p || errno || (*end != ' ' && *end != '\n' && *end != '\0'))
				return -EBADMSG;
			*total += v;
			p = end;
		}
		return 0;
	}
	return -ENOENT;
}

/* "avg10=1.25" -> 125; the kernel prints two decimals. */
static int parse_avg10(const char *line, const char *kind, uint32_t *out)
{
	unsigned int whole, frac;
	const char *p;
	int n = 0;

	if (strncmp(line, kind, strlen(kind)))
		return -EBADMSG;
	p = line + strlen(kind);
	if (sscanf(p, " avg10=%u.%2u%n", &whole, &frac, &n) != 2 || n == 0 || whole > 100 ||
	    (p[n] != ' ' && p[n] != '\n' && p[n] != '\0') || p[n - 3] != '.')
		return -EBADMSG;
	*out = whole * 100 + frac;
	return *out > 10000 ? -EBADMSG : 0;
}

int procstat_memory_pressure(const struct rootfs *rfs, uint32_t *some, uint32_t *full)
{
	char buf[256], *nl;
	ssize_t n;
	int r;

	n = rootfs_read(rfs, "/proc/pressure/memory", buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	nl = strchr(buf, '\n');
	if (!nl)
		return -EBADMSG;
	*nl = '\0';
	r = parse_avg10(buf, "some", some);
	if (r < 0)
		return r;
	return parse_avg10(nl + 1, "full", full);
}

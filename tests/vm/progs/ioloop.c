// SPDX-License-Identifier: GPL-2.0
/*
 * ioloop: time repeated reads or writes of one file.
 *
 *   ioloop -n N -b BYTES [-c CPU] PATH
 *   ioloop -n N -w DATA [-c CPU] PATH
 *
 * Opens PATH once and does N pread(fd, buf, BYTES, 0) calls (each one reads
 * the file from its start again: a seq_file is regenerated, a
 * /dev/kmt_usercopy read does its copies), or N pwrite(fd, DATA, len, 0)
 * calls (each a sysfs store, e.g. a kmt_vmalloc run), optionally pinned to
 * CPU. Prints
 *   ops=<n> elapsed_ns=<n>
 * measured with CLOCK_MONOTONIC around the loop. A failed call is an error.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include "common.h"

const char *prog = "ioloop";

static void usage(void)
{
	printf("usage: ioloop -n N {-b BYTES | -w DATA} [-c CPU] PATH\n"
	       "Do N pread()s of up to BYTES bytes, or N pwrite()s of DATA, at offset 0 of\n"
	       "PATH, pinned to CPU if given, and print ops=<n> elapsed_ns=<n>.\n");
}

int main(int argc, char **argv)
{
	uint64_t n = 0, bytes = 0, i, t0, t1;
	long cpu = -1;
	const char *path, *data = NULL;
	char *buf;
	int fd, opt;

	while ((opt = getopt(argc, argv, ":n:b:w:c:h")) != -1) {
		switch (opt) {
		case 'n':
			n = parse_num(optarg, opt, 1, UINT64_C(1000000000000));
			break;
		case 'b':
			bytes = parse_num(optarg, opt, 1, 64 << 20);
			break;
		case 'w':
			data = optarg;
			break;
		case 'c':
			cpu = parse_num(optarg, opt, 0, CPU_SETSIZE - 1);
			break;
		case 'h':
			usage();
			return 0;
		default:
			bad_option(opt);
		}
	}
	if (!n)
		usage_error("-n N is required");
	if (!bytes == !data)
		usage_error("one of -b BYTES and -w DATA is required");
	if (optind + 1 != argc)
		usage_error(optind == argc ? "PATH is required" : "too many arguments");
	path = argv[optind];

	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) < 0) {
			warn_errno(errno, "pin to cpu %ld", cpu);
			return 1;
		}
	}
	buf = data ? strdup(data) : malloc(bytes);
	if (!buf) {
		warn_errno(ENOMEM, "malloc");
		return 1;
	}
	fd = open(path, (data ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
	if (fd < 0) {
		warn_errno(errno, "open %s", path);
		free(buf);
		return 1;
	}
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		ssize_t r = data ? pwrite(fd, buf, strlen(buf), 0) : pread(fd, buf, bytes, 0);

		if (r < 0) {
			warn_errno(errno, "%s %s", data ? "write" : "read", path);
			close(fd);
			free(buf);
			return 1;
		}
	}
	t1 = now_ns();
	printf("ops=%" PRIu64 " elapsed_ns=%" PRIu64 "\n", n, t1 - t0);
	close(fd);
	free(buf);
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * evread: print struct kmemctl_event records read from /dev/kmemctl.
 *
 *   evread [-d PATH] [-t TIMEOUT_MS] [-n COUNT] [-N]
 *	Wait (poll) up to TIMEOUT_MS in all for COUNT records and print one
 *	line per record:
 *	  seq=<n> type=<t> source=<s> cpu=<n> value=<n> threshold=<n> pid=<n> comm=<comm>
 *	and "lost=<n>" before a record whose seq jumps by n + 1 from the
 *	previous one. Exit 0 after COUNT records, 2 on timeout.
 *	-N: O_NONBLOCK reads, no waiting: print up to COUNT records that are
 *	pending, or "empty" if none, and exit 0.
 *   evread [-d PATH] [-t TIMEOUT_MS] [-N] -s SIZE
 *	One read() with a SIZE-byte buffer: print the records it returns and
 *	exit 0, or print "errno=<NAME>" (e.g. errno=EINVAL) and exit 1. A
 *	blocking read is interrupted after TIMEOUT_MS (errno=EINTR, exit 2).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

#include "common.h"
#include "kmemctl-names.h"
#include "uapi/kmemctl.h"

#define REC_SIZE sizeof(struct kmemctl_event)
#define BATCH 64

_Static_assert(sizeof(struct kmemctl_event) == 64, "struct kmemctl_event is 64 bytes");

const char *prog = "evread";

static void usage(void)
{
	printf("usage: evread [-d PATH] [-t TIMEOUT_MS] [-n COUNT] [-N]\n"
	       "       evread [-d PATH] [-t TIMEOUT_MS] [-N] -s SIZE\n"
	       "Print struct kmemctl_event records from PATH (default /dev/kmemctl).\n"
	       "  -t MS    wait at most MS milliseconds in all (default 10000, 0: no wait)\n"
	       "  -n COUNT records to print before exiting 0 (default 1)\n"
	       "  -N       non-blocking: print up to COUNT pending records, or \"empty\"\n"
	       "  -s SIZE  a single read() with a SIZE-byte buffer; on failure print\n"
	       "           errno=<NAME> and exit 1\n"
	       "Exit status: 0 ok, 1 error, 2 timeout or usage error.\n");
}

static const char *type_name(unsigned int type, char *buf, size_t len)
{
	switch (type) {
	case KMEMCTL_EV_THRESHOLD:
		return "threshold";
	case KMEMCTL_EV_TRIP:
		return "trip";
	case KMEMCTL_EV_SOFTLOCKUP:
		return "softlockup";
	case KMEMCTL_EV_RCU_STALL:
		return "rcu-stall";
	case KMEMCTL_EV_LIVEPATCH_STALL:
		return "livepatch-stall";
	}
	snprintf(buf, len, "unknown(%u)", type);
	return buf;
}

static const char *source_name(unsigned int type, unsigned int source, char *buf, size_t len)
{
	const char *name = NULL;

	if (type == KMEMCTL_EV_THRESHOLD)
		name = kmemctl_probe_name(source);
	else if (type == KMEMCTL_EV_TRIP || type == KMEMCTL_EV_LIVEPATCH_STALL)
		name = kmemctl_mitigation_name(source);
	if (name)
		return name;
	snprintf(buf, len, "%u", source);
	return buf;
}

static uint64_t last_seq;

static void print_event(const struct kmemctl_event *ev)
{
	char tbuf[32], sbuf[16], comm[sizeof(ev->comm) + 1];

	if (last_seq && ev->seq > last_seq + 1)
		printf("lost=%llu\n", (unsigned long long)(ev->seq - last_seq - 1));
	last_seq = ev->seq;
	memcpy(comm, ev->comm, sizeof(ev->comm));
	comm[sizeof(ev->comm)] = '\0';
	printf("seq=%llu type=%s source=%s cpu=%u value=%llu threshold=%llu flags=%u pid=%u "
	       "comm=%s\n",
	       (unsigned long long)ev->seq, type_name(ev->type, tbuf, sizeof(tbuf)),
	       source_name(ev->type, ev->source, sbuf, sizeof(sbuf)), ev->cpu,
	       (unsigned long long)ev->value, (unsigned long long)ev->threshold, ev->flags, ev->pid,
	       comm);
}

/* Print the n bytes of records in buf; 0, or -1 if n is not whole records. */
static int print_events(const void *buf, size_t n)
{
	const struct kmemctl_event *ev = buf;

	if (n % REC_SIZE) {
		fprintf(stderr, "%s: read: %zu bytes is not a whole number of records\n", prog, n);
		return -1;
	}
	for (size_t i = 0; i < n / REC_SIZE; i++)
		print_event(&ev[i]);
	return 0;
}

static void on_alarm(int sig)
{
	(void)sig;
}

static int single_read(int fd, size_t size, unsigned int timeout_ms, int nonblock)
{
	void *buf = malloc(size);
	const char *name;
	ssize_t n;
	int err;

	if (!buf) {
		warn_errno(ENOMEM, "malloc");
		return 1;
	}
	if (!nonblock && timeout_ms) {
		struct sigaction sa = { .sa_handler = on_alarm };
		struct itimerval it = {
			.it_value = { .tv_sec = timeout_ms / 1000,
				      .tv_usec = (timeout_ms % 1000) * 1000 },
		};

		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGALRM, &sa, NULL) < 0 || setitimer(ITIMER_REAL, &it, NULL) < 0) {
			warn_errno(errno, "setitimer");
			free(buf);
			return 1;
		}
	}
	n = read(fd, buf, size);
	err = errno;
	if (n < 0) {
		name = strerrorname_np(err);
		if (name)
			printf("errno=%s\n", name);
		else
			printf("errno=%d\n", err);
		free(buf);
		return err == EINTR ? 2 : 1;
	}
	if (n == 0) {
		fprintf(stderr, "%s: read: unexpected end of file\n", prog);
		free(buf);
		return 1;
	}
	err = print_events(buf, n);
	free(buf);
	return err ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *path = "/dev/kmemctl";
	unsigned int timeout_ms = 10000;
	unsigned int count = 1, got = 0;
	struct kmemctl_event buf[BATCH];
	size_t size = 0;
	uint64_t deadline;
	int nonblock = 0;
	int fd, opt;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, ":d:t:n:Ns:h")) != -1) {
		switch (opt) {
		case 'd':
			path = optarg;
			break;
		case 't':
			timeout_ms = parse_num(optarg, opt, 0, 86400000);
			break;
		case 'n':
			count = parse_num(optarg, opt, 1, 100000000);
			break;
		case 'N':
			nonblock = 1;
			break;
		case 's':
			size = parse_num(optarg, opt, 1, 1 << 20);
			break;
		case 'h':
			usage();
			return 0;
		default:
			bad_option(opt);
		}
	}
	if (optind != argc)
		usage_error("unexpected argument '%s'", argv[optind]);

	fd = open(path, O_RDONLY | O_CLOEXEC | (nonblock ? O_NONBLOCK : 0));
	if (fd < 0) {
		warn_errno(errno, "open %s", path);
		return 1;
	}
	if (size)
		return single_read(fd, size, timeout_ms, nonblock);

	deadline = now_ns() + (uint64_t)timeout_ms * 1000000u;
	while (got < count) {
		unsigned int want = count - got < BATCH ? count - got : BATCH;
		ssize_t n;

		if (!nonblock) {
			struct pollfd pfd = { .fd = fd, .events = POLLIN };
			uint64_t now = now_ns();
			int ms = now < deadline ? (int)((deadline - now + 999999) / 1000000) : 0;
			int r = poll(&pfd, 1, ms);

			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0) {
				warn_errno(errno, "poll %s", path);
				return 1;
			}
			if (r == 0) {
				fprintf(stderr, "%s: timeout: %u of %u records after %u ms\n", prog,
					got, count, timeout_ms);
				return 2;
			}
		}
		n = read(fd, buf, want * REC_SIZE);
		if (n < 0 && errno == EAGAIN && nonblock)
			break;
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n < 0) {
			warn_errno(errno, "read %s", path);
			return 1;
		}
		if (n == 0) {
			fprintf(stderr, "%s: read %s: unexpected end of file\n", prog, path);
			return 1;
		}
		if (print_events(buf, n))
			return 1;
		got += n / REC_SIZE;
	}
	if (got == 0)
		printf("empty\n");
	return 0;
}

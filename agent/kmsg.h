/* SPDX-License-Identifier: GPL-2.0 */
/*
 * /dev/kmsg records, and the lockup and stall reports assembled from them.
 *
 * A record is "<prio>,<seq>,<ts_usec>,<flags>[,...];<text>" followed by
 * optional " KEY=value" dictionary lines (Documentation/ABI/testing/
 * dev-kmsg). The parser turns the kernel's multi-record reports (soft and
 * hard lockups, RCU stalls, hung tasks) into one event each: what stalled,
 * on which CPU, for how long, which task, and the top of its stack.
 */
#ifndef KMEM_AGENT_KMSG_H
#define KMEM_AGENT_KMSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kmsg_record {
	unsigned int prio; /* facility << 3 | level */
	uint64_t seq;
	uint64_t ts_us; /* since boot */
	bool cont; /* the flags field says the text continues a line */
	const char *text; /* not NUL-terminated: points into the parsed buffer */
	size_t len;
};

/*
 * The length of the first record in buf: up to its newline and the
 * " KEY=value" lines that go with it. /dev/kmsg gives one record per
 * read(); a pipe standing in for it may give several.
 */
size_t kmsg_record_len(const char *buf, size_t len);

/* Parses one read() of /dev/kmsg: 0, or -EBADMSG when it is not a record. */
int kmsg_record_parse(const char *buf, size_t len, struct kmsg_record *rec);

enum kmsg_kind {
	KMSG_SOFT_LOCKUP = 1,
	KMSG_HARD_LOCKUP,
	KMSG_RCU_STALL,
	KMSG_HUNG_TASK,
};

#define KMSG_STACK_MAX 8
#define KMSG_FRAME_MAX 96
#define KMSG_COMM_MAX 64
#define KMSG_MESSAGE_MAX 512

struct kmsg_event {
	enum kmsg_kind kind;
	uint64_t seq; /* of the record that started it */
	uint64_t ts_us;
	int cpu; /* -1: not said */
	uint64_t duration_ns; /* 0: not said */
	char comm[KMSG_COMM_MAX];
	int pid; /* -1: not said */
	/* innermost first: the RIP, then the reliable frames of the task */
	char stack[KMSG_STACK_MAX][KMSG_FRAME_MAX];
	unsigned int nstack;
	char message[KMSG_MESSAGE_MAX]; /* the line that started it */
};

struct kmsg_parser {
	unsigned int hz; /* CONFIG_HZ, for RCU stalls in jiffies; 0: unknown */
	uint64_t next_seq; /* 0 before the first record */
	uint64_t lost; /* records skipped by the kernel (seq gaps) */
	uint64_t bad; /* reads that were not records */
	bool open; /* an event is being assembled */
	bool in_trace; /* past its "Call Trace:" */
	bool in_irq; /* inside an <IRQ> or <NMI> section of the trace */
	bool rip; /* the RIP frame is stack[0] */
	struct kmsg_event ev;
};

void kmsg_parser_init(struct kmsg_parser *p, unsigned int hz);

/*
 * Feeds one read() of /dev/kmsg. Returns 1 with *out set when the event
 * under assembly is complete (this read ended it or started the next), 0
 * when there is nothing to hand out, -EBADMSG when buf is not a record (it
 * is counted in bad, and the parser goes on with the next).
 */
int kmsg_parser_feed(struct kmsg_parser *p, const char *buf, size_t len, struct kmsg_event *out);

/* Hands out an event still under assembly (at a read timeout): 1, or 0 if none. */
int kmsg_parser_flush(struct kmsg_parser *p, struct kmsg_event *out);

#endif

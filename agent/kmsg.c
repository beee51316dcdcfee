// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/kmsg parsing: records, and the lockup and stall reports they carry.
 *
 * The kernel prints each report as one header line and a dump that follows
 * in separate records: "CPU: N PID: N Comm: ...", "RIP: ...", registers,
 * "Call Trace:", then frames between <TASK> and </TASK>, with the
 * interrupt's own frames in <IRQ> or <NMI> sections and unreliable ones
 * marked "? ". A report ends at "</TASK>", at the next report, or when the
 * caller flushes after a quiet spell. Control characters arrive escaped
 * as \xNN (a tab in RCU's lines is "\x09").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kmsg.h"

#define LINE_MAX_BYTES 2048
/* PID_MAX_LIMIT; no kernel has more CPUs either */
#define ID_MAX 4194304
/* the most seconds that still fit in duration_ns */
#define SECS_MAX (UINT64_MAX / 1000000000ULL)

/* Decimal digits at *s up to a delimiter; advances *s past them. */
static int parse_u64(const char **s, const char *end, uint64_t *v)
{
	const char *p = *s;
	uint64_t x = 0;

	if (p == end || *p < '0' || *p > '9')
		return -EBADMSG;
	for (; p < end && *p >= '0' && *p <= '9'; p++) {
		if (x > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return -EBADMSG;
		x = x * 10 + (uint64_t)(*p - '0');
	}
	*s = p;
	*v = x;
	return 0;
}

/*
 * The number at s, at most max: where its digits end, or NULL. Unlike
 * sscanf()'s %u, no sign, no space, no overflow and no wrap to a negative
 * int (a CPU of 4000000001 became one: fuzz-kmsg).
 */
static const char *number(const char *s, uint64_t max, uint64_t *v)
{
	return parse_u64(&s, s + strlen(s), v) == 0 && *v <= max ? s : NULL;
}

/* s past prefix, or NULL when s does not start with it. */
static const char *skip(const char *s, const char *prefix)
{
	size_t n = strlen(prefix);

	return s && !strncmp(s, prefix, n) ? s + n : NULL;
}

size_t kmsg_record_len(const char *buf, size_t len)
{
	const char *nl = memchr(buf, '\n', len);

	while (nl && (size_t)(nl + 1 - buf) < len && nl[1] == ' ')
		nl = memchr(nl + 1, '\n', len - (size_t)(nl + 1 - buf));
	return nl ? (size_t)(nl + 1 - buf) : len;
}

int kmsg_record_parse(const char *buf, size_t len, struct kmsg_record *rec)
{
	const char *p = buf, *end = buf + len, *semi, *nl;
	uint64_t prio;

	semi = memchr(buf, ';', len);
	if (!semi)
		return -EBADMSG;
	if (parse_u64(&p, semi, &prio) < 0 || prio > 1023 || p == semi || *p++ != ',')
		return -EBADMSG;
	if (parse_u64(&p, semi, &rec->seq) < 0 || p == semi || *p++ != ',')
		return -EBADMSG;
	if (parse_u64(&p, semi, &rec->ts_us) < 0 || p == semi || *p++ != ',')
		return -EBADMSG;
	/* flags: '-', 'c' (begins a continued line) or '+' (continues one) */
	if (p == semi || (*p != '-' && *p != 'c' && *p != '+'))
		return -EBADMSG;
	rec->cont = *p == '+';
	p++;
	/* newer kernels add fields such as ",caller=T1" before the ';' */
	if (p != semi && *p != ',')
		return -EBADMSG;
	rec->prio = (unsigned int)prio;
	rec->text = semi + 1;
	nl = memchr(rec->text, '\n', (size_t)(end - rec->text));
	rec->len = (size_t)((nl ? nl : end) - rec->text);
	return 0;
}

void kmsg_parser_init(struct kmsg_parser *p, unsigned int hz)
{
	*p = (struct kmsg_parser){ .hz = hz };
}

static void copy_bounded(char *dst, size_t size, const char *src, size_t len)
{
	if (len >= size)
		len = size - 1;
	memcpy(dst, src, len);
	dst[len] = '\0';
}

/* "comm:pid" with the pid after the last ':', as the kernel prints "%s:%d". */
static void set_task(struct kmsg_event *ev, const char *s, size_t len)
{
	const char *colon = NULL, *q;
	uint64_t pid;

	for (q = s; q < s + len; q++)
		if (*q == ':')
			colon = q;
	if (!colon || colon == s)
		return;
	q = colon + 1;
	if (parse_u64(&q, s + len, &pid) < 0 || q != s + len || pid > ID_MAX)
		return;
	copy_bounded(ev->comm, sizeof(ev->comm), s, (size_t)(colon - s));
	ev->pid = (int)pid;
}

static void begin(struct kmsg_parser *p, enum kmsg_kind kind, const struct kmsg_record *rec,
		  const char *line)
{
	p->ev = (struct kmsg_event){
		.kind = kind, .seq = rec->seq, .ts_us = rec->ts_us, .cpu = -1, .pid = -1
	};
	copy_bounded(p->ev.message, sizeof(p->ev.message), line, strlen(line));
	p->open = true;
	p->in_trace = false;
	p->in_irq = false;
	p->rip = false;
}

static const char *after(const char *line, const char *needle)
{
	const char *s = strstr(line, needle);

	return s ? s + strlen(needle) : NULL;
}

/* Starts an event when line is a report's header; true if it did. */
static bool header(struct kmsg_parser *p, const struct kmsg_record *rec, const char *line)
{
	const char *s, *open, *close, *q;
	uint64_t cpu, secs;

	if ((s = after(line, "BUG: soft lockup - CPU#"))) {
		begin(p, KMSG_SOFT_LOCKUP, rec, line);
		/* "3 stuck for 22s! [comm:pid]" */
		if ((q = number(s, ID_MAX, &cpu)) && (q = skip(q, " stuck for ")) &&
		    (q = number(q, SECS_MAX, &secs)) && *q == 's') {
			p->ev.cpu = (int)cpu;
			p->ev.duration_ns = secs * 1000000000ULL;
		}
		open = strchr(s, '[');
		close = open ? strrchr(open, ']') : NULL;
		if (close)
			set_task(&p->ev, open + 1, (size_t)(close - open - 1));
		return true;
	}
	if ((s = after(line, "Watchdog detected hard LOCKUP on cpu "))) {
		begin(p, KMSG_HARD_LOCKUP, rec, line);
		if (number(s, ID_MAX, &cpu))
			p->ev.cpu = (int)cpu;
		return true;
	}
	if (strstr(line, "rcu: INFO: ") &&
	    (strstr(line, "detected stall") || strstr(line, "detected expedited stall"))) {
		begin(p, KMSG_RCU_STALL, rec, line);
		return true;
	}
	if ((s = after(line, "INFO: task ")) && (close = strstr(s, " blocked for more than "))) {
		begin(p, KMSG_HUNG_TASK, rec, line);
		set_task(&p->ev, s, (size_t)(close - s));
		if (number(close + strlen(" blocked for more than "), SECS_MAX, &secs))
			p->ev.duration_ns = secs * 1000000000ULL;
		return true;
	}
	return false;
}

/* A frame token "func+0x1a/0x40": letters, digits, _ . $ then +0x../0x.. */
static size_t frame_len(const char *s)
{
	const char *q = s, *plus;

	while ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') ||
	       *q == '_' || *q == '.' || *q == '$')
		q++;
	if (q == s || strncmp(q, "+0x", 3))
		return 0;
	plus = q;
	q += 3;
	while ((*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'f'))
		q++;
	if (q == plus + 3 || strncmp(q, "/0x", 3))
		return 0;
	q += 3;
	while ((*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'f'))
		q++;
	if (q[-1] == 'x' || (*q && *q != ' '))
		return 0;
	return (size_t)(q - s);
}

static void push_frame(struct kmsg_event *ev, const char *s, size_t len)
{
	if (ev->nstack == KMSG_STACK_MAX)
		return;
	copy_bounded(ev->stack[ev->nstack++], KMSG_FRAME_MAX, s, len);
}

/* The rest of a report; true when it completes the event. */
static bool detail(struct kmsg_parser *p, const char *line)
{
	struct kmsg_event *ev = &p->ev;
	const char *s = line, *q, *c;
	uint64_t cpu, pid, t;
	size_t len;

	while (*s == ' ')
		s++;
	if ((q = after(line, "CPU: ")) && strstr(q, " PID: ") && strstr(q, " Comm: ")) {
		/* "CPU: 0 PID: 106 Comm: sh Tainted: ..." */
		if ((c = number(q, ID_MAX, &cpu)) && (c = skip(c, " PID: ")) &&
		    (c = number(c, ID_MAX, &pid)) && (c = skip(c, " Comm: "))) {
			if (ev->cpu < 0)
				ev->cpu = (int)cpu;
			if (ev->pid < 0) {
				ev->pid = (int)pid;
				copy_bounded(ev->comm, sizeof(ev->comm), c, strcspn(c, " "));
			}
		}
		return false;
	}
	if (!p->in_trace && !p->rip && !strncmp(s, "RIP: ", 5) && (q = strchr(s, ':')) &&
	    (q = strchr(q + 1, ':')) && (len = frame_len(q + 1))) {
		/* "RIP: 0010:func+0x1d8/0xbb0": where the CPU was, innermost */
		push_frame(ev, q + 1, len);
		p->rip = true;
		return false;
	}
	if (!strcmp(s, "Call Trace:")) {
		p->in_trace = true;
		return false;
	}
	/* "(t=750 jiffies ..." or "(detected by 0, t=756 jiffies, ..." */
	if (ev->kind == KMSG_RCU_STALL && ((q = after(line, "(t=")) || (q = after(line, " t="))) &&
	    p->hz && skip(number(q, SECS_MAX, &t), " jiffies") && !ev->duration_ns)
		ev->duration_ns = t * 1000000000ULL / p->hz;
	if (ev->kind == KMSG_RCU_STALL && ev->cpu < 0 && !strncmp(line, "rcu: ", 5)) {
		/* "rcu: \x093-....: (20999 ticks this GP)": the stalled CPU */
		q = line + 5;
		while (*q == ' ' || !strncmp(q, "\\x09", 4))
			q += *q == ' ' ? 1 : 4;
		if ((c = number(q, ID_MAX, &cpu)) && *c == '-')
			ev->cpu = (int)cpu;
	}
	if (!p->in_trace)
		return false;
	if (!strcmp(s, "<IRQ>") || !strcmp(s, "<NMI>")) {
		p->in_irq = true;
	} else if (!strcmp(s, "</IRQ>") || !strcmp(s, "</NMI>")) {
		p->in_irq = false;
	} else if (!strcmp(s, "</TASK>")) {
		return true;
	} else if (!p->in_irq && (len = frame_len(s))) {
		push_frame(ev, s, len);
	}
	return false;
}

static int hand_out(struct kmsg_parser *p, struct kmsg_event *out)
{
	*out = p->ev;
	p->open = false;
	return 1;
}

int kmsg_parser_feed(struct kmsg_parser *p, const char *buf, size_t len, struct kmsg_event *out)
{
	struct kmsg_record rec;
	char line[LINE_MAX_BYTES];
	struct kmsg_event done;
	bool had;

	if (kmsg_record_parse(buf, len, &rec) < 0) {
		p->bad++;
		return -EBADMSG;
	}
	if (p->next_seq && rec.seq > p->next_seq)
		p->lost += rec.seq - p->next_seq;
	if (rec.seq + 1 > p->next_seq)
		p->next_seq = rec.seq + 1;
	/* the kernel escapes control characters, NUL too: one C string */
	copy_bounded(line, sizeof(line), rec.text, rec.len);
	had = p->open;
	if (had)
		done = p->ev;
	if (header(p, &rec, line)) {
		if (!had)
			return 0;
		*out = done;
		return 1;
	}
	if (p->open && detail(p, line))
		return hand_out(p, out);
	return 0;
}

int kmsg_parser_flush(struct kmsg_parser *p, struct kmsg_event *out)
{
	return p->open ? hand_out(p, out) : 0;
}

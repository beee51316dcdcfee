// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/kmsg records through kmsg_parser_feed(), split the way a pipe
 * standing in for /dev/kmsg is split (kmsg_record_len()). Each record gets
 * a buffer of its own size, as one read() does, so ASan sees a read past
 * it. Every event handed out must be within its bounds.
 */
#include <string.h>

#include "fuzz.h"
#include "kmsg.h"

static bool terminated(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}

static void check_event(const struct kmsg_event *ev)
{
	FUZZ_CHECK(ev->kind >= KMSG_SOFT_LOCKUP && ev->kind <= KMSG_HUNG_TASK);
	FUZZ_CHECK(ev->cpu >= -1);
	FUZZ_CHECK(ev->pid >= -1);
	FUZZ_CHECK(ev->nstack <= KMSG_STACK_MAX);
	FUZZ_CHECK(terminated(ev->comm, sizeof(ev->comm)));
	FUZZ_CHECK(terminated(ev->message, sizeof(ev->message)));
	for (unsigned int i = 0; i < ev->nstack; i++)
		FUZZ_CHECK(terminated(ev->stack[i], sizeof(ev->stack[i])) && ev->stack[i][0]);
}

static void feed(struct kmsg_parser *p, const uint8_t *data, size_t len)
{
	char *rec = malloc(len ? len : 1);
	struct kmsg_record r;
	struct kmsg_event ev;

	if (!rec)
		return;
	memcpy(rec, data, len);
	if (kmsg_record_parse(rec, len, &r) == 0) {
		FUZZ_CHECK(r.prio <= 1023);
		FUZZ_CHECK(r.text > rec && r.text + r.len <= rec + len);
		FUZZ_CHECK(!memchr(r.text, '\n', r.len));
	}
	if (kmsg_parser_feed(p, rec, len, &ev) == 1)
		check_event(&ev);
	free(rec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kmsg_parser p;
	struct kmsg_event ev;
	size_t len;

	/* the first byte picks CONFIG_HZ, 0 for unknown, as the agent may not know it */
	kmsg_parser_init(&p, size ? (unsigned int)data[0] * 4 : 250);
	while (size) {
		len = kmsg_record_len((const char *)data, size);
		FUZZ_CHECK(len > 0 && len <= size);
		feed(&p, data, len);
		data += len;
		size -= len;
	}
	if (kmsg_parser_flush(&p, &ev) == 1)
		check_event(&ev);
	return 0;
}

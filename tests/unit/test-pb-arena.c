// SPDX-License-Identifier: GPL-2.0
/*
 * daemon/pb-arena.c: a report unpacked into an arena is the report
 * unpacked with malloc, whatever the arena's first block holds, and every
 * allocation is aligned for any type. The sanitizers check that one free
 * gives all of it back.
 */
#include <setjmp.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kmemctl/v1/report.pb-c.h"
#include "pb-arena.h"

/* A report with strings, submessages and arrays: every kind of allocation unpack makes. */
static uint8_t *packed(size_t *len)
{
	Kmemctl__V1__Report rep = KMEMCTL__V1__REPORT__INIT;
	Kmemctl__V1__HostFacts f = KMEMCTL__V1__HOST_FACTS__INIT;
	Kmemctl__V1__HostFacts__LabelsEntry l = KMEMCTL__V1__HOST_FACTS__LABELS_ENTRY__INIT,
					    *lp[] = { &l, &l, &l };
	Kmemctl__V1__Histogram h = KMEMCTL__V1__HISTOGRAM__INIT;
	Kmemctl__V1__ProbeSample p = KMEMCTL__V1__PROBE_SAMPLE__INIT, *pp[40];
	uint64_t counts[32];
	uint8_t *buf;

	for (size_t i = 0; i < 32; i++)
		counts[i] = i * 7;
	for (size_t i = 0; i < 40; i++)
		pp[i] = &p;
	f.host_id = "web-1";
	f.hostname = "web-1.example";
	l.key = "role";
	l.value = "web";
	f.labels = lp;
	f.n_labels = 3;
	h.counts = counts;
	h.n_counts = 32;
	p.probe = "vmap-purge";
	p.hist = &h;
	rep.facts = &f;
	rep.probes = pp;
	rep.n_probes = 40;
	rep.seq = 9;
	*len = protobuf_c_message_get_packed_size(&rep.base);
	buf = malloc(*len);
	assert_non_null(buf);
	protobuf_c_message_pack(&rep.base, buf);
	return buf;
}

static void test_same_as_malloc(void **state)
{
	static const size_t hints[] = { 0, 1, 100, 4096, 1 << 20 };
	size_t len, i;
	uint8_t *in = packed(&len), *out = malloc(len);

	(void)state;
	assert_non_null(out);
	for (i = 0; i < sizeof(hints) / sizeof(hints[0]); i++) {
		struct pb_arena *a = pb_arena_new(hints[i]);
		ProtobufCMessage *m;

		assert_non_null(a);
		m = protobuf_c_message_unpack(&kmemctl__v1__report__descriptor,
					      pb_arena_allocator(a), len, in);
		assert_non_null(m);
		assert_int_equal(protobuf_c_message_get_packed_size(m), len);
		protobuf_c_message_pack(m, out);
		assert_memory_equal(in, out, len);
		/* a free through the allocator is a no-op; the arena's free ends it */
		protobuf_c_message_free_unpacked(m, pb_arena_allocator(a));
		pb_arena_free(a);
	}
	free(in);
	free(out);
}

static void test_aligned(void **state)
{
	struct pb_arena *a = pb_arena_new(64);

	(void)state;
	assert_non_null(a);
	for (size_t n = 0; n < 5000; n += 7) {
		unsigned char *p = pb_arena_alloc(a, n);

		assert_non_null(p);
		assert_int_equal((uintptr_t)p % alignof(max_align_t), 0);
		memset(p, 0xa5, n);
	}
	/* more than any block so far in one piece */
	assert_non_null(pb_arena_alloc(a, 1 << 22));
	assert_null(pb_arena_alloc(a, SIZE_MAX - 8));
	pb_arena_free(a);
	pb_arena_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_as_malloc),
		cmocka_unit_test(test_aligned),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

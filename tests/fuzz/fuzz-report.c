// SPDX-License-Identifier: GPL-2.0
/*
 * Reports as kmemd takes them (POST /v1/agent/report): the protobuf
 * decode into the report's arena, then report_check(). A report that passes must hold only what
 * kmemd stores safely: every name a name, every string text, every
 * histogram consistent, and it must encode back to a report that passes
 * again.
 */
#include <string.h>

#include "fuzz.h"
#include "hist.h"
#include "pb-arena.h"
#include "report-check.h"
#include "text.h"

static void check_passed(const Kmemctl__V1__Report *rep)
{
	uint8_t *buf = malloc(kmemctl__v1__report__get_packed_size(rep) + 1);
	Kmemctl__V1__Report *again;
	struct hist h;
	char why[256];
	size_t len;

	FUZZ_CHECK(buf);
	FUZZ_CHECK(text_name_valid(rep->facts->host_id, REPORT_HOST_ID_MAX));
	FUZZ_CHECK(text_valid(rep->facts->hostname, REPORT_HOSTNAME_MAX));
	FUZZ_CHECK(rep->n_probes <= REPORT_PROBES_MAX && rep->n_events <= REPORT_EVENTS_MAX);
	for (size_t i = 0; i < rep->n_probes; i++) {
		FUZZ_CHECK(text_name_valid(rep->probes[i]->probe, REPORT_NAME_MAX));
		FUZZ_CHECK(!rep->probes[i]->hist || hist_from_pb(&h, rep->probes[i]->hist) == 0);
		FUZZ_CHECK(!rep->probes[i]->hist || h.count <= REPORT_NUMBER_MAX);
	}
	for (size_t i = 0; i < rep->n_events; i++)
		FUZZ_CHECK(text_valid(rep->events[i]->message, REPORT_MESSAGE_MAX));
	len = kmemctl__v1__report__pack(rep, buf);
	/*
	 * protobuf-c takes field number 0 written in two bytes and writes it
	 * back in one, which it then refuses: not ours to check
	 */
	again = kmemctl__v1__report__unpack(NULL, len, buf);
	FUZZ_CHECK(!again || report_check(again, why, sizeof(why)) == 0);
	if (again)
		kmemctl__v1__report__free_unpacked(again, NULL);
	free(buf);
}

/*
 * Trimmed by kmemd's bounds, a report keeps only samples and events
 * inside them, in order, and says why.
 */
static void trim(Kmemctl__V1__Report *rep)
{
	const struct report_event_bounds eb = { .now_ms = 1700000000000,
						.oldest_ms = 1700000000000 - 86400000,
						.after_ms = 1699999990000 };
	uint64_t lockups = 0, cpus = rep->facts->online_cpus ?: 1;
	int64_t t = rep->unix_ms;
	const struct report_span_bounds b = { .now_ms = 1700000000000,
					      .oldest_ms = 1700000000000 - 86400000,
					      .after_ms = 1699999000000 };
	size_t before = rep->n_probes, out;
	char why[256] = "";

	out = report_trim_samples(rep, &b, why, sizeof(why));
	FUZZ_CHECK(rep->n_probes + out == before);
	FUZZ_CHECK(!out == !why[0]);
	for (size_t i = 0; i < rep->n_probes; i++) {
		const Kmemctl__V1__ProbeSample *p = rep->probes[i];

		FUZZ_CHECK(!p->hist ||
			   (p->start_unix_ms >= b.after_ms && p->end_unix_ms > p->start_unix_ms &&
			    p->end_unix_ms <= b.now_ms + REPORT_SKEW_MS));
	}
	before = rep->n_events;
	why[0] = '\0';
	out = report_trim_events(rep, &eb, why, sizeof(why));
	FUZZ_CHECK(rep->n_events + out == before);
	FUZZ_CHECK(!out == !why[0]);
	for (size_t i = 0; i < rep->n_events; i++) {
		const Kmemctl__V1__KernelEvent *e = rep->events[i];

		FUZZ_CHECK(e->unix_ms >= eb.oldest_ms && e->unix_ms <= eb.now_ms + REPORT_SKEW_MS);
		lockups += e->kind >= KMEMCTL__V1__EVENT_KIND__EVENT_KIND_SOFT_LOCKUP &&
			   e->kind <= KMEMCTL__V1__EVENT_KIND__EVENT_KIND_RCU_STALL;
	}
	if (t > eb.now_ms + REPORT_SKEW_MS)
		t = eb.now_ms + REPORT_SKEW_MS;
	FUZZ_CHECK(lockups <= (t > eb.after_ms ? (uint64_t)(t - eb.after_ms) : 0) * cpus *
				      REPORT_LOCKUPS_PER_CPU_S / 1000);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pb_arena *a = pb_arena_for(size);
	Kmemctl__V1__Report *rep;
	char why[256] = "";

	FUZZ_CHECK(a);
	rep = kmemctl__v1__report__unpack(pb_arena_allocator(a), size, data);
	if (rep && report_check(rep, why, sizeof(why)) == 0) {
		check_passed(rep);
		trim(rep);
	} else if (rep)
		FUZZ_CHECK(why[0] && text_utf8_valid(why, strlen(why)));
	pb_arena_free(a);
	return 0;
}

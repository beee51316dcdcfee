// SPDX-License-Identifier: GPL-2.0
/*
 * The module's sysfs text as the agent parses it: a probe's histogram
 * ("<upper_bound_ns> <count>" lines, hist_parse_text()) and a
 * mitigation's params and stats ("key=value" and "key value" lines,
 * kernel_parse_kv()). A histogram that parses must add up, come back the
 * same from its own text, and pass kmemd's check of the protobuf the
 * agent makes of it (hist_from_pb()).
 */
#include <string.h>

#include "fuzz.h"
#include "kernel.h"
#include "policydoc.h"

static void render(const struct hist *h, char *buf, size_t size)
{
	size_t off = 0;

	buf[0] = '\0';
	for (unsigned b = 0; b < HIST_BUCKETS; b++)
		if (h->buckets[b])
			off += (size_t)snprintf(buf + off, size - off, "%llu %llu\n", 1ULL << b,
						(unsigned long long)h->buckets[b]);
	FUZZ_CHECK(off < size);
}

static void check_hist(const char *text)
{
	struct hist h = { .sum_ns = 7 }, again = { 0 }, back;
	Kmemctl__V1__Histogram pb = KMEMCTL__V1__HISTOGRAM__INIT;
	uint64_t total = 0, storage[HIST_BUCKETS];
	char buf[HIST_BUCKETS * 48];
	unsigned bad = 0, top = 0;

	if (hist_parse_text(&h, text, &bad) < 0) {
		FUZZ_CHECK(bad >= 1);
		FUZZ_CHECK(h.sum_ns == 7 && h.count == 0); /* untouched */
		return;
	}
	FUZZ_CHECK(h.sum_ns == 7);
	for (unsigned b = 0; b < HIST_BUCKETS; b++) {
		total += h.buckets[b];
		if (h.buckets[b])
			top = b;
	}
	FUZZ_CHECK(total == h.count);
	render(&h, buf, sizeof(buf));
	FUZZ_CHECK(hist_parse_text(&again, buf, NULL) == 0);
	FUZZ_CHECK(!memcmp(again.buckets, h.buckets, sizeof(h.buckets)) && again.count == h.count);
	/* max_ns has its own file; any value in the top bucket is consistent */
	h.max_ns = h.count ? hist_upper(top) : 0;
	hist_to_pb(&h, &pb, storage);
	FUZZ_CHECK(hist_from_pb(&back, &pb) == 0);
	FUZZ_CHECK(!memcmp(&back, &h, sizeof(h)));
}

static void check_kv(const char *text, char sep)
{
	struct kernel_kv kv[KERNEL_MAX_KV];
	size_t n = 0;

	if (kernel_parse_kv(text, sep, kv, KERNEL_MAX_KV, &n) < 0)
		return;
	FUZZ_CHECK(n <= KERNEL_MAX_KV);
	for (size_t i = 0; i < n; i++)
		FUZZ_CHECK(policy_id_valid(kv[i].key));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_string(data, size);

	check_hist(text);
	check_kv(text, '=');
	check_kv(text, ' ');
	free(text);
	return 0;
}

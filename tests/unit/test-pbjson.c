// SPDX-License-Identifier: GPL-2.0
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kmemctl/v1/report.pb-c.h"
#include "pbjson.h"

/* A report as kmemctl status shows it: every kind of field the protocol uses. */
static void test_report(void **state)
{
	Kmemctl__V1__Report rep = KMEMCTL__V1__REPORT__INIT;
	Kmemctl__V1__HostFacts facts = KMEMCTL__V1__HOST_FACTS__INIT;
	Kmemctl__V1__HostFacts__LabelsEntry label = KMEMCTL__V1__HOST_FACTS__LABELS_ENTRY__INIT,
					    *labels[] = { &label };
	Kmemctl__V1__MitigationState ms = KMEMCTL__V1__MITIGATION_STATE__INIT, *msp[] = { &ms };
	Kmemctl__V1__Histogram h = KMEMCTL__V1__HISTOGRAM__INIT;
	uint64_t counts[] = { 3, 0, UINT64_MAX };
	json_t *o;
	char *text;

	(void)state;
	facts.host_id = "web-1";
	label.key = "role";
	label.value = "web";
	facts.n_labels = 1;
	facts.labels = labels;
	ms.id = "rstat-yield";
	ms.state = KMEMCTL__V1__MITIGATION_STATE_KIND__MITIGATION_STATE_ON;
	h.first_bucket = 10;
	h.n_counts = 3;
	h.counts = counts;
	h.max_ns = (uint64_t)INT64_MAX + 5;
	rep.seq = 7;
	rep.unix_ms = -1;
	rep.facts = &facts;
	rep.n_mitigations = 1;
	rep.mitigations = msp;
	rep.memstat_read = &h;
	o = pbjson_from_message(&rep.base);
	assert_non_null(o);
	text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	assert_non_null(strstr(text, "\"seq\":7"));
	assert_non_null(strstr(text, "\"unix_ms\":-1"));
	assert_non_null(strstr(text, "\"host_id\":\"web-1\""));
	assert_non_null(strstr(text, "\"labels\":{\"role\":\"web\"}"));
	assert_non_null(strstr(text, "\"state\":\"MITIGATION_STATE_ON\""));
	/* unsigned 64-bit values past INT64_MAX are clamped, not wrapped */
	assert_non_null(strstr(text, "\"counts\":[3,0,9223372036854775807]"));
	assert_non_null(strstr(text, "\"max_ns\":9223372036854775807"));
	/* unset sub-messages are null, unset strings empty */
	assert_non_null(strstr(text, "\"counters\":null"));
	assert_non_null(strstr(text, "\"policy_name\":\"\""));
	assert_non_null(strstr(text, "\"events\":[]"));
	free(text);
	json_decref(o);
}

/*
 * A task name is any bytes (prctl(PR_SET_NAME)): text that is not UTF-8
 * is escaped, not a reason to show no report at all (found by fuzz-pbjson).
 */
static void test_not_utf8(void **state)
{
	Kmemctl__V1__Report rep = KMEMCTL__V1__REPORT__INIT;
	Kmemctl__V1__KernelEvent ev = KMEMCTL__V1__KERNEL_EVENT__INIT, *evp[] = { &ev };
	Kmemctl__V1__HostFacts facts = KMEMCTL__V1__HOST_FACTS__INIT;
	Kmemctl__V1__HostFacts__LabelsEntry label = KMEMCTL__V1__HOST_FACTS__LABELS_ENTRY__INIT,
					    *labels[] = { &label };
	char *stack[] = { "f\xc3\xa9+0x1/0x2", "\xed\xa0\x80+0x1/0x2" };
	json_t *o;
	char *text;

	(void)state;
	ev.comm = "bad\xff\xc3";
	ev.n_stack_top = 2;
	ev.stack_top = stack;
	label.key = "k\x80";
	label.value = "v\xf5";
	facts.n_labels = 1;
	facts.labels = labels;
	rep.n_events = 1;
	rep.events = evp;
	rep.facts = &facts;
	o = pbjson_from_message(&rep.base);
	assert_non_null(o);
	text = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
	assert_non_null(text);
	assert_non_null(strstr(text, "\"comm\":\"bad\\\\xff\\\\xc3\""));
	/* valid UTF-8 is kept; a surrogate's encoding is not UTF-8 */
	assert_non_null(strstr(text, "[\"f\\u00E9+0x1/0x2\",\"\\\\xed\\\\xa0\\\\x80+0x1/0x2\"]"));
	assert_non_null(strstr(text, "\"labels\":{\"k\\\\x80\":\"v\\\\xf5\"}"));
	free(text);
	json_decref(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_report),
		cmocka_unit_test(test_not_utf8),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

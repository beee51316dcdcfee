// SPDX-License-Identifier: GPL-2.0
/*
 * NUL bytes in protobuf strings, on the wire (lib/pbstrings.h): found at
 * any depth and named, clean messages passed, bytes that are no message
 * refused without reading past them.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kmemctl/v1/report.pb-c.h"
#include "pbstrings.h"

static uint8_t buf[4096];

/* A report with host id host and one probe sample named probe, packed; its length. */
static size_t packed(const char *host, const char *probe)
{
	Kmemctl__V1__Report rep = KMEMCTL__V1__REPORT__INIT;
	Kmemctl__V1__HostFacts facts = KMEMCTL__V1__HOST_FACTS__INIT;
	Kmemctl__V1__ProbeSample s = KMEMCTL__V1__PROBE_SAMPLE__INIT, *ss[1] = { &s };

	facts.host_id = (char *)host;
	facts.hostname = "web-1";
	rep.facts = &facts;
	rep.seq = 7;
	s.probe = (char *)probe;
	s.start_unix_ms = 1000;
	rep.probes = ss;
	rep.n_probes = 1;
	assert_true(kmemctl__v1__report__get_packed_size(&rep) <= sizeof(buf));
	return kmemctl__v1__report__pack(&rep, buf);
}

/* The one X of marker in buf turned into a NUL. */
static void nul_at(size_t len, const char *marker)
{
	uint8_t *p = memmem(buf, len, marker, strlen(marker));

	assert_non_null(p);
	*(uint8_t *)memchr(p, 'X', strlen(marker)) = '\0';
}

static int check(size_t len, char *field)
{
	return pb_strings_check(&kmemctl__v1__report__descriptor, buf, len, field, 64);
}

static void test_clean(void **state)
{
	char field[64];

	(void)state;
	assert_int_equal(check(packed("h2", "vmap-purge"), field), 0);
	assert_string_equal(field, "");
	/* an empty body is an empty message */
	assert_int_equal(check(0, field), 0);
}

static void test_nul_named(void **state)
{
	char field[64];
	size_t len;

	(void)state;
	len = packed("h2Xh1", "vmap-purge");
	nul_at(len, "h2Xh1");
	assert_int_equal(check(len, field), -EINVAL);
	assert_string_equal(field, "facts.host_id");
	/* in a repeated message, its last byte */
	len = packed("h2", "vmap-purgeX");
	nul_at(len, "vmap-purgeX");
	assert_int_equal(check(len, field), -EINVAL);
	assert_string_equal(field, "probes.probe");
	/* a name too long for field is cut, not overrun */
	len = packed("h2Xh1", "p");
	nul_at(len, "h2Xh1");
	assert_int_equal(pb_strings_check(&kmemctl__v1__report__descriptor, buf, len, field, 8),
			 -EINVAL);
	assert_string_equal(field, "facts.h");
}

static void test_not_a_message(void **state)
{
	static const uint8_t group[] = { 0x0b, 0x0c }, cut_varint[] = { 0x08, 0xff },
			     cut_length[] = { 0x0a, 0x05, 'a' },
			     long_varint[] = { 0x08, 0xff, 0xff, 0xff, 0xff, 0xff,
					       0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
	char field[64];
	size_t len;

	(void)state;
	assert_int_equal(pb_strings_check(&kmemctl__v1__report__descriptor, group, sizeof(group),
					  field, sizeof(field)),
			 -EBADMSG);
	assert_int_equal(pb_strings_check(&kmemctl__v1__report__descriptor, cut_varint,
					  sizeof(cut_varint), field, sizeof(field)),
			 -EBADMSG);
	assert_int_equal(pb_strings_check(&kmemctl__v1__report__descriptor, cut_length,
					  sizeof(cut_length), field, sizeof(field)),
			 -EBADMSG);
	assert_int_equal(pb_strings_check(&kmemctl__v1__report__descriptor, long_varint,
					  sizeof(long_varint), field, sizeof(field)),
			 -EBADMSG);
	/* a message cut short anywhere: never read past its end (ASan says) */
	len = packed("h2", "vmap-purge");
	for (size_t n = 0; n < len; n++) {
		uint8_t *copy = malloc(n ?: 1);

		memcpy(copy, buf, n);
		assert_true(pb_strings_check(&kmemctl__v1__report__descriptor, copy, n, field,
					     sizeof(field)) <= 0);
		free(copy);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean),
		cmocka_unit_test(test_nul_named),
		cmocka_unit_test(test_not_a_message),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

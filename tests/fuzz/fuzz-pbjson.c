// SPDX-License-Identifier: GPL-2.0
/*
 * pbjson_from_message() parses nothing itself, but what it renders for
 * kmemctl status carries text from outside: task names and kernel lines
 * in a report's events, facts read from the host. A Report decoded from
 * the input must always render, to JSON that jansson can write out.
 */
#include "fuzz.h"
#include "kmemctl/v1/report.pb-c.h"
#include "pbjson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Kmemctl__V1__Report *rep = kmemctl__v1__report__unpack(NULL, size, data);
	json_t *o;
	char *s;

	if (!rep)
		return 0;
	o = pbjson_from_message(&rep->base);
	FUZZ_CHECK(o);
	s = json_dumps(o, JSON_COMPACT);
	FUZZ_CHECK(s);
	free(s);
	json_decref(o);
	kmemctl__v1__report__free_unpacked(rep, NULL);
	return 0;
}

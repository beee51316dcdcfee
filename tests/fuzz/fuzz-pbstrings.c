// SPDX-License-Identifier: GPL-2.0
/*
 * A report's bytes as a host sends them, read for NULs in its strings
 * (lib/pbstrings.h) before kmemd unpacks it: the scan ends without reading
 * past the bytes, a NUL it names is there, and a field it names is a path
 * of the report's fields.
 */
#include <errno.h>

#include "fuzz.h"
#include "kmemctl/v1/report.pb-c.h"
#include "pbstrings.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char field[128];
	int r = pb_strings_check(&kmemctl__v1__report__descriptor, data, size, field,
				 sizeof(field));

	FUZZ_CHECK(r == 0 || r == -EINVAL || r == -EBADMSG);
	FUZZ_CHECK(strnlen(field, sizeof(field)) < sizeof(field));
	if (r == -EINVAL) {
		FUZZ_CHECK(memchr(data, '\0', size));
		FUZZ_CHECK(field[0] && field[strlen(field) - 1] != '.');
	}
	return 0;
}

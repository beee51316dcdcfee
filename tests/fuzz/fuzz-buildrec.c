// SPDX-License-Identifier: GPL-2.0
/*
 * The module's build file and build records (lib/buildrec.c), read from a
 * host and from operators' bundles. Whatever parses must hold only valid
 * fields, and a record must come back the same from the text it is
 * written out as.
 */
#include <string.h>

#include "buildrec.h"
#include "fuzz.h"

static void check_info(const struct build_info *b)
{
	FUZZ_CHECK(b->build_id[0] && strlen(b->build_id) % 2 == 0);
	FUZZ_CHECK(b->release[0] && b->version[0]);
	for (size_t i = 0; i < b->nfuncs; i++)
		FUZZ_CHECK(b->funcs[i].mitigation[0] && b->funcs[i].symbol[0] &&
			   strlen(b->funcs[i].fingerprint) == 16);
	for (size_t i = 0; i < b->ncopies; i++)
		FUZZ_CHECK(b->copies[i].mitigation[0] && b->copies[i].name[0] &&
			   strlen(b->copies[i].digest) == 16);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[BUILDREC_ERR_MAX], *text;
	struct build_info b, again;
	size_t len;

	if (build_parse((const char *)data, size, &b, err) == 0) {
		check_info(&b);
		build_info_free(&b);
	} else {
		FUZZ_CHECK(memchr(err, '\0', sizeof(err)) && err[0] && !b.funcs && !b.copies);
	}
	if (build_parse_record((const char *)data, size, &b, err) < 0) {
		FUZZ_CHECK(memchr(err, '\0', sizeof(err)) && err[0] && !b.funcs && !b.copies);
		return 0;
	}
	check_info(&b);
	FUZZ_CHECK(b.source_name[0] && b.source_version[0]);
	FUZZ_CHECK(build_write_record(&b, &text, &len) == 0);
	FUZZ_CHECK(len == size && !memcmp(text, data, size));
	FUZZ_CHECK(build_parse_record(text, len, &again, err) == 0);
	FUZZ_CHECK(again.nfuncs == b.nfuncs && again.ncopies == b.ncopies);
	free(text);
	build_info_free(&again);
	build_info_free(&b);
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * C text as kmemctl build check reads it from a kernel source tarball
 * (lib/ctok.c) and copy declarations parsed and checked from it
 * (lib/copycheck.c): each declaration is checked against the input's own
 * tokens. Tokens keep their order of lines; a refusal always says why.
 */
#include <errno.h>
#include <string.h>

#include "copycheck.h"
#include "fuzz.h"

/* The checker's table is quadratic in a copy's tokens: kmod files are small. */
#define INPUT_MAX (16 << 10)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char msg[COPY_MSG_MAX] = "";
	struct ctok_list toks;
	struct copy_file f;
	unsigned int line;
	int r;

	if (size > INPUT_MAX)
		return 0;
	r = ctok_scan((const char *)data, size, &toks, &line);
	if (r < 0) {
		FUZZ_CHECK(r == -EINVAL && line >= 1 && toks.n == 0);
		return 0;
	}
	for (size_t i = 0; i < toks.n; i++) {
		FUZZ_CHECK(toks.v[i].line <= toks.v[i].end_line);
		FUZZ_CHECK(i == 0 || toks.v[i - 1].line <= toks.v[i].line);
	}
	r = copy_parse("fuzz.c", (const char *)data, size, &f, msg);
	if (r < 0) {
		FUZZ_CHECK(r == -EINVAL && msg[0] && f.ndecls == 0);
		ctok_free(&toks);
		return 0;
	}
	for (size_t i = 0; i < f.ndecls; i++) {
		r = copy_check(&f, &f.decls[i], "kernel.c", &toks, msg);
		FUZZ_CHECK(r == 0 || ((r == -EBADMSG || r == -ENOENT || r == -E2BIG) && msg[0]));
	}
	copy_file_free(&f);
	ctok_free(&toks);
	return 0;
}

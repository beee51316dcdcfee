/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every harness in tests/fuzz/ shares. A harness defines only
 * LLVMFuzzerTestOneInput(); libFuzzer calls it in the fuzz build (clang,
 * -DKMEMCTL_FUZZ=ON), replay.c calls it on each file of the harness's
 * corpus in the normal and sanitizer builds.
 */
#ifndef KMEMCTL_FUZZ_H
#define KMEMCTL_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * A parser's own invariant. Not assert(): release builds define NDEBUG,
 * and a broken invariant must stop libFuzzer and fail a replay alike.
 */
#define FUZZ_CHECK(cond)                                                                     \
	do {                                                                                 \
		if (!(cond)) {                                                               \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, \
				#cond);                                                      \
			abort();                                                             \
		}                                                                            \
	} while (0)

struct fuzz_part {
	const uint8_t *data; /* NULL: the input has no such part */
	size_t len;
};

/*
 * files.c: a scratch directory for this process, removed at exit; a file
 * written with data (or removed when data is NULL); and the input split
 * at each sep into at most max parts, the last taking the rest. The parts
 * the input does not have are NULL. Returns how many it has.
 */
const char *fuzz_dir(void);
void fuzz_file(const char *path, const uint8_t *data, size_t len);
size_t fuzz_split(const uint8_t *data, size_t size, const char *sep, struct fuzz_part *parts,
		  size_t max);

/* The input as a C string (malloc'ed), as a parser of a file's text gets it. */
static inline char *fuzz_string(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	FUZZ_CHECK(s);
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

#endif

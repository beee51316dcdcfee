// SPDX-License-Identifier: GPL-2.0
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "fixture.h"
#include "macro.h"

int fixture_copy(const char *name, char *root, size_t size)
{
	_cleanup_free_ char *cmd = NULL;

	if ((size_t)snprintf(root, size, "%s/%s", getenv("KMEM_TEST_TMP"), name) >= size)
		return -1;
	if (asprintf(&cmd, "rm -rf '%s' && cp -a '%s/../fixtures/host-6.1' '%s'", root,
		     getenv("KMEM_TEST_DATA"), root) < 0)
		return -1;
	return system(cmd) == 0 ? 0 : -1;
}

void fixture_put(const char *root, const char *path, const char *text)
{
	_cleanup_free_ char *full = NULL;
	FILE *f;

	assert_true(asprintf(&full, "%s%s", root, path) > 0);
	f = fopen(full, "we");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "fileio.h"
#include "macro.h"

int read_file_max(const char *path, size_t max, char **out, size_t *len)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	_cleanup_free_ char *buf = NULL;
	size_t n;

	if (!f)
		return negative_errno();
	buf = malloc(max + 1);
	if (!buf)
		return -ENOMEM;
	n = fread(buf, 1, max + 1, f);
	if (ferror(f))
		return -EIO;
	if (n > max)
		return -EFBIG;
	buf[n] = '\0';
	*len = n;
	*out = TAKE_PTR(buf);
	return 0;
}

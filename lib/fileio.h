/* SPDX-License-Identifier: GPL-2.0 */
#ifndef KMEMCTL_FILEIO_H
#define KMEMCTL_FILEIO_H

#include <stddef.h>

/*
 * The whole of a small file (an operator's document or bundle), malloc'ed
 * and NUL-terminated; -EFBIG when it has more than max bytes.
 */
int read_file_max(const char *path, size_t max, char **out, size_t *len);

#endif

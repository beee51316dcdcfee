/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Writable copies of tests/fixtures/host-6.1 for unit tests that change
 * sysfs files as kmemctl.ko would.
 */
#ifndef KMEM_TEST_FIXTURE_H
#define KMEM_TEST_FIXTURE_H

#include <stddef.h>

/* Copies the fixture tree to $KMEM_TEST_TMP/<name>; its path in root. 0 or -1. */
int fixture_copy(const char *name, char *root, size_t size);
/* Replaces the file at path (as the kernel names it) below root with text. */
void fixture_put(const char *root, const char *path, const char *text);

#endif

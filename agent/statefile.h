/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Small files in the agent's state directory, replaced atomically: written
 * to a temporary name, synced, renamed over the old one, directory synced.
 * A crash leaves the old content or the new, never a mix.
 */
#ifndef KMEM_AGENT_STATEFILE_H
#define KMEM_AGENT_STATEFILE_H

#include <stddef.h>
#include <stdint.h>

int statefile_replace(int dirfd, const char *name, const void *data, size_t len);
/* The whole file, malloc'ed; -ENOENT when missing, -EBADMSG when empty or over max. */
int statefile_read(int dirfd, const char *name, size_t max, uint8_t **data, size_t *len);

#endif

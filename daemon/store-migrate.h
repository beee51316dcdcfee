/* SPDX-License-Identifier: GPL-2.0 */
/* `kmemd migrate`: a SQLite store copied into PostgreSQL (store-migrate.c). */
#ifndef KMEMD_STORE_MIGRATE_H
#define KMEMD_STORE_MIGRATE_H

#include <stddef.h>
#include <stdio.h>

/*
 * Copies the SQLite store at path into the PostgreSQL database at url,
 * whose tables must be empty (-EEXIST otherwise), all or nothing; each
 * table's rows counted to progress (NULL: quiet). err: why it failed.
 */
int store_migrate(const char *path, const char *url, FILE *progress, char *err, size_t errlen);

#endif

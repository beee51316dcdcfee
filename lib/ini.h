/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Table-driven INI parser with drop-in directories.
 *
 * A program describes its configuration as an array of struct ini_option,
 * one row per key, each storing into a field of one target struct at
 * `offset`. ini_load() reads FILE and then FILE.d/ *.conf in lexical order
 * (later values override earlier ones, as systemd drop-ins do). Syntax:
 *
 *	# comment			; comment
 *	[section]
 *	key = value			value may be "double quoted"
 *
 * Every problem is recorded as "path:line: message" and parsing goes on, so
 * `-n` shows all of them at once; ini_load() then returns -EINVAL and the
 * target keeps the values of the lines that were good. Lines longer than
 * INI_LINE_MAX are refused without reading them into memory whole.
 */
#ifndef KMEMCTL_INI_H
#define KMEMCTL_INI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define INI_LINE_MAX 4096

enum ini_type {
	INI_STRING, /* char *, any text */
	INI_PATH, /* char *, absolute path */
	INI_BOOL, /* bool: yes/no, true/false, on/off, 1/0 */
	INI_UINT, /* uint64_t within [min, max] */
	INI_DURATION, /* uint64_t milliseconds: "250ms", "10s", "5m", "2h", "1d"; bare = s */
	INI_SIZE, /* uint64_t bytes: "512", "64K", "8M", "1G" (powers of 1024) */
	INI_ENUM, /* int: index into choices[] */
	INI_MAP, /* struct ini_map: every key of the section (key "*") */
};

struct ini_map {
	char **keys;
	char **values;
	size_t n;
};

struct ini_option {
	const char *section;
	const char *key;
	enum ini_type type;
	size_t offset;
	uint64_t min, max; /* INI_UINT, INI_DURATION, INI_SIZE; max 0: none */
	const char *const *choices; /* INI_ENUM, NULL-terminated */
};

struct ini_errors {
	char **msgs;
	size_t n;
};

int ini_load(const struct ini_option *table, size_t n_table, void *target, const char *path,
	     struct ini_errors *errs);
/* One file only, no drop-ins; for tests and for `-n FILE` of a single file. */
int ini_load_file(const struct ini_option *table, size_t n_table, void *target, const char *path,
		  struct ini_errors *errs);
/* Parse from a stream; `name` is used in messages. */
int ini_load_stream(const struct ini_option *table, size_t n_table, void *target, FILE *f,
		    const char *name, struct ini_errors *errs);

/* Print every option in normalized form (the `-nv` output). */
void ini_print(FILE *out, const struct ini_option *table, size_t n_table, const void *target);
/* Free what the parser allocated inside target. */
void ini_free(const struct ini_option *table, size_t n_table, void *target);
void ini_errors_free(struct ini_errors *errs);

const char *ini_map_get(const struct ini_map *m, const char *key);

int ini_parse_bool(const char *s, bool *out);
int ini_parse_duration(const char *s, uint64_t *ms);
int ini_parse_size(const char *s, uint64_t *bytes);
int ini_parse_uint(const char *s, uint64_t *out);

#endif

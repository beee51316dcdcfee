// SPDX-License-Identifier: GPL-2.0
/*
 * The INI parser with drop-ins: the input is a main file and up to three
 * drop-ins, separated by lines ";;drop-in", written to the scratch
 * directory and loaded with ini_load(), with test-ini's table. Whatever
 * the errors, the values kept must be in range, and what ini_print()
 * writes must load again, without error, to the same.
 */
#include <string.h>
#include <sys/stat.h>

#include "../unit/ini-conf.h"
#include "fuzz.h"
#include "macro.h"

#define SEPARATOR "\n;;drop-in\n"
#define DROPINS 3

static char main_path[280], dropin_dir[290];

/* The main file and the drop-ins the input has; the others are removed. */
static void split(const uint8_t *data, size_t size)
{
	struct fuzz_part parts[1 + DROPINS];
	char p[320];

	if (!main_path[0]) {
		snprintf(main_path, sizeof(main_path), "%s/fuzz.conf", fuzz_dir());
		snprintf(dropin_dir, sizeof(dropin_dir), "%s.d", main_path);
		FUZZ_CHECK(mkdir(dropin_dir, 0700) == 0);
	}
	fuzz_split(data, size, SEPARATOR, parts, 1 + DROPINS);
	fuzz_file(main_path, parts[0].data, parts[0].len);
	for (int i = 0; i < DROPINS; i++) {
		snprintf(p, sizeof(p), "%s/%d0-fuzz.conf", dropin_dir, i + 1);
		fuzz_file(p, parts[i + 1].data, parts[i + 1].len);
	}
}

static void check_ranges(const struct conf *c)
{
	FUZZ_CHECK(!c->state_dir || c->state_dir[0] == '/');
	FUZZ_CHECK(c->interval_ms >= 1000 && c->interval_ms <= 3600000);
	FUZZ_CHECK(c->spool_max >= 4096);
	FUZZ_CHECK(c->workers >= 1 && c->workers <= 64);
	FUZZ_CHECK(c->level >= 0 && c->level < (int)ARRAY_SIZE(levels) - 1);
	for (size_t i = 0; i < c->labels.n; i++)
		FUZZ_CHECK(c->labels.keys[i][0] && c->labels.values[i]);
}

/* ini_print()'s text, malloc'ed. */
static char *print(const struct conf *c, size_t *len)
{
	char *out = NULL;
	FILE *f = open_memstream(&out, len);

	FUZZ_CHECK(f);
	ini_print(f, table, ARRAY_SIZE(table), c);
	fclose(f);
	return out;
}

static void round_trip(const struct conf *c)
{
	struct ini_errors errs = { 0 };
	_cleanup_free_ char *first = NULL, *second = NULL;
	struct conf again;
	size_t len, len2;
	FILE *f;

	first = print(c, &len);
	f = fmemopen(first, len, "r");
	FUZZ_CHECK(f);
	conf_defaults(&again);
	FUZZ_CHECK(ini_load_stream(table, ARRAY_SIZE(table), &again, f, "printed", &errs) == 0);
	fclose(f);
	second = print(&again, &len2);
	FUZZ_CHECK(len == len2 && !memcmp(first, second, len));
	ini_free(table, ARRAY_SIZE(table), &again);
	ini_errors_free(&errs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ini_errors errs = { 0 };
	struct conf c;
	int r;

	split(data, size);
	conf_defaults(&c);
	r = ini_load(table, ARRAY_SIZE(table), &c, main_path, &errs);
	/* every failure is reported, and nothing is reported without one */
	FUZZ_CHECK(r == 0 ? errs.n == 0 : errs.n > 0);
	check_ranges(&c);
	round_trip(&c);
	ini_free(table, ARRAY_SIZE(table), &c);
	ini_errors_free(&errs);
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * The INI parser with drop-ins: the input is a main file and up to three
 * drop-ins, separated by lines ";;drop-in", written to one directory made
 * once per process and loaded with ini_load(). The table has a row of
 * every type. Whatever the errors, the values kept must be in range, and
 * what ini_print() writes must load again, without error, to the same.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "ini.h"
#include "macro.h"

#define SEPARATOR "\n;;drop-in\n"
#define DROPINS 3

struct conf {
	char *server;
	char *state_dir;
	uint64_t interval_ms;
	uint64_t grace_ms;
	uint64_t spool_max;
	uint64_t workers;
	uint64_t limit;
	bool verbose;
	int level;
	struct ini_map labels;
};

static const char *const levels[] = { "err", "warning", "info", "debug", NULL };

static const struct ini_option table[] = {
	{ "agent", "server", INI_STRING, offsetof(struct conf, server) },
	{ "agent", "state_dir", INI_PATH, offsetof(struct conf, state_dir) },
	{ "agent", "interval", INI_DURATION, offsetof(struct conf, interval_ms), 1000, 3600000 },
	{ "agent", "grace", INI_DURATION, offsetof(struct conf, grace_ms), 0, 0 },
	{ "agent", "spool_max", INI_SIZE, offsetof(struct conf, spool_max), 4096, 0 },
	{ "agent", "workers", INI_UINT, offsetof(struct conf, workers), 1, 64 },
	{ "agent", "limit", INI_UINT, offsetof(struct conf, limit), 0, 0 },
	{ "agent", "verbose", INI_BOOL, offsetof(struct conf, verbose) },
	{ "agent", "log_level", INI_ENUM, offsetof(struct conf, level), .choices = levels },
	{ "labels", "*", INI_MAP, offsetof(struct conf, labels) },
};

static char dir[64], main_path[80], dropin_dir[96];

static void defaults(struct conf *c)
{
	*c = (struct conf){ .interval_ms = 10000, .spool_max = 8 << 20, .workers = 1, .level = 2 };
}

static void dropin_path(char *buf, size_t size, int i)
{
	snprintf(buf, size, "%s/%d0-fuzz.conf", dropin_dir, i + 1);
}

static void cleanup(void)
{
	char p[128];

	for (int i = 0; i < DROPINS; i++) {
		dropin_path(p, sizeof(p), i);
		unlink(p);
	}
	rmdir(dropin_dir);
	unlink(main_path);
	rmdir(dir);
}

/*
 * One directory per process, not per input. In memory (/dev/shm) unless
 * TMPDIR says otherwise: on a disk the files cost 30 times the parsing.
 */
static bool setup(void)
{
	const char *tmp = getenv("TMPDIR");
	struct stat st;

	if (dir[0])
		return true;
	if (!tmp || !*tmp)
		tmp = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
	snprintf(dir, sizeof(dir), "%s/fuzz-ini.XXXXXX", tmp);
	if (!mkdtemp(dir))
		return false;
	snprintf(main_path, sizeof(main_path), "%s/fuzz.conf", dir);
	snprintf(dropin_dir, sizeof(dropin_dir), "%s.d", main_path);
	if (mkdir(dropin_dir, 0700) < 0)
		return false;
	atexit(cleanup);
	return true;
}

static void write_file(const char *path, const uint8_t *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	FUZZ_CHECK(fd >= 0);
	FUZZ_CHECK(write(fd, data, len) == (ssize_t)len);
	close(fd);
}

/* The main file, then the drop-ins the input has; stale ones are removed. */
static void split(const uint8_t *data, size_t size)
{
	const size_t seplen = strlen(SEPARATOR);
	const uint8_t *sep;
	char p[128];
	int i;

	sep = memmem(data, size, SEPARATOR, seplen);
	write_file(main_path, data, sep ? (size_t)(sep - data) : size);
	for (i = 0; i < DROPINS; i++) {
		dropin_path(p, sizeof(p), i);
		if (!sep) {
			unlink(p);
			continue;
		}
		size -= (size_t)(sep - data) + seplen;
		data = sep + seplen;
		sep = i + 1 < DROPINS ? memmem(data, size, SEPARATOR, seplen) : NULL;
		write_file(p, data, sep ? (size_t)(sep - data) : size);
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
	defaults(&again);
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

	FUZZ_CHECK(setup());
	split(data, size);
	defaults(&c);
	r = ini_load(table, ARRAY_SIZE(table), &c, main_path, &errs);
	/* every failure is reported, and nothing is reported without one */
	FUZZ_CHECK(r == 0 ? errs.n == 0 : errs.n > 0);
	check_ranges(&c);
	round_trip(&c);
	ini_free(table, ARRAY_SIZE(table), &c);
	ini_errors_free(&errs);
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * For the harnesses whose parser reads files: one scratch directory per
 * process (per input would cost more than the parsing), in memory unless
 * TMPDIR says otherwise, since on a disk the files cost 30 times the
 * parsing; and the input split into the files' contents.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"

static char dir[256];

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void remove_dir(void)
{
	nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

const char *fuzz_dir(void)
{
	const char *tmp = getenv("TMPDIR");
	struct stat st;

	if (dir[0])
		return dir;
	if (!tmp || !*tmp)
		tmp = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
	FUZZ_CHECK((size_t)snprintf(dir, sizeof(dir), "%s/kmemctl-fuzz.XXXXXX", tmp) < sizeof(dir));
	FUZZ_CHECK(mkdtemp(dir));
	atexit(remove_dir);
	return dir;
}

void fuzz_file(const char *path, const uint8_t *data, size_t len)
{
	int fd;

	if (!data) {
		FUZZ_CHECK(unlink(path) == 0 || errno == ENOENT);
		return;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	FUZZ_CHECK(fd >= 0);
	FUZZ_CHECK(write(fd, data, len) == (ssize_t)len);
	close(fd);
}

size_t fuzz_split(const uint8_t *data, size_t size, const char *sep, struct fuzz_part *parts,
		  size_t max)
{
	const size_t seplen = strlen(sep);
	const uint8_t *end;
	size_t n = 0;

	while (n < max) {
		end = n + 1 < max ? memmem(data, size, sep, seplen) : NULL;
		parts[n].data = data;
		parts[n++].len = end ? (size_t)(end - data) : size;
		if (!end)
			break;
		size -= (size_t)(end - data) + seplen;
		data = end + seplen;
	}
	for (size_t i = n; i < max; i++)
		parts[i] = (struct fuzz_part){ NULL, 0 };
	return n;
}

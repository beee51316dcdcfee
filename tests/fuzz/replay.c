// SPDX-License-Identifier: GPL-2.0
/*
 * The main() that stands in for libFuzzer in the normal and sanitizer
 * builds: runs every file of the corpus directories (or files) it is given
 * through LLVMFuzzerTestOneInput() once, so ctest replays each corpus as a
 * regression test. A missing or empty corpus fails: a replay of nothing
 * would pass whatever the parser does.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"

/* The whole of a regular file, malloc'ed to its exact size so ASan sees overreads. */
static uint8_t *slurp(int dirfd, const char *name, size_t *size)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	uint8_t *buf = NULL;
	struct stat st;
	size_t got = 0;
	ssize_t n;

	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		goto out;
	buf = malloc((size_t)st.st_size);
	while (buf && got < (size_t)st.st_size &&
	       (n = read(fd, buf + got, (size_t)st.st_size - got)) > 0)
		got += (size_t)n;
	*size = got;
out:
	if (fd >= 0)
		close(fd);
	return buf;
}

static int run_file(int dirfd, const char *name, const char *shown)
{
	size_t size = 0;
	uint8_t *data = slurp(dirfd, name, &size);

	if (!data) {
		fprintf(stderr, "replay: cannot read '%s': %s\n", shown, strerror(errno));
		return -1;
	}
	LLVMFuzzerTestOneInput(data, size);
	free(data);
	return 0;
}

static int cmp_names(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int visible(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

/* The number of files run, or -1. */
static long run_dir(const char *path)
{
	struct dirent **list;
	long done = 0;
	int dirfd, n;

	dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	n = dirfd < 0 ? -1 : scandir(path, &list, visible, cmp_names);
	if (n < 0) {
		fprintf(stderr, "replay: cannot read corpus '%s': %s\n", path, strerror(errno));
		if (dirfd >= 0)
			close(dirfd);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		if (done >= 0 && run_file(dirfd, list[i]->d_name, list[i]->d_name) == 0)
			done++;
		else
			done = -1;
		free(list[i]);
	}
	free(list);
	close(dirfd);
	return done;
}

int main(int argc, char **argv)
{
	struct stat st;
	long total = 0, n;

	if (argc < 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR|FILE...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		if (stat(argv[i], &st) == 0 && S_ISREG(st.st_mode))
			n = run_file(AT_FDCWD, argv[i], argv[i]) == 0 ? 1 : -1;
		else
			n = run_dir(argv[i]);
		if (n < 0)
			return 1;
		if (n == 0) {
			fprintf(stderr, "replay: corpus '%s' is empty\n", argv[i]);
			return 1;
		}
		total += n;
	}
	printf("replay: %ld inputs, no failure\n", total);
	return 0;
}

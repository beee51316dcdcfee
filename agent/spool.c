// SPDX-License-Identifier: GPL-2.0
/*
 * Reports waiting for kmemd, on disk (spool.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "spool.h"
#include "statefile.h"

#define NAME_DIGITS 20
#define SUFFIX ".report"
#define TMP_SUFFIX SUFFIX ".tmp"

static void name_of(char *buf, size_t size, uint64_t seq, const char *suffix)
{
	snprintf(buf, size, "%0*llu%s", NAME_DIGITS, (unsigned long long)seq, suffix);
}

/* "<20 digits>.report" → seq; -EINVAL for any other name. */
static int parse_name(const char *name, const char *suffix, uint64_t *seq)
{
	uint64_t v = 0;
	int i;

	if (strlen(name) != NAME_DIGITS + strlen(suffix) || strcmp(name + NAME_DIGITS, suffix))
		return -EINVAL;
	for (i = 0; i < NAME_DIGITS; i++) {
		if (name[i] < '0' || name[i] > '9' || v > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(name[i] - '0');
	}
	*seq = v;
	return 0;
}

static int push(struct spool *s, uint64_t seq, uint64_t size)
{
	struct spool_entry *e;

	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;

		e = realloc(s->entries, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		s->entries = e;
		s->cap = cap;
	}
	s->entries[s->n++] = (struct spool_entry){ .seq = seq, .size = size };
	s->bytes += size;
	return 0;
}

/* Removes the n oldest entries and their files. */
static int remove_oldest(struct spool *s, size_t n)
{
	char name[64];
	size_t i;
	int r = 0;

	for (i = 0; i < n; i++) {
		name_of(name, sizeof(name), s->entries[i].seq, SUFFIX);
		if (unlinkat(s->dirfd, name, 0) < 0 && errno != ENOENT && !r)
			r = negative_errno();
		s->bytes -= s->entries[i].size;
	}
	memmove(s->entries, s->entries + n, (s->n - n) * sizeof(*s->entries));
	s->n -= n;
	return r;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct spool_entry *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Drops the oldest reports until extra more bytes fit. */
static int make_room(struct spool *s, uint64_t extra)
{
	size_t n = 0;
	uint64_t bytes = s->bytes;

	while (n < s->n && bytes + extra > s->max_bytes)
		bytes -= s->entries[n++].size;
	s->dropped += n;
	return n ? remove_oldest(s, n) : 0;
}

static int load(struct spool *s)
{
	struct dirent *de;
	struct stat st;
	uint64_t seq;
	DIR *d;
	int fd, r = 0;

	fd = openat(s->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return negative_errno();
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return negative_errno();
	}
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		/* a write the previous run did not finish */
		if (de->d_name[0] == '.' && !parse_name(de->d_name + 1, TMP_SUFFIX, &seq)) {
			unlinkat(s->dirfd, de->d_name, 0);
			continue;
		}
		if (parse_name(de->d_name, SUFFIX, &seq) < 0 ||
		    fstatat(s->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode) || st.st_size == 0 ||
		    (uint64_t)st.st_size > s->max_bytes) {
			s->skipped++;
			continue;
		}
		r = push(s, seq, (uint64_t)st.st_size);
		if (r < 0)
			break;
	}
	closedir(d);
	if (r < 0)
		return r;
	if (s->n)
		qsort(s->entries, s->n, sizeof(*s->entries), cmp_entry);
	/* the bound may have been lowered since */
	return make_room(s, 0);
}

int spool_open(struct spool *s, const char *dir, uint64_t max_bytes)
{
	int r;

	*s = (struct spool){ .dirfd = -1, .max_bytes = max_bytes };
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return negative_errno();
	s->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->dirfd < 0)
		return negative_errno();
	r = load(s);
	if (r < 0)
		spool_close(s);
	return r;
}

void spool_close(struct spool *s)
{
	if (s->dirfd >= 0)
		close(s->dirfd);
	free(s->entries);
	*s = (struct spool){ .dirfd = -1 };
}

int spool_add(struct spool *s, uint64_t seq, const void *data, size_t len)
{
	char name[64];
	int r;

	if (!len || (s->n && seq <= s->entries[s->n - 1].seq))
		return -EINVAL;
	if (len > s->max_bytes) {
		s->dropped++;
		return -EFBIG;
	}
	r = make_room(s, len);
	if (r < 0)
		return r;
	name_of(name, sizeof(name), seq, SUFFIX);
	r = statefile_replace(s->dirfd, name, data, len);
	return r < 0 ? r : push(s, seq, len);
}

int spool_oldest(struct spool *s, uint64_t *seq, void **data, size_t *len)
{
	uint8_t *buf;
	char name[64];
	int r;

	if (!s->n)
		return -ENOENT;
	name_of(name, sizeof(name), s->entries[0].seq, SUFFIX);
	r = statefile_read(s->dirfd, name, s->max_bytes, &buf, len);
	if (r < 0)
		return r;
	/* changed under the spool since it was written */
	if (*len != s->entries[0].size) {
		free(buf);
		return -EIO;
	}
	*seq = s->entries[0].seq;
	*data = buf;
	return 0;
}

int spool_ack(struct spool *s, uint64_t acked)
{
	size_t n = 0;

	while (n < s->n && s->entries[n].seq <= acked)
		n++;
	return n ? remove_oldest(s, n) : 0;
}

int spool_newest_seq(const char *dir, uint64_t *seq)
{
	struct dirent *de;
	uint64_t v;
	DIR *d;

	*seq = 0;
	d = opendir(dir);
	if (!d)
		return negative_errno();
	while ((de = readdir(d)))
		if (!parse_name(de->d_name, SUFFIX, &v) && v > *seq)
			*seq = v;
	closedir(d);
	return 0;
}

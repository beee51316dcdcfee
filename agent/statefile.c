// SPDX-License-Identifier: GPL-2.0
/*
 * Atomic replacement of small state files (statefile.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "statefile.h"

int statefile_replace(int dirfd, const char *name, const void *data, size_t len)
{
	char tmp[256];
	int fd, r = 0;
	ssize_t got;

	if ((size_t)snprintf(tmp, sizeof(tmp), ".%s.tmp", name) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return negative_errno();
	got = write(fd, data, len);
	if (got < 0)
		r = negative_errno();
	else if ((size_t)got != len)
		r = -EIO;
	else if (fsync(fd) < 0)
		r = negative_errno();
	close(fd);
	if (!r && renameat(dirfd, tmp, dirfd, name) < 0)
		r = negative_errno();
	if (r < 0) {
		unlinkat(dirfd, tmp, 0);
		return r;
	}
	return fsync(dirfd) < 0 ? negative_errno() : 0;
}

int statefile_read(int dirfd, const char *name, size_t max, uint8_t **data, size_t *len)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ uint8_t *buf = NULL;
	struct stat st;
	size_t got = 0;
	ssize_t n;

	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return negative_errno();
	if (fstat(fd, &st) < 0)
		return negative_errno();
	if (st.st_size <= 0 || (uint64_t)st.st_size > max)
		return -EBADMSG;
	buf = malloc((size_t)st.st_size);
	if (!buf)
		return -ENOMEM;
	while (got < (size_t)st.st_size) {
		n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return negative_errno();
		if (n == 0)
			return -EIO;
		got += (size_t)n;
	}
	*data = TAKE_PTR(buf);
	*len = got;
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "rootfs.h"

static const char *const allowed_tops[] = {
	"/proc/", "/sys/", "/dev/", "/boot/", "/etc/", "/run/", "/var/lib/",
};

int rootfs_open_root(struct rootfs *rfs, const char *prefix)
{
	if (!prefix || !*prefix)
		prefix = "/";
	rfs->prefix = strdup(prefix);
	if (!rfs->prefix)
		return -ENOMEM;
	rfs->dirfd = open(prefix, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfs->dirfd < 0) {
		int r = negative_errno();

		free(rfs->prefix);
		rfs->prefix = NULL;
		return r;
	}
	return 0;
}

void rootfs_close(struct rootfs *rfs)
{
	if (rfs->dirfd >= 0)
		close(rfs->dirfd);
	free(rfs->prefix);
	rfs->dirfd = -1;
	rfs->prefix = NULL;
}

static bool has_dotdot(const char *path)
{
	for (const char *p = path; (p = strstr(p, "..")); p += 2) {
		bool start = p == path || p[-1] == '/';
		bool end = p[2] == '\0' || p[2] == '/';

		if (start && end)
			return true;
	}
	return false;
}

int rootfs_check_path(const char *path)
{
	if (path[0] != '/' || has_dotdot(path))
		return -EPERM;
	for (size_t i = 0; i < ARRAY_SIZE(allowed_tops); i++)
		if (strncmp(path, allowed_tops[i], strlen(allowed_tops[i])) == 0)
			return 0;
	return -EPERM;
}

int rootfs_path(const struct rootfs *rfs, const char *path, char *buf, size_t size)
{
	int r = rootfs_check_path(path);
	int n;

	if (r < 0)
		return r;
	if (strcmp(rfs->prefix, "/") == 0)
		n = snprintf(buf, size, "%s", path);
	else
		n = snprintf(buf, size, "%s%s", rfs->prefix, path);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int rootfs_open(const struct rootfs *rfs, const char *path, int flags)
{
	int r = rootfs_check_path(path);
	int fd;

	if (r < 0)
		return r;
	fd = openat(rfs->dirfd, path + 1, flags | O_CLOEXEC | O_NOCTTY);
	return fd < 0 ? negative_errno() : fd;
}

ssize_t rootfs_read(const struct rootfs *rfs, const char *path, char *buf, size_t size)
{
	_cleanup_close_ int fd = rootfs_open(rfs, path, O_RDONLY);
	size_t len = 0;
	ssize_t n;

	if (fd < 0)
		return fd;
	if (size == 0)
		return -EINVAL;
	while (len < size - 1) {
		n = read(fd, buf + len, size - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return negative_errno();
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	if (len == size - 1) {
		char extra;

		n = read(fd, &extra, 1);
		if (n > 0)
			return -EFBIG;
	}
	return (ssize_t)len;
}

int rootfs_write(const struct rootfs *rfs, const char *path, const char *s)
{
	_cleanup_close_ int fd = rootfs_open(rfs, path, O_WRONLY | O_TRUNC);
	size_t len = strlen(s);
	ssize_t n;

	if (fd < 0)
		return fd;
	n = write(fd, s, len);
	if (n < 0)
		return negative_errno();
	return (size_t)n == len ? 0 : -EIO;
}

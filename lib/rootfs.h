/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Root-prefixed access to the kernel's files.
 *
 * Every /proc, /sys, /dev and /boot path the agent touches goes through a
 * struct rootfs, so the same code runs on the live system (prefix "/") and
 * on a fixture tree in tests (prefix "tests/fixtures/host-6.1", no root
 * needed). Paths are absolute as the kernel names them ("/proc/meminfo");
 * they must stay below one of the allowed top directories and may not
 * contain ".." components, so an id taken from a policy cannot walk out.
 */
#ifndef KMEMCTL_ROOTFS_H
#define KMEMCTL_ROOTFS_H

#include <stddef.h>
#include <sys/types.h>

struct rootfs {
	int dirfd;
	char *prefix;
};

int rootfs_open_root(struct rootfs *rfs, const char *prefix);
void rootfs_close(struct rootfs *rfs);

/* -EPERM for paths outside /proc, /sys, /dev, /boot, /etc, /run, /var/lib. */
int rootfs_check_path(const char *path);
/* The path as the host sees it, for APIs that take names (libkmod). */
int rootfs_path(const struct rootfs *rfs, const char *path, char *buf, size_t size);
int rootfs_open(const struct rootfs *rfs, const char *path, int flags);

/*
 * Read a whole small file into buf and NUL-terminate it. Returns the length
 * or a negative errno; -EFBIG when it does not fit (buf then holds the first
 * size - 1 bytes).
 */
ssize_t rootfs_read(const struct rootfs *rfs, const char *path, char *buf, size_t size);
/* Write s in one write() call, as sysfs stores expect. */
int rootfs_write(const struct rootfs *rfs, const char *path, const char *s);

#endif

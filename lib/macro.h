/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Small helpers shared by all userspace code: scope-bound cleanup in the
 * systemd/kmod manner, so ownership is visible at the declaration.
 */
#ifndef KMEMCTL_MACRO_H
#define KMEMCTL_MACRO_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define _cleanup_(f) __attribute__((cleanup(f)))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _unused_ __attribute__((unused))
#define _noreturn_ __attribute__((noreturn))

/* Hand a cleanup-owned pointer to someone else: the variable becomes NULL. */
#define TAKE_PTR(p)                      \
	({                               \
		__typeof__(p) _p_ = (p); \
		(p) = NULL;              \
		_p_;                     \
	})

#define TAKE_FD(fd)              \
	({                       \
		int _fd_ = (fd); \
		(fd) = -1;       \
		_fd_;            \
	})

static inline void freep(void *p)
{
	free(*(void **)p);
}

static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;

		close(*fd);
		errno = saved;
	}
}

static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)

/* errno as a negative return, never 0 even when a libc call forgot to set it. */
static inline int negative_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}

#endif

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every kernel-version decision of the module, as HAVE_* macros; .c files
 * test these and never LINUX_VERSION_CODE.
 */
#ifndef _KMEMCTL_COMPAT_H
#define _KMEMCTL_COMPAT_H

#include <linux/version.h>

#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 1, 0)
#error "kmemctl supports Linux 6.1 and later"
#endif

#endif

/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * kmemctl.ko userspace interface.
 *
 * sysfs, under /sys/kernel/kmemctl/:
 *   version	module version, e.g. "0.1.0"
 *   abi	KMEMCTL_ABI below; userspace refuses a module whose ABI it
 *		does not know
 *
 * The mitigation and probe directories and the /dev/kmemctl event records
 * are added here as they are built; every change bumps KMEMCTL_ABI.
 */
#ifndef _UAPI_KMEMCTL_H
#define _UAPI_KMEMCTL_H

#define KMEMCTL_ABI 1

#endif

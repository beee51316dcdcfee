/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Host-wide numbers the report carries besides kmemctl.ko's: TLB
 * shootdowns from /proc/interrupts and memory pressure (PSI) from
 * /proc/pressure/memory, read through the root prefix.
 */
#ifndef KMEM_AGENT_PROCSTAT_H
#define KMEM_AGENT_PROCSTAT_H

#include <stdint.h>

#include "rootfs.h"

/*
 * The sum of the "TLB" row of /proc/interrupts over its CPU columns.
 * -ENOENT when there is no such row (not x86), -EBADMSG when the file is
 * not what the kernel writes.
 */
int procstat_tlb_shootdowns(const struct rootfs *rfs, uint64_t *total);

/*
 * avg10 of the "some" and "full" lines, in hundredths of a percent.
 * -ENOENT or -EOPNOTSUPP when PSI is off, -EBADMSG when malformed.
 */
int procstat_memory_pressure(const struct rootfs *rfs, uint32_t *some, uint32_t *full);

#endif

/* SPDX-License-Identifier: GPL-2.0 */
/* A report the size of a real one, for the load generators of bench/. */
#ifndef KMEMCTL_BENCH_FAKE_REPORT_H
#define KMEMCTL_BENCH_FAKE_REPORT_H

#include <stddef.h>
#include <stdint.h>

/*
 * The encoded report of host number seq at unix_ms into buf (16 KiB); its
 * length. Its samples cover [unix_ms - 1, unix_ms): kmemd leaves out
 * samples that overlap the host's earlier ones.
 */
size_t fake_report(const char *host, uint64_t seq, int64_t unix_ms, uint8_t *buf);

#endif

/* SPDX-License-Identifier: GPL-2.0 */
#ifndef KMEMCTL_HOSTPORT_H
#define KMEMCTL_HOSTPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Split "host:port" or "[v6addr]:port" from a config file. Port 0 is taken
 * only with allow_zero (listen on any free port). -EINVAL on anything else.
 */
int hostport_split(const char *s, char *host, size_t size, uint16_t *port, bool allow_zero);

#endif

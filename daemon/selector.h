/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Host selectors: which hosts a policy assignment (and, later, a rollout)
 * reaches, as JSON:
 *   {"host": "web-0421"}
 *   {"labels": {"role": "web"}, "kernel_release": "6.1.0-57-amd64",
 *    "build_id": "e4f1...", "kasan": false, "min_cpus": 16, "max_cpus": 128}
 *   {"all": true}
 * Every key given must match (labels: each one listed). kernel_release is
 * a shell pattern (fnmatch(3): "6.1.0-*-amd64"); CPU counts are possible
 * CPUs. An empty selector is refused: reaching the whole fleet takes
 * "all": true, on its own.
 */
#ifndef KMEMD_SELECTOR_H
#define KMEMD_SELECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kmemctl/v1/facts.pb-c.h"

#define SELECTOR_MAX_LABELS 16

struct selector {
	bool all;
	char host[65];
	struct {
		char key[64];
		char value[128];
	} labels[SELECTOR_MAX_LABELS];
	size_t nlabels;
	char kernel_release[65];
	char build_id[81];
	int kasan; /* -1: either */
	uint32_t min_cpus, max_cpus; /* 0: no bound */
};

/* -EINVAL with a one-line reason naming the key for anything but a valid selector. */
int selector_parse(const char *json, size_t len, struct selector *s, char *err, size_t errlen);
bool selector_match(const struct selector *s, const Kmemctl__V1__HostFacts *f);

#endif

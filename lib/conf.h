/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Configuration loading shared by kmemd and kmem-agent: load FILE plus its
 * drop-ins with ini_load(), log every error once with file:line, and
 * implement `-n` (check and exit) and `-nv` (print normalized and exit).
 */
#ifndef KMEMCTL_CONF_H
#define KMEMCTL_CONF_H

#include <stdbool.h>

#include "ini.h"

enum conf_check {
	CONF_RUN, /* load and go on */
	CONF_CHECK, /* -n */
	CONF_CHECK_PRINT, /* -nv */
};

/*
 * Returns 0 when the configuration is good (defaults count as good when the
 * file is missing and `missing_ok`), a negative errno after logging each
 * problem otherwise. In the two check modes the caller exits with the result.
 */
int conf_load(const struct ini_option *table, size_t n_table, void *target, const char *path,
	      bool missing_ok, enum conf_check check);

#endif

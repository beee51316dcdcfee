// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>

#include "conf.h"
#include "log.h"

int conf_load(const struct ini_option *table, size_t n_table, void *target, const char *path,
	      bool missing_ok, enum conf_check check)
{
	struct ini_errors errs = { 0 };
	int r = ini_load(table, n_table, target, path, &errs);

	if (r == -ENOENT && missing_ok) {
		log_debug("%s: not found, using defaults", path);
		r = 0;
	} else {
		for (size_t i = 0; i < errs.n; i++)
			log_error("%s", errs.msgs[i]);
	}
	ini_errors_free(&errs);
	if (r < 0)
		return log_error_errno(r, "configuration '%s' has errors", path);
	if (check == CONF_CHECK_PRINT)
		ini_print(stdout, table, n_table, target);
	else if (check == CONF_CHECK)
		log_info("configuration '%s' OK", path);
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer: a control socket message, as any local user may send one,
 * through ctl_parse_request() in the control process. What it accepts is
 * what the control process forwards, so the parent's own check
 * (privsep_check_request()) must accept it too, and a refusal's reason
 * must be a terminated string.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "privsep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct privsep_request out;
	struct ctl_request req;
	char err[256];

	/* the control process refuses longer messages before parsing */
	if (size > CTL_MAX_MSG)
		return 0;
	memset(err, 'x', sizeof(err));
	if (ctl_parse_request((const char *)data, size, &req, err, sizeof(err)) < 0) {
		if (!memchr(err, '\0', sizeof(err)) || req.cmd != 0)
			abort();
		return 0;
	}
	if (req.cmd == CTL_SET || req.cmd == CTL_DISABLE || req.cmd == CTL_ENABLE) {
		memset(&out, 0, sizeof(out));
		out.cmd = req.cmd;
		out.doc = req.doc;
		if (privsep_check_request(&out) < 0)
			abort();
	}
	return 0;
}

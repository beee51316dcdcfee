/* SPDX-License-Identifier: GPL-2.0 */
/* Exit codes shared by kmemctl and kmem-agent -o, documented in kmemctl(8). */
#ifndef KMEMCTL_EXIT_CODES_H
#define KMEMCTL_EXIT_CODES_H

enum {
	EXIT_OK = 0,
	EXIT_ERROR = 1,
	EXIT_USAGE = 2,
	EXIT_UNREACHABLE = 3,
	EXIT_REFUSED = 4,
};

#endif

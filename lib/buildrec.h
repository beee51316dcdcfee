/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel builds as kmemctl.ko describes them, and build records
 * (docs/kmod.md, "Verified builds").
 *
 * The module's build file, /sys/kernel/kmemctl/build:
 *   build_id <hex>
 *   release <uname -r>
 *   version <uname -v>
 *   copy <mitigation> <name> <digest>	(any number: the module's copies
 *	of kernel code for this build's series, lib/copycheck.h)
 *   func <mitigation> <symbol> <size> <fingerprint>	(any number; the
 *	fingerprint "-" until the module has the build's patch sites)
 *
 * A build record, at most BUILDREC_MAX bytes:
 *   kmemctl-build-record 2
 *   build_id, release, version as above
 *   source <package name> <package version>
 *   copy lines: the copies each mitigation's func lines were checked with,
 *	at least one for every mitigation with a func line
 *   func lines as above
 *   end
 * Format 1 named a kmemctl version instead of copies; it is refused.
 */
#ifndef KMEMCTL_BUILDREC_H
#define KMEMCTL_BUILDREC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BUILDREC_MAX (16 << 10)
#define BUILDREC_ERR_MAX 256

struct build_func {
	char mitigation[33];
	char symbol[129];
	uint64_t size;
	char fingerprint[17];
};

struct build_copy {
	char mitigation[33];
	char name[161];
	char digest[17];
};

struct build_info {
	char build_id[129];
	char release[129];
	char version[257];
	struct build_func *funcs;
	size_t nfuncs;
	struct build_copy *copies;
	size_t ncopies;
	/* records only */
	char source_name[129];
	char source_version[129];
};

/* -EBADMSG with err saying which line and why, -ENOMEM. */
int build_parse(const char *text, size_t len, struct build_info *b, char err[BUILDREC_ERR_MAX]);
int build_parse_record(const char *text, size_t len, struct build_info *b,
		       char err[BUILDREC_ERR_MAX]);
/* The record of b, malloc'ed and NUL-terminated; -EFBIG beyond BUILDREC_MAX. */
int build_write_record(const struct build_info *b, char **out, size_t *len);
void build_info_free(struct build_info *b);

/*
 * Whether a and b have the same copies of mitigation m. When not, and why
 * is given, it names the first copy that differs ("lp_rstat.c:x differs",
 * "... is only in <a's|b's>"), with a_is and b_is naming the two sides.
 */
bool build_same_copies(const struct build_info *a, const struct build_info *b, const char *m,
		       const char *a_is, const char *b_is, char *why, size_t size);

#endif

// SPDX-License-Identifier: GPL-2.0
/*
 * Build records from [agent] builds to kmemctl.ko (docs/agent.md, "Build
 * records"). A bundle is refused unless a pinned policy key signed it as
 * a build record (never a policy: lib/sign.c separates the two) and its
 * record parses; it is skipped unless it could verify something here:
 * the module matches records on the code (func lines), never on the build
 * id or a version, and keeps a bounded number of written records, so the
 * agent writes only records that share at least one func line with the
 * running kernel's build file, of a mitigation whose copies are the
 * module's (its copy lines): a record outlives kmemctl upgrades that
 * leave its copies as they were.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "builds.h"
#include "buildrec.h"
#include "kernel.h"
#include "log.h"
#include "macro.h"
#include "message-ids.h"
#include "statefile.h"

/* A signed record is at most 16 KiB of text and a few hundred bytes more. */
#define BUNDLE_MAX (64 << 10)
/* More than any fleet's builds; a directory beyond it is a mistake. */
#define BUNDLES_MAX 256

struct bundle {
	const char *name;
	Kmemctl__V1__BuildRecordPayload *payload;
	struct build_info rec;
	bool parsed;
};

static void event(int level, const char *mid, const struct bundle *b, const char *reason,
		  const char *fmt, ...) _printf_(5, 6);

static void event(int level, const char *mid, const struct bundle *b, const char *reason,
		  const char *fmt, ...)
{
	char f_bundle[300], f_build[160], f_release[160], f_source[280], f_reason[300], msg[512];
	const char *fields[6];
	size_t n = 0;
	va_list ap;

	snprintf(f_bundle, sizeof(f_bundle), "BUNDLE=%s", b->name);
	fields[n++] = f_bundle;
	if (b->parsed) {
		snprintf(f_build, sizeof(f_build), "BUILD_ID=%s", b->rec.build_id);
		snprintf(f_release, sizeof(f_release), "RELEASE=%s", b->rec.release);
		snprintf(f_source, sizeof(f_source), "SOURCE=%s %s", b->rec.source_name,
			 b->rec.source_version);
		fields[n++] = f_build;
		fields[n++] = f_release;
		fields[n++] = f_source;
	}
	if (reason) {
		snprintf(f_reason, sizeof(f_reason), "REASON=%s", reason);
		fields[n++] = f_reason;
	}
	fields[n] = NULL;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_event(level, mid, fields, "%s", msg);
}

static void refuse(const struct bundle *b, const char *reason)
{
	event(LOG_WARNING, MID_BUILD_REFUSED, b, reason, "build record bundle '%s' refused: %s",
	      b->name, reason);
}

/* A regular file only: a FIFO or a device in the directory would hang or lie. */
static int read_bundle(int dirfd, const char *name, uint8_t **out, size_t *len)
{
	_cleanup_close_ int fd =
		openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	_cleanup_free_ uint8_t *buf = NULL;
	struct stat st;
	ssize_t n;

	if (fd < 0)
		return negative_errno();
	if (fstat(fd, &st) < 0)
		return negative_errno();
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if (st.st_size > BUNDLE_MAX)
		return -EFBIG;
	buf = malloc(BUNDLE_MAX + 1);
	if (!buf)
		return -ENOMEM;
	n = read(fd, buf, BUNDLE_MAX + 1);
	if (n < 0)
		return negative_errno();
	if (n > BUNDLE_MAX)
		return -EFBIG;
	*len = (size_t)n;
	*out = TAKE_PTR(buf);
	return 0;
}

static const char *verify_error(int r)
{
	switch (r) {
	case -ENOKEY:
		return "signed by no pinned key";
	case -ETIME:
		return "issued in the future";
	case -EBADMSG:
		return "not a signed build record, or its signature does not verify";
	default:
		return strerror(-r);
	}
}

/* Verify and parse; 0, or the bundle was refused and logged. */
static int check_bundle(const struct keyring *kr, time_t now, const uint8_t *buf, size_t len,
			struct bundle *b)
{
	char err[BUILDREC_ERR_MAX], why[BUILDREC_ERR_MAX + 32];
	int r;

	r = build_record_verify(kr, buf, len, now, &b->payload);
	if (r < 0) {
		refuse(b, verify_error(r));
		return r;
	}
	r = build_parse_record(b->payload->record, strlen(b->payload->record), &b->rec, err);
	if (r < 0) {
		snprintf(why, sizeof(why), "its record is malformed: %s",
			 r == -EBADMSG ? err : strerror(-r));
		refuse(b, why);
		return r;
	}
	b->parsed = true;
	return 0;
}

/* Read, verify and parse; 0, or the bundle was refused and logged. */
static int open_bundle(int dirfd, const struct keyring *kr, time_t now, struct bundle *b)
{
	_cleanup_free_ uint8_t *buf = NULL;
	char why[64];
	size_t len;
	int r;

	r = read_bundle(dirfd, b->name, &buf, &len);
	if (r < 0) {
		snprintf(why, sizeof(why), "unreadable: %s",
			 r == -EINVAL ? "not a regular file" :
			 r == -EFBIG  ? "larger than 64 KiB" :
					strerror(-r));
		refuse(b, why);
		return r;
	}
	return check_bundle(kr, now, buf, len, b);
}

static bool same_func(const struct build_func *a, const struct build_func *b)
{
	return !strcmp(a->mitigation, b->mitigation) && !strcmp(a->symbol, b->symbol) &&
	       a->size == b->size && !strcmp(a->fingerprint, b->fingerprint);
}

/*
 * Whether rec could verify anything of the build running: one func line
 * in common. *copies: whether a mitigation of such a line has the
 * module's copies; when none has, why names the first that differs.
 */
static bool concerns(const struct build_info *rec, const struct build_info *running, bool *copies,
		     char *why, size_t size)
{
	bool common = false;

	*copies = false;
	for (size_t i = 0; i < rec->nfuncs; i++)
		for (size_t j = 0; j < running->nfuncs; j++) {
			const char *m = rec->funcs[i].mitigation;
			char w[200];

			if (!same_func(&rec->funcs[i], &running->funcs[j]))
				continue;
			if (build_same_copies(rec, running, m, "the record", "the module", w,
					      sizeof(w))) {
				*copies = true;
				return true;
			}
			if (!common)
				snprintf(why, size, "%s: %s", m, w);
			common = true;
		}
	return common;
}

static void admit(const struct rootfs *rfs, const struct build_info *running, struct bundle *b,
		  struct builds_tally *t)
{
	char why[256];
	bool copies;
	int r;

	if (concerns(&b->rec, running, &copies, why, sizeof(why)) && !copies) {
		t->skipped++;
		log_info("build record bundle '%s' skipped: it was checked with other copies than "
			 "the module's (%s): make it again with this kmemctl",
			 b->name, why);
		return;
	}
	if (!copies) {
		t->skipped++;
		log_info("build record bundle '%s' skipped: build %s (%s) shares no function with "
			 "this kernel's, build %s (%s)",
			 b->name, b->rec.build_id, b->rec.release, running->build_id,
			 running->release);
		return;
	}
	r = kernel_write_record(rfs, b->payload->record);
	if (r < 0) {
		t->refused++;
		snprintf(why, sizeof(why), "kmemctl.ko refused it: %s%s", strerror(-r),
			 r == -EINVAL ? " (dmesg says which line and why)" : "");
		refuse(b, why);
		return;
	}
	t->admitted++;
	event(LOG_NOTICE, MID_BUILD_ADMITTED, b, NULL,
	      "build record bundle '%s' admitted: build %s (%s) from %s %s, signed by %s", b->name,
	      b->rec.build_id, b->rec.release, b->rec.source_name, b->rec.source_version,
	      b->payload->signer);
}

static void one_bundle(const struct rootfs *rfs, const struct build_info *running, int dirfd,
		       const struct keyring *kr, time_t now, const char *name,
		       struct builds_tally *t)
{
	struct bundle b = { .name = name };

	if (open_bundle(dirfd, kr, now, &b) < 0)
		t->refused++;
	else
		admit(rfs, running, &b, t);
	if (b.payload)
		kmemctl__v1__build_record_payload__free_unpacked(b.payload, NULL);
	build_info_free(&b.rec);
}

static int bundle_filter(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return d->d_name[0] != '.' && n > 7 && !strcmp(d->d_name + n - 7, ".bundle");
}

static void each_bundle(const struct rootfs *rfs, const struct build_info *running,
			const struct keyring *kr, const char *dir, time_t now,
			struct builds_tally *t)
{
	_cleanup_close_ int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent **list;
	int n;

	if (dirfd < 0 || (n = scandir(dir, &list, bundle_filter, alphasort)) < 0) {
		if (errno != ENOENT)
			log_error_errno(negative_errno(),
					"reading build records in '%s' failed: %m", dir);
		return;
	}
	if (n > BUNDLES_MAX)
		log_error("'%s' holds %d bundles: only the first %d are read", dir, n, BUNDLES_MAX);
	for (int i = 0; i < n; i++) {
		if (i < BUNDLES_MAX)
			one_bundle(rfs, running, dirfd, kr, now, list[i]->d_name, t);
		free(list[i]);
	}
	free(list);
}

int builds_keep(const struct keyring *kr, const char *dir, const uint8_t *buf, size_t len,
		time_t now)
{
	static const char hex[] = "0123456789abcdef";
	struct bundle b = { .name = "from kmemd" };
	unsigned char md[32];
	char name[sizeof("kmemd-.bundle") + 32];
	_cleanup_close_ int dirfd = -1;
	int r;

	r = check_bundle(kr, now, buf, len, &b);
	if (r == 0 && !EVP_Digest(buf, len, md, NULL, EVP_sha256(), NULL))
		r = -ENOMEM;
	if (r < 0)
		goto out;
	/* named by its content: the same bundle again is one file */
	memcpy(name, "kmemd-", 6);
	for (size_t i = 0; i < 16; i++) {
		name[6 + 2 * i] = hex[md[i] >> 4];
		name[7 + 2 * i] = hex[md[i] & 15];
	}
	strcpy(name + 38, ".bundle");
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		r = log_error_errno(negative_errno(), "creating '%s' failed: %m", dir);
		goto out;
	}
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		r = log_error_errno(negative_errno(), "opening '%s' failed: %m", dir);
		goto out;
	}
	if (faccessat(dirfd, name, F_OK, 0) == 0) {
		r = 0;
		goto out;
	}
	r = statefile_replace(dirfd, name, buf, len);
	if (r < 0) {
		log_error_errno(r, "keeping kmemd's build record for %s in '%s' failed: %m",
				b.rec.release, dir);
		goto out;
	}
	log_info("kmemd's build record for build %s (%s), signed by %s, kept as '%s/%s'",
		 b.rec.build_id, b.rec.release, b.payload->signer, dir, name);
	r = 1;
out:
	if (b.payload)
		kmemctl__v1__build_record_payload__free_unpacked(b.payload, NULL);
	build_info_free(&b.rec);
	return r;
}

struct builds_tally builds_admit(const struct rootfs *rfs, const struct keyring *kr,
				 const char *dir, time_t now)
{
	struct builds_tally t = { 0 };
	struct build_info running;
	int r = kernel_read_build(rfs, &running);

	if (r < 0) {
		if (r == -ENOENT)
			log_info("kmemctl.ko has no build file (not loaded, or before verified "
				 "builds): no build record written");
		else if (r == -EPROTO)
			log_error("kmemctl.ko speaks another ABI than this agent: no build record "
				  "written");
		else
			log_error_errno(r, "kmemctl.ko's build file is unreadable: no build record "
					   "written: %m");
		return t;
	}
	each_bundle(rfs, &running, kr, dir, now, &t);
	build_info_free(&running);
	if (t.admitted + t.refused + t.skipped)
		log_info("build records in '%s': %u admitted, %u refused, %u skipped", dir,
			 t.admitted, t.refused, t.skipped);
	return t;
}

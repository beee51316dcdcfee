/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmemctl.ko's sysfs interface, /sys/kernel/kmemctl/ (kmod/uapi/kmemctl.h),
 * read and written through a root prefix. In the agent only the root
 * parent calls these, as OpenBSD bgpd's kroute.c alone touches the kernel.
 *
 * Reads check what the module wrote: a file whose content is not what the
 * ABI says gives -EBADMSG, so a module of another ABI or a corrupted
 * fixture is an error, never a wrong number.
 */
#ifndef KMEM_AGENT_KERNEL_H
#define KMEM_AGENT_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buildrec.h"
#include "hist.h"
#include "rootfs.h"
#include "uapi/kmemctl.h"

#define KERNEL_ID_MAX 32
#define KERNEL_MAX_IDS 16
#define KERNEL_MAX_KV 16
#define KERNEL_REASON_MAX 192

/* The module's states (kmod/uapi/kmemctl.h), after one it may add later. */
#define KERNEL_STATE_ENUM(e, name) KERNEL_STATE_##e,
enum kernel_state { KERNEL_STATE_UNKNOWN, KMEMCTL_STATES(KERNEL_STATE_ENUM) };

struct kernel_kv {
	char key[KERNEL_ID_MAX + 1];
	uint64_t value;
};

struct kernel_mitigation {
	char id[KERNEL_ID_MAX + 1];
	enum kernel_state state;
	bool on; /* mode */
	char reason[KERNEL_REASON_MAX];
	struct kernel_kv params[KERNEL_MAX_KV];
	size_t nparams;
	struct kernel_kv stats[KERNEL_MAX_KV];
	size_t nstats;
};

struct kernel_probe {
	char id[KERNEL_ID_MAX + 1];
	bool enabled;
	bool supported;
	char reason[KERNEL_REASON_MAX];
	uint64_t threshold_ns;
	uint64_t missed;
	struct hist hist;
	/* the secondary histogram (<name>_hist), if the probe has one */
	char second[KERNEL_ID_MAX + 1];
	struct hist hist2;
};

/* The module's ABI version, or -ENOENT when it is not loaded. */
int kernel_abi(const struct rootfs *rfs);

/* The ids under mitigations/ or probes/ (dir), sorted. */
int kernel_ids(const struct rootfs *rfs, const char *dir, char ids[][KERNEL_ID_MAX + 1], size_t max,
	       size_t *n);

int kernel_read_mitigation(const struct rootfs *rfs, const char *id, struct kernel_mitigation *m);
/*
 * Writes to a module of another ABI fail with -EPROTO, except turning a
 * mitigation off.
 */
int kernel_set_mode(const struct rootfs *rfs, const char *id, bool on);
/*
 * A tripped mitigation back to off ("1" to its reset file), so that `mode
 * on` is taken again; in any other state the module does nothing.
 */
int kernel_reset(const struct rootfs *rfs, const char *id);
/* One write, all-or-nothing as the module takes it. */
int kernel_set_params(const struct rootfs *rfs, const char *id, const struct kernel_kv *kv,
		      size_t n);

int kernel_read_probe(const struct rootfs *rfs, const char *id, struct kernel_probe *p);
/* enabled, threshold_ns: -1 leaves it as it is */
int kernel_set_probe(const struct rootfs *rfs, const char *id, int enabled, int64_t threshold_ns);

/*
 * The running build as the module describes it (its build file, with the
 * module's copies). -ENOENT: no module, or one without
 * verified builds; -EPROTO: a module of another ABI. Free b with
 * build_info_free().
 */
int kernel_read_build(const struct rootfs *rfs, struct build_info *b);
/* The build file's text into buf (NUL-terminated); its length, or a negative errno. */
ssize_t kernel_build_file(const struct rootfs *rfs, char *buf, size_t size);
/*
 * What a mitigation's reason says while it waits for a build record
 * (kmod/verify.c: "unsupported: build <id> (<release>) not verified: ...").
 */
#define KERNEL_NOT_VERIFIED ") not verified: "
/* One build record to the records file, in one write; the module's errno. */
int kernel_write_record(const struct rootfs *rfs, const char *record);
/*
 * The running build's patch sites, taken from its image (/boot/vmlinuz-
 * <release>), written to kmemctl.ko: 0, or a negative errno with err
 * saying why (the image's reason, or the module's refusal).
 */
int kernel_write_sites(const struct rootfs *rfs, char *err, size_t len);

const char *kernel_state_name(enum kernel_state s);

/* "key<sep>value" lines, as params (=) and stats (space) files hold them. */
int kernel_parse_kv(const char *text, char sep, struct kernel_kv *kv, size_t max, size_t *n);

#endif

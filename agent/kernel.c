// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/kernel/kmemctl/: reading mitigations and probes, setting modes,
 * params and probe switches. Ids come from policies and the control
 * socket, so each is checked before it becomes part of a path.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel.h"
#include "kimage.h"
#include "macro.h"
#include "policydoc.h"
#include "kmemctl-names.h"

#define SYSFS "/sys/kernel/kmemctl"
#define FILE_MAX 4096

const char *kernel_state_name(enum kernel_state s)
{
	const char *name = s == KERNEL_STATE_UNKNOWN ? NULL : kmemctl_state_name(s - 1);

	return name ? name : "unknown";
}

static int path_of(char *buf, size_t size, const char *dir, const char *id, const char *file)
{
	if (!policy_id_valid(id))
		return -EINVAL;
	if ((size_t)snprintf(buf, size, SYSFS "/%s/%s/%s", dir, id, file) >= size)
		return -ENAMETOOLONG;
	return 0;
}

/* One line of a sysfs file, without its newline. */
static int read_line(const struct rootfs *rfs, const char *dir, const char *id, const char *file,
		     char *buf, size_t size)
{
	char path[256];
	ssize_t n;
	int r;

	r = path_of(path, sizeof(path), dir, id, file);
	if (r < 0)
		return r;
	n = rootfs_read(rfs, path, buf, size);
	if (n < 0)
		return (int)n;
	if (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	return strchr(buf, '\n') ? -EBADMSG : 0;
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -EBADMSG;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno || *end ? -EBADMSG : 0;
}

static int read_u64(const struct rootfs *rfs, const char *dir, const char *id, const char *file,
		    uint64_t *v)
{
	char buf[32];
	int r = read_line(rfs, dir, id, file, buf, sizeof(buf));

	return r < 0 ? r : parse_u64(buf, v);
}

static int write_file(const struct rootfs *rfs, const char *dir, const char *id, const char *file,
		      const char *s)
{
	char path[256];
	int r = path_of(path, sizeof(path), dir, id, file);

	return r < 0 ? r : rootfs_write(rfs, path, s);
}

/*
 * A module of another ABI may give the same files other meanings: nothing
 * is turned on or tuned in it. Turning off is always allowed, so the guard
 * and the kill switch still work across a version skew.
 */
static int write_checked(const struct rootfs *rfs, const char *dir, const char *id,
			 const char *file, const char *s)
{
	int abi = kernel_abi(rfs);

	/* not loaded: the write names the missing file */
	if (abi != -ENOENT && abi != KMEMCTL_ABI)
		return abi < 0 ? abi : -EPROTO;
	return write_file(rfs, dir, id, file, s);
}

int kernel_abi(const struct rootfs *rfs)
{
	char buf[16];
	uint64_t v;
	ssize_t n;

	n = rootfs_read(rfs, SYSFS "/abi", buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	if (n > 0 && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	if (parse_u64(buf, &v) < 0 || v > 1000)
		return -EBADMSG;
	return (int)v;
}

/* A directory under the root prefix, for readdir(). */
static int open_dir(const struct rootfs *rfs, const char *path, DIR **d)
{
	int fd = rootfs_open(rfs, path, O_RDONLY | O_DIRECTORY);

	if (fd < 0)
		return fd;
	*d = fdopendir(fd);
	if (!*d) {
		close(fd);
		return negative_errno();
	}
	return 0;
}

static int cmp_ids(const void *a, const void *b)
{
	return strcmp(a, b);
}

int kernel_ids(const struct rootfs *rfs, const char *dir, char ids[][KERNEL_ID_MAX + 1], size_t max,
	       size_t *n)
{
	char path[128];
	struct dirent *de;
	DIR *d;
	int r;

	if (strcmp(dir, "mitigations") && strcmp(dir, "probes"))
		return -EINVAL;
	snprintf(path, sizeof(path), SYSFS "/%s", dir);
	r = open_dir(rfs, path, &d);
	if (r < 0)
		return r;
	*n = 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (!policy_id_valid(de->d_name) || *n == max) {
			closedir(d);
			return -EBADMSG;
		}
		strcpy(ids[(*n)++], de->d_name);
	}
	closedir(d);
	qsort(ids, *n, sizeof(ids[0]), cmp_ids);
	return 0;
}

int kernel_parse_kv(const char *text, char sep, struct kernel_kv *kv, size_t max, size_t *n)
{
	const char *line = text, *eol, *mid;
	char value[32];
	size_t klen, vlen;

	*n = 0;
	for (; *line; line = *eol ? eol + 1 : eol) {
		eol = strchrnul(line, '\n');
		if (eol == line)
			continue;
		mid = memchr(line, sep, (size_t)(eol - line));
		if (!mid || *n == max)
			return -EBADMSG;
		klen = (size_t)(mid - line);
		vlen = (size_t)(eol - mid - 1);
		if (!klen || klen > KERNEL_ID_MAX || !vlen || vlen >= sizeof(value))
			return -EBADMSG;
		memcpy(kv[*n].key, line, klen);
		kv[*n].key[klen] = '\0';
		memcpy(value, mid + 1, vlen);
		value[vlen] = '\0';
		if (!policy_id_valid(kv[*n].key) || parse_u64(value, &kv[*n].value) < 0)
			return -EBADMSG;
		(*n)++;
	}
	return 0;
}

static enum kernel_state parse_state(const char *s)
{
	unsigned int i;

	for (i = 0; i < KMEMCTL_STATE_COUNT; i++)
		if (!strcmp(s, kmemctl_state_name(i)))
			return (enum kernel_state)(i + 1);
	return KERNEL_STATE_UNKNOWN;
}

int kernel_read_mitigation(const struct rootfs *rfs, const char *id, struct kernel_mitigation *m)
{
	_cleanup_free_ char *text = malloc(FILE_MAX);
	char buf[32], path[256];
	ssize_t n;
	int r;

	if (!text)
		return -ENOMEM;
	*m = (struct kernel_mitigation){ 0 };
	r = read_line(rfs, "mitigations", id, "state", buf, sizeof(buf));
	if (r < 0)
		return r;
	m->state = parse_state(buf);
	if (m->state == KERNEL_STATE_UNKNOWN)
		return -EBADMSG;
	strcpy(m->id, id);
	r = read_line(rfs, "mitigations", id, "mode", buf, sizeof(buf));
	if (r < 0)
		return r;
	if (strcmp(buf, "on") && strcmp(buf, "off"))
		return -EBADMSG;
	m->on = !strcmp(buf, "on");
	r = read_line(rfs, "mitigations", id, "reason", m->reason, sizeof(m->reason));
	if (r < 0)
		return r == -EFBIG ? -EBADMSG : r;
	path_of(path, sizeof(path), "mitigations", id, "params");
	n = rootfs_read(rfs, path, text, FILE_MAX);
	if (n < 0)
		return (int)n;
	r = kernel_parse_kv(text, '=', m->params, KERNEL_MAX_KV, &m->nparams);
	if (r < 0)
		return r;
	path_of(path, sizeof(path), "mitigations", id, "stats");
	n = rootfs_read(rfs, path, text, FILE_MAX);
	if (n < 0)
		return (int)n;
	return kernel_parse_kv(text, ' ', m->stats, KERNEL_MAX_KV, &m->nstats);
}

int kernel_set_mode(const struct rootfs *rfs, const char *id, bool on)
{
	return on ? write_checked(rfs, "mitigations", id, "mode", "on") :
		    write_file(rfs, "mitigations", id, "mode", "off");
}

int kernel_reset(const struct rootfs *rfs, const char *id)
{
	return write_checked(rfs, "mitigations", id, "reset", "1");
}

int kernel_set_params(const struct rootfs *rfs, const char *id, const struct kernel_kv *kv,
		      size_t n)
{
	char buf[1024];
	size_t len = 0, i;

	if (!n)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (!policy_id_valid(kv[i].key))
			return -EINVAL;
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s=%llu\n", kv[i].key,
					(unsigned long long)kv[i].value);
		if (len >= sizeof(buf))
			return -E2BIG;
	}
	return write_checked(rfs, "mitigations", id, "params", buf);
}

static int read_hist(const struct rootfs *rfs, const char *id, const char *file, char *text,
		     struct hist *h)
{
	char path[256];
	ssize_t n;
	int r;

	r = path_of(path, sizeof(path), "probes", id, file);
	if (r < 0)
		return r;
	n = rootfs_read(rfs, path, text, FILE_MAX);
	if (n < 0)
		return (int)n;
	/* the buckets give the count: the probe counts on while its files are read */
	return hist_parse_text(h, text, NULL) < 0 ? -EBADMSG : 0;
}

/*
 * The maximum must be in or above the highest bucket, as kmemd checks
 * (hist_from_pb()): a report with one below is refused whole, so a module
 * that says so is not believed (fuzz-sysfs).
 */
static int check_max(const struct hist *h)
{
	for (int b = HIST_BUCKETS - 1; b >= 0; b--)
		if (h->buckets[b])
			return hist_bucket(h->max_ns) >= (unsigned)b ? 0 : -EBADMSG;
	return 0;
}

/* The secondary histogram of a probe this build knows, "" for none. */
static const char *probe_second(const char *id)
{
	for (unsigned int i = 0; i < KMEMCTL_PROBE_COUNT; i++)
		if (!strcmp(kmemctl_probe_name(i), id))
			return kmemctl_probe_second(i);
	return "";
}

int kernel_read_probe(const struct rootfs *rfs, const char *id, struct kernel_probe *p)
{
	_cleanup_free_ char *text = malloc(FILE_MAX);
	char file[KERNEL_ID_MAX + 8];
	uint64_t enabled;
	int r;

	if (!text)
		return -ENOMEM;
	*p = (struct kernel_probe){ 0 };
	r = read_u64(rfs, "probes", id, "enabled", &enabled);
	if (r < 0)
		return r;
	if (enabled > 1)
		return -EBADMSG;
	strcpy(p->id, id);
	p->enabled = enabled;
	r = read_line(rfs, "probes", id, "reason", p->reason, sizeof(p->reason));
	if (r < 0)
		return r == -EFBIG ? -EBADMSG : r;
	p->supported = !strcmp(p->reason, "ok");
	/*
	 * The buckets before the maximum: a value the probe records in
	 * between then raises the maximum only, which is still consistent.
	 */
	if ((r = read_u64(rfs, "probes", id, "threshold_ns", &p->threshold_ns)) < 0 ||
	    (r = read_u64(rfs, "probes", id, "missed", &p->missed)) < 0 ||
	    (r = read_hist(rfs, id, "hist", text, &p->hist)) < 0 ||
	    (r = read_u64(rfs, "probes", id, "sum_ns", &p->hist.sum_ns)) < 0 ||
	    (r = read_u64(rfs, "probes", id, "max_ns", &p->hist.max_ns)) < 0 ||
	    (r = check_max(&p->hist)) < 0)
		return r;
	snprintf(p->second, sizeof(p->second), "%s", probe_second(id));
	if (!p->second[0])
		return 0;
	snprintf(file, sizeof(file), "%s_hist", p->second);
	r = read_hist(rfs, id, file, text, &p->hist2);
	if (r < 0)
		return r;
	snprintf(file, sizeof(file), "%s_max", p->second);
	r = read_u64(rfs, "probes", id, file, &p->hist2.max_ns);
	return r < 0 ? r : check_max(&p->hist2);
}

int kernel_set_probe(const struct rootfs *rfs, const char *id, int enabled, int64_t threshold_ns)
{
	char buf[32];
	int r = 0;

	if (threshold_ns >= 0) {
		snprintf(buf, sizeof(buf), "%lld", (long long)threshold_ns);
		r = write_checked(rfs, "probes", id, "threshold_ns", buf);
	}
	if (!r && enabled >= 0)
		r = write_checked(rfs, "probes", id, "enabled", enabled ? "1" : "0");
	return r;
}

int kernel_read_build(const struct rootfs *rfs, struct build_info *b)
{
	_cleanup_free_ char *text = malloc(BUILDREC_MAX);
	char err[BUILDREC_ERR_MAX];
	ssize_t n;

	if (!text)
		return -ENOMEM;
	n = kernel_build_file(rfs, text, BUILDREC_MAX);
	if (n < 0)
		return (int)n;
	return build_parse(text, (size_t)n, b, err);
}

ssize_t kernel_build_file(const struct rootfs *rfs, char *buf, size_t size)
{
	int abi = kernel_abi(rfs);
	ssize_t n;

	if (abi >= 0 && abi != KMEMCTL_ABI)
		return -EPROTO;
	/* a copy line per copy: more than a page */
	n = rootfs_read(rfs, SYSFS "/build", buf, size);
	return n == -EFBIG ? -EBADMSG : n;
}

int kernel_write_record(const struct rootfs *rfs, const char *record)
{
	int abi = kernel_abi(rfs);

	if (abi < 0)
		return abi;
	return abi == KMEMCTL_ABI ? rootfs_write(rfs, SYSFS "/records", record) : -EPROTO;
}

/* The whole file at path, of at most max bytes. */
static int read_all(const struct rootfs *rfs, const char *path, size_t max, uint8_t **out,
		    size_t *len)
{
	int fd = rootfs_open(rfs, path, O_RDONLY | O_CLOEXEC), r = 0;
	struct stat st;
	ssize_t n;

	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		r = -errno;
	else if (st.st_size <= 0 || (uint64_t)st.st_size > max)
		r = -EFBIG;
	if (r < 0) {
		close(fd);
		return r;
	}
	*out = malloc((size_t)st.st_size);
	*len = 0;
	while (*out && *len < (size_t)st.st_size) {
		n = read(fd, *out + *len, (size_t)st.st_size - *len);
		if (n <= 0) {
			r = n < 0 ? -errno : -EIO;
			break;
		}
		*len += (size_t)n;
	}
	close(fd);
	if (!*out)
		return -ENOMEM;
	if (r < 0)
		free(*out);
	return r;
}

/* A sysfs binary file takes a page per write(): the blob in as many. */
static int write_all(const struct rootfs *rfs, const char *path, const uint8_t *data, size_t len)
{
	int fd = rootfs_open(rfs, path, O_WRONLY | O_CLOEXEC), r = 0;
	ssize_t n;

	if (fd < 0)
		return fd;
	for (size_t off = 0; off < len; off += (size_t)n) {
		n = write(fd, data + off, len - off);
		if (n <= 0) {
			r = n < 0 ? -errno : -EIO;
			break;
		}
	}
	close(fd);
	return r;
}

int kernel_write_sites(const struct rootfs *rfs, char *err, size_t len)
{
	char release[128], path[192], why[KIMAGE_ERR_MAX];
	struct kimage_sites s;
	uint8_t *image;
	size_t n;
	ssize_t rn;
	int r = kernel_abi(rfs);

	if (r >= 0 && r != KMEMCTL_ABI)
		return snprintf(err, len, "kmemctl.ko speaks ABI %d", r), -EPROTO;
	rn = rootfs_read(rfs, "/proc/sys/kernel/osrelease", release, sizeof(release));
	if (rn <= 0)
		return snprintf(err, len, "no kernel release"), rn < 0 ? (int)rn : -EIO;
	release[strcspn(release, "\n")] = '\0';
	snprintf(path, sizeof(path), "/boot/vmlinuz-%s", release);
	r = read_all(rfs, path, KIMAGE_VMLINUX_MAX, &image, &n);
	if (r < 0)
		return snprintf(err, len, "reading %s: %s", path, strerror(-r)), r;
	r = kimage_sites(image, n, &s, why);
	free(image);
	if (r < 0)
		return snprintf(err, len, "%s: %s", path, why), r;
	r = write_all(rfs, SYSFS "/sites", s.blob, s.len);
	if (r < 0)
		snprintf(err, len, "kmemctl.ko refused the patch sites of %s: %s (dmesg says why)",
			 path, strerror(-r));
	kimage_sites_free(&s);
	return r;
}

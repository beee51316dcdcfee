// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "facts.h"
#include "macro.h"
#include "text.h"

/* The symbols whose value decides which mitigations and probes can work. */
static const char *const kconfig_wanted[] = {
	"CONFIG_LIVEPATCH",
	"CONFIG_KPROBES",
	"CONFIG_KASAN",
	"CONFIG_KASAN_VMALLOC",
	"CONFIG_HARDENED_USERCOPY",
	"CONFIG_MEMCG",
	"CONFIG_KALLSYMS_ALL",
	"CONFIG_DYNAMIC_FTRACE_WITH_REGS",
	"CONFIG_SMP",
	"CONFIG_NR_CPUS",
	"CONFIG_PREEMPT",
	"CONFIG_PREEMPT_VOLUNTARY",
	"CONFIG_SOFTLOCKUP_DETECTOR",
	"CONFIG_HARDLOCKUP_DETECTOR",
	"CONFIG_MODULE_SIG_FORCE",
	/* RCU stall reports count jiffies */
	"CONFIG_HZ",
};

static int parse_u32(const char **p, uint32_t *out)
{
	char *end;
	unsigned long v;

	if (!isdigit((unsigned char)**p))
		return -EINVAL;
	errno = 0;
	v = strtoul(*p, &end, 10);
	if (errno || v > UINT32_MAX)
		return -EINVAL;
	*p = end;
	*out = (uint32_t)v;
	return 0;
}

int facts_parse_cpulist(const char *text, uint32_t *count)
{
	const char *p = text;
	uint64_t n = 0;

	for (;;) {
		uint32_t lo, hi;

		if (parse_u32(&p, &lo) < 0)
			return -EINVAL;
		hi = lo;
		if (*p == '-') {
			p++;
			if (parse_u32(&p, &hi) < 0 || hi < lo)
				return -EINVAL;
		}
		n += (uint64_t)hi - lo + 1;
		if (*p == ',') {
			p++;
			continue;
		}
		break;
	}
	if (*p == '\n')
		p++;
	if (*p || n > UINT32_MAX)
		return -EINVAL;
	*count = (uint32_t)n;
	return 0;
}

int facts_parse_meminfo(const char *text, uint64_t *bytes)
{
	const char *line = text;

	while (line && *line) {
		unsigned long long kb;
		char unit[4];
		int used = 0;

		if (strncmp(line, "MemTotal:", 9) == 0) {
			if (sscanf(line + 9, " %llu %3s%n", &kb, unit, &used) != 2 ||
			    strcmp(unit, "kB") != 0 || kb > UINT64_MAX / 1024)
				return -EINVAL;
			*bytes = kb * 1024;
			return 0;
		}
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return -ENOENT;
}

static size_t align4(size_t n)
{
	return (n + 3) & ~(size_t)3;
}

int facts_parse_notes(const uint8_t *data, size_t len, char *hex, size_t size)
{
	size_t off = 0;

	/* Elf_Nhdr: namesz, descsz, type; name and desc each padded to 4 bytes. */
	while (len - off >= 12) {
		uint32_t namesz, descsz, type;
		size_t name_off, desc_off;

		memcpy(&namesz, data + off, 4);
		memcpy(&descsz, data + off + 4, 4);
		memcpy(&type, data + off + 8, 4);
		name_off = off + 12;
		if (namesz > len - name_off || align4(namesz) > len - name_off)
			return -EINVAL;
		desc_off = name_off + align4(namesz);
		if (descsz > len - desc_off)
			return -EINVAL;
		if (type == 3 && namesz == 4 && memcmp(data + name_off, "GNU", 4) == 0) {
			if (descsz == 0 || 2 * (size_t)descsz + 1 > size)
				return -EINVAL;
			for (uint32_t i = 0; i < descsz; i++)
				snprintf(hex + 2 * i, 3, "%02x", data[desc_off + i]);
			return 0;
		}
		if (align4(descsz) > len - desc_off)
			return -EINVAL;
		off = desc_off + align4(descsz);
	}
	return -ENOENT;
}

bool facts_valid_host_id(const char *id)
{
	size_t len = strlen(id);

	if (len == 0 || len > 64)
		return false;
	for (; *id; id++)
		if (!isalnum((unsigned char)*id) && !strchr("._-", *id))
			return false;
	return true;
}

bool facts_cmdline_disable(const char *cmdline)
{
	static const char word[] = "kmemctl.disable=1";
	const char *p = cmdline;

	while ((p = strstr(p, word))) {
		bool start = p == cmdline || isspace((unsigned char)p[-1]);
		char after = p[sizeof(word) - 1];

		if (start && (after == '\0' || isspace((unsigned char)after)))
			return true;
		p += sizeof(word) - 1;
	}
	return false;
}

static bool kconfig_is_wanted(const char *name, size_t len)
{
	for (size_t i = 0; i < ARRAY_SIZE(kconfig_wanted); i++)
		if (strlen(kconfig_wanted[i]) == len && strncmp(kconfig_wanted[i], name, len) == 0)
			return true;
	return false;
}

int facts_parse_kconfig(const char *text, struct facts *f)
{
	const char *line = text;

	f->n_kconfig = 0;
	f->kasan = false;
	while (line && *line) {
		const char *eq = strchr(line, '='), *nl = strchr(line, '\n');
		size_t vlen;

		if (!nl)
			nl = line + strlen(line);
		if (strncmp(line, "CONFIG_", 7) == 0 && eq && eq < nl &&
		    kconfig_is_wanted(line, (size_t)(eq - line))) {
			vlen = (size_t)(nl - eq - 1);
			if ((size_t)(eq - line) >= sizeof(f->kconfig_name[0]) ||
			    vlen >= sizeof(f->kconfig_value[0]) || vlen == 0 ||
			    f->n_kconfig == FACTS_KCONFIG_MAX)
				return -EINVAL;
			snprintf(f->kconfig_name[f->n_kconfig], sizeof(f->kconfig_name[0]), "%.*s",
				 (int)(eq - line), line);
			snprintf(f->kconfig_value[f->n_kconfig], sizeof(f->kconfig_value[0]),
				 "%.*s", (int)vlen, eq + 1);
			if (strcmp(f->kconfig_name[f->n_kconfig], "CONFIG_KASAN") == 0)
				f->kasan = strcmp(f->kconfig_value[f->n_kconfig], "y") == 0;
			f->n_kconfig++;
		}
		line = *nl ? nl + 1 : NULL;
	}
	return 0;
}

static void strip_newline(char *s)
{
	s[strcspn(s, "\n")] = '\0';
}

/* A one-line file as text kmemd takes: whoever set the hostname chose its bytes. */
static int read_line(const struct rootfs *rfs, const char *path, char *buf, size_t size)
{
	char raw[256];
	ssize_t n = rootfs_read(rfs, path, raw, sizeof(raw));

	if (n < 0)
		return (int)n;
	strip_newline(raw);
	text_escape(raw, buf, size);
	return 0;
}

static int read_cpus(const struct rootfs *rfs, const char *path, uint32_t *n)
{
	char buf[4096];
	ssize_t r = rootfs_read(rfs, path, buf, sizeof(buf));

	return r < 0 ? (int)r : facts_parse_cpulist(buf, n);
}

static int collect_required(const struct rootfs *rfs, struct facts *f)
{
	char buf[8192];
	ssize_t n;
	int r;

	r = read_line(rfs, "/proc/sys/kernel/osrelease", f->release, sizeof(f->release));
	if (r < 0)
		return r;
	r = read_cpus(rfs, "/sys/devices/system/cpu/possible", &f->possible_cpus);
	if (r < 0)
		return r;
	r = read_cpus(rfs, "/sys/devices/system/cpu/online", &f->online_cpus);
	if (r < 0)
		return r;
	n = rootfs_read(rfs, "/proc/meminfo", buf, sizeof(buf));
	return n < 0 ? (int)n : facts_parse_meminfo(buf, &f->mem_total);
}

static void collect_optional(const struct rootfs *rfs, struct facts *f)
{
	_cleanup_free_ char *config = malloc(1 << 20);
	uint8_t notes[4096];
	char buf[4096], path[128];
	ssize_t n;

	if (read_line(rfs, "/proc/sys/kernel/hostname", f->hostname, sizeof(f->hostname)) < 0)
		f->hostname[0] = '\0';
	n = rootfs_read(rfs, "/sys/kernel/notes", (char *)notes, sizeof(notes));
	if (n < 0 || facts_parse_notes(notes, (size_t)n, f->build_id, sizeof(f->build_id)) < 0)
		f->build_id[0] = '\0';
	if (rootfs_read(rfs, "/proc/cmdline", buf, sizeof(buf)) >= 0)
		f->cmdline_disable = facts_cmdline_disable(buf);
	snprintf(path, sizeof(path), "/boot/config-%s", f->release);
	if (config && rootfs_read(rfs, path, config, 1 << 20) >= 0)
		facts_parse_kconfig(config, f);
	if (read_line(rfs, "/sys/kernel/kmemctl/version", f->module_version,
		      sizeof(f->module_version)) < 0)
		f->module_version[0] = '\0';
	if (rootfs_read(rfs, "/sys/kernel/kmemctl/abi", buf, sizeof(buf)) >= 0)
		f->module_abi = (uint32_t)strtoul(buf, NULL, 10);
}

unsigned int facts_kconfig_uint(const struct facts *f, const char *name)
{
	unsigned long v;
	char *end;
	size_t i;

	for (i = 0; i < f->n_kconfig; i++) {
		if (strcmp(f->kconfig_name[i], name))
			continue;
		errno = 0;
		v = strtoul(f->kconfig_value[i], &end, 10);
		return errno || *end || end == f->kconfig_value[i] || v > UINT_MAX ?
			       0 :
			       (unsigned int)v;
	}
	return 0;
}

int facts_collect(const struct rootfs *rfs, const struct agent_config *cfg, struct facts *f)
{
	struct utsname u;
	int r;

	memset(f, 0, sizeof(*f));
	if (uname(&u) == 0)
		snprintf(f->arch, sizeof(f->arch), "%s", u.machine);
	r = collect_required(rfs, f);
	if (r < 0)
		return r;
	collect_optional(rfs, f);
	if (cfg->host_id) {
		if (strlen(cfg->host_id) >= sizeof(f->host_id))
			return -EINVAL;
		strcpy(f->host_id, cfg->host_id);
	} else {
		r = read_line(rfs, "/etc/machine-id", f->host_id, sizeof(f->host_id));
		if (r < 0)
			return r;
	}
	return facts_valid_host_id(f->host_id) ? 0 : -EINVAL;
}

void facts_to_pb(const struct facts *f, const struct agent_config *cfg, Kmemctl__V1__HostFacts *pb,
		 Kmemctl__V1__KconfigEntry *kv, Kmemctl__V1__KconfigEntry **kvp,
		 Kmemctl__V1__HostFacts__LabelsEntry *lv, Kmemctl__V1__HostFacts__LabelsEntry **lvp)
{
	kmemctl__v1__host_facts__init(pb);
	pb->host_id = (char *)f->host_id;
	pb->hostname = (char *)f->hostname;
	pb->kernel_release = (char *)f->release;
	pb->kernel_build_id = (char *)f->build_id;
	pb->possible_cpus = f->possible_cpus;
	pb->online_cpus = f->online_cpus;
	pb->mem_total_bytes = f->mem_total;
	pb->kasan = f->kasan;
	pb->cmdline_disable = f->cmdline_disable;
	pb->module_version = (char *)f->module_version;
	pb->module_abi = f->module_abi;
	pb->agent_version = (char *)KMEMCTL_VERSION;
	pb->arch = (char *)f->arch;
	for (size_t i = 0; i < f->n_kconfig; i++) {
		kmemctl__v1__kconfig_entry__init(&kv[i]);
		kv[i].name = (char *)f->kconfig_name[i];
		kv[i].value = (char *)f->kconfig_value[i];
		kvp[i] = &kv[i];
	}
	pb->n_kconfig = f->n_kconfig;
	pb->kconfig = kvp;
	for (size_t i = 0; i < cfg->labels.n; i++) {
		kmemctl__v1__host_facts__labels_entry__init(&lv[i]);
		lv[i].key = cfg->labels.keys[i];
		lv[i].value = cfg->labels.values[i];
		lvp[i] = &lv[i];
	}
	pb->n_labels = cfg->labels.n;
	pb->labels = lvp;
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Host facts, read through a struct rootfs so tests run on fixture trees.
 * Each parser takes the text of one kernel file and refuses anything that
 * is not exactly what the kernel writes.
 */
#ifndef KMEM_AGENT_FACTS_H
#define KMEM_AGENT_FACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent.h"
#include "kmemctl/v1/facts.pb-c.h"
#include "rootfs.h"

#define FACTS_KCONFIG_MAX 16

struct facts {
	char host_id[65];
	char hostname[65];
	char release[65];
	char arch[65];
	char build_id[81];
	char module_version[32];
	uint32_t module_abi;
	uint32_t possible_cpus, online_cpus;
	uint64_t mem_total;
	bool kasan, cmdline_disable;
	size_t n_kconfig;
	char kconfig_name[FACTS_KCONFIG_MAX][40];
	char kconfig_value[FACTS_KCONFIG_MAX][16];
};

/* "0-3,8,10-11\n" -> 7. */
int facts_parse_cpulist(const char *text, uint32_t *count);
/* MemTotal from /proc/meminfo, in bytes. */
int facts_parse_meminfo(const char *text, uint64_t *bytes);
/* The GNU build id note from /sys/kernel/notes, as lowercase hex. */
int facts_parse_notes(const uint8_t *data, size_t len, char *hex, size_t size);
/* [A-Za-z0-9._-]{1,64}, as enrollment requires. */
bool facts_valid_host_id(const char *id);
/* kmemctl.disable=1 as a whole word of /proc/cmdline. */
bool facts_cmdline_disable(const char *cmdline);
/* Keep the Kconfig symbols kmemctl decides on; ignores everything else. */
int facts_parse_kconfig(const char *text, struct facts *f);

/* The value of a numeric Kconfig symbol facts keep (CONFIG_HZ); 0: not known. */
unsigned int facts_kconfig_uint(const struct facts *f, const char *name);

/*
 * Collect everything. Files that are optional on some kernels (notes,
 * config, the module's sysfs) leave their fact empty; the kernel release and
 * CPU and memory files are required.
 */
int facts_collect(const struct rootfs *rfs, const struct agent_config *cfg, struct facts *f);

/* Point pb at f's strings; pb is valid as long as f and `kv` are. */
void facts_to_pb(const struct facts *f, const struct agent_config *cfg, Kmemctl__V1__HostFacts *pb,
		 Kmemctl__V1__KconfigEntry *kv, Kmemctl__V1__KconfigEntry **kvp,
		 Kmemctl__V1__HostFacts__LabelsEntry *lv,
		 Kmemctl__V1__HostFacts__LabelsEntry **lvp);

#endif

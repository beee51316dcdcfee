// SPDX-License-Identifier: GPL-2.0
/*
 * Non-exported symbols. kallsyms_lookup_name() itself is not exported since
 * 5.7; a kprobe on it yields its address, and from then on every lookup is a
 * plain call. Nothing here fails the module: a missing symbol only disables
 * the probes and mitigations that name it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/string.h>

#include "kmem.h"

typedef unsigned long (*kallsyms_lookup_name_t)(const char *name);
typedef int (*kallsyms_lookup_size_offset_t)(unsigned long addr, unsigned long *size,
					     unsigned long *offset);

/*
 * Symbols to treat as missing, comma-separated: lets the tests check on a
 * real kernel that a missing symbol disables exactly what needs it.
 */
static char *hide_symbols;
module_param(hide_symbols, charp, 0444);
MODULE_PARM_DESC(hide_symbols, "Treat these comma-separated symbols as missing (for tests)");

static kallsyms_lookup_name_t lookup_name;
static kallsyms_lookup_size_offset_t lookup_size_offset;

void kmem_symbols_init(void)
{
	struct kprobe kp = { .symbol_name = "kallsyms_lookup_name" };
	int ret;

	ret = register_kprobe(&kp);
	if (ret) {
		pr_warn("symbol kallsyms_lookup_name not found (%d): every probe and mitigation is unsupported\n",
			ret);
		return;
	}
	lookup_name = (kallsyms_lookup_name_t)kp.addr;
	unregister_kprobe(&kp);
	lookup_size_offset = (kallsyms_lookup_size_offset_t)
		lookup_name("kallsyms_lookup_size_offset");
}

static bool hidden(const char *name)
{
	size_t len = strlen(name);
	const char *p = hide_symbols;

	while (p && *p) {
		if (!strncmp(p, name, len) && (p[len] == ',' || !p[len]))
			return true;
		p = strchr(p, ',');
		if (p)
			p++;
	}
	return false;
}

unsigned long kmem_symbol(const char *name)
{
	return lookup_name && !hidden(name) ? lookup_name(name) : 0;
}

/* [start, end) of a function, for telling callers apart by return address. */
bool kmem_symbol_range(const char *name, unsigned long *start, unsigned long *end)
{
	unsigned long addr = kmem_symbol(name), size, offset;

	if (!addr || !lookup_size_offset || !lookup_size_offset(addr, &size, &offset))
		return false;
	*start = addr - offset;
	*end = *start + size;
	return true;
}

/*
 * Logs one line per symbol of the NULL-terminated names that this kernel
 * lacks, naming the user; returns the first missing name, or NULL.
 */
const char *kmem_symbols_check(const char *const *names, const char *user)
{
	const char *first = NULL;

	for (; names && *names; names++) {
		if (kmem_symbol(*names))
			continue;
		pr_info("%s: symbol %s not found\n", user, *names);
		if (!first)
			first = *names;
	}
	return first;
}

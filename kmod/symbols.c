// SPDX-License-Identifier: GPL-2.0
/*
 * Non-exported symbols. kallsyms_lookup_name() itself is not exported since
 * 5.7; a kprobe on it yields its address, and from then on every lookup is an
 * indirect call. Nothing here fails the module: a missing symbol only disables
 * the probes and mitigations that name it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kprobes.h>
#include <linux/preempt.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/string.h>

#include <asm/cpufeature.h>
#include <asm/insn.h>
#include <asm/msr.h>

#include "kmem.h"

typedef unsigned long (*kallsyms_lookup_name_t)(const char *name);
typedef int (*kallsyms_lookup_size_offset_t)(unsigned long addr, unsigned long *size,
					     unsigned long *offset);
typedef int (*kallsyms_on_each_match_symbol_t)(int (*fn)(void *data, unsigned long addr),
					       const char *name, void *data);
typedef int (*insn_decode_t)(struct insn *insn, const void *kaddr, int buf_len,
			     enum insn_mode m);

/*
 * Symbols to treat as missing, comma-separated: lets the tests check on a
 * real kernel that a missing symbol disables exactly what needs it.
 */
static char *hide_symbols;
module_param(hide_symbols, charp, 0444);
MODULE_PARM_DESC(hide_symbols, "Treat these comma-separated symbols as missing (for tests)");

static kallsyms_lookup_name_t lookup_name;
static kallsyms_lookup_size_offset_t lookup_size_offset;
static kallsyms_on_each_match_symbol_t each_match_symbol;
static insn_decode_t decode;

/*
 * With kernel IBT, an indirect call must land on an ENDBR. A kprobe's
 * address is past the function's ENDBR, and the kernel seals (removes) the
 * ENDBR of functions it never calls indirectly, as it does these two. So
 * the calls run with ENDBR tracking off on this CPU, preemption disabled.
 */
#ifdef CONFIG_X86_KERNEL_IBT
static u64 ibt_suspend(void)
{
	u64 msr = 0;

	preempt_disable();
	if (cpu_feature_enabled(X86_FEATURE_IBT)) {
		rdmsrl(MSR_IA32_S_CET, msr);
		wrmsrl(MSR_IA32_S_CET, msr & ~CET_ENDBR_EN);
	}
	return msr;
}

static void ibt_resume(u64 msr)
{
	if (cpu_feature_enabled(X86_FEATURE_IBT))
		wrmsrl(MSR_IA32_S_CET, msr);
	preempt_enable();
}
#else
static u64 ibt_suspend(void)
{
	return 0;
}

static void ibt_resume(u64 msr)
{
}
#endif

static unsigned long call_lookup_name(const char *name)
{
	u64 ibt = ibt_suspend();
	unsigned long addr = lookup_name(name);

	ibt_resume(ibt);
	return addr;
}

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
		call_lookup_name("kallsyms_lookup_size_offset");
	each_match_symbol = (kallsyms_on_each_match_symbol_t)
		kmem_symbol("kallsyms_on_each_match_symbol");
	decode = (insn_decode_t)kmem_symbol("insn_decode");
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
	return lookup_name && !hidden(name) ? call_lookup_name(name) : 0;
}

/* [start, end) of a function, for telling callers apart by return address. */
bool kmem_symbol_range(const char *name, unsigned long *start, unsigned long *end)
{
	unsigned long addr = kmem_symbol(name), size, offset;

	if (!addr || !kmem_symbol_at(addr, &size, &offset))
		return false;
	*start = addr - offset;
	*end = *start + size;
	return true;
}

/* The size of the symbol addr lies in, and addr's offset into it. */
bool kmem_symbol_at(unsigned long addr, unsigned long *size, unsigned long *offset)
{
	u64 ibt;
	int found;

	if (!lookup_size_offset)
		return false;
	ibt = ibt_suspend();
	found = lookup_size_offset(addr, size, offset);
	ibt_resume(ibt);
	return found;
}

/*
 * Calls fn for every vmlinux symbol named name, modules' left out: a static
 * function of this module may share its name with the one it copies.
 */
int kmem_symbol_each(const char *name, int (*fn)(void *data, unsigned long addr), void *data)
{
	u64 ibt;
	int ret;

	if (!each_match_symbol || hidden(name))
		return 0;
	ibt = ibt_suspend();
	ret = each_match_symbol(fn, name, data);
	ibt_resume(ibt);
	return ret;
}

/* insn_decode() of one 64-bit instruction at kaddr, of at most len bytes. */
int kmem_insn_decode(struct insn *insn, const void *kaddr, int len)
{
	u64 ibt;
	int ret;

	if (!decode)
		return -ENOENT;
	ibt = ibt_suspend();
	ret = decode(insn, kaddr, len, INSN_MODE_64);
	ibt_resume(ibt);
	return ret;
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

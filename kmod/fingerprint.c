// SPDX-License-Identifier: GPL-2.0
/*
 * Fingerprints of kernel functions for verified builds (verify.c): SipHash
 * with a fixed key over the function's instructions, decoded with the
 * kernel's own x86 decoder (insn_decode) and normalized so that what the
 * kernel rewrites at boot or at run time, and where KASLR put it, leave the
 * fingerprint as the build made it:
 *
 *   skipped	NOPs, int3 padding, endbr64, and the fentry site (the
 *		first instruction, or the one after endbr64: a 5-byte NOP,
 *		or a call to ftrace's code or a trampoline outside the
 *		kernel image when ftrace, livepatch or an ftrace direct
 *		call has rewritten it); an lfence just
 *		before an indirect call or jump through a register (retpoline
 *		lfence patching)
 *   named	jump-label sites (__jump_table): their key and target, not
 *		whether the jump is on; inline static-call sites
 *		(.static_call_sites): their key, not the function patched in;
 *		direct call and jump targets outside the function, and
 *		RIP-relative and absolute addresses inside the kernel image, as
 *		symbol+offset; unnamed .rodata addresses (string literals) as
 *		one token; targets inside the function, or inside its .cold
 *		part, as offsets
 *   same token	call/jmp __x86_indirect_thunk_REG (and its ITS variant) and
 *		call/jmp *%REG; ret and jmp to any *return_thunk
 *   as is	everything else: opcodes, ModRM and SIB, displacements off
 *		registers, immediates, %gs per-CPU offsets
 *
 * Not normalized: alternatives and paravirt sites, which the kernel
 * rewrites once at boot for the CPU and hypervisor it runs on (their
 * tables are freed with init memory), and Jcc to a retpoline thunk, which
 * the kernel expands when retpolines are off. A record therefore vouches
 * for a build on CPUs that patch those sites alike. Whatever the
 * normalization cannot explain, such as the int3 or jump of someone's
 * kprobe, changes the fingerprint: the function then differs, which is the
 * safe answer.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jump_label.h>
#include <linux/kallsyms.h>
#include <linux/siphash.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/static_call_types.h>
#include <linux/string.h>
#include <asm/insn.h>

#include "kmem.h"

/* the function and up to three .cold parts the compiler split off it */
#define RANGES_MAX 4
#define SITES_MAX 256
/* larger "functions" are kallsyms running into a gap */
#define FUNC_SIZE_MAX SZ_64K
/* call-depth tracking calls into the padding before a function */
#ifdef CONFIG_FUNCTION_PADDING_BYTES
#define FUNC_PADDING CONFIG_FUNCTION_PADDING_BYTES
#else
#define FUNC_PADDING 0
#endif

enum token {
	TOK_RANGE = 1,	/* range index: where a range's instructions start */
	TOK_INSN,	/* an instruction: raw bytes, addresses as TOK_ADDR_* */
	TOK_CALL,	/* direct call: target */
	TOK_JMP,	/* direct jump: target */
	TOK_JCC,	/* conditional jump: condition, target */
	TOK_ICALL,	/* indirect call through a register: register */
	TOK_IJMP,	/* indirect jump through a register: register */
	TOK_RET,
	TOK_JUMP_LABEL,	/* key, initial branch, target */
	TOK_STATIC_CALL, /* key, tail call */
	TOK_BAD,	/* a byte that does not decode */
	TOK_ADDR_HERE,	/* range index, offset */
	TOK_ADDR_SYMBOL, /* name, offset */
	TOK_ADDR_RODATA,
	TOK_ADDR_IMAGE,	/* offset from _text */
	TOK_ADDR_OUTSIDE,
};

static const siphash_key_t fp_key = { { 0x6b6d656d63746c20ULL, 0x62756c6420667020ULL } };

static const char *const reg_names[] = {
	"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
};

struct site {
	unsigned long addr;
	unsigned long key;
	unsigned long target;	/* jump labels only */
	bool jump_label;
	bool flag;		/* jump label: initially a branch; static call: tail */
};

struct fp {
	const char *symbol;
	struct {
		unsigned long start, end;
	} ranges[RANGES_MAX];
	unsigned int nranges;
	struct site sites[SITES_MAX];
	unsigned int nsites;
	u8 *buf;
	size_t len, cap;
	int err;
	char name[KSYM_NAME_LEN];
};

/* Kernel layout, from kallsyms at kmem_fingerprint_init(). */
static unsigned long image_start, image_end, rodata_start, rodata_end;
static unsigned long jump_start, jump_stop, calls_start, calls_stop;
static const char *init_missing;

void kmem_fingerprint_init(void)
{
	static const char *const needed[] = {
		"insn_decode", "kallsyms_on_each_match_symbol", "_text", "_end",
		"__start_rodata", "__end_rodata", NULL
	};
	const char *missing = kmem_symbols_check(needed, "fingerprint");

	if (missing) {
		init_missing = missing;
		return;
	}
	image_start = kmem_symbol("_text");
	image_end = kmem_symbol("_end");
	rodata_start = kmem_symbol("__start_rodata");
	rodata_end = kmem_symbol("__end_rodata");
	/* a kernel without jump labels or inline static calls has no sites */
	jump_start = kmem_symbol("__start___jump_table");
	jump_stop = kmem_symbol("__stop___jump_table");
	calls_start = kmem_symbol("__start_static_call_sites");
	calls_stop = kmem_symbol("__stop_static_call_sites");
}

static void put(struct fp *f, const void *data, size_t n)
{
	u8 *buf;

	if (f->err)
		return;
	if (f->len + n > f->cap) {
		size_t cap = max(2 * f->cap, f->len + n + 256);

		buf = krealloc(f->buf, cap, GFP_KERNEL);
		if (!buf) {
			f->err = -ENOMEM;
			return;
		}
		f->buf = buf;
		f->cap = cap;
	}
	memcpy(f->buf + f->len, data, n);
	f->len += n;
}

static void put_u8(struct fp *f, u8 v)
{
	put(f, &v, 1);
}

static void put_u32(struct fp *f, u32 v)
{
	put(f, &v, sizeof(v));
}

static bool in_image(unsigned long addr)
{
	return addr >= image_start && addr < image_end;
}

static int range_of(struct fp *f, unsigned long addr)
{
	int i;

	for (i = 0; i < f->nranges; i++)
		if (addr >= f->ranges[i].start && addr < f->ranges[i].end)
			return i;
	return -1;
}

/* An address as every boot of this build names it. */
static void put_addr(struct fp *f, unsigned long addr)
{
	unsigned long size, offset;
	int i = range_of(f, addr);
	int n;

	if (i >= 0) {
		put_u8(f, TOK_ADDR_HERE);
		put_u8(f, i);
		put_u32(f, addr - f->ranges[i].start);
		return;
	}
	if (!kmem_symbol_at(addr, &size, &offset)) {
		if (in_image(addr)) {
			put_u8(f, TOK_ADDR_IMAGE);
			put_u32(f, addr - image_start);
		} else {
			put_u8(f, TOK_ADDR_OUTSIDE);
		}
		return;
	}
	/* inside .rodata but not at a symbol: a string literal, which has none */
	if (offset && addr >= rodata_start && addr < rodata_end) {
		put_u8(f, TOK_ADDR_RODATA);
		return;
	}
	n = snprintf(f->name, sizeof(f->name), "%ps", (void *)addr);
	put_u8(f, TOK_ADDR_SYMBOL);
	put_u32(f, n);
	put(f, f->name, n);
	put_u32(f, offset);
}

/* The compiler's .cold part of this function, when target lies in it. */
static void add_cold(struct fp *f, unsigned long target)
{
	unsigned long size, offset;
	size_t len = strlen(f->symbol);

	if (f->nranges == RANGES_MAX || range_of(f, target) >= 0 ||
	    !kmem_symbol_at(target, &size, &offset))
		return;
	snprintf(f->name, sizeof(f->name), "%ps", (void *)target);
	if (strncmp(f->name, f->symbol, len) || strcmp(f->name + len, ".cold"))
		return;
	f->ranges[f->nranges].start = target - offset;
	f->ranges[f->nranges].end = target - offset + size;
	f->nranges++;
}

static void add_site(struct fp *f, const struct site *s)
{
	if (f->nsites == SITES_MAX) {
		f->err = -E2BIG;
		return;
	}
	f->sites[f->nsites++] = *s;
}

/* The jump-label and static-call sites inside [start, end). */
static void collect_sites(struct fp *f, unsigned long start, unsigned long end)
{
	struct site s;

	f->nsites = 0;
#ifdef CONFIG_JUMP_LABEL
	{
		struct jump_entry *e;

		for (e = (struct jump_entry *)jump_start;
		     jump_start && e < (struct jump_entry *)jump_stop; e++) {
			s.addr = jump_entry_code(e);
			if (s.addr < start || s.addr >= end)
				continue;
			s.key = (unsigned long)jump_entry_key(e);
			s.target = jump_entry_target(e);
			s.jump_label = true;
			s.flag = jump_entry_is_branch(e);
			add_site(f, &s);
		}
	}
#endif
#ifdef CONFIG_HAVE_STATIC_CALL_INLINE
	{
		struct static_call_site *c;

		for (c = (struct static_call_site *)calls_start;
		     calls_start && c < (struct static_call_site *)calls_stop; c++) {
			unsigned long key = (unsigned long)&c->key + c->key;

			s.addr = (unsigned long)&c->addr + c->addr;
			if (s.addr < start || s.addr >= end)
				continue;
			s.key = key & ~STATIC_CALL_SITE_FLAGS;
			s.target = 0;
			s.jump_label = false;
			s.flag = key & STATIC_CALL_SITE_TAIL;
			add_site(f, &s);
		}
	}
#endif
}

static const struct site *site_at(struct fp *f, unsigned long addr)
{
	int i;

	for (i = 0; i < f->nsites; i++)
		if (f->sites[i].addr == addr)
			return &f->sites[i];
	return NULL;
}

static bool has_prefix(const struct insn *insn, u8 prefix)
{
	int i;

	for (i = 0; i < insn->prefixes.nbytes; i++)
		if (insn->prefixes.bytes[i] == prefix)
			return true;
	return false;
}

static u8 opcode(const struct insn *insn, int i)
{
	return insn->opcode.bytes[i];
}

static bool is_nop(const struct insn *insn)
{
	/* 0x90 with REX.B is xchg %r8,%rax, with f3 pause */
	if (insn->opcode.nbytes == 1 && opcode(insn, 0) == 0x90)
		return !(insn->rex_prefix.nbytes && X86_REX_B(insn->rex_prefix.value)) &&
		       !has_prefix(insn, 0xf3);
	return insn->opcode.nbytes == 2 && opcode(insn, 0) == 0x0f && opcode(insn, 1) == 0x1f;
}

static bool is_endbr64(const struct insn *insn)
{
	static const u8 endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };

	return insn->length == sizeof(endbr64) && !memcmp(insn->kaddr, endbr64, sizeof(endbr64));
}

static bool is_lfence(const struct insn *insn)
{
	return insn->opcode.nbytes == 2 && opcode(insn, 0) == 0x0f && opcode(insn, 1) == 0xae &&
	       insn->modrm.nbytes && insn->modrm.bytes[0] == 0xe8;
}

/* call *%reg (ModRM reg 2) or jmp *%reg (4): the register, or -1. */
static int indirect_reg(const struct insn *insn, int *kind)
{
	u8 modrm = insn->modrm.bytes[0];

	if (insn->opcode.nbytes != 1 || opcode(insn, 0) != 0xff || !insn->modrm.nbytes ||
	    X86_MODRM_MOD(modrm) != 3)
		return -1;
	if (X86_MODRM_REG(modrm) != 2 && X86_MODRM_REG(modrm) != 4)
		return -1;
	*kind = X86_MODRM_REG(modrm) == 2 ? TOK_ICALL : TOK_IJMP;
	return X86_MODRM_RM(modrm) +
	       (insn->rex_prefix.nbytes && X86_REX_B(insn->rex_prefix.value) ? 8 : 0);
}

/* __x86_indirect_thunk_REG or __x86_indirect_its_thunk_REG: the register, or -1. */
static int thunk_reg(const char *name)
{
	const char *reg;
	int i;

	if (!strstarts(name, "__x86_indirect_thunk_") &&
	    !strstarts(name, "__x86_indirect_its_thunk_"))
		return -1;
	reg = strrchr(name, '_') + 1;
	for (i = 0; i < ARRAY_SIZE(reg_names); i++)
		if (!strcmp(reg, reg_names[i]))
			return i;
	return -1;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

static int decode(struct insn *insn, unsigned long addr, unsigned long end)
{
	return kmem_insn_decode(insn, (void *)addr,
				min_t(unsigned long, end - addr, MAX_INSN_SIZE));
}

/* A relative call or jump: its target, and whether it is one. */
static bool rel_branch(const struct insn *insn, unsigned long addr, unsigned long *target)
{
	u8 op = opcode(insn, 0);

	if (!(op == 0xe8 || op == 0xe9 || op == 0xeb || (op >= 0x70 && op <= 0x7f) ||
	      (op == 0x0f && insn->opcode.nbytes == 2 && (opcode(insn, 1) & 0xf0) == 0x80)))
		return false;
	*target = addr + insn->length + (long)insn->immediate.value;
	return true;
}

static void put_branch(struct fp *f, const struct insn *insn, unsigned long target)
{
	unsigned long size, offset;
	u8 op = opcode(insn, 0);
	int reg = -1;

	if (op == 0xe8 || op == 0xe9 || op == 0xeb) {
		if (range_of(f, target) < 0 && kmem_symbol_at(target, &size, &offset) && !offset) {
			snprintf(f->name, sizeof(f->name), "%ps", (void *)target);
			reg = thunk_reg(f->name);
			if (op != 0xe8 && reg < 0 && ends_with(f->name, "return_thunk")) {
				put_u8(f, TOK_RET);
				return;
			}
		}
		if (reg >= 0) {
			put_u8(f, op == 0xe8 ? TOK_ICALL : TOK_IJMP);
			put_u8(f, reg);
			return;
		}
		add_cold(f, target);
		put_u8(f, op == 0xe8 ? TOK_CALL : TOK_JMP);
	} else {
		add_cold(f, target);
		put_u8(f, TOK_JCC);
		put_u8(f, (op == 0x0f ? opcode(insn, 1) : op) & 0x0f);
	}
	put_addr(f, target);
}

/* Raw bytes [from, to) of the instruction. */
static void put_raw(struct fp *f, const struct insn *insn, int from, int to)
{
	if (to > from)
		put(f, insn->kaddr + from, to - from);
}

static bool rip_relative(const struct insn *insn)
{
	u8 modrm = insn->modrm.bytes[0];

	return insn->x86_64 && insn->modrm.nbytes && X86_MODRM_MOD(modrm) == 0 &&
	       X86_MODRM_RM(modrm) == 5;
}

static void put_insn(struct fp *f, const struct insn *insn, unsigned long addr)
{
	int disp = insn_offset_displacement((struct insn *)insn);
	int imm = insn_offset_immediate((struct insn *)insn);
	int imm_bytes = insn->immediate1.nbytes + insn->immediate2.nbytes;
	unsigned long v;

	put_u8(f, TOK_INSN);
	put_raw(f, insn, 0, disp);
	if (rip_relative(insn))
		put_addr(f, addr + insn->length + (long)insn->displacement.value);
	else if (insn->displacement.nbytes == 4 && in_image((long)insn->displacement.value))
		put_addr(f, (long)insn->displacement.value);
	else
		put_raw(f, insn, disp, imm);
	/* sign-extended imm32 of a 64-bit operation, or movabs' imm64 */
	if (insn->immediate2.nbytes == 4 && insn->immediate1.nbytes == 4)
		v = (u32)insn->immediate1.value | (u64)insn->immediate2.value << 32;
	else if (insn->opnd_bytes == 8 && insn->immediate1.nbytes == 4 && !insn->immediate2.nbytes)
		v = (long)insn->immediate1.value;
	else
		v = 0;
	if (in_image(v))
		put_addr(f, v);
	else
		put_raw(f, insn, imm, imm + imm_bytes);
	put_raw(f, insn, imm + imm_bytes, insn->length);
}

/* The instruction after an lfence is an indirect call or jump through a register. */
static bool lfence_before_indirect(const struct insn *insn, unsigned long addr, unsigned long end)
{
	struct insn next;
	int kind;

	return is_lfence(insn) && !decode(&next, addr + insn->length, end) &&
	       indirect_reg(&next, &kind) >= 0;
}

static void put_site(struct fp *f, const struct site *s)
{
	put_u8(f, s->jump_label ? TOK_JUMP_LABEL : TOK_STATIC_CALL);
	put_addr(f, s->key);
	put_u8(f, s->flag);
	if (s->jump_label)
		put_addr(f, s->target);
}

/* A call at the fentry site: to ftrace's code, or to a trampoline outside the image. */
static bool fentry_call(struct fp *f, const struct insn *insn, unsigned long addr)
{
	unsigned long target;

	if (opcode(insn, 0) != 0xe8 || insn->length != 5)
		return false;
	target = addr + insn->length + (long)insn->immediate.value;
	if (!in_image(target))
		return true;
	snprintf(f->name, sizeof(f->name), "%ps", (void *)target);
	return !strcmp(f->name, "__fentry__") || !strcmp(f->name, "ftrace_caller") ||
	       !strcmp(f->name, "ftrace_regs_caller");
}

/* The instruction adds nothing; entry: it is at the fentry site. */
static bool skipped(struct fp *f, const struct insn *insn, unsigned long addr, unsigned long end,
		    bool entry)
{
	return is_nop(insn) || is_endbr64(insn) || opcode(insn, 0) == 0xcc ||
	       (entry && fentry_call(f, insn, addr)) || lfence_before_indirect(insn, addr, end);
}

static void put_one(struct fp *f, const struct insn *insn, unsigned long addr)
{
	unsigned long target;
	int reg, kind;

	if (opcode(insn, 0) == 0xc3) {
		put_u8(f, TOK_RET);
		return;
	}
	reg = indirect_reg(insn, &kind);
	if (reg >= 0) {
		put_u8(f, kind);
		put_u8(f, reg);
	} else if (rel_branch(insn, addr, &target)) {
		put_branch(f, insn, target);
	} else {
		put_insn(f, insn, addr);
	}
}

/* One range's instructions; entry: it is the function's start. */
static void put_range(struct fp *f, int i, bool entry)
{
	unsigned long start = f->ranges[i].start, addr = start, end = f->ranges[i].end;
	const struct site *s;
	struct insn insn;

	collect_sites(f, addr, end);
	put_u8(f, TOK_RANGE);
	put_u8(f, i);
	while (addr < end && !f->err) {
		if (decode(&insn, addr, end)) {
			put_u8(f, TOK_BAD);
			put_u8(f, *(u8 *)addr);
			addr++;
			continue;
		}
		s = site_at(f, addr);
		if (s)
			put_site(f, s);
		else if (!skipped(f, &insn, addr, end, entry))
			put_one(f, &insn, addr);
		/* the fentry site follows endbr64, or the 4-byte NOP IBT seals it into */
		entry = entry && !s && addr == start && insn.length == 4 &&
			(is_endbr64(&insn) || is_nop(&insn));
		/* a static-call site is 5 bytes whatever is patched in: ret comes with int3s */
		addr += s && !s->jump_label ? 5 : insn.length;
	}
}

/*
 * Fingerprints the function at addr, symbol its name in kallsyms; size is
 * its size there. Returns 0, or a negative errno with why filled in.
 */
int kmem_fingerprint(const char *symbol, unsigned long addr, unsigned long size, u64 *fp,
		     char *why, size_t len)
{
	struct fp *f;
	int i, ret;

	if (init_missing) {
		snprintf(why, len, "kernel symbol %s not found", init_missing);
		return -ENOENT;
	}
	if (size > FUNC_SIZE_MAX) {
		snprintf(why, len, "%lu bytes, more than a function has", size);
		return -E2BIG;
	}
	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	f->symbol = symbol;
	f->ranges[0].start = addr;
	f->ranges[0].end = addr + size;
	f->nranges = 1;
	/* a .cold part found while walking one range adds another */
	for (i = 0; i < f->nranges && !f->err; i++)
		put_range(f, i, i == 0);
	ret = f->err;
	if (ret == -E2BIG)
		snprintf(why, len, "more than %d jump-label and static-call sites", SITES_MAX);
	else if (ret)
		snprintf(why, len, "error %d", ret);
	else
		*fp = siphash(f->buf, f->len, &fp_key);
	kfree(f->buf);
	kfree(f);
	return ret;
}

/*
 * The direct calls to callee in the function named caller and, when helper
 * is given, in the functions whose names start with it that caller calls
 * directly (a static helper GCC kept out of line, or cloned): how this
 * kernel's code is shaped, which native.c reads where a version would lie.
 * A call through the call-depth thunk padding before callee counts too.
 * Returns the count, or a negative errno.
 */
int kmem_calls_to(const char *caller, const char *helper, unsigned long callee)
{
	unsigned long start, end, addr, target, size, offset;
	char name[KSYM_NAME_LEN];
	struct insn insn;
	int n = 0, ret;

	if (init_missing)
		return -ENOENT;
	if (!kmem_symbol_range(caller, &start, &end))
		return -ENOENT;
	if (end - start > FUNC_SIZE_MAX)
		return -E2BIG;
	for (addr = start; addr < end; addr += insn.length) {
		if (decode(&insn, addr, end)) {
			insn.length = 1;
			continue;
		}
		if (opcode(&insn, 0) != 0xe8 || !rel_branch(&insn, addr, &target))
			continue;
		if (target <= callee && callee - target <= FUNC_PADDING) {
			n++;
			continue;
		}
		if (!helper || !kmem_symbol_at(target, &size, &offset) || offset)
			continue;
		snprintf(name, sizeof(name), "%ps", (void *)target);
		if (strncmp(name, helper, strlen(helper)))
			continue;
		ret = kmem_calls_to(name, NULL, callee);
		if (ret < 0)
			return ret;
		n += ret;
	}
	return n;
}

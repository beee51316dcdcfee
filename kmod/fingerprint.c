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
 *   patch sites	what the kernel patched at boot for this CPU and hypervisor
 *		(sites.c: alternatives, 6.1's paravirt sites, SMP lock
 *		prefixes): each site as the image has it, every variant the
 *		kernel may put there, once the live code is found to be one
 *		of them; a lock prefix as lock
 *
 * A target's text is copied at load, before anything of the module
 * touches kernel text, and fingerprinted from the copy once the build's
 * patch sites are known. Still per CPU: a Jcc to a retpoline thunk, which
 * the kernel expands when retpolines are off, and call-depth tracking
 * (retbleed=stuff), which moves calls into the padding before functions.
 * Whatever the normalization cannot explain, such as the int3 or jump of
 * someone's kprobe or code at a patch site that none of its variants has,
 * changes the fingerprint: the function then differs, which is the safe
 * answer.
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
	TOK_ALT,	/* a site of alternatives: their features and variants */
	TOK_VARIANT,
	TOK_DIRECT_CALL, /* a call through the pointer at an address */
	TOK_PV,		/* a paravirt site: its pv_ops slot */
	TOK_ADDR_SITE,	/* offset inside the patch site's variant */
	TOK_UNEXPLAINED, /* a patch site holding what no variant has */
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

/* A range of text: its address, and the bytes it had at load. */
struct text_range {
	unsigned long start, end;
	u8 *bytes;
};

struct kmem_text {
	char symbol[KSYM_NAME_LEN];
	unsigned int nranges;
	struct text_range ranges[RANGES_MAX];
};

struct fp {
	const char *symbol;
	struct text_range ranges[RANGES_MAX];
	unsigned int nranges, taken;	/* ranges copied here, freed with f */
	/* what is being decoded: a range, or a variant of a patch site */
	struct text_range win;
	bool in_site;
	bool sites;		/* normalize the build's patch sites */
	struct site sites_at[SITES_MAX];
	unsigned int nsites;
	struct kmem_patches patches;
	u8 *buf;
	size_t len, cap;
	int err;
	char name[KSYM_NAME_LEN];
	char note[96];		/* the first patch site no variant explains */
};

/* Kernel layout, from kallsyms at kmem_fingerprint_init(). */
static unsigned long image_start, image_end, rodata_start, rodata_end;
static unsigned long jump_start, jump_stop, calls_start, calls_stop;
static unsigned long pv_ops_addr, pv_nop, pv_bug, nop_fn, bug_fn;
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
	/* what paravirt and direct-call sites may be patched to, where the kernel has them */
	pv_ops_addr = kmem_symbol("pv_ops");
	pv_nop = kmem_symbol("_paravirt_nop");
	pv_bug = kmem_symbol("paravirt_BUG");
	nop_fn = kmem_symbol("nop_func");
	bug_fn = kmem_symbol("BUG_func");
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

	if (f->in_site && addr >= f->win.start && addr < f->win.end) {
		put_u8(f, TOK_ADDR_SITE);
		put_u32(f, addr - f->win.start);
		return;
	}
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

/* Adds [start, end) to f's ranges, its bytes copied as they are now. */
static void add_text_range(struct fp *f, unsigned long start, unsigned long end)
{
	struct text_range *r = &f->ranges[f->nranges];

	r->bytes = kmemdup((void *)start, end - start, GFP_KERNEL);
	if (!r->bytes) {
		f->err = -ENOMEM;
		return;
	}
	r->start = start;
	r->end = end;
	f->nranges++;
	f->taken++;
}

/* The compiler's .cold part of this function, when target lies in it. */
static void add_cold(struct fp *f, unsigned long target)
{
	unsigned long size, offset;
	size_t len = strlen(f->symbol);

	if (f->nranges == RANGES_MAX || range_of(f, target) >= 0 ||
	    !kmem_symbol_at(target, &size, &offset) || size > FUNC_SIZE_MAX)
		return;
	snprintf(f->name, sizeof(f->name), "%ps", (void *)target);
	if (strncmp(f->name, f->symbol, len) || strcmp(f->name + len, ".cold"))
		return;
	add_text_range(f, target - offset, target - offset + size);
}

static void add_site(struct fp *f, const struct site *s)
{
	if (f->nsites == SITES_MAX) {
		f->err = -E2BIG;
		return;
	}
	f->sites_at[f->nsites++] = *s;
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
		if (f->sites_at[i].addr == addr)
			return &f->sites_at[i];
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

/* The bytes at addr of the window being decoded. */
static const u8 *at(const struct fp *f, unsigned long addr)
{
	return f->win.bytes + (addr - f->win.start);
}

static int decode_in(const struct fp *f, struct insn *insn, unsigned long addr, unsigned long end)
{
	return kmem_insn_decode(insn, at(f, addr), min_t(unsigned long, end - addr, MAX_INSN_SIZE));
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
static bool lfence_before_indirect(const struct fp *f, const struct insn *insn, unsigned long addr,
				   unsigned long end)
{
	struct insn next;
	int kind;

	return is_lfence(insn) && !decode_in(f, &next, addr + insn->length, end) &&
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
	       (entry && fentry_call(f, insn, addr)) || lfence_before_indirect(f, insn, addr, end);
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

/* A jump over padding to its end, in a patch site's variant: the kernel's long NOPs. */
static bool jump_over_padding(const struct fp *f, const struct insn *insn, unsigned long addr)
{
	unsigned long target, p;
	struct insn pad;

	if (!f->in_site || (opcode(insn, 0) != 0xeb && opcode(insn, 0) != 0xe9) ||
	    !rel_branch(insn, addr, &target) || target <= addr || target > f->win.end)
		return false;
	for (p = addr + insn->length; p < target; p += pad.length)
		if (decode_in(f, &pad, p, target) || !(is_nop(&pad) || opcode(&pad, 0) == 0xcc))
			return false;
	return true;
}

static struct kmem_patch *patch_at(struct fp *f, unsigned long addr, enum kmem_patch_kind kind)
{
	int i;

	for (i = 0; i < f->patches.n; i++)
		if (f->patches.p[i].addr == addr && f->patches.p[i].kind == kind)
			return &f->patches.p[i];
	return NULL;
}

/* Only NOPs in [addr, end) of the window. */
static bool nops_only(const struct fp *f, unsigned long addr, unsigned long end)
{
	struct insn insn;

	for (; addr < end; addr += insn.length)
		if (decode_in(f, &insn, addr, end) || !is_nop(&insn))
			return false;
	return true;
}

/*
 * The paravirt site p at addr of the window holds the image's indirect call
 * through its pv_ops slot, or what apply_paravirt() put there: a direct
 * call to what the slot holds (paravirt_BUG for none), or NOPs for
 * _paravirt_nop.
 */
static bool pv_explained(const struct fp *f, const struct kmem_patch *p, unsigned long addr)
{
	unsigned long end = addr + p->len, slot = pv_ops_addr + p->pv_type * sizeof(void *), target;
	unsigned long want = p->pv_target ?: pv_bug;
	struct insn insn;

	if (end > f->win.end)
		return false;
	if (p->pv_target && p->pv_target == pv_nop && nops_only(f, addr, end))
		return true;
	if (decode_in(f, &insn, addr, end))
		return false;
	if (opcode(&insn, 0) == 0xff && insn.modrm.nbytes && insn.modrm.bytes[0] == 0x15)
		target = addr + insn.length + (long)insn.displacement.value;
	else if (opcode(&insn, 0) == 0xe8 && rel_branch(&insn, addr, &target))
		target = target == want ? slot : 0;
	else
		return false;
	return pv_ops_addr && target == slot && nops_only(f, addr + insn.length, end);
}

/* A byte that does not decode, as itself: the function then differs. */
static void put_bad(struct fp *f, unsigned long *addr)
{
	put_u8(f, TOK_BAD);
	put_u8(f, *at(f, *addr));
	(*addr)++;
}

/*
 * The instructions of a variant of a patch site: bytes at va, len of them,
 * as the kernel would put them at the site (addresses inside the variant
 * as offsets). pv: it is the site's own code, where paravirt sites apply.
 */
static void put_variant(struct fp *f, unsigned long va, const u8 *bytes, unsigned int len, bool pv)
{
	struct text_range saved = f->win;
	unsigned long addr = va, end = va + len;
	const struct kmem_patch *p;
	struct insn insn;

	f->win = (struct text_range){ va, end, (u8 *)bytes };
	f->in_site = true;
	put_u8(f, TOK_VARIANT);
	while (addr < end && !f->err) {
		p = pv ? patch_at(f, addr, KMEM_PATCH_PV) : NULL;
		if (p && pv_explained(f, p, addr)) {
			put_u8(f, TOK_PV);
			put_u8(f, p->pv_type);
			addr += p->len;
			continue;
		}
		if (decode_in(f, &insn, addr, end)) {
			put_bad(f, &addr);
			continue;
		}
		if (jump_over_padding(f, &insn, addr)) {
			rel_branch(&insn, addr, &addr);
			continue;
		}
		if (!skipped(f, &insn, addr, end, false))
			put_one(f, &insn, addr);
		addr += insn.length;
	}
	f->in_site = false;
	f->win = saved;
}

/* The pointer a direct-call alternative's original calls through, or 0. */
static unsigned long direct_slot(struct fp *f, const struct kmem_patch *p)
{
	struct text_range saved = f->win;
	unsigned long slot = 0;
	struct insn insn;

	f->win = (struct text_range){ p->addr, p->addr + p->len, (u8 *)p->orig };
	if (!decode_in(f, &insn, p->addr, p->addr + p->len) && opcode(&insn, 0) == 0xff &&
	    insn.modrm.nbytes && insn.modrm.bytes[0] == 0x15)
		slot = p->addr + insn.length + (long)insn.displacement.value;
	f->win = saved;
	return in_image(slot) ? slot : 0;
}

/*
 * A direct-call alternative's variant: a call to what the pointer the
 * original calls through holds (BUG_func for none), or NOPs for nop_func.
 */
static void put_direct_call(struct fp *f, const struct kmem_patch *p)
{
	unsigned long slot = direct_slot(f, p), target;

	put_u8(f, TOK_VARIANT);
	if (!slot)
		return;
	target = *(unsigned long *)slot ?: bug_fn;
	if (target == nop_fn)
		return;
	put_u8(f, TOK_CALL);
	put_addr(f, target);
}

static bool any_always(const struct kmem_patch *p)
{
	int i;

	for (i = 0; i < p->nalts; i++)
		if (p->alts[i].always)
			return true;
	return false;
}

/* Whether the last two token strings from mark on, split at mid, are equal. */
static bool same_tokens(const struct fp *f, size_t mark, size_t mid)
{
	return !f->err && mid - mark == f->len - mid &&
	       !memcmp(f->buf + mark, f->buf + mid, mid - mark);
}

/* The live code at patch site p, at the window's bytes, is one of its variants. */
static bool patch_explained(struct fp *f, const struct kmem_patch *p)
{
	size_t mark = f->len, mid;
	bool ok = false;
	int i;

	put_variant(f, p->addr, at(f, p->addr), p->len, true);
	mid = f->len;
	if (p->kind == KMEM_PATCH_PV) {
		ok = f->len == mark + 3 && f->buf[mark + 1] == TOK_PV;
		f->len = mark;
		return ok;
	}
	if (!any_always(p)) {
		put_variant(f, p->addr, p->orig, p->len, true);
		ok = same_tokens(f, mark, mid);
		f->len = mid;
	}
	for (i = 0; i < p->nalts && !ok; i++) {
		if (p->alts[i].direct_call)
			put_direct_call(f, p);
		else
			put_variant(f, p->alts[i].repl, p->alts[i].bytes, p->alts[i].len, false);
		ok = same_tokens(f, mark, mid);
		f->len = mid;
	}
	f->len = mark;
	return ok;
}

/* Patch site p as the image has it, with what may be put there on any CPU. */
static void put_patch(struct fp *f, const struct kmem_patch *p)
{
	int i;

	if (!patch_explained(f, p)) {
		if (!f->note[0])
			snprintf(f->note, sizeof(f->note),
				 "%s at %pS holds code none of its variants has",
				 p->kind == KMEM_PATCH_PV ? "the paravirt site" : "the alternative",
				 (void *)p->addr);
		put_u8(f, TOK_UNEXPLAINED);
		put_variant(f, p->addr, at(f, p->addr), p->len, false);
		return;
	}
	if (p->kind == KMEM_PATCH_PV) {
		put_u8(f, TOK_PV);
		put_u8(f, p->pv_type);
		return;
	}
	put_u8(f, TOK_ALT);
	put_u8(f, p->nalts);
	for (i = 0; i < p->nalts; i++) {
		put_u32(f, p->alts[i].feature);
		if (p->alts[i].direct_call) {
			put_u8(f, TOK_DIRECT_CALL);
			put_addr(f, direct_slot(f, p));
		} else {
			put_variant(f, p->alts[i].repl, p->alts[i].bytes, p->alts[i].len, false);
		}
	}
	if (!any_always(p))
		put_variant(f, p->addr, p->orig, p->len, true);
}

/* The range's bytes with each SMP lock prefix as lock, whatever a UP boot made it. */
static u8 *with_locks(const struct fp *f, const struct text_range *r)
{
	u8 *b = kmemdup(r->bytes, r->end - r->start, GFP_KERNEL);
	int i;

	for (i = 0; b && i < f->patches.nlocks; i++)
		if (f->patches.locks[i] >= r->start && f->patches.locks[i] < r->end &&
		    b[f->patches.locks[i] - r->start] == 0x3e)
			b[f->patches.locks[i] - r->start] = 0xf0;
	return b;
}

/* One range's instructions; entry: it is the function's start. */
static void put_range(struct fp *f, int i, bool entry)
{
	struct text_range r = f->ranges[i];
	unsigned long addr = r.start, end = r.end;
	const struct kmem_patch *p;
	const struct site *s;
	struct insn insn;
	int ret;

	if (f->sites) {
		ret = kmem_sites_collect(r.start, r.end, &f->patches);
		if (ret) {
			f->err = ret;
			return;
		}
		r.bytes = with_locks(f, &f->ranges[i]);
		if (!r.bytes) {
			f->err = -ENOMEM;
			return;
		}
	}
	f->win = r;
	collect_sites(f, addr, end);
	put_u8(f, TOK_RANGE);
	put_u8(f, i);
	while (addr < end && !f->err) {
		p = NULL;
		if (f->sites)
			p = patch_at(f, addr, KMEM_PATCH_ALT) ?: patch_at(f, addr, KMEM_PATCH_PV);
		if (p && p->len <= end - addr) {
			put_patch(f, p);
			entry = false;
			addr += p->len;
			continue;
		}
		if (decode_in(f, &insn, addr, end)) {
			put_bad(f, &addr);
			continue;
		}
		s = site_at(f, addr);
		if (s)
			put_site(f, s);
		else if (!skipped(f, &insn, addr, end, entry))
			put_one(f, &insn, addr);
		/* the fentry site follows endbr64, or the 4-byte NOP IBT seals it into */
		entry = entry && !s && addr == r.start && insn.length == 4 &&
			(is_endbr64(&insn) || is_nop(&insn));
		/* a static-call site is 5 bytes whatever is patched in: ret comes with int3s */
		addr += s && !s->jump_label ? 5 : insn.length;
	}
	if (f->sites)
		kfree(r.bytes);
}

static void fp_free(struct fp *f)
{
	int i;

	for (i = f->nranges - f->taken; i < f->nranges; i++)
		kfree(f->ranges[i].bytes);
	kfree(f->buf);
	kvfree(f);
}

/* Walks the ranges of f; a .cold part found in one adds another. */
static int walk(struct fp *f, char *why, size_t len)
{
	int i;

	for (i = 0; i < f->nranges && !f->err; i++)
		put_range(f, i, i == 0);
	if (f->err == -E2BIG)
		snprintf(why, len, "more than %d jump-label, static-call or patch sites",
			 SITES_MAX);
	else if (f->err == -ENODATA)
		snprintf(why, len, "no patch sites of this build");
	else if (f->err)
		snprintf(why, len, "error %d", f->err);
	return f->err;
}

/*
 * Copies the function at addr, symbol its name in kallsyms and size its
 * size there, and any .cold part of it, into *text. Returns 0, or a
 * negative errno with why filled in.
 */
int kmem_text_take(const char *symbol, unsigned long addr, unsigned long size,
		   struct kmem_text **text, char *why, size_t len)
{
	struct kmem_text *t;
	struct fp *f;
	int ret;

	if (init_missing) {
		snprintf(why, len, "kernel symbol %s not found", init_missing);
		return -ENOENT;
	}
	if (size > FUNC_SIZE_MAX) {
		snprintf(why, len, "%lu bytes, more than a function has", size);
		return -E2BIG;
	}
	f = kvzalloc(sizeof(*f), GFP_KERNEL);
	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!f || !t) {
		kvfree(f);
		kfree(t);
		return -ENOMEM;
	}
	f->symbol = symbol;
	add_text_range(f, addr, addr + size);
	ret = walk(f, why, len);
	if (!ret) {
		strscpy(t->symbol, symbol, sizeof(t->symbol));
		t->nranges = f->nranges;
		memcpy(t->ranges, f->ranges, sizeof(t->ranges));
		/* the text keeps the copies */
		f->taken = 0;
		*text = t;
	} else {
		kfree(t);
	}
	fp_free(f);
	return ret;
}

void kmem_text_free(struct kmem_text *t)
{
	int i;

	for (i = 0; t && i < t->nranges; i++)
		kfree(t->ranges[i].bytes);
	kfree(t);
}

/*
 * Fingerprints text with the build's patch sites, sites_lock held. Returns
 * 0, with why naming the first patch site no variant explains if one does
 * not, or a negative errno with why filled in.
 */
int kmem_fingerprint(const struct kmem_text *text, u64 *fp, char *why, size_t len)
{
	struct fp *f = kvzalloc(sizeof(*f), GFP_KERNEL);
	int ret;

	if (!f)
		return -ENOMEM;
	f->symbol = text->symbol;
	f->sites = true;
	f->nranges = text->nranges;
	memcpy(f->ranges, text->ranges, sizeof(f->ranges));
	ret = walk(f, why, len);
	if (!ret) {
		*fp = siphash(f->buf, f->len, &fp_key);
		strscpy(why, f->note, len);
	}
	fp_free(f);
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
		if (kmem_insn_decode(&insn, (void *)addr, min(end - addr, MAX_INSN_SIZE))) {
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

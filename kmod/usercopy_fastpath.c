// SPDX-License-Identifier: GPL-2.0
/*
 * usercopy-fastpath: 6.1's __check_object_size() looks up the vmap area of
 * every vmalloc address copied to or from user space, under the global
 * vmap_area_lock, only to learn whether the copy ends before the area does.
 * A copy that stays inside one page which is mapped in the vmalloc range
 * cannot run past its area: areas are whole pages, and only pages inside a
 * live area are mapped (guard pages and freed areas have no PTE). For such a
 * copy the lookup's verdict is known, so it is skipped. Every other copy,
 * and every other check, is the kernel's: the rest is a copy of
 * mm/usercopy.c, which 6.1 and 6.12 have alike (compat.h:
 * HAVE_USERCOPY_FASTPATH). docs/mitigations.md has the argument in full.
 *
 * The replacement is entered through an ftrace direct call rather than
 * livepatch: the check runs on every usercopy, and livepatch's detour saves
 * and restores a full pt_regs and runs its handler each time. Both
 * versions judge every copy alike, so tasks need no consistent switch-over:
 * the call site flips atomically (mitigation.c keeps the module while it
 * is on, and at unload waits for tasks still inside).
 */
#include <linux/ftrace.h>
#include <linux/highmem.h>
#include <linux/jump_label.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/rcupdate.h>
#include <linux/sched/task_stack.h>
#include <linux/thread_info.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <asm/ibt.h>
#include <asm/unwind_hints.h>

#include "compat.h"
#include "kmem.h"

#ifdef HAVE_USERCOPY_FASTPATH

struct slab;

/* hardened_usercopy=off: its static key is read-only after boot, so read once */
static bool checks_bypassed;
static struct vmap_area *(*find_area)(unsigned long addr);
static void (*check_slab_object)(const void *ptr, unsigned long n, const struct slab *slab,
				 bool to_user);
/* usercopy_abort() never returns; objtool cannot know that of a pointer. */
static void (*abort_copy)(const char *name, const char *detail, bool to_user, unsigned long offset,
			  unsigned long len);
static void (*kernel_abort)(const char *name, const char *detail, bool to_user,
			    unsigned long offset, unsigned long len);
static unsigned long text_start, text_end;
static pgd_t *kernel_pgd;	/* init_mm's, which modules cannot name */
static unsigned long check_object_size_addr;
#ifdef HAVE_FTRACE_DIRECT_OPS
static struct ftrace_ops direct_ops;
#endif

/* kmemctl-copy: usercopy-fastpath mm/usercopy.c check_stack_object */
/* kmemctl-differs: not noinline, which only kept it out of its one caller */
static int check_stack_object(const void *obj, unsigned long len)
{
	const void *const stack = task_stack_page(current);
	const void *const stackend = stack + THREAD_SIZE;
	int ret;

	if (obj + len <= stack || stackend <= obj)
		return NOT_STACK;
	if (obj < stack || stackend < obj + len)
		return BAD_STACK;
	ret = arch_within_stack_frames(stack, stackend, obj, len);
	if (ret)
		return ret;
#ifdef CONFIG_ARCH_HAS_CURRENT_STACK_POINTER
	if (IS_ENABLED(CONFIG_STACK_GROWSUP)) {
		if ((void *)current_stack_pointer < obj + len)
			return BAD_STACK;
	} else {
		if (obj < (void *)current_stack_pointer)
			return BAD_STACK;
	}
#endif
	return GOOD_STACK;
}

/*
 * Not a copy: kmemctl's own helper for the offset __check_object_size()
 * computes inside its usercopy_abort() call, an #ifdef among the call's
 * arguments (the declared line in kmem_check_object() below).
 */
static unsigned long stack_offset(const void *ptr)
{
#ifdef CONFIG_ARCH_HAS_CURRENT_STACK_POINTER
	if (IS_ENABLED(CONFIG_STACK_GROWSUP))
		return ptr - (void *)current_stack_pointer;
	return (void *)current_stack_pointer - ptr;
#else
	return 0;
#endif
}

/* kmemctl-copy: usercopy-fastpath mm/usercopy.c overlaps */
/* kmemctl-differs-begin: the same test in one expression */
static bool overlaps(unsigned long ptr, unsigned long n, unsigned long low, unsigned long high)
{
	return !(ptr >= high || ptr + n <= low);
	/* kmemctl-differs-end */
}

/*
 * kmemctl-copy: usercopy-fastpath mm/usercopy.c check_kernel_text_object
 * rename: usercopy_abort -> abort_copy, textlow_linear -> low_linear,
 *   texthigh_linear -> high_linear, textlow -> text_start, texthigh -> text_end
 */
/*
 * kmemctl-differs-begin: not inline, no const: a function the direct call's
 * replacement calls; _stext and _etext are found through kallsyms at load
 */
static void check_kernel_text_object(unsigned long ptr, unsigned long n, bool to_user)
{
	unsigned long low_linear, high_linear;
	/* kmemctl-differs-end */

	if (overlaps(ptr, n, text_start, text_end))
		abort_copy("kernel text", NULL, to_user, ptr - text_start, n);
	low_linear = (unsigned long)lm_alias(text_start);
	if (low_linear == text_start)
		return;
	high_linear = (unsigned long)lm_alias(text_end);
	if (overlaps(ptr, n, low_linear, high_linear))
		abort_copy("linear kernel text", NULL, to_user, ptr - low_linear, n);
}

/*
 * kmemctl-copy: usercopy-fastpath mm/usercopy.c check_bogus_address
 * rename: usercopy_abort -> abort_copy
 */
/* kmemctl-differs: not inline, no const, as check_kernel_text_object() */
static void check_bogus_address(unsigned long ptr, unsigned long n, bool to_user)
{
	if (ptr + (n - 1) < ptr)
		abort_copy("wrapped address", NULL, to_user, 0, ptr + n);
	if (ZERO_OR_NULL_PTR(ptr))
		abort_copy("null address", NULL, to_user, ptr, n);
}

/*
 * Whether the kernel maps addr: vmalloc_to_page()'s lockless walk, huge
 * leaves included, inlined because on this path a call and its return cost
 * as much as the walk.
 */
static __always_inline bool kernel_page_mapped(unsigned long addr)
{
	pgd_t *pgd = pgd_offset_pgd(kernel_pgd, addr);
	p4d_t *p4d;
	pud_t *pud;
	pmd_t *pmd;

	if (pgd_none(*pgd) || pgd_bad(*pgd))
		return false;
	p4d = p4d_offset(pgd, addr);
	if (p4d_none(*p4d))
		return false;
	if (p4d_leaf(*p4d))
		return p4d_present(*p4d);
	if (p4d_bad(*p4d))
		return false;
	pud = pud_offset(p4d, addr);
	if (pud_none(*pud))
		return false;
	if (pud_leaf(*pud))
		return pud_present(*pud);
	if (pud_bad(*pud))
		return false;
	pmd = pmd_offset(pud, addr);
	if (pmd_none(*pmd))
		return false;
	if (pmd_leaf(*pmd))
		return pmd_present(*pmd);
	if (pmd_bad(*pmd))
		return false;
	return pte_present(*pte_offset_kernel(pmd, addr));
}

/*
 * The fast path: [addr, addr + n) lies in one page, and that page is mapped;
 * n >= 1 and no wrap-around are checked before.
 */
static __always_inline bool within_mapped_page(unsigned long addr, unsigned long n)
{
	if ((addr ^ (addr + n - 1)) & PAGE_MASK)
		return false;
	return kernel_page_mapped(addr);
}

/* is_vmalloc_addr(), inlined for the same reason. */
static __always_inline bool in_vmalloc_range(const void *ptr)
{
	unsigned long addr = (unsigned long)kasan_reset_tag(ptr);

	return addr >= VMALLOC_START && addr < VMALLOC_END;
}

/* 6.1's lookup. Not inlined: the usercopy-vmalloc probe knows its calls by this caller. */
/*
 * kmemctl-copy: usercopy-fastpath mm/usercopy.c check_heap_object
 * rename: usercopy_abort -> abort_copy, find_vmap_area -> find_area
 */
/*
 * kmemctl-differs-begin: check_heap_object()'s vmalloc branch alone, as a
 * function of its own (the rest stays in check_heap_object() above)
 */
static noinline void kmem_check_vmalloc_object(unsigned long addr, unsigned long n, bool to_user)
{
	struct vmap_area *area;

	area = find_area(addr);
	/* kmemctl-differs-end */
	/*
	 * kmemctl-differs-begin: abort_copy() is a pointer the compiler cannot
	 * know never returns
	 */
	if (!area) {
		abort_copy("vmalloc", "no area", to_user, 0, n);
		return;
	}
	/* kmemctl-differs-end */
	if (n > area->va_end - addr)
		/* kmemctl-differs: the offset computed in the call, no variable */
		abort_copy("vmalloc", NULL, to_user, addr - area->va_start, n);
}

/*
 * kmemctl-copy: usercopy-fastpath mm/usercopy.c check_heap_object
 * rename: usercopy_abort -> abort_copy, is_vmalloc_addr -> in_vmalloc_range,
 *   __check_heap_object -> check_slab_object
 * replace: "folio_slab(folio)" -> "(const struct slab *)folio": folio_slab() is mm/slab.h's
 */
/* kmemctl-differs: not inline, as check_kernel_text_object() */
static void check_heap_object(const void *ptr, unsigned long n, bool to_user)
{
	unsigned long addr = (unsigned long)ptr;
	unsigned long offset;
	struct folio *folio;

	if (is_kmap_addr(ptr)) {
		offset = offset_in_page(ptr);
		if (n > PAGE_SIZE - offset)
			abort_copy("kmap", NULL, to_user, offset, n);
		return;
	}
	if (in_vmalloc_range(ptr) && !pagefault_disabled()) {
		/*
		 * kmemctl-differs-begin: the mitigation: a copy within one mapped page
		 * needs no lookup; the lookup is kmem_check_vmalloc_object()
		 */
		if (!within_mapped_page(addr, n))
			kmem_check_vmalloc_object(addr, n, to_user);
			/* kmemctl-differs-end */
		return;
	}
	if (!virt_addr_valid(ptr))
		return;
	folio = virt_to_folio(ptr);
	if (folio_test_slab(folio)) {
		check_slab_object(ptr, n, (const struct slab *)folio, to_user);
	} else if (folio_test_large(folio)) {
		offset = ptr - folio_address(folio);
		if (n > folio_size(folio) - offset)
			abort_copy("page alloc", NULL, to_user, offset, n);
	}
}

/*
 * Not a copy: usercopy_abort() kills the task, so the call ends here for
 * the breaker; the copy reaches it as abort_copy().
 */
static void abort_untimed(const char *name, const char *detail, bool to_user,
			  unsigned long offset, unsigned long len)
{
	kmem_call_abandon(KMEMCTL_MIT_USERCOPY_FASTPATH);
	kernel_abort(name, detail, to_user, offset, len);
}

/* The copy of __check_object_size(); kmem_check_object_size() below times it. */
void kmem_check_object(const void *ptr, unsigned long n, bool to_user);
/*
 * kmemctl-copy: usercopy-fastpath mm/usercopy.c __check_object_size
 * rename: __check_object_size -> kmem_check_object, usercopy_abort -> abort_copy
 * replace: "static_branch_unlikely(&bypass_usercopy_checks)" -> "checks_bypassed":
 *   the static key is read-only after boot, so read once at load
 * replace: "(const unsigned long)ptr" -> "(unsigned long)ptr": as the callees take it
 */

void kmem_check_object(const void *ptr, unsigned long n, bool to_user)
{
	if (checks_bypassed)
		return;
	if (!n)
		return;
	check_bogus_address((unsigned long)ptr, n, to_user);
	switch (check_stack_object(ptr, n)) {
	case NOT_STACK:
		break;
	case GOOD_FRAME:
	case GOOD_STACK:
		return;
	default:
		/* kmemctl-differs: the offset's #ifdef is stack_offset()'s, above */
		abort_copy("process stack", NULL, to_user, stack_offset(ptr), n);
	}
	check_heap_object(ptr, n, to_user);
	check_kernel_text_object((unsigned long)ptr, n, to_user);
}

/*
 * Not a copy: entered from the trampoline below, in place of
 * __check_object_size(); times the copy's call for the breaker.
 */
void kmem_check_object_size(const void *ptr, unsigned long n, bool to_user);

void kmem_check_object_size(const void *ptr, unsigned long n, bool to_user)
{
	struct kmem_call *call = kmem_call_begin(KMEMCTL_MIT_USERCOPY_FASTPATH,
						 "__check_object_size");

	kmem_check_object(ptr, n, to_user);
	kmem_call_end(call, KMEMCTL_MIT_USERCOPY_FASTPATH);
}

/*
 * The call at __check_object_size()'s entry lands here with the return
 * address into its body on top: dropping it leaves the stack as at the
 * entry of a function called from __check_object_size()'s caller, and the
 * replacement returns straight there. With IBT it starts with ENDBR, as
 * its address is taken.
 */
void kmem_usercopy_tramp(void);

asm("	.pushsection .text, \"ax\", @progbits\n"
"	.globl kmem_usercopy_tramp\n"
"	.type kmem_usercopy_tramp, @function\n"
"kmem_usercopy_tramp:\n"
	ASM_ENDBR
"	addq $8, %rsp\n"
	UNWIND_HINT_FUNC
"	jmp kmem_check_object_size\n"
"	.size kmem_usercopy_tramp, .-kmem_usercopy_tramp\n"
"	.popsection\n");

/* what usercopy_prepare() resolves, and what the copy calls */
static const char *const usercopy_symbols[] = {
	"__check_object_size", "find_vmap_area", "__check_heap_object", "usercopy_abort",
	"bypass_usercopy_checks", "_stext", "_etext", "init_mm", NULL
};

/*
 * The replaced check, the helpers of mm/usercopy.c the copy reproduces, and
 * the vmalloc functions in_vmalloc_range() and kernel_page_mapped() stand
 * in for.
 */
static const char *const usercopy_targets[] = {
	"__check_object_size", "check_stack_object", "check_heap_object",
	"check_kernel_text_object", "check_bogus_address", "overlaps", "is_vmalloc_addr",
	"vmalloc_to_page", NULL
};

static int usercopy_prepare(void)
{
	struct static_key_false *bypass_key;
	struct mm_struct *kernel_mm;

	check_object_size_addr = kmem_symbol("__check_object_size");
	bypass_key = (struct static_key_false *)kmem_symbol("bypass_usercopy_checks");
	find_area = (void *)kmem_symbol("find_vmap_area");
	check_slab_object = (void *)kmem_symbol("__check_heap_object");
	kernel_abort = (void *)kmem_symbol("usercopy_abort");
	abort_copy = abort_untimed;
	text_start = kmem_symbol("_stext");
	text_end = kmem_symbol("_etext");
	kernel_mm = (struct mm_struct *)kmem_symbol("init_mm");
	if (!check_object_size_addr || !bypass_key || !find_area || !check_slab_object ||
	    !kernel_abort || !text_start || !text_end || !kernel_mm)
		return -ENOENT;
	kernel_pgd = kernel_mm->pgd;
	checks_bypassed = static_key_enabled(&bypass_key->key);
	return 0;
}

#ifdef HAVE_FTRACE_DIRECT_OPS
/* A fresh ops each time: unregistering leaves it neither initialized nor filtered. */
static int redirect(void)
{
	int ret;

	memset(&direct_ops, 0, sizeof(direct_ops));
	ret = ftrace_set_filter_ip(&direct_ops, check_object_size_addr, 0, 0);
	if (ret)
		return ret;
	ret = register_ftrace_direct(&direct_ops, (unsigned long)kmem_usercopy_tramp);
	if (ret)
		ftrace_free_filter(&direct_ops);
	return ret;
}

static int unredirect(void)
{
	return unregister_ftrace_direct(&direct_ops, (unsigned long)kmem_usercopy_tramp, true);
}
#else
static int redirect(void)
{
	return register_ftrace_direct(check_object_size_addr, (unsigned long)kmem_usercopy_tramp);
}

static int unredirect(void)
{
	return unregister_ftrace_direct(check_object_size_addr,
					(unsigned long)kmem_usercopy_tramp);
}
#endif

static int usercopy_enable(const u64 *params)
{
	return redirect();
}

static int usercopy_disable(void)
{
	int ret = unredirect();

	WARN_ON(ret);
	return ret;
}

const struct kmem_direct_fix kmem_usercopy_fastpath = {
	.symbols = usercopy_symbols,
	.targets = usercopy_targets,
	.prepare = usercopy_prepare,
	.enable = usercopy_enable,
	.disable = usercopy_disable,
};

#endif

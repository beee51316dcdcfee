// SPDX-License-Identifier: GPL-2.0
/*
 * Patch sites (docs/kmod.md): where the running kernel rewrote its own
 * text at boot for the CPU and hypervisor it runs on. Alternatives, 6.1's
 * paravirt sites and the SMP lock prefixes are listed in tables the kernel
 * frees with init memory, so they come from the build's image: userspace
 * (kmemctl build sites, the agent) writes them to /sys/kernel/kmemctl/sites
 * in the layout of kmod/uapi/kmemctl.h, and fingerprint.c uses them to
 * fingerprint a target as the image has it, whatever CPU patched it.
 *
 * The tables are outside input: a blob for another build id, for another
 * struct alt_instr, with a section out of bounds, repeated or unknown, or
 * a replacement outside .altinstr_replacement is refused whole with EINVAL
 * and a dmesg line saying why.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <linux/vmalloc.h>
#include <asm/alternative.h>
#include <asm/cpufeatures.h>

#include "compat.h"
#include "kmem.h"
#ifdef HAVE_PV_SITES
#include <asm/paravirt_types.h>
#endif
#include "uapi/kmemctl.h"

enum { SEC_ALT, SEC_REPL, SEC_PARA, SEC_LOCKS, SEC_ORIG, SEC_COUNT };

static const char *const section_names[SEC_COUNT] = {
	".altinstructions", ".altinstr_replacement", ".parainstructions", ".smp_locks",
	"kmemctl.orig",
};

struct table {
	u8 *blob;
	size_t len;
	long disp;		/* running _text less the image's */
	struct {
		const u8 *bytes;
		u64 addr;
		u32 size;
	} sec[SEC_COUNT];
	char build_id[41];
};

static DEFINE_MUTEX(sites_lock);	/* table, pending */
static struct table *table;
static u8 *pending;
static size_t pending_len;

static __printf(1, 2) int refuse(const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	pr_info("sites: %pV\n", &vaf);
	va_end(args);
	return -EINVAL;
}

static void table_free(struct table *t)
{
	if (t)
		vfree(t->blob);
	kfree(t);
}

static int check_sections(struct table *t, const struct kmemctl_sites_header *h)
{
	const struct kmemctl_sites_section *s = (const void *)(h + 1);
	size_t start = sizeof(*h) + h->nsections * sizeof(*s);
	u32 i, k;

	for (i = 0; i < h->nsections; i++, s++) {
		if (!memchr(s->name, '\0', sizeof(s->name)))
			return refuse("section %u: its name is not a string", i);
		for (k = 0; k < SEC_COUNT && strcmp(s->name, section_names[k]); k++)
			;
		if (k == SEC_COUNT)
			return refuse("section %u: unknown name \"%.24s\"", i, s->name);
		if (t->sec[k].bytes)
			return refuse("section %s again", s->name);
		if (s->offset < start || s->offset > t->len || s->size > t->len - s->offset)
			return refuse("section %s: %u bytes at %u are outside the %zu written",
				      s->name, s->size, s->offset, t->len);
		t->sec[k].bytes = t->blob + s->offset;
		t->sec[k].addr = s->addr;
		t->sec[k].size = s->size;
	}
	if (!t->sec[SEC_ALT].bytes || !t->sec[SEC_ORIG].bytes)
		return refuse("no .altinstructions or kmemctl.orig section");
	if (t->sec[SEC_ALT].size % sizeof(struct alt_instr))
		return refuse(".altinstructions: %u bytes, not entries of %zu",
			      t->sec[SEC_ALT].size, sizeof(struct alt_instr));
#ifdef HAVE_PV_SITES
	if (t->sec[SEC_PARA].size % sizeof(struct paravirt_patch_site))
		return refuse(".parainstructions: %u bytes, not entries of %zu",
			      t->sec[SEC_PARA].size, sizeof(struct paravirt_patch_site));
#endif
	if (t->sec[SEC_LOCKS].size % sizeof(s32))
		return refuse(".smp_locks: %u bytes, not entries of 4", t->sec[SEC_LOCKS].size);
	return 0;
}

static size_t orig_total(const struct table *t)
{
	const struct alt_instr *a = (const void *)t->sec[SEC_ALT].bytes;
	size_t i, n = t->sec[SEC_ALT].size / sizeof(*a), total = 0;

	for (i = 0; i < n; i++)
		total += a[i].instrlen;
	return total;
}

/* The blob of len bytes, complete: a table, or an ERR_PTR. */
static struct table *table_parse(u8 *blob, size_t len)
{
	const struct kmemctl_sites_header *h = (const void *)blob;
	const char *running = kmem_verify_build_id();
	struct table *t;
	int ret;

	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		return ERR_PTR(-ENOMEM);
	t->blob = blob;
	t->len = len;
	bin2hex(t->build_id, h->build_id, h->build_id_len);
	t->build_id[2 * h->build_id_len] = '\0';
	if (strcmp(t->build_id, running)) {
		ret = refuse("made for build %.12s, this is %.12s", t->build_id, running);
		goto err;
	}
	if (h->alt_size != sizeof(struct alt_instr)) {
		ret = refuse("made for alternatives of %u bytes, this kernel's have %zu",
			     h->alt_size, sizeof(struct alt_instr));
		goto err;
	}
	ret = check_sections(t, h);
	if (ret)
		goto err;
	if (orig_total(t) != t->sec[SEC_ORIG].size) {
		ret = refuse("kmemctl.orig: %u bytes, the alternatives have %zu",
			     t->sec[SEC_ORIG].size, orig_total(t));
		goto err;
	}
	t->disp = kmem_symbol("_text") - h->text_addr;
	return t;
err:
	t->blob = NULL;
	table_free(t);
	return ERR_PTR(ret);
}

/* The length the blob in pending says it has, 0 if it cannot say yet, or -EINVAL. */
static long blob_length(void)
{
	const struct kmemctl_sites_header *h = (const void *)pending;
	const struct kmemctl_sites_section *s = (const void *)(h + 1);
	size_t end, i;

	if (pending_len < sizeof(h->magic) && memcmp(h->magic, KMEMCTL_SITES_MAGIC, pending_len))
		return refuse("not patch sites (magic)");
	if (pending_len < sizeof(*h))
		return 0;
	if (memcmp(h->magic, KMEMCTL_SITES_MAGIC, sizeof(h->magic)))
		return refuse("not patch sites (magic)");
	if (!h->nsections || h->nsections > KMEMCTL_SITES_SECTIONS)
		return refuse("%u sections, want 1 to %u", h->nsections, KMEMCTL_SITES_SECTIONS);
	if (!h->build_id_len || h->build_id_len > sizeof(h->build_id))
		return refuse("a build id of %u bytes", h->build_id_len);
	end = sizeof(*h) + h->nsections * sizeof(*s);
	if (pending_len < end)
		return 0;
	for (i = 0; i < h->nsections; i++)
		end = max_t(size_t, end, (size_t)s[i].offset + s[i].size);
	if (end > KMEMCTL_SITES_MAX)
		return refuse("the tables take %zu bytes, more than %u", end, KMEMCTL_SITES_MAX);
	return end;
}

static ssize_t sites_write(struct file *file, struct kobject *kobj, struct bin_attribute *attr,
			   char *buf, loff_t pos, size_t count)
{
	struct table *t = NULL;
	ssize_t ret = count;
	long want;

	mutex_lock(&sites_lock);
	if (!pending) {
		pending = vmalloc(KMEMCTL_SITES_MAX);
		if (!pending) {
			ret = -ENOMEM;
			goto out;
		}
	}
	if (!pos && pending_len) {
		pr_info("sites: a write of %zu bytes was not finished; taking a new one\n",
			pending_len);
		pending_len = 0;
	}
	if (pos != pending_len || count > KMEMCTL_SITES_MAX - pending_len) {
		ret = refuse("a write at %lld of %zu bytes: write the whole file, from its start",
			     pos, count);
		goto out;
	}
	memcpy(pending + pending_len, buf, count);
	pending_len += count;
	want = blob_length();
	if (want < 0 || (want && want < pending_len)) {
		ret = want < 0 ? want : refuse("%zu bytes written, the tables take %ld",
					       pending_len, want);
		pending_len = 0;
		goto out;
	}
	if (!want || want > pending_len)
		goto out;
	t = table_parse(pending, pending_len);
	if (IS_ERR(t)) {
		ret = PTR_ERR(t);
		pending_len = 0;
		goto out;
	}
	/* the table keeps the buffer */
	pending = NULL;
	pending_len = 0;
	table_free(table);
	table = t;
	pr_info("sites: patch sites of build %.12s\n", t->build_id);
	kmem_verify_remeasure();
out:
	mutex_unlock(&sites_lock);
	return ret;
}

struct bin_attribute kmem_sites_attr = __BIN_ATTR(sites, 0200, NULL, sites_write,
						  KMEMCTL_SITES_MAX);

void kmem_sites_exit(void)
{
	table_free(table);
	table = NULL;
	vfree(pending);
	pending = NULL;
}

void kmem_sites_lock(void)
{
	mutex_lock(&sites_lock);
}

void kmem_sites_unlock(void)
{
	mutex_unlock(&sites_lock);
}

static unsigned long live(const struct table *t, u64 link)
{
	return link + t->disp;
}

/* Adds alternative entry a, whose original bytes are orig, to the patches. */
static int add_alt(struct kmem_patches *p, const struct table *t, const struct alt_instr *a,
		   unsigned long addr, const u8 *orig)
{
	u64 repl = (u64)(unsigned long)&a->repl_offset - (unsigned long)t->sec[SEC_ALT].bytes +
		   t->sec[SEC_ALT].addr + a->repl_offset;
	u64 repl_start = t->sec[SEC_REPL].addr, repl_end = repl_start + t->sec[SEC_REPL].size;
	struct kmem_patch *s = NULL;
	struct kmem_alt *v;
	int i;

	if (a->replacementlen &&
	    (repl < repl_start || repl > repl_end || a->replacementlen > repl_end - repl))
		return refuse("the alternative at %pS: its replacement is outside %s",
			      (void *)addr, section_names[SEC_REPL]);
	for (i = 0; i < p->n; i++)
		if (p->p[i].kind == KMEM_PATCH_ALT && p->p[i].addr == addr)
			s = &p->p[i];
	if (!s) {
		if (p->n == KMEM_PATCHES_MAX)
			return -E2BIG;
		s = &p->p[p->n++];
		memset(s, 0, sizeof(*s));
		s->kind = KMEM_PATCH_ALT;
		s->addr = addr;
	}
	if (s->nalts == KMEM_ALTS_MAX)
		return -E2BIG;
	v = &s->alts[s->nalts++];
#ifdef HAVE_ALT_FT_FLAGS
	v->feature = a->ft_flags;
	v->always = a->cpuid == X86_FEATURE_ALWAYS && !(a->flags & ALT_FLAG_NOT);
#ifdef ALT_FLAG_DIRECT_CALL
	v->direct_call = a->flags & ALT_FLAG_DIRECT_CALL;
#endif
#else
	v->feature = a->cpuid;
	v->always = a->cpuid == X86_FEATURE_ALWAYS;
#endif
	v->repl = live(t, repl);
	v->bytes = t->sec[SEC_REPL].bytes + (repl - t->sec[SEC_REPL].addr);
	v->len = a->replacementlen;
	/* nested alternatives at one address: the kernel patches the longest */
	if (a->instrlen > s->len) {
		s->len = a->instrlen;
		s->orig = orig;
	}
	return 0;
}

static int collect_alts(struct kmem_patches *p, const struct table *t, u64 start, u64 end)
{
	const struct alt_instr *a = (const void *)t->sec[SEC_ALT].bytes;
	size_t i, n = t->sec[SEC_ALT].size / sizeof(*a);
	const u8 *orig = t->sec[SEC_ORIG].bytes;
	u64 instr;
	int ret;

	for (i = 0; i < n; orig += a[i].instrlen, i++) {
		instr = t->sec[SEC_ALT].addr + i * sizeof(*a) + a[i].instr_offset;
		if (instr < start || instr >= end)
			continue;
		ret = add_alt(p, t, &a[i], live(t, instr), orig);
		if (ret)
			return ret;
	}
	return 0;
}

static int collect_pv(struct kmem_patches *p, const struct table *t, u64 start, u64 end)
{
#ifdef HAVE_PV_SITES
	const struct paravirt_patch_site *s = (const void *)t->sec[SEC_PARA].bytes;
	size_t i, n = t->sec[SEC_PARA].size / sizeof(*s);
	struct kmem_patch *k;
	u64 instr;

	for (i = 0; i < n; i++) {
		instr = (unsigned long)s[i].instr;
		if (instr < start || instr >= end)
			continue;
		if (s[i].type >= sizeof(pv_ops) / sizeof(void *))
			return refuse("a paravirt site of type %u, past pv_ops", s[i].type);
		if (p->n == KMEM_PATCHES_MAX)
			return -E2BIG;
		k = &p->p[p->n++];
		memset(k, 0, sizeof(*k));
		k->kind = KMEM_PATCH_PV;
		k->addr = live(t, instr);
		k->len = s[i].len;
		k->pv_type = s[i].type;
		k->pv_target = (unsigned long)((void **)&pv_ops)[s[i].type];
	}
#endif
	return 0;
}

static int collect_locks(struct kmem_patches *p, const struct table *t, u64 start, u64 end)
{
	const s32 *l = (const void *)t->sec[SEC_LOCKS].bytes;
	size_t i, n = t->sec[SEC_LOCKS].size / sizeof(*l);
	u64 instr;

	for (i = 0; i < n; i++) {
		instr = t->sec[SEC_LOCKS].addr + i * sizeof(*l) + l[i];
		if (instr < start || instr >= end)
			continue;
		if (p->nlocks == KMEM_LOCKS_MAX)
			return -E2BIG;
		p->locks[p->nlocks++] = live(t, instr);
	}
	return 0;
}

/*
 * The patch sites in [start, end) of the running kernel, into p, with
 * sites_lock held: 0, -ENODATA without tables, -E2BIG past p's room.
 */
int kmem_sites_collect(unsigned long start, unsigned long end, struct kmem_patches *p)
{
	u64 s, e;
	int ret;

	lockdep_assert_held(&sites_lock);
	p->n = 0;
	p->nlocks = 0;
	if (!table)
		return -ENODATA;
	s = start - table->disp;
	e = end - table->disp;
	ret = collect_alts(p, table, s, e);
	if (!ret)
		ret = collect_pv(p, table, s, e);
	if (!ret)
		ret = collect_locks(p, table, s, e);
	return ret;
}

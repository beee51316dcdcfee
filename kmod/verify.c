// SPDX-License-Identifier: GPL-2.0
/*
 * Verified builds (docs/kmod.md): a mitigation whose fix carries copies of
 * kernel code goes off (and may go on) only when a build record vouches
 * for every function its copies stand in for, as the running kernel has
 * them: Ksplice's run-pre matching, against records made where the copies
 * were checked against the build's source.
 *
 * At load, before the module touches kernel text, each mitigation that
 * passed its earlier gates has its targets looked up in vmlinux and
 * fingerprinted (fingerprint.c); /sys/kernel/kmemctl/build shows them.
 * Records are compiled in (records/NAME.rec) or written to
 * /sys/kernel/kmemctl/records, one per write; a record is outside input
 * and is refused whole, with the line and the reason in dmesg, unless it
 * is exactly:
 *
 *	kmemctl-build-record 2
 *	build_id <hex>
 *	release <uname -r>
 *	version <uname -v>
 *	source <package> <package version>
 *	copy <mitigation> <name> <digest>	(one or more)
 *	func <mitigation> <symbol> <size> <fingerprint>	(one or more)
 *	end
 *
 * Matching is on the code, never on the build id or a version number: a
 * record verifies a mitigation when its func lines are the running
 * kernel's functions and its copy lines are this module's copies of that
 * mitigation (copies.c), whatever version of kmemctl made either.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ctype.h>
#include <linux/elf.h>
#include <linux/kernel.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <linux/utsname.h>

#include "kmem.h"

#define TARGETS_MAX 16
#define SYMBOL_MAX 64
#define COPY_NAME_MAX 128
#define TOKEN_MAX 64
#define RECORD_MAX SZ_16K
#define WRITTEN_MAX 64
#define BUILD_ID_MAX 20
#define NOTE_GNU_BUILD_ID 3
/* "cgroup_rstat_flush_locked" as kallsyms may name GCC's clone of it */
static const char *const clone_suffixes[] = { "", ".constprop.0", ".isra.0", ".part.0" };

struct target {
	char symbol[SYMBOL_MAX];
	unsigned long size;
	struct kmem_text *text;	/* as it was at load */
	bool known;		/* fp: the build's patch sites were known */
	u64 fp;
	char note[96];		/* a patch site no variant explains, or "" */
};

/* The running kernel's targets of one mitigation. */
struct measured {
	bool done;
	unsigned int n;
	struct target t[TARGETS_MAX];
	char error[96];		/* why it cannot be verified here, or "" */
};

struct record_func {
	enum kmemctl_mitigation mitigation;
	unsigned int size;
	u64 fp;
	char symbol[SYMBOL_MAX];
};

struct record_copy {
	enum kmemctl_mitigation mitigation;
	u64 digest;
	char name[COPY_NAME_MAX];
};

struct record {
	struct list_head node;
	char build_id[2 * BUILD_ID_MAX + 1];
	char release[__NEW_UTS_LEN + 1];
	char version[__NEW_UTS_LEN + 1];
	char source[2 * TOKEN_MAX];
	unsigned int nfuncs, ncopies;
	struct record_func *funcs;
	struct record_copy *copies;
};

static struct measured measured[KMEMCTL_MIT_COUNT];
static char build_id[2 * BUILD_ID_MAX + 1] = "none";
static LIST_HEAD(records);
static DEFINE_MUTEX(records_lock);	/* records, written */
static unsigned int written;

/* The GNU build-id note among the kernel's notes, in hex. */
static void read_build_id(void)
{
	unsigned long p = kmem_symbol("__start_notes"), end = kmem_symbol("__stop_notes");
	const struct elf64_note *n;
	const char *name;
	const u8 *desc;

	while (p && p + sizeof(*n) <= end) {
		n = (const struct elf64_note *)p;
		name = (const char *)(n + 1);
		desc = (const u8 *)name + ALIGN(n->n_namesz, 4);
		if (n->n_type == NOTE_GNU_BUILD_ID && n->n_namesz == 4 && !memcmp(name, "GNU", 4) &&
		    n->n_descsz && n->n_descsz <= BUILD_ID_MAX) {
			bin2hex(build_id, desc, n->n_descsz);
			build_id[2 * n->n_descsz] = '\0';
			return;
		}
		p = (unsigned long)desc + ALIGN(n->n_descsz, 4);
	}
}

struct candidates {
	unsigned long addr[4];
	unsigned int n;
};

static unsigned long distance(unsigned long a, unsigned long b)
{
	return a > b ? a - b : b - a;
}

static int add_candidate(void *data, unsigned long addr)
{
	struct candidates *c = data;

	if (c->n < ARRAY_SIZE(c->addr))
		c->addr[c->n] = addr;
	c->n++;
	return 0;
}

/*
 * A target's address in vmlinux, under its name or that of GCC's clone,
 * into *addr: 0 when the compiler inlined it everywhere. A static
 * function's name may recur in other files: the one nearest the
 * mitigation's first target, near, is the one in its file.
 */
static int find_target(const char *name, unsigned long near, char *symbol, unsigned long *addr)
{
	struct candidates c;
	int i, j;

	*addr = 0;
	for (i = 0; i < ARRAY_SIZE(clone_suffixes); i++) {
		if (snprintf(symbol, SYMBOL_MAX, "%s%s", name, clone_suffixes[i]) >= SYMBOL_MAX)
			return -ENAMETOOLONG;
		c.n = 0;
		kmem_symbol_each(symbol, add_candidate, &c);
		if (!c.n)
			continue;
		if (c.n > ARRAY_SIZE(c.addr) || (c.n > 1 && !near))
			return -ENOTUNIQ;
		*addr = c.addr[0];
		for (j = 1; j < c.n; j++)
			if (distance(c.addr[j], near) < distance(*addr, near))
				*addr = c.addr[j];
		return 0;
	}
	return 0;
}

/* Adds name's function to m, if this build has it; near as in find_target(). */
static int measure_target(struct measured *m, const char *name, unsigned long *near)
{
	unsigned long addr, offset;
	struct target t = { 0 };
	char why[64];
	int ret;

	ret = find_target(name, *near, t.symbol, &addr);
	if (ret || (!addr && !*near)) {
		snprintf(m->error, sizeof(m->error), "%s: %s", name,
			 ret == -ENOTUNIQ ? "more than one function of that name" :
			 "no function of that name in vmlinux");
		return ret ? ret : -ENOENT;
	}
	if (!addr)
		return 0;
	if (m->n == TARGETS_MAX || !kmem_symbol_at(addr, &t.size, &offset) || offset) {
		snprintf(m->error, sizeof(m->error), "cannot size %s", t.symbol);
		return -ERANGE;
	}
	ret = kmem_text_take(t.symbol, addr, t.size, &t.text, why, sizeof(why));
	if (ret) {
		snprintf(m->error, sizeof(m->error), "cannot fingerprint %s: %s", t.symbol, why);
		return ret;
	}
	if (!*near)
		*near = addr;
	m->t[m->n++] = t;
	return 0;
}

static void measured_free(struct measured *m)
{
	int i;

	for (i = 0; i < m->n; i++)
		kmem_text_free(m->t[i].text);
	m->n = 0;
}

/* At load, before anything of the module touches kernel text. */
void kmem_verify_measure(enum kmemctl_mitigation id, const char *const *targets)
{
	struct measured *m = &measured[id];
	unsigned long near = 0;

	m->done = true;
	for (; *targets; targets++)
		if (measure_target(m, *targets, &near)) {
			pr_info("%s: %s\n", kmem_mitigation_name(id), m->error);
			measured_free(m);
			return;
		}
}

/*
 * The build's patch sites arrived (sites_lock held): every target is
 * fingerprinted from its copy, and the mitigations are gated again.
 */
void kmem_verify_remeasure(void)
{
	struct target *t;
	struct measured *m;
	char why[96];
	bool failed;
	u64 fp;
	int id, i, ret;

	for (id = 0; id < KMEMCTL_MIT_COUNT; id++) {
		m = &measured[id];
		failed = false;
		for (i = 0; i < m->n; i++) {
			t = &m->t[i];
			ret = kmem_fingerprint(t->text, &fp, why, sizeof(why));
			mutex_lock(&records_lock);
			if (ret) {
				snprintf(m->error, sizeof(m->error), "cannot fingerprint %s: %s",
					 t->symbol, why);
				failed = true;
			} else {
				t->fp = fp;
				t->known = true;
				strscpy(t->note, why, sizeof(t->note));
			}
			mutex_unlock(&records_lock);
			if (failed) {
				pr_info("%s: %s\n", kmem_mitigation_name(id), m->error);
				break;
			}
		}
	}
	kmem_mitigations_regate();
}

const char *kmem_verify_build_id(void)
{
	return build_id;
}

/* Copies of another series' code are for its kernels, not this one. */
static bool copy_here(const struct kmem_copy *c)
{
	const char *release = init_utsname()->release;
	size_t n = strlen(c->series);

	return !n || (!strncmp(release, c->series, n) && strchr(".-", release[n]));
}

static const struct record_copy *record_copy(const struct record *r, enum kmemctl_mitigation id,
					     const char *name)
{
	int i;

	for (i = 0; i < r->ncopies; i++)
		if (r->copies[i].mitigation == id && !strcmp(r->copies[i].name, name))
			return &r->copies[i];
	return NULL;
}

/*
 * r was checked with this module's copies of id: the same names with the
 * same digests, no more, no fewer. Otherwise why (when given) names the
 * first copy that differs.
 */
static bool same_copies(const struct record *r, enum kmemctl_mitigation id, char *why, size_t len)
{
	const char *name = kmem_mitigation_name(id);
	const struct kmem_copy *c;
	const struct record_copy *rc;
	unsigned int mine = 0, theirs = 0;
	int i;

	for (c = kmem_copies; c->name; c++) {
		if (strcmp(c->mitigation, name) || !copy_here(c))
			continue;
		mine++;
		rc = record_copy(r, id, c->name);
		if (rc && rc->digest == c->digest)
			continue;
		if (why)
			snprintf(why, len, "%s %s", c->name,
				 rc ? "differs from this module's" : "is not in the record");
		return false;
	}
	for (i = 0; i < r->ncopies; i++)
		if (r->copies[i].mitigation == id)
			theirs++;
	if (theirs == mine)
		return true;
	for (i = 0; why && i < r->ncopies; i++) {
		for (c = kmem_copies; c->name; c++)
			if (!strcmp(c->mitigation, name) && copy_here(c) &&
			    !strcmp(c->name, r->copies[i].name))
				break;
		if (r->copies[i].mitigation == id && !c->name) {
			snprintf(why, len, "%s is not in this module", r->copies[i].name);
			break;
		}
	}
	return false;
}

static bool func_matches(const struct record_func *f, enum kmemctl_mitigation id,
			 const struct target *t, bool code)
{
	return f->mitigation == id && !strcmp(f->symbol, t->symbol) &&
	       (!code || (t->known && f->size == t->size && f->fp == t->fp));
}

/* r has t as it is here (code) or at all. */
static bool record_has(const struct record *r, enum kmemctl_mitigation id,
		       const struct target *t, bool code)
{
	int i;

	for (i = 0; i < r->nfuncs; i++)
		if (func_matches(&r->funcs[i], id, t, code))
			return true;
	return false;
}

static bool some_record_has(enum kmemctl_mitigation id, const struct target *t, bool code)
{
	const struct record *r;

	list_for_each_entry(r, &records, node)
		if (record_has(r, id, t, code))
			return true;
	return false;
}

/* r has every target of id as it is here, whatever its copies. */
static bool record_has_all(const struct record *r, enum kmemctl_mitigation id)
{
	const struct measured *m = &measured[id];
	int i;

	for (i = 0; i < m->n; i++)
		if (!record_has(r, id, &m->t[i], true))
			return false;
	return m->n > 0;
}

static bool record_verifies(const struct record *r, enum kmemctl_mitigation id)
{
	return record_has_all(r, id) && same_copies(r, id, NULL, 0);
}

/* Under records_lock: what keeps id from being verified, after "not verified: ". */
static void explain(enum kmemctl_mitigation id, char *why, size_t len)
{
	const struct measured *m = &measured[id];
	const struct target *t;
	const struct record *r;
	char copy[COPY_NAME_MAX + 40];
	int i;

	if (m->error[0]) {
		strscpy(why, m->error, len);
		return;
	}
	if (m->n && !m->t[0].known) {
		snprintf(why, len, "no patch sites of this build yet (kmemctl build sites)");
		return;
	}
	list_for_each_entry(r, &records, node) {
		if (!record_has_all(r, id))
			continue;
		same_copies(r, id, copy, sizeof(copy));
		snprintf(why, len,
			 "record %.12s was made with other copies: %s", r->build_id, copy);
		return;
	}
	for (i = 0; i < m->n; i++) {
		t = &m->t[i];
		if (some_record_has(id, t, true))
			continue;
		if (some_record_has(id, t, false))
			snprintf(why, len,
				 "%s differs from every verified copy (size %lu, fingerprint %016llx)%s%s",
				 t->symbol, t->size, t->fp, t->note[0] ? ": " : "", t->note);
		else
			snprintf(why, len, "no record has %s", t->symbol);
		return;
	}
	snprintf(why, len, "no one record has all %u of its functions as they are here", m->n);
}

bool kmem_verify_check(enum kmemctl_mitigation id, char *reason, size_t len)
{
	const struct record *r, *match = NULL;
	char why[224];
	bool ok;

	mutex_lock(&records_lock);
	list_for_each_entry(r, &records, node) {
		if (!record_verifies(r, id))
			continue;
		/* builds share code: the build's own record, when it has one, says the most */
		if (!match || !strcmp(r->build_id, build_id))
			match = r;
		if (!strcmp(r->build_id, build_id))
			break;
	}
	ok = match;
	if (ok) {
		snprintf(reason, len, "off: verified: its code matches record %.12s (%s, %s)",
			 match->build_id, match->release, match->source);
	} else {
		explain(id, why, sizeof(why));
		snprintf(reason, len, "unsupported: build %.12s (%s) not verified: %s", build_id,
			 init_utsname()->release, why);
	}
	mutex_unlock(&records_lock);
	return ok;
}

/* A record being parsed: where, which line, and how far it got. */
struct parser {
	const char *origin;
	unsigned int line;
	unsigned int header;	/* header lines seen, in order */
	bool end;
	struct record *r;
	unsigned int max_funcs, max_copies;
};

static const char *const headers[] = {
	"kmemctl-build-record", "build_id", "release", "version", "source",
};

#define HEADERS ARRAY_SIZE(headers)

static __printf(2, 3) int refuse(struct parser *p, const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	pr_info("%s: line %u: %pV\n", p->origin, p->line, &vaf);
	va_end(args);
	return -EINVAL;
}

/* Printable, no spaces, 1..max-1 characters. */
static bool token_ok(const char *s, size_t max)
{
	size_t n = strlen(s);
	const char *c;

	for (c = s; *c; c++)
		if (!isgraph(*c))
			return false;
	return n && n < max;
}

static bool hex_ok(const char *s, size_t max)
{
	const char *c;

	for (c = s; *c; c++)
		if (!isdigit(*c) && !(*c >= 'a' && *c <= 'f'))
			return false;
	return *s && c - s <= max;
}

static int mitigation_id(const char *name)
{
	int i;

	for (i = 0; i < KMEMCTL_MIT_COUNT; i++)
		if (!strcmp(name, kmem_mitigation_name(i)))
			return i;
	return -1;
}

/* "func <mitigation> <symbol> <size> <fingerprint>", rest: after "func ". */
static int parse_func(struct parser *p, char *rest)
{
	struct record_func *f = &p->r->funcs[p->r->nfuncs];
	char *tok[4];
	int i, id;

	for (i = 0; i < 4; i++) {
		tok[i] = strsep(&rest, " ");
		if (!tok[i] || !*tok[i])
			return refuse(p, "func: want \"func %s\"",
				      "<mitigation> <symbol> <size> <fingerprint>");
	}
	if (rest)
		return refuse(p, "func: more than four fields");
	id = mitigation_id(tok[0]);
	if (id < 0)
		return refuse(p, "func: unknown mitigation \"%.32s\"", tok[0]);
	if (!token_ok(tok[1], SYMBOL_MAX))
		return refuse(p, "func: bad symbol \"%.32s\"", tok[1]);
	if (!isdigit(tok[2][0]) || kstrtouint(tok[2], 10, &f->size) || !f->size)
		return refuse(p, "func: size \"%.32s\" is not a number above 0", tok[2]);
	if (strlen(tok[3]) != 16 || !hex_ok(tok[3], 16) || kstrtou64(tok[3], 16, &f->fp))
		return refuse(p, "func: fingerprint \"%.32s\" is not 16 hex digits", tok[3]);
	f->mitigation = id;
	strscpy(f->symbol, tok[1], sizeof(f->symbol));
	for (i = 0; i < p->r->nfuncs; i++)
		if (p->r->funcs[i].mitigation == id && !strcmp(p->r->funcs[i].symbol, f->symbol))
			return refuse(p, "func: %s %s again", tok[0], tok[1]);
	if (p->r->nfuncs == p->max_funcs)
		return refuse(p, "func: more func lines than fit");
	p->r->nfuncs++;
	return 0;
}

static bool has_copies(const struct record *r, enum kmemctl_mitigation id)
{
	int i;

	for (i = 0; i < r->ncopies; i++)
		if (r->copies[i].mitigation == id)
			return true;
	return false;
}

/* "copy <mitigation> <name> <digest>", rest: after "copy ". */
static int parse_copy(struct parser *p, char *rest)
{
	struct record_copy *c = &p->r->copies[p->r->ncopies];
	char *tok[3];
	int i, id;

	for (i = 0; i < 3; i++) {
		tok[i] = strsep(&rest, " ");
		if (!tok[i] || !*tok[i])
			return refuse(p, "copy: want \"copy <mitigation> <name> <digest>\"");
	}
	if (rest)
		return refuse(p, "copy: more than three fields");
	if (p->r->nfuncs)
		return refuse(p, "copy: after a func line");
	id = mitigation_id(tok[0]);
	if (id < 0)
		return refuse(p, "copy: unknown mitigation \"%.32s\"", tok[0]);
	if (!token_ok(tok[1], COPY_NAME_MAX))
		return refuse(p, "copy: bad name \"%.32s\"", tok[1]);
	if (strlen(tok[2]) != 16 || !hex_ok(tok[2], 16) || kstrtou64(tok[2], 16, &c->digest))
		return refuse(p, "copy: digest \"%.32s\" is not 16 hex digits", tok[2]);
	if (record_copy(p->r, id, tok[1]))
		return refuse(p, "copy: %s %s again", tok[0], tok[1]);
	if (p->r->ncopies == p->max_copies)
		return refuse(p, "copy: more copy lines than fit");
	c->mitigation = id;
	strscpy(c->name, tok[1], sizeof(c->name));
	p->r->ncopies++;
	return 0;
}

/* The value of header line p->header; rest: what follows the keyword. */
static int parse_header(struct parser *p, char *rest)
{
	struct record *r = p->r;
	char *version;

	if (!rest || !*rest)
		return refuse(p, "%s: no value", headers[p->header]);
	switch (p->header) {
	case 0:
		if (!strcmp(rest, "1"))
			return refuse(p,
				      "record format 1 is for one kmemctl version only: make it again with kmemctl build record");
		if (strcmp(rest, "2"))
			return refuse(p, "record format \"%.32s\" is not 2", rest);
		break;
	case 1:
		if (!hex_ok(rest, 2 * BUILD_ID_MAX) || strlen(rest) % 2)
			return refuse(p, "build_id \"%.48s\" is not hex bytes", rest);
		strscpy(r->build_id, rest, sizeof(r->build_id));
		break;
	case 2:
		if (!token_ok(rest, sizeof(r->release)))
			return refuse(p, "release \"%.32s\" is not one word of %zu at most",
				      rest, sizeof(r->release) - 1);
		strscpy(r->release, rest, sizeof(r->release));
		break;
	case 3:
		if (strscpy(r->version, rest, sizeof(r->version)) < 0)
			return refuse(p, "version: more than %zu characters",
				      sizeof(r->version) - 1);
		break;
	case 4:
		version = strchr(rest, ' ');
		if (!version || strchr(version + 1, ' '))
			return refuse(p, "source: want \"source <package> <version>\"");
		*version++ = '\0';
		if (!token_ok(rest, TOKEN_MAX) || !token_ok(version, TOKEN_MAX))
			return refuse(p, "source: bad package or version");
		snprintf(r->source, sizeof(r->source), "%s %s", rest, version);
		break;
	}
	p->header++;
	return 0;
}

static int header_index(const char *word)
{
	int i;

	for (i = 0; i < HEADERS; i++)
		if (!strcmp(word, headers[i]))
			return i;
	return -1;
}

static int parse_line(struct parser *p, char *line)
{
	char *word, *c;
	int k;

	for (c = line; *c; c++)
		if (!isprint(*c))
			return refuse(p, "a character that is not printable (0x%02x)", (u8)*c);
	if (p->end)
		return refuse(p, "text after \"end\"");
	word = strsep(&line, " ");
	k = header_index(word);
	if (p->header < HEADERS && k != p->header) {
		if (k < 0 && strcmp(word, "func") && strcmp(word, "copy") && strcmp(word, "end"))
			return refuse(p, "unknown line \"%.32s\"", word);
		return refuse(p, "missing \"%s\" line", headers[p->header]);
	}
	if (p->header < HEADERS)
		return parse_header(p, line);
	if (!strcmp(word, "func"))
		return parse_func(p, line);
	if (!strcmp(word, "copy"))
		return parse_copy(p, line);
	if (!strcmp(word, "end")) {
		if (line)
			return refuse(p, "\"end\" takes nothing");
		p->end = true;
		return 0;
	}
	if (k >= 0)
		return refuse(p, "\"%s\" line again", word);
	return refuse(p, "unknown line \"%.32s\"", word);
}

static void record_free(struct record *r)
{
	if (!r)
		return;
	kfree(r->funcs);
	kfree(r->copies);
	kfree(r);
}

/* How many lines of text begin with word and a space. */
static unsigned int count_lines(const char *text, const char *word)
{
	size_t n = strlen(word);
	unsigned int count = 0;
	const char *l;

	for (l = text; l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		count += !strncmp(l, word, n) && l[n] == ' ';
	return count;
}

/* One record, text of len bytes; origin names it in messages. */
static struct record *record_parse(const char *text, size_t len, const char *origin)
{
	struct parser p = { .origin = origin };
	char *copy, *rest, *line;
	int ret = 0, i;

	if (len > RECORD_MAX || memchr(text, '\0', len)) {
		pr_info("%s: more than %u bytes, or a NUL byte\n", origin, RECORD_MAX);
		return ERR_PTR(-EINVAL);
	}
	copy = kmemdup_nul(text, len, GFP_KERNEL);
	if (!copy)
		return ERR_PTR(-ENOMEM);
	p.max_funcs = count_lines(copy, "func");
	p.max_copies = count_lines(copy, "copy");
	p.r = kzalloc(sizeof(*p.r), GFP_KERNEL);
	if (p.r) {
		p.r->funcs = kcalloc(max(p.max_funcs, 1U), sizeof(*p.r->funcs), GFP_KERNEL);
		p.r->copies = kcalloc(max(p.max_copies, 1U), sizeof(*p.r->copies), GFP_KERNEL);
	}
	if (!p.r || !p.r->funcs || !p.r->copies) {
		record_free(p.r);
		kfree(copy);
		return ERR_PTR(-ENOMEM);
	}
	rest = copy;
	/* the last line may end without a newline */
	if (len && rest[len - 1] == '\n')
		rest[len - 1] = '\0';
	while (!ret && (line = strsep(&rest, "\n"))) {
		p.line++;
		ret = parse_line(&p, line);
	}
	if (!ret && p.header < HEADERS)
		ret = refuse(&p, "missing \"%s\" line", headers[p.header]);
	else if (!ret && !p.r->nfuncs)
		ret = refuse(&p, "no func line");
	else if (!ret && !p.end)
		ret = refuse(&p, "no \"end\" line");
	/* func lines count only with the copies they were checked with */
	for (i = 0; !ret && i < p.r->nfuncs; i++)
		if (!has_copies(p.r, p.r->funcs[i].mitigation))
			ret = refuse(&p, "func %s %s: no copy line for %s",
				     kmem_mitigation_name(p.r->funcs[i].mitigation),
				     p.r->funcs[i].symbol,
				     kmem_mitigation_name(p.r->funcs[i].mitigation));
	kfree(copy);
	if (ret) {
		record_free(p.r);
		return ERR_PTR(ret);
	}
	return p.r;
}

static bool same_record(const struct record *a, const struct record *b)
{
	return !strcmp(a->build_id, b->build_id) && !strcmp(a->release, b->release) &&
	       !strcmp(a->source, b->source) && a->nfuncs == b->nfuncs &&
	       !memcmp(a->funcs, b->funcs, a->nfuncs * sizeof(a->funcs[0])) &&
	       a->ncopies == b->ncopies &&
	       !memcmp(a->copies, b->copies, a->ncopies * sizeof(a->copies[0]));
}

/* Under records_lock. */
static bool record_known(const struct record *r)
{
	const struct record *old;

	list_for_each_entry(old, &records, node)
		if (same_record(old, r))
			return true;
	return false;
}

/*
 * Off, only records written to the records file count: for operators who
 * trust only the builds they signed, and for the tests of the gate. It can
 * only take admissions away.
 */
static bool shipped_records = true;
module_param(shipped_records, bool, 0444);
MODULE_PARM_DESC(shipped_records,
		 "admit the build records shipped in the module (default 1; 0: only records written to records)");

void kmem_verify_init(void)
{
	const struct kmem_shipped_record *s;
	struct record *r;
	char origin[64];

	read_build_id();
	for (s = kmem_shipped_records; shipped_records && s->name; s++) {
		snprintf(origin, sizeof(origin), "records/%s", s->name);
		r = record_parse(s->text, strlen(s->text), origin);
		if (IS_ERR(r)) {
			pr_err("%s: shipped record refused (%ld)\n", origin, PTR_ERR(r));
			continue;
		}
		if (record_known(r))
			record_free(r);
		else
			list_add_tail(&r->node, &records);
	}
}

void kmem_verify_exit(void)
{
	struct record *r, *next;
	int i;

	list_for_each_entry_safe(r, next, &records, node)
		record_free(r);
	INIT_LIST_HEAD(&records);
	written = 0;
	for (i = 0; i < KMEMCTL_MIT_COUNT; i++)
		measured_free(&measured[i]);
	memset(measured, 0, sizeof(measured));
	kmem_sites_exit();
}

/*
 * The build file: what a record of this build must say. More than a page
 * with every copy's line, so binary: rendered whole at each read.
 */
static size_t build_render(char *buf, size_t size)
{
	const struct kmem_copy *c;
	const struct measured *m;
	size_t len;
	int id, i;

	len = scnprintf(buf, size, "build_id %s\nrelease %s\nversion %s\n", build_id,
			init_utsname()->release, init_utsname()->version);
	mutex_lock(&records_lock);
	/* the copies of the mitigations with functions here, as a record names them */
	for (c = kmem_copies; c->name; c++) {
		id = mitigation_id(c->mitigation);
		if (id >= 0 && measured[id].n && copy_here(c))
			len += scnprintf(buf + len, size - len, "copy %s %s %016llx\n",
					 c->mitigation, c->name, c->digest);
	}
	for (id = 0; id < KMEMCTL_MIT_COUNT; id++) {
		m = &measured[id];
		for (i = 0; i < m->n; i++) {
			len += scnprintf(buf + len, size - len, "func %s %s %lu ",
					 kmem_mitigation_name(id), m->t[i].symbol, m->t[i].size);
			if (m->t[i].known)
				len += scnprintf(buf + len, size - len, "%016llx\n", m->t[i].fp);
			else
				len += scnprintf(buf + len, size - len, "-\n");
		}
	}
	mutex_unlock(&records_lock);
	return len;
}

static ssize_t build_read(struct file *file, struct kobject *kobj, struct bin_attribute *attr,
			  char *buf, loff_t off, size_t count)
{
	char *text = kmalloc(RECORD_MAX, GFP_KERNEL);
	size_t len;

	if (!text)
		return -ENOMEM;
	len = build_render(text, RECORD_MAX);
	count = off < len ? min_t(size_t, count, len - off) : 0;
	memcpy(buf, text + off, count);
	kfree(text);
	return count;
}

/* One line per record, as many as fit in the page, then "... <n> more". */
static ssize_t records_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	const struct record *r;
	unsigned int left = 0;
	ssize_t len = 0;
	int n;

	mutex_lock(&records_lock);
	list_for_each_entry(r, &records, node) {
		n = left ? 0 : snprintf(buf + len, PAGE_SIZE - 32 - len, "%s %s %s\n", r->build_id,
					 r->release, r->source);
		if (left || len + n >= PAGE_SIZE - 32)
			left++;
		else
			len += n;
	}
	mutex_unlock(&records_lock);
	if (left)
		len += sysfs_emit_at(buf, len, "... %u more\n", left);
	return len;
}

static ssize_t records_store(struct kobject *kobj, struct kobj_attribute *attr,
			     const char *buf, size_t count)
{
	struct record *r = record_parse(buf, count, "records");
	bool added;
	int ret = 0;

	if (IS_ERR(r))
		return PTR_ERR(r);
	mutex_lock(&records_lock);
	if (record_known(r)) {
		added = false;
	} else if (written == WRITTEN_MAX) {
		pr_info("records: %u written already, no room for %.12s\n", written, r->build_id);
		ret = -ENOSPC;
	} else {
		list_add_tail(&r->node, &records);
		written++;
		added = true;
	}
	mutex_unlock(&records_lock);
	if (ret) {
		record_free(r);
		return ret;
	}
	if (added)
		pr_info("records: admitted %.12s (%s, %s)\n", r->build_id, r->release, r->source);
	else
		record_free(r);
	/* again for one already here: a gate may have failed for another reason */
	kmem_mitigations_regate();
	return count;
}

static struct bin_attribute build_attr = __BIN_ATTR(build, 0444, build_read, NULL, 0);
static struct kobj_attribute records_attr = __ATTR_RW_MODE(records, 0644);

static struct attribute *verify_attrs[] = {
	&records_attr.attr,
	NULL,
};

static struct bin_attribute *verify_bin_attrs[] = {
	&build_attr,
	&kmem_sites_attr,
	NULL,
};

const struct attribute_group kmem_verify_group = {
	.attrs = verify_attrs,
	.bin_attrs = verify_bin_attrs,
};

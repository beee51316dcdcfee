// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buildrec.h"
#include "macro.h"

static int bad(char *err, unsigned int line, const char *fmt, ...) _printf_(3, 4);

static int bad(char *err, unsigned int line, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(err, BUILDREC_ERR_MAX, "line %u: ", line);

	va_start(ap, fmt);
	vsnprintf(err + n, BUILDREC_ERR_MAX - (size_t)n, fmt, ap);
	va_end(ap);
	return -EBADMSG;
}

static bool all_of(const char *s, const char *set)
{
	return *s && strspn(s, set) == strlen(s);
}

#define HEX "0123456789abcdef"
#define NAME "abcdefghijklmnopqrstuvwxyz0123456789-"
#define IDENT "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_."
#define WORD "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.+~:-"
#define COPYNAME "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:-()"

/* Printable ASCII, single spaces allowed: uname -v. */
static bool text_ok(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < 0x20 || *s > 0x7e)
			return false;
	return true;
}

static int copy_field(char *dst, size_t size, const char *v, const char *set)
{
	if (strlen(v) >= size || !(set ? all_of(v, set) : text_ok(v)))
		return -1;
	strcpy(dst, v);
	return 0;
}

/*
 * A record's fingerprint is 16 hex digits; a build file's is "-" until
 * the module has the build's patch sites.
 */
static int parse_func(struct build_info *b, char *v, unsigned int line, bool record, char *err)
{
	char *save = NULL, *m = strtok_r(v, " ", &save), *sym = strtok_r(NULL, " ", &save);
	char *size = strtok_r(NULL, " ", &save), *fp = strtok_r(NULL, " ", &save), *end;
	struct build_func f = { 0 }, *nv;

	if (!fp || strtok_r(NULL, " ", &save))
		return bad(err, line, "func wants <mitigation> <symbol> <size> <fingerprint>");
	errno = 0;
	f.size = strtoull(size, &end, 10);
	if (copy_field(f.mitigation, sizeof(f.mitigation), m, NAME) ||
	    copy_field(f.symbol, sizeof(f.symbol), sym, IDENT) || !all_of(size, "0123456789") ||
	    errno || *end ||
	    (record || strcmp(fp, "-") ?
		     strlen(fp) != 16 || copy_field(f.fingerprint, 17, fp, HEX) :
		     copy_field(f.fingerprint, 17, fp, NULL)))
		return bad(err, line, "func '%s %s %s %s' is malformed", m, sym, size, fp);
	for (size_t i = 0; i < b->nfuncs; i++)
		if (!strcmp(b->funcs[i].mitigation, m) && !strcmp(b->funcs[i].symbol, sym))
			return bad(err, line, "func %s %s is listed twice", m, sym);
	nv = realloc(b->funcs, (b->nfuncs + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	b->funcs = nv;
	nv[b->nfuncs++] = f;
	return 0;
}

static const struct build_copy *copy_named(const struct build_info *b, const char *m,
					   const char *name)
{
	for (size_t i = 0; i < b->ncopies; i++)
		if (!strcmp(b->copies[i].mitigation, m) && !strcmp(b->copies[i].name, name))
			return &b->copies[i];
	return NULL;
}

/* "copy <mitigation> <name> <digest>" */
static int parse_copy(struct build_info *b, char *v, unsigned int line, char *err)
{
	char *save = NULL, *m = strtok_r(v, " ", &save), *name = strtok_r(NULL, " ", &save);
	char *digest = strtok_r(NULL, " ", &save);
	struct build_copy c = { 0 }, *nv;

	if (!digest || strtok_r(NULL, " ", &save))
		return bad(err, line, "copy wants <mitigation> <name> <digest>");
	if (copy_field(c.mitigation, sizeof(c.mitigation), m, NAME) ||
	    copy_field(c.name, sizeof(c.name), name, COPYNAME) || strlen(digest) != 16 ||
	    copy_field(c.digest, sizeof(c.digest), digest, HEX))
		return bad(err, line, "copy '%s %s %s' is malformed", m, name, digest);
	if (copy_named(b, m, name))
		return bad(err, line, "copy %s %s is listed twice", m, name);
	nv = realloc(b->copies, (b->ncopies + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	b->copies = nv;
	nv[b->ncopies++] = c;
	return 0;
}

enum { F_BUILD_ID, F_RELEASE, F_VERSION, F_SOURCE, F_END, F_N };

static int parse_source(struct build_info *b, char *v, unsigned int line, char *err)
{
	char *save = NULL, *name = strtok_r(v, " ", &save), *ver = strtok_r(NULL, " ", &save);

	if (!ver || strtok_r(NULL, " ", &save) ||
	    copy_field(b->source_name, sizeof(b->source_name), name, WORD) ||
	    copy_field(b->source_version, sizeof(b->source_version), ver, WORD))
		return bad(err, line, "source wants <package name> <package version>");
	return 0;
}

/* One "key value" line; seen[] refuses a key given twice. */
static int parse_line(struct build_info *b, char *l, unsigned int line, bool record, bool *seen,
		      char *err)
{
	static const char *const keys[F_N] = { "build_id", "release", "version", "source", "end" };
	char *v = strchr(l, ' ');
	int k;

	if (v)
		*v++ = '\0';
	if (!strcmp(l, "func") && v)
		return parse_func(b, v, line, record, err);
	if (!strcmp(l, "copy") && v)
		return b->nfuncs ? bad(err, line, "copy after a func line") :
				   parse_copy(b, v, line, err);
	for (k = 0; k < F_N && strcmp(l, keys[k]); k++)
		;
	if (k == F_N || (!record && k >= F_SOURCE) || (k != F_END) != !!v)
		return bad(err, line, "unexpected '%s'", l);
	if (seen[k])
		return bad(err, line, "'%s' given twice", l);
	seen[k] = true;
	switch (k) {
	case F_BUILD_ID:
		return copy_field(b->build_id, sizeof(b->build_id), v, HEX) || strlen(v) % 2 ?
			       bad(err, line, "build_id is not an even number of hex digits") :
			       0;
	case F_RELEASE:
		return copy_field(b->release, sizeof(b->release), v, WORD) ?
			       bad(err, line, "release '%s' is malformed", v) :
			       0;
	case F_VERSION:
		return copy_field(b->version, sizeof(b->version), v, NULL) ?
			       bad(err, line, "version is not printable text") :
			       0;
	case F_SOURCE:
		return parse_source(b, v, line, err);
	}
	return 0;
}

static int parse(const char *text, size_t len, struct build_info *b, bool record, char *err)
{
	bool seen[F_N] = { 0 };
	unsigned int line = 1;
	const char *p = text, *end = text + len;
	int r = 0;

	*b = (struct build_info){ 0 };
	if (len > BUILDREC_MAX)
		return bad(err, 0, "larger than %d bytes", BUILDREC_MAX);
	if (record) {
		static const char magic[] = "kmemctl-build-record 2\n";
		static const char old[] = "kmemctl-build-record 1\n";

		if (len >= sizeof(old) - 1 && !memcmp(text, old, sizeof(old) - 1))
			return bad(err, 1,
				   "format 1, valid for one kmemctl version only: make it "
				   "again with kmemctl build record");
		if (len < sizeof(magic) - 1 || memcmp(text, magic, sizeof(magic) - 1))
			return bad(err, 1, "not 'kmemctl-build-record 2'");
		p += sizeof(magic) - 1;
		line++;
	}
	for (; r == 0 && p < end; line++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		_cleanup_free_ char *l = NULL;

		if (!nl)
			r = bad(err, line, "no newline at the end");
		else if (seen[F_END])
			r = bad(err, line, "text after 'end'");
		else if (!(l = strndup(p, (size_t)(nl - p))))
			r = -ENOMEM;
		else if (memchr(p, '\0', (size_t)(nl - p)))
			r = bad(err, line, "a NUL byte");
		else
			r = parse_line(b, l, line, record, seen, err);
		p = nl ? nl + 1 : end;
	}
	for (int k = 0; r == 0 && k < (record ? F_N : F_SOURCE); k++)
		if (!seen[k])
			r = bad(err, line, "missing %s",
				(const char *[]){ "build_id", "release", "version", "source",
						  "end" }[k]);
	/* a record vouches for func lines only with the copies they were checked with */
	for (size_t i = 0; r == 0 && record && i < b->nfuncs; i++) {
		size_t c = 0;

		while (c < b->ncopies && strcmp(b->copies[c].mitigation, b->funcs[i].mitigation))
			c++;
		if (c == b->ncopies)
			r = bad(err, line, "func %s %s: no copy line for %s",
				b->funcs[i].mitigation, b->funcs[i].symbol, b->funcs[i].mitigation);
	}
	if (r < 0)
		build_info_free(b);
	return r;
}

int build_parse(const char *text, size_t len, struct build_info *b, char err[BUILDREC_ERR_MAX])
{
	return parse(text, len, b, false, err);
}

int build_parse_record(const char *text, size_t len, struct build_info *b,
		       char err[BUILDREC_ERR_MAX])
{
	return parse(text, len, b, true, err);
}

int build_write_record(const struct build_info *b, char **out, size_t *len)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);

	if (!f)
		return -ENOMEM;
	fprintf(f, "kmemctl-build-record 2\nbuild_id %s\nrelease %s\nversion %s\nsource %s %s\n",
		b->build_id, b->release, b->version, b->source_name, b->source_version);
	for (size_t i = 0; i < b->ncopies; i++)
		fprintf(f, "copy %s %s %s\n", b->copies[i].mitigation, b->copies[i].name,
			b->copies[i].digest);
	for (size_t i = 0; i < b->nfuncs; i++)
		fprintf(f, "func %s %s %llu %s\n", b->funcs[i].mitigation, b->funcs[i].symbol,
			(unsigned long long)b->funcs[i].size, b->funcs[i].fingerprint);
	fputs("end\n", f);
	if (fclose(f) != 0 || !buf) {
		free(buf);
		return -ENOMEM;
	}
	if (size > BUILDREC_MAX) {
		free(buf);
		return -EFBIG;
	}
	*out = buf;
	*len = size;
	return 0;
}

void build_info_free(struct build_info *b)
{
	free(b->funcs);
	free(b->copies);
	b->funcs = NULL;
	b->copies = NULL;
	b->nfuncs = b->ncopies = 0;
}

/* The first copy of m in a that b has not as it is in a; NULL: none. */
static const struct build_copy *first_other(const struct build_info *a, const struct build_info *b,
					    const char *m, bool *changed)
{
	for (size_t i = 0; i < a->ncopies; i++) {
		const struct build_copy *c = &a->copies[i], *o;

		if (strcmp(c->mitigation, m))
			continue;
		o = copy_named(b, m, c->name);
		if (!o || strcmp(o->digest, c->digest)) {
			*changed = o != NULL;
			return c;
		}
	}
	return NULL;
}

bool build_same_copies(const struct build_info *a, const struct build_info *b, const char *m,
		       const char *a_is, const char *b_is, char *why, size_t size)
{
	bool changed = false;
	const struct build_copy *c = first_other(a, b, m, &changed);
	const char *only = a_is;

	if (!c) {
		c = first_other(b, a, m, &changed);
		only = b_is;
	}
	if (c && why && changed)
		snprintf(why, size, "%s differs", c->name);
	else if (c && why)
		snprintf(why, size, "%s is only in %s", c->name, only);
	return !c;
}

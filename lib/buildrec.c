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

enum { F_BUILD_ID, F_RELEASE, F_VERSION, F_KMEMCTL, F_SOURCE, F_END, F_N };

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
	static const char *const keys[F_N] = { "build_id", "release", "version",
					       "kmemctl",  "source",  "end" };
	char *v = strchr(l, ' ');
	int k;

	if (v)
		*v++ = '\0';
	if (!strcmp(l, "func") && v)
		return parse_func(b, v, line, record, err);
	for (k = 0; k < F_N && strcmp(l, keys[k]); k++)
		;
	if (k == F_N || (!record && k >= F_KMEMCTL) || (k != F_END) != !!v)
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
	case F_KMEMCTL:
		return copy_field(b->kmemctl, sizeof(b->kmemctl), v, WORD) ?
			       bad(err, line, "kmemctl version '%s' is malformed", v) :
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
		static const char magic[] = "kmemctl-build-record 1\n";

		if (len < sizeof(magic) - 1 || memcmp(text, magic, sizeof(magic) - 1))
			return bad(err, 1, "not 'kmemctl-build-record 1'");
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
	for (int k = 0; r == 0 && k < (record ? F_N : F_KMEMCTL); k++)
		if (!seen[k])
			r = bad(err, line, "missing %s",
				(const char *[]){ "build_id", "release", "version", "kmemctl",
						  "source", "end" }[k]);
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
	fprintf(f,
		"kmemctl-build-record 1\nkmemctl %s\nbuild_id %s\nrelease %s\nversion %s\n"
		"source %s %s\n",
		b->kmemctl, b->build_id, b->release, b->version, b->source_name, b->source_version);
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
	b->funcs = NULL;
	b->nfuncs = 0;
}

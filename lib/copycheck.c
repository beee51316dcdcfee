// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "copycheck.h"
#include "macro.h"

/* Copies are functions and layouts: an LCS table beyond this is a mistake. */
#define COPY_MAX_TOKENS 4096
#define MIN(a, b) ((a) < (b) ? (a) : (b))

static int fail(char *msg, int r, const char *fmt, ...) _printf_(3, 4);

static int fail(char *msg, int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, COPY_MSG_MAX, fmt, ap);
	va_end(ap);
	return r;
}

static bool ident_valid(const char *s)
{
	if (!*s || (*s >= '0' && *s <= '9'))
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t' || *s == '\n')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n'))
		*--e = '\0';
	return s;
}

/* A comment's text without the leading " * " of each line, lines joined by '\n'. */
static char *comment_text(const char *raw)
{
	char *out = malloc(strlen(raw) + 1), *o = out;
	const char *p = raw;

	if (!out)
		return NULL;
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		const char *q = p, *end = p + len;

		while (q < end && (*q == ' ' || *q == '\t'))
			q++;
		if (q < end && *q == '*')
			q++;
		while (q < end && (*q == ' ' || *q == '\t'))
			q++;
		while (end > q && (end[-1] == ' ' || end[-1] == '\t'))
			end--;
		memcpy(o, q, (size_t)(end - q));
		o += end - q;
		*o++ = '\n';
		p = nl ? nl + 1 : p + len;
	}
	*o = '\0';
	return out;
}

static int strv_push(char ***v, size_t *n, const char *s, size_t len)
{
	char **nv = realloc(*v, (*n + 1) * sizeof(**v));

	if (!nv)
		return -ENOMEM;
	*v = nv;
	nv[*n] = strndup(s, len);
	if (!nv[*n])
		return -ENOMEM;
	(*n)++;
	return 0;
}

static void strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* The tokens of a declared token sequence: code only. */
static int subst_tokens(const char *s, size_t len, char ***v, size_t *n)
{
	struct ctok_list l;
	unsigned int line;
	int r = ctok_scan(s, len, &l, &line);

	for (size_t i = 0; r == 0 && i < l.n; i++)
		r = l.v[i].kind == CTOK_COMMENT ? -EINVAL :
						  strv_push(v, n, l.v[i].text, strlen(l.v[i].text));
	ctok_free(&l);
	return r;
}

/* "…" with \" and \\ escapes; *p moves past it. */
static int quoted(const char **p, char **out)
{
	const char *s = *p;
	char *o;

	if (*s != '"')
		return -EINVAL;
	o = *out = malloc(strlen(s));
	if (!o)
		return -ENOMEM;
	for (s++; *s && *s != '"'; s++) {
		if (*s == '\\' && (s[1] == '"' || s[1] == '\\'))
			s++;
		*o++ = *s;
	}
	*o = '\0';
	if (*s != '"') {
		free(*out);
		*out = NULL;
		return -EINVAL;
	}
	*p = s + 1;
	return 0;
}

static int add_subst(struct copy_decl *d, unsigned int line, struct copy_subst **out)
{
	struct copy_subst *v = realloc(d->subst, (d->nsubst + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	d->subst = v;
	*out = &v[d->nsubst++];
	**out = (struct copy_subst){ .line = line };
	return 0;
}

static int parse_rename(struct copy_decl *d, char *val, unsigned int line)
{
	for (char *save = NULL, *item = strtok_r(val, ",", &save); item;
	     item = strtok_r(NULL, ",", &save)) {
		char *arrow = strstr(item, "->"), *from, *to;
		struct copy_subst *s;
		int r;

		if (!arrow)
			return -EINVAL;
		*arrow = '\0';
		from = trim(item);
		to = trim(arrow + 2);
		if (!ident_valid(from) || !ident_valid(to))
			return -EINVAL;
		r = add_subst(d, line, &s);
		if (r == 0) {
			s->rename = true;
			r = strv_push(&s->from, &s->nfrom, from, strlen(from));
		}
		if (r == 0)
			r = strv_push(&s->to, &s->nto, to, strlen(to));
		if (r < 0)
			return r;
	}
	return 0;
}

/* "KERNEL" -> "COPY": WHY */
static int parse_replace(struct copy_decl *d, const char *val, unsigned int line)
{
	_cleanup_free_ char *from = NULL, *to = NULL;
	struct copy_subst *s;
	const char *p = val;
	int r;

	if (quoted(&p, &from) < 0)
		return -EINVAL;
	while (*p == ' ')
		p++;
	if (strncmp(p, "->", 2))
		return -EINVAL;
	for (p += 2; *p == ' ';)
		p++;
	if (quoted(&p, &to) < 0 || *p != ':' || !*trim((char *)p + 1))
		return -EINVAL;
	r = add_subst(d, line, &s);
	if (r == 0)
		r = subst_tokens(from, strlen(from), &s->from, &s->nfrom);
	if (r == 0)
		r = subst_tokens(to, strlen(to), &s->to, &s->nto);
	if (r == 0 && s->nfrom == 0)
		r = -EINVAL;
	return r;
}

static int parse_words(char *val, const char *sep, char ***v, size_t *n)
{
	for (char *save = NULL, *w = strtok_r(val, sep, &save); w; w = strtok_r(NULL, sep, &save)) {
		int r;

		w = trim(w);
		if (!*w)
			return -EINVAL;
		r = strv_push(v, n, w, strlen(w));
		if (r < 0)
			return r;
	}
	return *n ? 0 : -EINVAL;
}

static bool name_valid(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-'))
			return false;
	return true;
}

static bool path_valid(const char *s)
{
	return *s && *s != '/' && !strstr(s, "..") && !strchr(s, ' ');
}

/* "MACRO(ARG)": a definition a macro makes, named by the macro and one argument. */
static bool invocation_valid(const char *s)
{
	const char *open = strchr(s, '(');
	size_t len = strlen(s);
	char buf[256];

	if (!open || len >= sizeof(buf) || s[len - 1] != ')')
		return false;
	snprintf(buf, sizeof(buf), "%.*s", (int)(open - s), s);
	if (!ident_valid(buf))
		return false;
	snprintf(buf, sizeof(buf), "%.*s", (int)(len - 2 - (size_t)(open - s)), open + 1);
	return ident_valid(buf);
}

/* "MITIGATION PATH SYMBOL...", "struct X" counting as one symbol. */
static int parse_head(struct copy_decl *d, char *val)
{
	char *save = NULL, *w;
	int r;

	d->mitigation = strdup(strtok_r(val, " ", &save) ?: "");
	d->path = strdup((w = strtok_r(NULL, " ", &save)) ? w : "");
	if (!d->mitigation || !d->path)
		return -ENOMEM;
	if (!name_valid(d->mitigation) || !path_valid(d->path))
		return -EINVAL;
	while ((w = strtok_r(NULL, " ", &save))) {
		char buf[256];

		if (!strcmp(w, "struct") || !strcmp(w, "union") || !strcmp(w, "enum")) {
			const char *tag = strtok_r(NULL, " ", &save);

			if (!tag || !ident_valid(tag))
				return -EINVAL;
			snprintf(buf, sizeof(buf), "%s %s", w, tag);
		} else if (ident_valid(w) && strlen(w) < sizeof(buf)) {
			strcpy(buf, w);
		} else if (invocation_valid(w) && strlen(w) < sizeof(buf)) {
			strcpy(buf, w);
		} else {
			return -EINVAL;
		}
		r = strv_push(&d->symbols, &d->nsymbols, buf, strlen(buf));
		if (r < 0)
			return r;
	}
	return d->nsymbols ? 0 : -EINVAL;
}

static int parse_key(struct copy_decl *d, const char *key, char *val, unsigned int line)
{
	if (!strcmp(key, "kmemctl-copy"))
		return parse_head(d, val);
	if (!strcmp(key, "rename"))
		return parse_rename(d, val, line);
	if (!strcmp(key, "replace"))
		return parse_replace(d, val, line);
	if (!strcmp(key, "copy"))
		return d->ncopies ? -EINVAL : parse_words(val, ",", &d->copies, &d->ncopies);
	return -EINVAL;
}

static void decl_free(struct copy_decl *d)
{
	free(d->mitigation);
	free(d->path);
	strv_free(d->symbols, d->nsymbols);
	strv_free(d->copies, d->ncopies);
	for (size_t i = 0; i < d->nsubst; i++) {
		strv_free(d->subst[i].from, d->subst[i].nfrom);
		strv_free(d->subst[i].to, d->subst[i].nto);
	}
	free(d->subst);
	free(d->ranges);
}

static const char *const keys[] = { "kmemctl-copy", "rename", "replace", "copy" };

/* The key a line starts with ("rename: …"), or NULL. */
static const char *line_key(const char *line, const char **val)
{
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		size_t n = strlen(keys[i]);

		if (!strncmp(line, keys[i], n) && line[n] == ':') {
			*val = line + n + 1;
			return keys[i];
		}
	}
	return NULL;
}

/*
 * The structured lines of a declaration comment, up to its first empty
 * line; a line without a key continues the one before.
 */
static int parse_decl(const char *text, unsigned int line, struct copy_decl *d,
		      unsigned int *bad_line)
{
	_cleanup_free_ char *val = NULL;
	const char *key = NULL, *p = text;
	int r = 0;

	*d = (struct copy_decl){ .line = line };
	*bad_line = line;
	for (; *p && *p != '\n'; line++) {
		const char *nl = strchr(p, '\n'), *v, *k;
		_cleanup_free_ char *l = strndup(p, (size_t)(nl - p));
		char *nv;

		if (!l)
			return -ENOMEM;
		p = nl + 1;
		k = line_key(l, &v);
		if (!k && !key)
			return -EINVAL;
		if (k && key) {
			r = parse_key(d, key, trim(val), *bad_line);
			if (r < 0)
				return r;
			free(TAKE_PTR(val));
		}
		if (k && !strcmp(k, "kmemctl-copy") && key)
			return (*bad_line = line), -EINVAL;
		if (k) {
			key = k;
			*bad_line = line;
		}
		if (asprintf(&nv, "%s %s", val ?: "", k ? v : l) < 0)
			return -ENOMEM;
		free(val);
		val = nv;
	}
	return parse_key(d, key, trim(val), *bad_line);
}

/* Nesting of ( [ { in a token, +1 / -1 / 0. */
static int nesting(const struct ctok *t)
{
	if (t->kind != CTOK_PUNCT || t->text[1])
		return 0;
	return strchr("([{", t->text[0]) ? 1 : strchr(")]}", t->text[0]) ? -1 : 0;
}

/*
 * The end of the top-level definition starting at code[i]: a directive
 * alone; an aggregate or initializer at its ';'; a function at its body's
 * '}'. A macro call without ';' ends before the next "static".
 */
static size_t def_end(const struct ctok *const *code, size_t n, size_t i)
{
	bool until_semi = ctok_is(code[i], CTOK_IDENT, "typedef");
	/* "static struct NAME { ... } one;" is an aggregate too */
	size_t t = i + (i + 1 < n && ctok_is(code[i], CTOK_IDENT, "static"));
	int depth = 0;

	if (code[i]->kind == CTOK_PP)
		return i + 1;
	if (t + 1 < n &&
	    (ctok_is(code[t], CTOK_IDENT, "struct") || ctok_is(code[t], CTOK_IDENT, "union") ||
	     ctok_is(code[t], CTOK_IDENT, "enum")))
		until_semi = ctok_is(code[t + 1], CTOK_PUNCT, "{") ||
			     (t + 2 < n && ctok_is(code[t + 2], CTOK_PUNCT, "{"));
	for (size_t j = i; j < n; j++) {
		depth += nesting(code[j]);
		if (depth != 0)
			continue;
		if (ctok_is(code[j], CTOK_PUNCT, "="))
			until_semi = true;
		else if (ctok_is(code[j], CTOK_PUNCT, ";"))
			return j + 1;
		else if (ctok_is(code[j], CTOK_PUNCT, "}") && !until_semi)
			return j + 1;
		else if (ctok_is(code[j], CTOK_PUNCT, ")") && j + 1 < n &&
			 ctok_is(code[j + 1], CTOK_IDENT, "static"))
			return j + 1;
	}
	return n;
}

/*
 * What [i, end) defines: "NAME" (function, macro), "struct NAME", or "". A
 * struct defined with a static instance of it ("static struct NAME { ... }
 * one;") defines "struct NAME" too.
 */
static void def_name(const struct ctok *const *code, size_t i, size_t end, char *buf, size_t size)
{
	size_t t = i + (end - i >= 4 && ctok_is(code[i], CTOK_IDENT, "static"));
	int depth = 0;

	buf[0] = '\0';
	if (code[i]->kind == CTOK_PP) {
		if (!strncmp(code[i]->text, "# define ", 9))
			snprintf(buf, size, "%.*s", (int)strcspn(code[i]->text + 9, " "),
				 code[i]->text + 9);
		return;
	}
	if (end - t >= 3 && code[t]->kind == CTOK_IDENT && code[t + 1]->kind == CTOK_IDENT &&
	    ctok_is(code[t + 2], CTOK_PUNCT, "{") &&
	    (!strcmp(code[t]->text, "struct") || !strcmp(code[t]->text, "union") ||
	     !strcmp(code[t]->text, "enum"))) {
		snprintf(buf, size, "%s %s", code[t]->text, code[t + 1]->text);
		return;
	}
	if (!ctok_is(code[end - 1], CTOK_PUNCT, "}"))
		return;
	for (size_t j = i + 1; j < end; j++) {
		if (depth == 0 && ctok_is(code[j], CTOK_PUNCT, "(")) {
			if (code[j - 1]->kind == CTOK_IDENT)
				snprintf(buf, size, "%s", code[j - 1]->text);
			return;
		}
		depth += nesting(code[j]);
	}
}

/* Whether [i, end) invokes the macro of "MACRO(ARG)" with ARG as one of its arguments. */
static bool invokes(const struct ctok *const *code, size_t i, size_t end, const char *name)
{
	size_t mlen = strcspn(name, "(");
	const char *arg = name + mlen + 1;
	size_t alen = strlen(arg) - 1;

	if (end - i < 4 || code[i]->kind != CTOK_IDENT || strlen(code[i]->text) != mlen ||
	    strncmp(code[i]->text, name, mlen) || !ctok_is(code[i + 1], CTOK_PUNCT, "(") ||
	    !ctok_is(code[end - 1], CTOK_PUNCT, ")"))
		return false;
	for (size_t j = i + 2; j + 1 < end; j++)
		if (code[j]->kind == CTOK_IDENT && strlen(code[j]->text) == alen &&
		    !strncmp(code[j]->text, arg, alen) &&
		    (ctok_is(code[j - 1], CTOK_PUNCT, "(") ||
		     ctok_is(code[j - 1], CTOK_PUNCT, ",")) &&
		    (ctok_is(code[j + 1], CTOK_PUNCT, ")") ||
		     ctok_is(code[j + 1], CTOK_PUNCT, ",")))
			return true;
	return false;
}

/* The definition of name in code: [*begin, *end), or -ENOENT. */
static int find_def(const struct ctok *const *code, size_t n, const char *name, size_t *begin,
		    size_t *end)
{
	bool invocation = strchr(name, '(');
	char buf[256];

	for (size_t i = 0; i < n;) {
		size_t e = def_end(code, n, i);

		if (invocation)
			buf[0] = '\0';
		else
			def_name(code, i, e, buf, sizeof(buf));
		if (invocation ? invokes(code, i, e, name) : !strcmp(buf, name)) {
			*begin = i;
			*end = e;
			return 0;
		}
		i = e;
	}
	return -ENOENT;
}

static int code_of(const struct ctok_list *l, const struct ctok ***code, size_t *n)
{
	*code = malloc((l->n + 1) * sizeof(**code));
	if (!*code)
		return -ENOMEM;
	*n = 0;
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].kind != CTOK_COMMENT)
			(*code)[(*n)++] = &l->v[i];
	return 0;
}

/* The copy's definitions: named by "copy:", or the ones after the comment. */
static int resolve_copy(struct copy_file *f, struct copy_decl *d, size_t after, char *msg)
{
	size_t n = d->ncopies ? d->ncopies : d->nsymbols;

	d->ranges = calloc(n, sizeof(*d->ranges));
	if (!d->ranges)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		size_t *r = d->ranges[i];

		if (d->ncopies && find_def(f->code, f->ncode, d->copies[i], &r[0], &r[1]) < 0)
			return fail(msg, -EINVAL, "%s:%u: copy '%s' is not defined in this file",
				    f->name, d->line, d->copies[i]);
		if (!d->ncopies) {
			if (after >= f->ncode)
				return fail(msg, -EINVAL, "%s:%u: no definition follows", f->name,
					    d->line);
			r[0] = after;
			after = r[1] = def_end(f->code, f->ncode, after);
		}
	}
	d->nranges = n;
	return 0;
}

static int add_marker(struct copy_file *f, unsigned int line, unsigned int first, unsigned int last)
{
	struct copy_marker *v = realloc(f->markers, (f->nmarkers + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	f->markers = v;
	v[f->nmarkers++] = (struct copy_marker){ line, first, last };
	return 0;
}

struct parse_state {
	unsigned int begin_line, begin_end; /* an open kmemctl-differs-begin, or 0 */
};

/* A kmemctl-differs comment at toks[i]. */
static int parse_marker(struct copy_file *f, size_t i, const char *text, struct parse_state *ps,
			char *msg)
{
	const struct ctok *c = &f->toks.v[i];
	unsigned int line;
	const char *why;

	if (!strncmp(text, "kmemctl-differs-end", 19)) {
		if (!ps->begin_line || *trim((char *)text + 19))
			return fail(msg, -EINVAL, "%s:%u: kmemctl-differs-end without a begin",
				    f->name, c->line);
		if (c->line <= ps->begin_end + 1)
			return fail(msg, -EINVAL,
				    "%s:%u: kmemctl-differs-begin/end enclose no line", f->name,
				    ps->begin_line);
		line = ps->begin_line;
		ps->begin_line = 0;
		return add_marker(f, line, ps->begin_end + 1, c->line - 1);
	}
	why = !strncmp(text, "kmemctl-differs-begin:", 22) ? text + 22 :
	      !strncmp(text, "kmemctl-differs:", 16)	   ? text + 16 :
							     NULL;
	if (!why || ps->begin_line || !*trim((char *)why))
		return fail(msg, -EINVAL, "%s:%u: %s", f->name, c->line,
			    ps->begin_line ?
				    "kmemctl-differs inside an open kmemctl-differs-begin" :
			    why ? "kmemctl-differs without a reason" :
				  "unknown kmemctl- comment");
	if (text[15] == '-') {
		ps->begin_line = c->line;
		ps->begin_end = c->end_line;
		return 0;
	}
	for (size_t j = i + 1; j < f->toks.n; j++)
		if (f->toks.v[j].kind != CTOK_COMMENT)
			return add_marker(f, c->line, f->toks.v[j].line, f->toks.v[j].line);
	return fail(msg, -EINVAL, "%s:%u: kmemctl-differs before no code", f->name, c->line);
}

/* "kmemctl-series: 6.12", once per file: a major and a minor version. */
static int parse_series(struct copy_file *f, unsigned int line, char *val, char *msg)
{
	unsigned int major, minor;
	int end = 0;

	val = trim(val);
	if (f->series[0])
		return fail(msg, -EINVAL, "%s:%u: a second kmemctl-series", f->name, line);
	if (val[strspn(val, "0123456789.")] ||
	    sscanf(val, "%3u.%3u%n", &major, &minor, &end) != 2 || val[end] || !major)
		return fail(msg, -EINVAL, "%s:%u: kmemctl-series wants a series such as 6.12",
			    f->name, line);
	snprintf(f->series, sizeof(f->series), "%u.%u", major, minor);
	return 0;
}

static int parse_comment(struct copy_file *f, size_t i, size_t after, struct parse_state *ps,
			 char *msg)
{
	const struct ctok *c = &f->toks.v[i];
	_cleanup_free_ char *text = comment_text(c->text);
	char *t;
	struct copy_decl *d;
	unsigned int bad;
	int r;

	if (!text)
		return -ENOMEM;
	t = text + strspn(text, "\n");
	if (strncmp(t, "kmemctl-", 8))
		return 0;
	if (!strncmp(t, "kmemctl-series:", 15))
		return parse_series(f, c->line, t + 15, msg);
	if (strncmp(t, "kmemctl-copy:", 13))
		return parse_marker(f, i, t, ps, msg);
	d = realloc(f->decls, (f->ndecls + 1) * sizeof(*d));
	if (!d)
		return -ENOMEM;
	f->decls = d;
	d = &f->decls[f->ndecls++];
	r = parse_decl(t, c->line + (unsigned int)(t - text), d, &bad);
	if (r == -EINVAL)
		return fail(msg, r, "%s:%u: malformed declaration line", f->name, bad);
	return r < 0 ? r : resolve_copy(f, d, after, msg);
}

static bool in_copy(const struct copy_file *f, unsigned int line)
{
	for (size_t i = 0; i < f->ndecls; i++)
		for (size_t j = 0; j < f->decls[i].nranges; j++) {
			const size_t *r = f->decls[i].ranges[j];

			if (line >= f->code[r[0]]->line && line <= f->code[r[1] - 1]->end_line)
				return true;
		}
	return false;
}

int copy_parse(const char *name, const char *text, size_t len, struct copy_file *f,
	       char msg[COPY_MSG_MAX])
{
	struct parse_state ps = { 0 };
	unsigned int line;
	size_t code_i = 0;
	int r;

	*f = (struct copy_file){ .name = strdup(name) };
	if (!f->name)
		return -ENOMEM;
	r = ctok_scan(text, len, &f->toks, &line);
	if (r == -EINVAL)
		fail(msg, r,
		     "%s:%u: not C: an unterminated comment or literal, or a stray character", name,
		     line);
	if (r == 0)
		r = code_of(&f->toks, &f->code, &f->ncode);
	for (size_t i = 0; r == 0 && i < f->toks.n; i++) {
		if (f->toks.v[i].kind == CTOK_COMMENT)
			r = parse_comment(f, i, code_i, &ps, msg);
		else
			code_i++;
	}
	if (r == 0 && ps.begin_line)
		r = fail(msg, -EINVAL, "%s:%u: kmemctl-differs-begin without an end", name,
			 ps.begin_line);
	for (size_t i = 0; r == 0 && i < f->nmarkers; i++)
		if (!in_copy(f, f->markers[i].first))
			r = fail(msg, -EINVAL, "%s:%u: kmemctl-differs outside any declared copy",
				 name, f->markers[i].line);
	if (r < 0)
		copy_file_free(f);
	return r;
}

void copy_name(const struct copy_file *f, const struct copy_decl *d, char name[COPY_NAME_MAX])
{
	const char *base = strrchr(f->name, '/');
	char def[COPY_NAME_MAX] = "";

	if (d->nranges)
		def_name(f->code, d->ranges[0][0], d->ranges[0][1], def, sizeof(def));
	char *c = name + strlen(base ? base + 1 : f->name);

	/* cut when longer than a record's field: no file or definition here comes near */
	if (snprintf(name, COPY_NAME_MAX, "%s:%s", base ? base + 1 : f->name,
		     def[0] ? def : d->symbols[0]) >= COPY_NAME_MAX)
		c = name;
	for (; *c; c++)
		if (*c == ' ')
			*c = '-';
}

/* s and a NUL: no two fields run into each other */
static bool digest_add(EVP_MD_CTX *md, const char *s)
{
	return EVP_DigestUpdate(md, s, strlen(s) + 1);
}

static bool digest_strv(EVP_MD_CTX *md, const char *tag, char *const *v, size_t n)
{
	bool ok = digest_add(md, tag);

	for (size_t i = 0; ok && i < n; i++)
		ok = digest_add(md, v[i]);
	return ok;
}

int copy_digest(const struct copy_file *f, const struct copy_decl *d,
		char digest[COPY_DIGEST_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	bool ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) &&
		  digest_add(ctx, d->mitigation) && digest_add(ctx, d->path) &&
		  digest_strv(ctx, "symbols", d->symbols, d->nsymbols) &&
		  digest_strv(ctx, "copies", d->copies, d->ncopies);

	for (size_t i = 0; ok && i < d->nsubst; i++)
		ok = digest_add(ctx, d->subst[i].rename ? "rename" : "replace") &&
		     digest_strv(ctx, "from", d->subst[i].from, d->subst[i].nfrom) &&
		     digest_strv(ctx, "to", d->subst[i].to, d->subst[i].nto);
	for (size_t i = 0; ok && i < d->nranges; i++) {
		ok = digest_add(ctx, "code");
		for (size_t t = d->ranges[i][0]; ok && t < d->ranges[i][1]; t++)
			ok = digest_add(ctx, f->code[t]->text);
	}
	ok = ok && EVP_DigestFinal_ex(ctx, md, NULL);
	EVP_MD_CTX_free(ctx);
	if (!ok)
		return -ENOMEM;
	for (size_t i = 0; i < COPY_DIGEST_LEN / 2; i++) {
		digest[2 * i] = hex[md[i] >> 4];
		digest[2 * i + 1] = hex[md[i] & 15];
	}
	digest[COPY_DIGEST_LEN] = '\0';
	return 0;
}

void copy_file_free(struct copy_file *f)
{
	for (size_t i = 0; i < f->ndecls; i++)
		decl_free(&f->decls[i]);
	free(f->decls);
	free(f->markers);
	free(f->code);
	ctok_free(&f->toks);
	free(f->name);
	*f = (struct copy_file){ 0 };
}

/* A token sequence under comparison: owned texts and where each came from. */
struct seq {
	char **text;
	unsigned int *line;
	size_t n, cap;
};

static int seq_push(struct seq *s, const char *text, unsigned int line)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		char **t = realloc(s->text, cap * sizeof(*t));
		unsigned int *l;

		if (!t)
			return -ENOMEM;
		s->text = t;
		l = realloc(s->line, cap * sizeof(*l));
		if (!l)
			return -ENOMEM;
		s->line = l;
		s->cap = cap;
	}
	s->text[s->n] = strdup(text);
	if (!s->text[s->n])
		return -ENOMEM;
	s->line[s->n++] = line;
	return 0;
}

static void seq_free(struct seq *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->text[i]);
	free(s->text);
	free(s->line);
	*s = (struct seq){ 0 };
}

static int seq_range(struct seq *s, const struct ctok *const *code, size_t begin, size_t end)
{
	int r = 0;

	for (size_t i = begin; r == 0 && i < end; i++)
		r = seq_push(s, code[i]->text, code[i]->line);
	return r;
}

/* A rename inside a directive: its words are its tokens. */
static int rename_words(char **text, const char *from, const char *to, size_t *hits)
{
	size_t len = strlen(*text), nfrom = strlen(from);
	char *out = malloc(len / (nfrom ?: 1) * strlen(to) + len + 1), *o = out;
	const char *p = *text;

	if (!out)
		return -ENOMEM;
	while (*p) {
		size_t w = strcspn(p, " ");

		if (w == nfrom && !strncmp(p, from, w)) {
			o = stpcpy(o, to);
			(*hits)++;
		} else {
			memcpy(o, p, w);
			o += w;
		}
		p += w;
		if (*p)
			*o++ = *p++;
	}
	*o = '\0';
	free(*text);
	*text = out;
	return 0;
}

static char *join(char *const *v, size_t n)
{
	size_t len = 1;
	char *s, *p;

	for (size_t i = 0; i < n; i++)
		len += strlen(v[i]) + 1;
	p = s = malloc(len);
	if (!s)
		return NULL;
	*p = '\0';
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "%s%s", i ? " " : "", v[i]);
	return s;
}

/* A replace inside a directive: its tokens are its words. */
static int replace_words(char **text, const struct copy_subst *sub, size_t *hits)
{
	_cleanup_free_ char *from = join(sub->from, sub->nfrom), *to = join(sub->to, sub->nto);
	size_t nfrom;
	char *out, *o;
	const char *p;

	if (!from || !to)
		return -ENOMEM;
	nfrom = strlen(from);
	out = o = malloc(strlen(*text) / nfrom * (strlen(to) + 1) + strlen(*text) + 1);
	if (!out)
		return -ENOMEM;
	for (p = *text; *p;) {
		if (p > *text && p[-1] == ' ' && !strncmp(p, from, nfrom) &&
		    (!p[nfrom] || p[nfrom] == ' ')) {
			o = stpcpy(o, to);
			p += nfrom;
			(*hits)++;
		} else {
			*o++ = *p++;
		}
	}
	*o = '\0';
	free(*text);
	*text = out;
	return 0;
}

static bool seq_at(const struct seq *s, size_t i, char *const *v, size_t n)
{
	if (i + n > s->n)
		return false;
	for (size_t k = 0; k < n; k++)
		if (strcmp(s->text[i + k], v[k]))
			return false;
	return true;
}

/* After these, an identifier is a tag or a member: a rename leaves it. */
static bool other_namespace(const char *prev)
{
	return !strcmp(prev, "struct") || !strcmp(prev, "union") || !strcmp(prev, "enum") ||
	       !strcmp(prev, ".") || !strcmp(prev, "->");
}

/* One substitution everywhere in k; *hits counts where it applied. */
static int apply_subst(struct seq *k, const struct copy_subst *sub, size_t *hits)
{
	struct seq out = { 0 };
	int r = 0;

	*hits = 0;
	for (size_t i = 0; r == 0 && i < k->n;) {
		if (k->text[i][0] == '#') {
			r = sub->rename ?
				    rename_words(&k->text[i], sub->from[0], sub->to[0], hits) :
				    replace_words(&k->text[i], sub, hits);
			if (r == 0)
				r = seq_push(&out, k->text[i], k->line[i]);
			i++;
		} else if (seq_at(k, i, sub->from, sub->nfrom) &&
			   !(sub->rename && i > 0 && other_namespace(k->text[i - 1]))) {
			for (size_t j = 0; r == 0 && j < sub->nto; j++)
				r = seq_push(&out, sub->to[j], k->line[i]);
			i += sub->nfrom;
			(*hits)++;
		} else {
			r = seq_push(&out, k->text[i], k->line[i]);
			i++;
		}
	}
	seq_free(k);
	*k = out;
	return r;
}

static void subst_text(const struct copy_subst *s, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < s->nfrom && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? " " : "", s->from[i]);
}

struct check {
	const struct copy_file *f;
	const struct copy_decl *d;
	const char *kname;
	struct seq k, c;
	bool *used; /* per marker of f */
	char *msg;
};

/* Marks the markers declaring line; whether any does. */
static bool declared(struct check *ck, unsigned int line)
{
	bool any = false;

	for (size_t i = 0; i < ck->f->nmarkers; i++)
		if (line >= ck->f->markers[i].first && line <= ck->f->markers[i].last)
			any = ck->used[i] = true;
	return any;
}

static void seq_excerpt(const struct seq *s, size_t from, size_t to, char *buf, size_t size)
{
	size_t len = 0, n = 0;

	buf[0] = '\0';
	for (size_t i = from; i < to && n < 16 && len < size; i++, n++)
		len += (size_t)snprintf(buf + len, size - len, "%s%s", i > from ? " " : "",
					s->text[i]);
	if (to - from > 16 && len < size)
		snprintf(buf + len, size - len, " ...");
	if (from == to)
		snprintf(buf, size, "nothing");
}

static int undeclared(struct check *ck, size_t ki0, size_t ki1, size_t cj0, size_t cj1,
		      unsigned int cline)
{
	char kx[256], cx[256];
	unsigned int kline = ck->k.line[ki0 < ck->k.n ? ki0 : ck->k.n - 1];

	seq_excerpt(&ck->k, ki0, ki1, kx, sizeof(kx));
	seq_excerpt(&ck->c, cj0, cj1, cx, sizeof(cx));
	return fail(ck->msg, -EBADMSG,
		    "%s:%u: undeclared difference from %s:%u (%s): the kernel has '%s', the copy "
		    "'%s'",
		    ck->f->name, cline, ck->kname, kline, ck->d->symbols[0], kx, cx);
}

/* One run of differences: kernel [ki0, ki1) became copy [cj0, cj1). */
static int hunk(struct check *ck, size_t ki0, size_t ki1, size_t cj0, size_t cj1)
{
	bool ok = false;

	for (size_t j = cj0; j < cj1; j++)
		if (!declared(ck, ck->c.line[j]))
			return undeclared(ck, ki0, ki1, cj0, cj1, ck->c.line[j]);
	if (cj1 > cj0)
		return 0;
	/* a removal: declared by a declared line on either side of it */
	if (cj0 > 0)
		ok = declared(ck, ck->c.line[cj0 - 1]);
	if (cj0 < ck->c.n)
		ok = declared(ck, ck->c.line[cj0]) || ok;
	return ok ? 0 :
		    undeclared(ck, ki0, ki1, cj0, cj1, ck->c.line[cj0 < ck->c.n ? cj0 : cj0 - 1]);
}

static bool same(const struct check *ck, size_t i, size_t j)
{
	return !strcmp(ck->k.text[i], ck->c.text[j]);
}

/* Whether a marker declares line, without marking it. */
static bool is_declared(const struct copy_file *f, unsigned int line)
{
	for (size_t i = 0; i < f->nmarkers; i++)
		if (line >= f->markers[i].first && line <= f->markers[i].last)
			return true;
	return false;
}

/*
 * The cheapest edit from k to c, where an edit on a declared line costs
 * 1 and any other UNDECLARED: if any alignment explains every difference
 * by a declaration, this finds it, and among those the one that matches
 * most (so a declared line that need not differ stays unused).
 */
#define UNDECLARED 65536

static int compare(struct check *ck)
{
	size_t nk = ck->k.n, nc = ck->c.n, w = nc + 1, i = 0, j = 0;
	_cleanup_free_ uint32_t *C = NULL;
	_cleanup_free_ uint32_t *ins = NULL, *del = NULL;

	if (nk > COPY_MAX_TOKENS || nc > COPY_MAX_TOKENS)
		return fail(ck->msg, -E2BIG, "%s:%u: a copy of more than %d tokens", ck->f->name,
			    ck->d->line, COPY_MAX_TOKENS);
	C = malloc((nk + 1) * w * sizeof(*C));
	ins = malloc(w * sizeof(*ins));
	del = malloc(w * sizeof(*del));
	if (!C || !ins || !del)
		return -ENOMEM;
	for (size_t b = 0; b <= nc; b++) {
		bool here = b < nc && is_declared(ck->f, ck->c.line[b]);
		bool before = b > 0 && is_declared(ck->f, ck->c.line[b - 1]);

		ins[b] = here ? 1 : UNDECLARED;
		del[b] = here || before ? 1 : UNDECLARED;
	}
	for (size_t a = nk + 1; a-- > 0;)
		for (size_t b = nc + 1; b-- > 0;) {
			uint32_t best = a == nk && b == nc ? 0 : UINT32_MAX;

			if (a < nk && b < nc && same(ck, a, b))
				best = C[(a + 1) * w + b + 1];
			if (a < nk)
				best = MIN(best, del[b] + C[(a + 1) * w + b]);
			if (b < nc)
				best = MIN(best, ins[b] + C[a * w + b + 1]);
			C[a * w + b] = best;
		}
	while (i < nk || j < nc) {
		size_t i0 = i, j0 = j;
		int r;

		while (i < nk && j < nc && same(ck, i, j) && C[i * w + j] == C[(i + 1) * w + j + 1])
			i++, j++;
		if (i == nk && j == nc)
			break;
		i0 = i;
		j0 = j;
		for (;;) {
			uint32_t c = C[i * w + j];

			if (i < nk && j < nc && same(ck, i, j) && c == C[(i + 1) * w + j + 1])
				break;
			if (i < nk && c == del[j] + C[(i + 1) * w + j])
				i++;
			else if (j < nc)
				j++;
			else
				break;
		}
		r = hunk(ck, i0, i, j0, j);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Markers within the copy must each have declared a difference. */
static int markers_used(struct check *ck)
{
	for (size_t i = 0; i < ck->f->nmarkers; i++) {
		const struct copy_marker *m = &ck->f->markers[i];
		bool mine = false;

		for (size_t r = 0; r < ck->d->nranges; r++) {
			const size_t *rg = ck->d->ranges[r];

			mine |= m->first >= ck->f->code[rg[0]]->line &&
				m->first <= ck->f->code[rg[1] - 1]->end_line;
		}
		if (mine && !ck->used[i])
			return fail(
				ck->msg, -EBADMSG,
				"%s:%u: kmemctl-differs declares line %u to %u, but they do not "
				"differ from %s (%s)",
				ck->f->name, m->line, m->first, m->last, ck->kname,
				ck->d->symbols[0]);
	}
	return 0;
}

static int kernel_seq(struct check *ck, const struct ctok_list *kernel)
{
	_cleanup_free_ const struct ctok **code = NULL;
	size_t n, b, e;
	int r = code_of(kernel, &code, &n);

	for (size_t i = 0; r == 0 && i < ck->d->nsymbols; i++) {
		if (find_def(code, n, ck->d->symbols[i], &b, &e) < 0)
			return fail(ck->msg, -ENOENT, "%s:%u: %s does not define '%s'", ck->f->name,
				    ck->d->line, ck->kname, ck->d->symbols[i]);
		r = seq_range(&ck->k, code, b, e);
	}
	for (size_t i = 0; r == 0 && i < ck->d->nsubst; i++) {
		const struct copy_subst *s = &ck->d->subst[i];
		size_t hits;
		char what[256];

		r = apply_subst(&ck->k, s, &hits);
		if (r == 0 && hits == 0) {
			subst_text(s, what, sizeof(what));
			return fail(ck->msg, -EBADMSG, "%s:%u: declared '%s' is not in %s (%s)",
				    ck->f->name, s->line, what, ck->kname, ck->d->symbols[0]);
		}
	}
	return r;
}

int copy_check(const struct copy_file *f, const struct copy_decl *d, const char *kname,
	       const struct ctok_list *kernel, char msg[COPY_MSG_MAX])
{
	struct check ck = { .f = f, .d = d, .kname = kname, .msg = msg };
	int r;

	ck.used = calloc(f->nmarkers + 1, sizeof(*ck.used));
	if (!ck.used)
		return -ENOMEM;
	r = kernel_seq(&ck, kernel);
	for (size_t i = 0; r == 0 && i < d->nranges; i++)
		r = seq_range(&ck.c, f->code, d->ranges[i][0], d->ranges[i][1]);
	if (r == 0)
		r = compare(&ck);
	if (r == 0)
		r = markers_used(&ck);
	seq_free(&ck.k);
	seq_free(&ck.c);
	free(ck.used);
	return r;
}

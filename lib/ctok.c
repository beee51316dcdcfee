// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctok.h"

struct scanner {
	const char *src;
	size_t len, pos;
	unsigned int line;
	bool bol; /* only blanks since the last newline: a '#' starts a directive */
};

/* Longest first, so the first match is the longest. */
static const char *const puncts[] = {
	"...", "<<=", ">>=", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=",
	"&&",  "||",  "*=",  "/=", "%=", "+=", "-=", "&=", "^=", "|=", "##", "#",
	"[",   "]",   "(",   ")",  "{",	 "}",  ".",  "&",  "*",	 "+",  "-",  "~",
	"!",   "/",   "%",   "<",  ">",	 "^",  "|",  "?",  ":",	 ";",  "=",  ",",
};

static int peek(const struct scanner *s, size_t off)
{
	return s->pos + off < s->len ? (unsigned char)s->src[s->pos + off] : -1;
}

static bool is_ident(int c, bool first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' ||
	       (!first && c >= '0' && c <= '9');
}

static bool is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int push(struct ctok_list *l, enum ctok_kind kind, const char *text, size_t len,
		unsigned int line, unsigned int end_line)
{
	struct ctok *t;

	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 256;
		struct ctok *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	t = &l->v[l->n];
	t->text = strndup(text, len);
	if (!t->text)
		return -ENOMEM;
	t->kind = kind;
	t->line = line;
	t->end_line = end_line;
	l->n++;
	return 0;
}

/* Blanks and line splices; a newline only outside a directive. */
static void skip_blanks(struct scanner *s, bool in_pp)
{
	for (;;) {
		int c = peek(s, 0);

		if (c == '\\' && peek(s, 1) == '\n') {
			s->pos += 2;
			s->line++;
		} else if (c == ' ' || c == '\t' || c == '\f' || c == '\v' || c == '\r') {
			s->pos++;
		} else if (c == '\n' && !in_pp) {
			s->pos++;
			s->line++;
			s->bol = true;
		} else {
			return;
		}
	}
}

static int scan_comment(struct scanner *s, struct ctok_list *out)
{
	unsigned int line = s->line;
	size_t start = s->pos + 2;

	if (peek(s, 1) == '/') {
		while (s->pos < s->len && s->src[s->pos] != '\n')
			s->pos++;
		return push(out, CTOK_COMMENT, s->src + start, s->pos - start, line, line);
	}
	for (s->pos += 2; s->pos + 1 < s->len; s->pos++) {
		if (s->src[s->pos] == '*' && s->src[s->pos + 1] == '/') {
			s->pos += 2;
			return push(out, CTOK_COMMENT, s->src + start, s->pos - 2 - start, line,
				    s->line);
		}
		if (s->src[s->pos] == '\n')
			s->line++;
	}
	s->line = line;
	return -EINVAL;
}

static int scan_literal(struct scanner *s, size_t start, struct ctok_list *out)
{
	int quote = peek(s, 0);

	for (s->pos++; s->pos < s->len; s->pos++) {
		int c = (unsigned char)s->src[s->pos];

		if (c == '\\' && s->pos + 1 < s->len) {
			if (s->src[++s->pos] == '\n')
				s->line++;
		} else if (c == '\n') {
			return -EINVAL;
		} else if (c == quote) {
			s->pos++;
			return push(out, quote == '"' ? CTOK_STRING : CTOK_CHAR, s->src + start,
				    s->pos - start, s->line, s->line);
		}
	}
	return -EINVAL;
}

static int scan_number(struct scanner *s, struct ctok_list *out)
{
	size_t start = s->pos;

	for (s->pos++; s->pos < s->len; s->pos++) {
		int c = peek(s, 0), prev = (unsigned char)s->src[s->pos - 1];

		if ((c == '+' || c == '-') &&
		    (prev == 'e' || prev == 'E' || prev == 'p' || prev == 'P'))
			continue;
		if (!is_ident(c, false) && c != '.')
			break;
	}
	return push(out, CTOK_NUMBER, s->src + start, s->pos - start, s->line, s->line);
}

/* One token other than a comment or a directive at s->pos. */
static int scan_token(struct scanner *s, struct ctok_list *out)
{
	size_t start = s->pos;
	int c = peek(s, 0);

	if (c == '"' || c == '\'')
		return scan_literal(s, start, out);
	if (is_digit(c) || (c == '.' && is_digit(peek(s, 1))))
		return scan_number(s, out);
	if (is_ident(c, true)) {
		while (is_ident(peek(s, 0), false))
			s->pos++;
		c = peek(s, 0);
		/* L"", u8"", u'', U'': one literal with its prefix */
		if ((c == '"' || c == '\'') && strchr("LuU", s->src[start]) &&
		    s->pos - start <= 2 &&
		    (s->pos - start == 1 || !strncmp(s->src + start, "u8", 2)))
			return scan_literal(s, start, out);
		return push(out, CTOK_IDENT, s->src + start, s->pos - start, s->line, s->line);
	}
	for (size_t i = 0; i < sizeof(puncts) / sizeof(puncts[0]); i++) {
		size_t n = strlen(puncts[i]);

		if (s->pos + n <= s->len && !strncmp(s->src + s->pos, puncts[i], n)) {
			s->pos += n;
			return push(out, CTOK_PUNCT, puncts[i], n, s->line, s->line);
		}
	}
	return -EINVAL;
}

/* A directive: its tokens, comments dropped, joined into one CTOK_PP. */
static int scan_directive(struct scanner *s, struct ctok_list *out)
{
	struct ctok_list sub = { 0 };
	unsigned int line = s->line;
	size_t len = 0;
	char *text, *p;
	int r = 0;

	s->pos++;
	for (;;) {
		skip_blanks(s, true);
		if (s->pos >= s->len || peek(s, 0) == '\n')
			break;
		if (peek(s, 0) == '/' && (peek(s, 1) == '*' || peek(s, 1) == '/'))
			r = scan_comment(s, &sub);
		else
			r = scan_token(s, &sub);
		if (r < 0)
			break;
		if (sub.v[sub.n - 1].kind != CTOK_COMMENT)
			len += strlen(sub.v[sub.n - 1].text) + 1;
	}
	if (r < 0) {
		ctok_free(&sub);
		return r;
	}
	p = text = malloc(len + 2);
	if (!text) {
		ctok_free(&sub);
		return -ENOMEM;
	}
	*p++ = '#';
	for (size_t i = 0; i < sub.n; i++) {
		if (sub.v[i].kind == CTOK_COMMENT)
			continue;
		*p++ = ' ';
		p = stpcpy(p, sub.v[i].text);
	}
	*p = '\0';
	r = push(out, CTOK_PP, text, (size_t)(p - text), line, s->line);
	free(text);
	ctok_free(&sub);
	return r;
}

int ctok_scan(const char *src, size_t len, struct ctok_list *out, unsigned int *err_line)
{
	struct scanner s = { .src = src, .len = len, .line = 1, .bol = true };
	int r = 0;

	*out = (struct ctok_list){ 0 };
	for (;;) {
		skip_blanks(&s, false);
		if (s.pos >= s.len)
			return 0;
		if (peek(&s, 0) == '/' && (peek(&s, 1) == '*' || peek(&s, 1) == '/')) {
			r = scan_comment(&s, out);
		} else if (peek(&s, 0) == '#' && s.bol) {
			r = scan_directive(&s, out);
		} else {
			s.bol = false;
			r = scan_token(&s, out);
		}
		if (r < 0)
			break;
	}
	*err_line = s.line;
	ctok_free(out);
	return r;
}

void ctok_free(struct ctok_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].text);
	free(l->v);
	*l = (struct ctok_list){ 0 };
}

bool ctok_is(const struct ctok *t, enum ctok_kind kind, const char *text)
{
	return t->kind == kind && !strcmp(t->text, text);
}

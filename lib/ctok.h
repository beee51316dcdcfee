/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A C tokenizer for comparing copied kernel code with its origin (kmemctl
 * build check): identifiers, numbers, string and character literals,
 * punctuators, comments, and each preprocessor directive as one token.
 *
 * A directive's text is its own tokens joined by single spaces ("# define
 * X ( 1 << 2 )"), so layout never makes two directives differ; comments
 * inside it are dropped, continuation lines joined. Numbers are
 * preprocessing numbers (1UL, 0x1f, 1e+5). Nothing is preprocessed.
 */
#ifndef KMEMCTL_CTOK_H
#define KMEMCTL_CTOK_H

#include <stdbool.h>
#include <stddef.h>

enum ctok_kind {
	CTOK_IDENT,
	CTOK_NUMBER,
	CTOK_STRING,
	CTOK_CHAR,
	CTOK_PUNCT,
	CTOK_PP, /* a whole directive */
	CTOK_COMMENT, /* text without its delimiters */
};

struct ctok {
	enum ctok_kind kind;
	char *text; /* NUL-terminated, owned by the list */
	unsigned int line, end_line; /* 1-based, where it starts and ends */
};

struct ctok_list {
	struct ctok *v;
	size_t n, cap;
};

/*
 * Tokenize len bytes of src. -EINVAL on what no C file holds: an
 * unterminated comment, string or character literal, a newline inside a
 * literal, or a byte that starts no token; *err_line says where. -ENOMEM.
 */
int ctok_scan(const char *src, size_t len, struct ctok_list *out, unsigned int *err_line);
void ctok_free(struct ctok_list *l);

bool ctok_is(const struct ctok *t, enum ctok_kind kind, const char *text);

#endif

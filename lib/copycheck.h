/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Copied kernel code and its declarations (docs/kmod.md, "Copy
 * declarations"): parse them from a kmod/ file, and check each copy
 * against the kernel source it names, token by token.
 *
 * A declaration is a comment right before the copy:
 *
 *   kmemctl-copy: MITIGATION PATH SYMBOL...
 *   rename: KERNEL -> COPY, ...
 *   replace: "KERNEL TOKENS" -> "COPY TOKENS": WHY
 *   copy: NAME, ...
 *
 * SYMBOL names a kernel definition in PATH: a function, "struct X" (or
 * union, enum), a macro, or "MACRO(ARG)": a top-level invocation of MACRO
 * with ARG as one of its arguments, for what a macro defines (e.g.
 * RB_DECLARE_CALLBACKS_MAX(free_vmap_area_rb_augment_cb)). The copy is, by default, as many definitions
 * as there are symbols, following the comment; "copy:" names its
 * definitions in this file instead. The kernel's tokens are rewritten
 * first: each rename (identifiers) and each replace (token sequences), in
 * order, everywhere; each must apply at least once. What then still
 * differs must lie on lines of the copy declared by a comment
 * "kmemctl-differs: WHY" (the next line with code) or between
 * "kmemctl-differs-begin: WHY" and "kmemctl-differs-end"; a difference
 * that only removes kernel code is declared by a declared line next to
 * where it was. Each declared line range must hold a difference.
 */
#ifndef KMEMCTL_COPYCHECK_H
#define KMEMCTL_COPYCHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "ctok.h"

#define COPY_MSG_MAX 1024
/* a copy's digest in records: 64 bits of SHA-256, in hex */
#define COPY_DIGEST_LEN 16
#define COPY_NAME_MAX 160

struct copy_subst {
	char **from, **to; /* token texts */
	size_t nfrom, nto;
	bool rename; /* identifiers only: not tags, not members */
	unsigned int line;
};

struct copy_decl {
	char *mitigation, *path;
	char **symbols; /* kernel definitions, in order */
	size_t nsymbols;
	char **copies; /* "copy:" names, or none */
	size_t ncopies;
	struct copy_subst *subst;
	size_t nsubst;
	unsigned int line; /* of "kmemctl-copy:" */
	size_t (*ranges)[2]; /* the copy's definitions: [begin, end) in code */
	size_t nranges;
};

struct copy_marker {
	unsigned int line; /* of the comment */
	unsigned int first, last; /* the lines it declares */
};

struct copy_file {
	char *name; /* as messages name it, e.g. kmod/lp_rstat.c */
	/* "kmemctl-series: 6.12": the kernel series its copies are of; "" for any */
	char series[16];
	struct ctok_list toks;
	const struct ctok **code; /* toks without comments */
	size_t ncode;
	struct copy_decl *decls;
	size_t ndecls;
	struct copy_marker *markers;
	size_t nmarkers;
};

/*
 * Tokenize and parse a kmod file. -EINVAL for a file that does not
 * tokenize or a malformed declaration or marker, with msg saying where
 * and why; f is then left empty.
 */
int copy_parse(const char *name, const char *text, size_t len, struct copy_file *f,
	       char msg[COPY_MSG_MAX]);
void copy_file_free(struct copy_file *f);

/*
 * Check declaration d of f against kernel, the tokens of the file d->path
 * (named kname in messages). 0: the copy matches as declared. -EBADMSG:
 * it does not, and msg names the first undeclared difference or the
 * declared one that is not there, with file:line on both sides. -ENOENT:
 * a symbol or copy is not defined (msg says which). -ENOMEM.
 */
int copy_check(const struct copy_file *f, const struct copy_decl *d, const char *kname,
	       const struct ctok_list *kernel, char msg[COPY_MSG_MAX]);

/*
 * The name build records give copy d: f's file name without its
 * directories, ':', and what the copy's first definition defines (or else
 * d's first symbol), spaces as '-' ("lp_rstat.c:kmem_rstat_flush_locked",
 * "kasan_quarantine.c:struct-qlist_node"): unique in its file, and kept
 * by edits elsewhere in it.
 */
void copy_name(const struct copy_file *f, const struct copy_decl *d, char name[COPY_NAME_MAX]);

/*
 * What a build record vouches for of copy d (docs/kmod.md, "Verified
 * builds"): a digest of its declaration (mitigation, path, symbols,
 * copies, renames and replaces) and of its code's tokens. Layout and
 * comments outside the declaration never change it; a changed token does.
 * -ENOMEM.
 */
int copy_digest(const struct copy_file *f, const struct copy_decl *d,
		char digest[COPY_DIGEST_LEN + 1]);

#endif

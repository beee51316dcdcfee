// SPDX-License-Identifier: GPL-2.0
/*
 * kmemctl build: verified kernel builds (docs/kmod.md, "Verified builds").
 *   kmemctl build check --source DIR|TARBALL [--kmod DIR]
 *   kmemctl build record (--build FILE | --build-id ID) [--source DIR|TARBALL]
 *       [--source-package NAME] [--source-version V] [--kmod DIR] -o RECORD
 *   kmemctl build copies [--kmod DIR] [--c] [-o FILE]
 *   kmemctl build sites [--image FILE] -o SITES
 *   kmemctl build sign -k KEY [-s SIGNER] -o BUNDLE RECORD
 *   kmemctl build verify -K KEYS_DIR BUNDLE
 * check and record compare every declared copy of kernel code in kmod/
 * with the kernel source it names; a record vouches only for the
 * mitigations whose copies all match, and only for a build made from that
 * source: Debian's builds name the package version in uname -v; for a
 * self-built kernel the operator's --source-version stands in, with a
 * warning. Either way its upstream part must be the source's Makefile's.
 * With --build-id the build file is kmemd's copy, and without --source a
 * Debian build's source package is downloaded at the version it names.
 * A record names the copies it was checked with by their digests, so it
 * holds for every kmemctl whose copies are the same; copies prints them,
 * and with --c the table kmod/copies.c compiles into the module.
 * sites takes a build's patch-site tables from its image (default: the
 * running kernel's /boot/vmlinuz-RELEASE) for /sys/kernel/kmemctl/sites.
 */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "build-fleet.h"
#include "buildrec.h"
#include "kimage.h"
#include "copycheck.h"
#include "fileio.h"
#include "kmemctl.h"
#include "log.h"
#include "macro.h"
#include "pki.h"
#include "sign.h"

/* The largest kernel source file a declaration may name (mm/vmalloc.c: 120 KiB). */
#define SOURCE_FILE_MAX (4 << 20)
#define KMOD_FILE_MAX (1 << 20)

struct source_file {
	char *path; /* as declarations name it */
	struct ctok_list toks;
	char *text; /* the top Makefile's, kept as text: it is not C */
	bool found, raw;
};

struct tree {
	struct copy_file *files; /* kmod/ files with declarations */
	size_t nfiles;
	struct source_file *src;
	size_t nsrc;
	char top[128]; /* the tarball's top directory, e.g. linux-source-6.1 */
};

static void tree_free(struct tree *t)
{
	for (size_t i = 0; i < t->nfiles; i++)
		copy_file_free(&t->files[i]);
	free(t->files);
	for (size_t i = 0; i < t->nsrc; i++) {
		free(t->src[i].path);
		free(t->src[i].text);
		ctok_free(&t->src[i].toks);
	}
	free(t->src);
}

static int kmod_filter(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return d->d_name[0] != '.' && n > 2 && d->d_name[n - 2] == '.' &&
	       (d->d_name[n - 1] == 'c' || d->d_name[n - 1] == 'h') && !strstr(d->d_name, ".mod.");
}

static int add_kmod_file(struct tree *t, const char *dir, const char *name)
{
	_cleanup_free_ char *path = NULL, *text = NULL;
	char msg[COPY_MSG_MAX];
	struct copy_file f;
	size_t len;
	int r;

	if (asprintf(&path, "%s/%s", dir, name) < 0)
		return -ENOMEM;
	r = read_file_max(path, KMOD_FILE_MAX, &text, &len);
	if (r < 0)
		return log_error_errno(r, "reading '%s' failed: %m", path);
	r = copy_parse(path, text, len, &f, msg);
	if (r == -EINVAL)
		log_error("%s", msg);
	if (r < 0)
		return r;
	if (f.ndecls == 0) {
		copy_file_free(&f);
		return 0;
	}
	t->files[t->nfiles++] = f;
	return 0;
}

/* Every declaration in dir's .c and .h files. */
static int load_kmod(struct tree *t, const char *dir)
{
	struct dirent **list;
	int n = scandir(dir, &list, kmod_filter, alphasort), r = 0;

	if (n < 0)
		return log_error_errno(negative_errno(), "reading '%s' failed: %m", dir);
	t->files = calloc((size_t)n + 1, sizeof(*t->files));
	if (!t->files)
		r = -ENOMEM;
	for (int i = 0; i < n; i++) {
		if (r == 0)
			r = add_kmod_file(t, dir, list[i]->d_name);
		free(list[i]);
	}
	free(list);
	if (r == 0 && t->nfiles == 0)
		r = log_error_errno(-ENOENT, "no kmemctl-copy declaration in '%s'", dir);
	return r;
}

static int want_source(struct tree *t, const char *path, bool raw)
{
	struct source_file *v = realloc(t->src, (t->nsrc + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	t->src = v;
	v[t->nsrc] = (struct source_file){ .path = strdup(path), .raw = raw };
	return v[t->nsrc++].path ? 0 : -ENOMEM;
}

/* The kernel files the declarations name, each once, and the top Makefile (its version). */
static int want_sources(struct tree *t)
{
	int r = want_source(t, "Makefile", true);

	for (size_t i = 0; r == 0 && i < t->nfiles; i++)
		for (size_t j = 0; j < t->files[i].ndecls; j++) {
			const char *p = t->files[i].decls[j].path;
			size_t k;

			for (k = 0; k < t->nsrc && strcmp(t->src[k].path, p); k++)
				;
			if (k == t->nsrc && (r = want_source(t, p, false)) < 0)
				return r;
		}
	return r;
}

/* Takes text for the Makefile, tokenizes the rest. */
static int tokenize_source(struct source_file *s, char **text, size_t len, const char *from)
{
	unsigned int line;
	int r;

	if (s->raw) {
		s->text = TAKE_PTR(*text);
		s->found = true;
		return 0;
	}
	r = ctok_scan(*text, len, &s->toks, &line);

	if (r == -EINVAL)
		return log_error_errno(r, "%s: %s:%u does not tokenize as C", from, s->path, line);
	s->found = r == 0;
	return r;
}

static int read_dir_sources(struct tree *t, const char *dir)
{
	for (size_t i = 0; i < t->nsrc; i++) {
		_cleanup_free_ char *path = NULL, *text = NULL;
		size_t len;
		int r;

		if (asprintf(&path, "%s/%s", dir, t->src[i].path) < 0)
			return -ENOMEM;
		r = read_file_max(path, SOURCE_FILE_MAX, &text, &len);
		if (r == -ENOENT && t->src[i].raw)
			continue;
		if (r < 0)
			return log_error_errno(r, "reading '%s' failed: %m", path);
		r = tokenize_source(&t->src[i], &text, len, dir);
		if (r < 0)
			return r;
	}
	return 0;
}

/* "linux-source-6.1/mm/vmalloc.c" is mm/vmalloc.c: the tarball's top directory goes. */
static struct source_file *wanted(struct tree *t, const char *name)
{
	const char *rel = strchr(name, '/');

	if (!rel)
		return NULL;
	for (size_t i = 0; i < t->nsrc; i++)
		if (!strcmp(rel + 1, t->src[i].path) && !t->src[i].found)
			return &t->src[i];
	return NULL;
}

static int read_entry(struct archive *a, struct archive_entry *e, struct source_file *s,
		      const char *tarball)
{
	la_int64_t size = archive_entry_size(e);
	_cleanup_free_ char *text = NULL;
	la_ssize_t n;

	if (size < 0 || size > SOURCE_FILE_MAX)
		return log_error_errno(-EFBIG, "%s: %s is larger than %d bytes", tarball, s->path,
				       SOURCE_FILE_MAX);
	text = malloc((size_t)size + 1);
	if (!text)
		return -ENOMEM;
	n = archive_read_data(a, text, (size_t)size);
	if (n != size)
		return log_error_errno(-EIO, "%s: reading %s failed: %s", tarball, s->path,
				       archive_error_string(a) ?: "short read");
	text[size] = '\0';
	return tokenize_source(s, &text, (size_t)size, tarball);
}

/* One pass over the tarball (xz, gzip, ...), taking the named files. */
static int read_tar_sources(struct tree *t, const char *tarball)
{
	struct archive *a = archive_read_new();
	struct archive_entry *e;
	size_t left = t->nsrc;
	int r = 0, st;

	if (!a)
		return -ENOMEM;
	archive_read_support_filter_all(a);
	archive_read_support_format_tar(a);
	if (archive_read_open_filename(a, tarball, 1 << 16) != ARCHIVE_OK) {
		r = log_error_errno(-EIO, "opening '%s' failed: %s", tarball,
				    archive_error_string(a));
		archive_read_free(a);
		return r;
	}
	while (r == 0 && left > 0 && (st = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		const char *name = archive_entry_pathname(e);
		struct source_file *s = wanted(t, name);

		if (!t->top[0])
			snprintf(t->top, sizeof(t->top), "%.*s", (int)strcspn(name, "/"), name);
		if (!s || archive_entry_filetype(e) != AE_IFREG)
			continue;
		r = read_entry(a, e, s, tarball);
		left--;
	}
	if (r == 0 && left > 0 && st != ARCHIVE_EOF)
		r = log_error_errno(-EIO, "reading '%s' failed: %s", tarball,
				    archive_error_string(a));
	archive_read_free(a);
	return r;
}

static int load_source(struct tree *t, const char *source)
{
	_cleanup_free_ char *real = NULL;
	struct stat st;
	int r;

	if (stat(source, &st) < 0)
		return log_error_errno(negative_errno(), "'%s': %m", source);
	/* an unpacked tarball: its directory's name is the package's */
	if (S_ISDIR(st.st_mode) && (real = realpath(source, NULL)))
		snprintf(t->top, sizeof(t->top), "%s", strrchr(real, '/') + 1);
	r = S_ISDIR(st.st_mode) ? read_dir_sources(t, source) : read_tar_sources(t, source);
	for (size_t i = 0; r == 0 && i < t->nsrc; i++)
		if (!t->src[i].found && !t->src[i].raw)
			r = log_error_errno(-ENOENT, "'%s' has no %s", source, t->src[i].path);
	return r;
}

static const struct source_file *source_of(const struct tree *t, const char *path)
{
	for (size_t i = 0; i < t->nsrc; i++)
		if (!strcmp(t->src[i].path, path))
			return &t->src[i];
	return NULL;
}

static int makefile_version(const char *mk, char *buf, size_t size);

/* The top Makefile's series, "6.12" of "6.12.118"; "" when it has none. */
static void makefile_series(const char *mk, char *buf, size_t size)
{
	char v[64];

	size_t major;

	if (!mk || makefile_version(mk, v, sizeof(v)) < 0)
		return;
	major = strcspn(v, ".");
	snprintf(buf, size, "%.*s", (int)(major + 1 + strcspn(v + major + 1, ".")), v);
}

#define VERDICTS_MAX 32

/* A mitigation whose copies did not all match, and the first reason. */
struct verdict {
	char mitigation[33];
	bool ok;
	char why[COPY_MSG_MAX];
};

/* The copies checked, as records name them. */
struct copies {
	struct build_copy *v;
	size_t n;
};

static int copies_add(struct copies *c, const struct copy_file *f, const struct copy_decl *d)
{
	struct build_copy *nv = realloc(c->v, (c->n + 1) * sizeof(*nv)), *e;
	char name[COPY_NAME_MAX];

	if (!nv)
		return -ENOMEM;
	c->v = nv;
	e = &nv[c->n];
	*e = (struct build_copy){ 0 };
	copy_name(f, d, name);
	snprintf(e->mitigation, sizeof(e->mitigation), "%s", d->mitigation);
	snprintf(e->name, sizeof(e->name), "%s", name);
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->v[i].mitigation, e->mitigation) && !strcmp(c->v[i].name, e->name))
			return log_error_errno(-EINVAL, "%s:%u: a second copy named %s", f->name,
					       d->line, e->name);
	if (copy_digest(f, d, e->digest) < 0)
		return -ENOMEM;
	c->n++;
	return 0;
}

static struct verdict *verdict_of(struct verdict *v, size_t *n, const char *mitigation)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp(v[i].mitigation, mitigation))
			return &v[i];
	if (*n == VERDICTS_MAX)
		return &v[*n - 1];
	snprintf(v[*n].mitigation, sizeof(v[*n].mitigation), "%s", mitigation);
	v[*n].ok = true;
	return &v[(*n)++];
}

/*
 * Check every copy, printing "ok" or the first difference for each when
 * verbose; v gets one verdict per mitigation, and copies (when given)
 * every copy checked. 0, -EINVAL (two copies of one name) or -ENOMEM.
 */
static int check_all(const struct tree *t, bool verbose, struct verdict *v, size_t *nv,
		     size_t *checked, struct copies *copies)
{
	char series[32] = "";

	makefile_series(source_of(t, "Makefile")->text, series, sizeof(series));
	for (size_t i = 0; i < t->nfiles; i++)
		for (size_t j = 0; j < t->files[i].ndecls; j++) {
			const struct copy_decl *d = &t->files[i].decls[j];
			struct verdict *m;
			char msg[COPY_MSG_MAX];
			int r;

			/* copies of another series' code are for its kernels, not this source's */
			if (t->files[i].series[0] && strcmp(t->files[i].series, series)) {
				if (verbose && j == 0)
					printf("skip %s: copies of %s, the source is %s\n",
					       t->files[i].name, t->files[i].series, series);
				continue;
			}
			m = verdict_of(v, nv, d->mitigation);
			(*checked)++;
			if (copies && (r = copies_add(copies, &t->files[i], d)) < 0)
				return r;
			r = copy_check(&t->files[i], d, d->path, &source_of(t, d->path)->toks, msg);
			if (r == -ENOMEM)
				return r;
			if (verbose)
				printf("%-4s %s %s %s (%s:%u)%s%s\n", r ? "FAIL" : "ok",
				       d->mitigation, d->path, d->symbols[0], t->files[i].name,
				       d->line, r ? "\n     " : "", r ? msg : "");
			if (r && m->ok) {
				m->ok = false;
				snprintf(m->why, sizeof(m->why), "%s", msg);
			}
		}
	return 0;
}

static int load_tree(struct tree *t, const char *kmod, const char *source)
{
	int r = load_kmod(t, kmod);

	if (r == 0)
		r = want_sources(t);
	if (r == 0)
		r = load_source(t, source);
	return r;
}

static const struct option tree_opts[] = {
	{ "source", required_argument, NULL, 'S' },
	{ "kmod", required_argument, NULL, 'M' },
	{ "build", required_argument, NULL, 'b' },
	{ "source-package", required_argument, NULL, 'P' },
	{ "source-version", required_argument, NULL, 'V' },
	{ "output", required_argument, NULL, 'o' },
	{ "build-id", required_argument, NULL, 'i' },
	{ 0 },
};

struct tree_args {
	const char *source, *kmod, *build, *package, *version, *out, *build_id;
};

static int parse_tree_args(int argc, char **argv, struct tree_args *a)
{
	int c;

	/* a checkout's kmod/, else the module source kmemctl-dkms installed */
	*a = (struct tree_args){ .kmod = access("kmod", F_OK) == 0 ?
						 "kmod" :
						 "/usr/src/kmemctl-" KMEMCTL_VERSION };
	optind = 0;
	while ((c = getopt_long(argc, argv, "o:", tree_opts, NULL)) != -1) {
		const char **slot = c == 'S' ? &a->source :
				    c == 'M' ? &a->kmod :
				    c == 'b' ? &a->build :
				    c == 'P' ? &a->package :
				    c == 'V' ? &a->version :
				    c == 'o' ? &a->out :
				    c == 'i' ? &a->build_id :
					       NULL;

		if (!slot)
			return -EINVAL;
		*slot = optarg;
	}
	return optind == argc ? 0 : -EINVAL;
}

static int build_check(int argc, char **argv)
{
	struct verdict v[VERDICTS_MAX];
	struct tree_args a;
	struct tree t = { 0 };
	size_t nv = 0, bad = 0, checked = 0;
	int r;

	if (parse_tree_args(argc, argv, &a) < 0 || !a.source || a.build || a.out || a.build_id) {
		fprintf(stderr, "usage: kmemctl build check --source DIR|TARBALL [--kmod DIR]\n");
		return EXIT_USAGE;
	}
	r = load_tree(&t, a.kmod, a.source);
	if (r == 0)
		r = check_all(&t, true, v, &nv, &checked, NULL);
	for (size_t i = 0; r == 0 && i < nv; i++)
		bad += !v[i].ok;
	if (r == 0)
		printf("%zu copies of %zu mitigations: %s\n", checked, nv,
		       bad ? "some differ from the source" : "all match the source");
	tree_free(&t);
	return r == 0 && bad == 0 ? EXIT_OK : EXIT_ERROR;
}

/* "VERSION = 6" and the like in the top Makefile: "6.1.192" (with EXTRAVERSION). */
static int makefile_version(const char *mk, char *buf, size_t size)
{
	static const char *const keys[] = { "VERSION", "PATCHLEVEL", "SUBLEVEL", "EXTRAVERSION" };
	char v[4][32] = { { 0 } };

	for (const char *l = mk; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		for (size_t k = 0; k < ARRAY_SIZE(keys); k++) {
			size_t n = strlen(keys[k]);
			const char *val;

			if (strncmp(l, keys[k], n) || strncmp(l + n, " =", 2) || v[k][0])
				continue;
			val = l + n + 2 + strspn(l + n + 2, " \t");
			snprintf(v[k], sizeof(v[k]), "%.*s", (int)strcspn(val, " \t\n"), val);
		}
	if (!v[0][0] || !v[1][0] || !v[2][0])
		return -ENOENT;
	snprintf(buf, size, "%s.%s.%s%s", v[0], v[1], v[2], v[3]);
	return 0;
}

/* Debian's uname -v names the package version: "... Debian 6.1.192-3 (2026-11-20)". */
static bool debian_version(const char *uname_v, char *buf, size_t size)
{
	for (const char *p = strstr(uname_v, "Debian "); p; p = strstr(p + 1, "Debian "))
		if ((p == uname_v || p[-1] == ' ') && p[7] >= '0' && p[7] <= '9') {
			snprintf(buf, size, "%.*s", (int)strcspn(p + 7, " "), p + 7);
			return true;
		}
	return false;
}

/* A Debian version's upstream part: no epoch, no revision ("1:6.1.192-3" is 6.1.192). */
static void upstream_of(const char *version, char *buf, size_t size)
{
	const char *colon = strchr(version, ':'), *p = colon ? colon + 1 : version;
	const char *dash = strrchr(p, '-');

	snprintf(buf, size, "%.*s", (int)(dash ? (size_t)(dash - p) : strlen(p)), p);
}

struct source_id {
	char package[129], version[129];
	bool operator_word; /* the version is only what the operator said */
};

/*
 * Which source package the build was made from. Debian's builds say it in
 * uname -v; a self-built kernel's says nothing, and then only
 * --source-version does. Either way its upstream part must be the
 * source's Makefile version.
 */
static int bind_source(const struct tree_args *a, const struct tree *t, const struct build_info *b,
		       struct source_id *id)
{
	const struct source_file *mk = &t->src[0];
	char deb[129], upstream[129], makefile[160];

	if (!mk->text || makefile_version(mk->text, makefile, sizeof(makefile)) < 0)
		return log_error_errno(-ENOENT,
				       "'%s' has no top Makefile with VERSION, PATCHLEVEL "
				       "and SUBLEVEL: not a kernel source",
				       a->source);
	if (a->package)
		snprintf(id->package, sizeof(id->package), "%s", a->package);
	else if (!strncmp(t->top, "linux-source-", 13))
		snprintf(id->package, sizeof(id->package), "%s", t->top);
	else
		return log_error_errno(-EINVAL,
				       "'%s' does not name its package (linux-source-X/): "
				       "give --source-package",
				       a->source);
	if (debian_version(b->version, deb, sizeof(deb))) {
		if (a->version && strcmp(a->version, deb))
			return log_error_errno(
				-EINVAL,
				"the build's version '%s' names package version '%s', "
				"not --source-version '%s'",
				b->version, deb, a->version);
		snprintf(id->version, sizeof(id->version), "%s", deb);
	} else if (a->version) {
		snprintf(id->version, sizeof(id->version), "%s", a->version);
		id->operator_word = true;
	} else {
		return log_error_errno(-EINVAL,
				       "the build's version '%s' names no Debian package version: "
				       "a self-built kernel; give --source-version",
				       b->version);
	}
	upstream_of(id->version, upstream, sizeof(upstream));
	if (strcmp(upstream, makefile))
		return log_error_errno(-EINVAL,
				       "source version '%s' is upstream %s, but '%s' is %s: it was "
				       "not built from that source",
				       id->version, upstream, a->source, makefile);
	return 0;
}

/*
 * b's func lines for the mitigations whose copies all matched and are the
 * module's that made the build file, and with them those copies: b's copy
 * lines were the module's, they become the record's.
 */
static size_t keep_verified(struct build_info *b, const struct verdict *v, size_t nv,
			    struct copies *checked)
{
	struct build_info mine = { .copies = checked->v, .ncopies = checked->n };
	size_t kept = 0, ncopies = 0;
	char why[256];

	for (size_t i = 0; i < b->nfuncs; i++) {
		const char *m = b->funcs[i].mitigation;
		const struct verdict *vm = NULL;

		for (size_t j = 0; j < nv; j++)
			if (!strcmp(v[j].mitigation, m))
				vm = &v[j];
		if (!vm)
			log_warning("left out func %s %s: kmod/ declares no copy for %s", m,
				    b->funcs[i].symbol, m);
		else if (!vm->ok)
			log_warning("left out func %s %s: %s", m, b->funcs[i].symbol, vm->why);
		else if (!build_same_copies(&mine, b, m, "kmod/",
					    "the module that made the build file", why,
					    sizeof(why)))
			log_warning("left out func %s %s: the copies are not the module's, whose "
				    "hosts the record is for: %s",
				    m, b->funcs[i].symbol, why);
		else
			b->funcs[kept++] = b->funcs[i];
	}
	b->nfuncs = kept;
	for (size_t i = 0; i < checked->n; i++)
		for (size_t j = 0; j < kept; j++)
			if (!strcmp(b->funcs[j].mitigation, checked->v[i].mitigation)) {
				checked->v[ncopies++] = checked->v[i];
				break;
			}
	free(b->copies);
	b->copies = TAKE_PTR(checked->v);
	b->ncopies = ncopies;
	return kept;
}

static int read_build(const char *path, struct build_info *b)
{
	_cleanup_free_ char *text = NULL;
	char err[BUILDREC_ERR_MAX];
	size_t len;
	int r = read_file_max(path, BUILDREC_MAX, &text, &len);

	if (r < 0)
		return log_error_errno(r, "reading the build file '%s' failed: %m", path);
	r = build_parse(text, len, b, err);
	if (r == -EBADMSG)
		log_error("'%s' is not a kmemctl.ko build file: %s", path, err);
	for (size_t i = 0; r == 0 && i < b->nfuncs; i++)
		if (!strcmp(b->funcs[i].fingerprint, "-")) {
			log_error(
				"'%s': the module had no patch sites of build %s yet and "
				"fingerprinted nothing: write them (kmemctl build sites), then read "
				"the build file again",
				path, b->build_id);
			build_info_free(b);
			r = -EBADMSG;
		}
	return r;
}

static int make_record(const struct tree_args *a, struct build_info *b)
{
	_cleanup_free_ char *rec = NULL;
	struct verdict v[VERDICTS_MAX];
	struct source_id id = { 0 };
	struct copies copies = { 0 };
	struct tree t = { 0 };
	size_t nv = 0, checked = 0, len;
	int r;

	r = load_tree(&t, a->kmod, a->source);
	if (r == 0)
		r = bind_source(a, &t, b, &id);
	if (r == 0)
		r = check_all(&t, false, v, &nv, &checked, &copies);
	tree_free(&t);
	if (r < 0) {
		free(copies.v);
		return r;
	}
	if (id.operator_word)
		log_warning("build %s (%s) names no package version in '%s': the record binds it "
			    "to %s %s on the word of whoever runs this",
			    b->build_id, b->release, b->version, id.package, id.version);
	if (keep_verified(b, v, nv, &copies) == 0)
		return log_error_errno(-EBADMSG,
				       "no mitigation of build %s (%s) has copies that "
				       "all match: no record",
				       b->build_id, b->release);
	snprintf(b->source_name, sizeof(b->source_name), "%s", id.package);
	snprintf(b->source_version, sizeof(b->source_version), "%s", id.version);
	r = build_write_record(b, &rec, &len);
	if (r == 0)
		r = write_out(a->out, rec, len);
	if (r < 0)
		return log_error_errno(r, "writing the record to '%s' failed: %m", a->out);
	return 0;
}

static int build_record(int argc, char **argv)
{
	_cleanup_free_ char *fetched = NULL, *dir = NULL, *tarball = NULL;
	char pkg[64], deb[129];
	struct build_info b;
	struct tree_args a;
	int r;

	if (parse_tree_args(argc, argv, &a) < 0 || !a.build == !a.build_id || !a.out ||
	    (!a.source && !a.build_id)) {
		fprintf(stderr,
			"usage: kmemctl build record (--build FILE | --build-id ID) "
			"[--source DIR|TARBALL] [--source-package NAME] [--source-version V] "
			"[--kmod DIR] -o RECORD\n");
		return EXIT_USAGE;
	}
	if (a.build_id) {
		if (asprintf(&fetched, "%s.build", a.out) < 0)
			return EXIT_ERROR;
		r = build_fetch_file(a.build_id, fetched);
		if (r != EXIT_OK)
			return r;
		a.build = fetched;
	}
	r = read_build(a.build, &b);
	if (r < 0)
		return EXIT_ERROR;
	if (!a.source && !debian_version(b.version, deb, sizeof(deb))) {
		r = log_error_errno(-EINVAL,
				    "build %s (%s) names no Debian package version: give --source",
				    b.build_id, b.release);
	} else if (!a.source) {
		/* Debian names its source package by series: 6.1.0-57-amd64 is linux-source-6.1 */
		size_t major = strspn(b.release, "0123456789");

		snprintf(pkg, sizeof(pkg), "linux-source-%.*s",
			 (int)(major + 1 + strspn(b.release + major + 1, "0123456789")), b.release);
		r = build_fetch_source(a.package ?: pkg, deb, &dir, &tarball);
		a.source = tarball;
	}
	if (r == 0)
		r = make_record(&a, &b);
	build_info_free(&b);
	build_remove_dir(dir);
	return r < 0 ? EXIT_ERROR : EXIT_OK;
}

/*
 * Every copy in kmod/ with its series and digest; with --c, as the C
 * table kmod/copies.c is (kmem.h, struct kmem_copy).
 */
static int build_copies(int argc, char **argv)
{
	static const char usage[] = "usage: kmemctl build copies [--kmod DIR] [--c] [-o FILE]\n";
	static const struct option opts[] = {
		{ "kmod", required_argument, NULL, 'M' },
		{ "c", no_argument, NULL, 'c' },
		{ "output", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	const char *kmod = "kmod", *out = "-";
	_cleanup_free_ char *text = NULL;
	struct copies c = { 0 };
	struct tree t = { 0 };
	size_t size = 0;
	bool as_c = false;
	FILE *f;
	int opt, r;

	optind = 0;
	while ((opt = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
		if (opt == 'M') {
			kmod = optarg;
		} else if (opt == 'c') {
			as_c = true;
		} else if (opt == 'o') {
			out = optarg;
		} else {
			fputs(usage, stderr);
			return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		fputs(usage, stderr);
		return EXIT_USAGE;
	}
	f = open_memstream(&text, &size);
	if (!f)
		return log_error_errno(-ENOMEM, "out of memory"), EXIT_ERROR;
	if (as_c)
		fputs("// SPDX-License-Identifier: GPL-2.0\n"
		      "/* Generated by `kmemctl build copies --c`; do not edit. */\n"
		      "#include \"kmem.h\"\n\n"
		      "const struct kmem_copy kmem_copies[] = {\n",
		      f);
	r = load_kmod(&t, kmod);
	for (size_t i = 0; r == 0 && i < t.nfiles; i++) {
		const struct copy_file *cf = &t.files[i];

		for (size_t j = 0; r == 0 && j < cf->ndecls; j++) {
			r = copies_add(&c, cf, &cf->decls[j]);
			if (r < 0)
				break;
			fprintf(f,
				as_c ? "\t{ \"%s\", \"%s\", \"%s\", 0x%sULL },\n" : "%s %s %s %s\n",
				c.v[c.n - 1].mitigation,
				cf->series[0] ? cf->series :
				as_c	      ? "" :
						"-",
				c.v[c.n - 1].name, c.v[c.n - 1].digest);
		}
	}
	if (as_c)
		fputs("\t{}\n};\n", f);
	tree_free(&t);
	free(c.v);
	if (fclose(f) != 0 && r == 0)
		r = -ENOMEM;
	if (r == 0)
		r = write_out(out, text, size);
	if (r < 0)
		return log_error_errno(r, "kmemctl build copies: %m"), EXIT_ERROR;
	return EXIT_OK;
}

static int build_sites(int argc, char **argv)
{
	static const char usage[] = "usage: kmemctl build sites [--image FILE] -o SITES\n";
	static const struct option opts[] = {
		{ "image", required_argument, NULL, 'i' },
		{ "output", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	_cleanup_free_ char *image = NULL, *path = NULL;
	const char *out = NULL, *in = NULL;
	char err[KIMAGE_ERR_MAX];
	struct kimage_sites s;
	struct utsname u;
	size_t len;
	int c, r;

	optind = 0;
	while ((c = getopt_long(argc, argv, "i:o:", opts, NULL)) != -1) {
		if (c == 'i') {
			in = optarg;
		} else if (c == 'o') {
			out = optarg;
		} else {
			fputs(usage, stderr);
			return EXIT_USAGE;
		}
	}
	if (optind != argc || !out) {
		fputs(usage, stderr);
		return EXIT_USAGE;
	}
	if (!in) {
		uname(&u);
		if (asprintf(&path, "/boot/vmlinuz-%s", u.release) < 0)
			return log_error_errno(-ENOMEM, "out of memory"), EXIT_ERROR;
		in = path;
	}
	r = read_file_max(in, KIMAGE_VMLINUX_MAX, &image, &len);
	if (r < 0)
		return log_error_errno(r, "reading the kernel image '%s' failed: %m", in),
		       EXIT_ERROR;
	r = kimage_sites((const uint8_t *)image, len, &s, err);
	if (r < 0) {
		log_error("'%s': %s", in, err);
		return EXIT_ERROR;
	}
	r = write_out(out, s.blob, s.len);
	if (r < 0)
		log_error_errno(r, "writing '%s' failed: %m", out);
	else
		log_info("build %s: %zu bytes of patch sites", s.build_id, s.len);
	kimage_sites_free(&s);
	return r < 0 ? EXIT_ERROR : EXIT_OK;
}

static int build_sign(int argc, char **argv)
{
	static const char usage[] =
		"usage: kmemctl build sign -k KEY [-s SIGNER] -o BUNDLE RECORD\n";
	Kmemctl__V1__BuildRecordPayload p = KMEMCTL__V1__BUILD_RECORD_PAYLOAD__INIT;
	const char *keyfile = NULL, *out = NULL;
	_cleanup_free_ uint8_t *bundle = NULL;
	_cleanup_free_ char *rec = NULL;
	char err[BUILDREC_ERR_MAX];
	struct build_info b;
	struct passwd *pw = getpwuid(getuid());
	EVP_PKEY *key = NULL;
	size_t len;
	int c, r;

	p.signer = getenv("USER") ?: pw ? pw->pw_name : "";
	optind = 0;
	while ((c = getopt(argc, argv, "k:s:o:")) != -1) {
		if (c == 'k') {
			keyfile = optarg;
		} else if (c == 'o') {
			out = optarg;
		} else if (c == 's') {
			p.signer = optarg;
		} else {
			fputs(usage, stderr);
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 1 || !keyfile || !out) {
		fputs(usage, stderr);
		return EXIT_USAGE;
	}
	r = read_file_max(argv[optind], BUILDREC_MAX, &rec, &len);
	if (r < 0)
		return log_error_errno(r, "reading '%s' failed: %m", argv[optind]), EXIT_ERROR;
	/* a record every module would refuse is caught here, not on the fleet */
	if (build_parse_record(rec, len, &b, err) < 0) {
		log_error("'%s' is not a build record: %s", argv[optind], err);
		return EXIT_ERROR;
	}
	build_info_free(&b);
	r = pki_read_key(keyfile, &key);
	if (r == 0 && EVP_PKEY_get_id(key) != EVP_PKEY_ED25519)
		r = -EINVAL;
	if (r < 0) {
		EVP_PKEY_free(key);
		return log_error_errno(r, "'%s' is not an Ed25519 signing key: %m", keyfile),
		       EXIT_ERROR;
	}
	p.record = rec;
	p.issued_unix = time(NULL);
	r = build_record_sign(key, &p, &bundle, &len);
	EVP_PKEY_free(key);
	if (r == 0)
		r = write_out(out, bundle, len);
	if (r < 0)
		return log_error_errno(r, "signing '%s' failed: %m", argv[optind]), EXIT_ERROR;
	return EXIT_OK;
}

static int build_verify(int argc, char **argv)
{
	Kmemctl__V1__BuildRecordPayload *p = NULL;
	struct keyring kr = { 0 };
	_cleanup_free_ char *buf = NULL;
	char err[BUILDREC_ERR_MAX];
	struct build_info b;
	size_t len;
	int r;

	r = read_signed(argc, argv, &kr, &buf, &len);
	if (r == -EINVAL)
		goto usage;
	if (r < 0)
		return EXIT_ERROR;
	r = build_record_verify(&kr, (const uint8_t *)buf, len, time(NULL), &p);
	keyring_free(&kr);
	if (r < 0)
		return log_error_errno(r, "'%s' does not verify as a build record: %m",
				       argv[optind]),
		       EXIT_ERROR;
	r = build_parse_record(p->record, strlen(p->record), &b, err);
	if (r < 0)
		log_error("'%s': its record is malformed: %s", argv[optind], err);
	else
		printf("signer %s\nissued %lld\n%s", p->signer, (long long)p->issued_unix,
		       p->record);
	build_info_free(&b);
	kmemctl__v1__build_record_payload__free_unpacked(p, NULL);
	return r < 0 ? EXIT_ERROR : EXIT_OK;
usage:
	fprintf(stderr, "usage: kmemctl build verify -K KEYS_DIR BUNDLE\n");
	return EXIT_USAGE;
}

int do_build(int argc, char **argv)
{
	static const struct cmd verbs[] = {
		{ "check", build_check, "check kmod/'s copies of kernel code against its source" },
		{ "record", build_record, "make a build record for a kernel build" },
		{ "list", build_list, "the builds hosts run, and which wait for a record" },
		{ "file", build_file, "kmemd's copy of a build's build file" },
		{ "publish", build_publish, "hand a signed record to every host of its build" },
		{ "copies", build_copies, "list kmod/'s copies of kernel code with their digests" },
		{ "sites", build_sites, "take a build's patch-site tables from its image" },
		{ "sign", build_sign, "sign a build record into a bundle" },
		{ "verify", build_verify, "check a record bundle against pinned keys and show it" },
		{ NULL, NULL, NULL },
	};

	return cmd_dispatch("build", verbs, argc, argv);
}

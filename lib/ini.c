// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ini.h"
#include "macro.h"

struct parse_state {
	const struct ini_option *table;
	size_t n_table;
	void *target;
	const char *name;
	unsigned line;
	char *section; /* NULL before the first header */
	bool section_known;
	struct ini_errors *errs;
	int failed;
};

static const struct {
	const char *suffix;
	uint64_t ms;
} duration_units[] = {
	{ "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 }, { "d", 86400000 },
};

static const struct {
	char suffix;
	unsigned shift;
} size_units[] = {
	{ 'K', 10 },
	{ 'M', 20 },
	{ 'G', 30 },
	{ 'T', 40 },
};

_printf_(2, 3) static void parse_error(struct parse_state *st, const char *fmt, ...)
{
	char msg[512], *full, **v;
	va_list ap;
	int r;

	st->failed = -EINVAL;
	if (!st->errs)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (st->line)
		r = asprintf(&full, "%s:%u: %s", st->name, st->line, msg);
	else
		r = asprintf(&full, "%s: %s", st->name, msg);
	if (r < 0)
		return;
	v = realloc(st->errs->msgs, (st->errs->n + 1) * sizeof(*v));
	if (!v) {
		free(full);
		return;
	}
	v[st->errs->n++] = full;
	st->errs->msgs = v;
}

/* Split "123abc" into the number and its unit suffix. */
static int split_number(const char *s, uint64_t *num, const char **unit)
{
	char *end;
	unsigned long long v;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	*num = v;
	*unit = end;
	return 0;
}

int ini_parse_uint(const char *s, uint64_t *out)
{
	const char *unit;
	uint64_t v;
	int r = split_number(s, &v, &unit);

	if (r < 0)
		return r;
	if (*unit)
		return -EINVAL;
	*out = v;
	return 0;
}

int ini_parse_duration(const char *s, uint64_t *ms)
{
	const char *unit;
	uint64_t v;
	int r = split_number(s, &v, &unit);

	if (r < 0)
		return r;
	if (!*unit)
		unit = "s";
	for (size_t i = 0; i < ARRAY_SIZE(duration_units); i++) {
		if (strcmp(unit, duration_units[i].suffix) != 0)
			continue;
		if (v > UINT64_MAX / duration_units[i].ms)
			return -ERANGE;
		*ms = v * duration_units[i].ms;
		return 0;
	}
	return -EINVAL;
}

int ini_parse_size(const char *s, uint64_t *bytes)
{
	const char *unit;
	uint64_t v;
	int r = split_number(s, &v, &unit);

	if (r < 0)
		return r;
	if (!*unit) {
		*bytes = v;
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(size_units); i++) {
		if (toupper((unsigned char)unit[0]) != size_units[i].suffix || unit[1])
			continue;
		if (v > (UINT64_MAX >> size_units[i].shift))
			return -ERANGE;
		*bytes = v << size_units[i].shift;
		return 0;
	}
	return -EINVAL;
}

int ini_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "1", "yes", "true", "on" };
	static const char *const no[] = { "0", "no", "false", "off" };

	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

static int map_set(struct ini_map *m, const char *key, const char *value)
{
	char **k, **v, *kd, *vd;

	for (size_t i = 0; i < m->n; i++) {
		if (strcmp(m->keys[i], key) == 0) {
			vd = strdup(value);
			if (!vd)
				return -ENOMEM;
			free(m->values[i]);
			m->values[i] = vd;
			return 0;
		}
	}
	kd = strdup(key);
	vd = strdup(value);
	k = realloc(m->keys, (m->n + 1) * sizeof(*k));
	if (k)
		m->keys = k;
	v = realloc(m->values, (m->n + 1) * sizeof(*v));
	if (v)
		m->values = v;
	if (!kd || !vd || !k || !v) {
		free(kd);
		free(vd);
		return -ENOMEM;
	}
	m->keys[m->n] = kd;
	m->values[m->n] = vd;
	m->n++;
	return 0;
}

const char *ini_map_get(const struct ini_map *m, const char *key)
{
	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->keys[i], key) == 0)
			return m->values[i];
	return NULL;
}

static int store_string(const struct ini_option *o, void *field, const char *value)
{
	char **p = field, *d;

	if (o->type == INI_PATH && value[0] != '/')
		return -EINVAL;
	d = strdup(value);
	if (!d)
		return -ENOMEM;
	free(*p);
	*p = d;
	return 0;
}

static int store_ranged(const struct ini_option *o, uint64_t *field, const char *value)
{
	uint64_t v;
	int r;

	if (o->type == INI_DURATION)
		r = ini_parse_duration(value, &v);
	else if (o->type == INI_SIZE)
		r = ini_parse_size(value, &v);
	else
		r = ini_parse_uint(value, &v);
	if (r < 0)
		return r;
	if (v < o->min || (o->max && v > o->max))
		return -ERANGE;
	*field = v;
	return 0;
}

static int store_enum(const struct ini_option *o, int *field, const char *value)
{
	for (int i = 0; o->choices[i]; i++) {
		if (strcmp(o->choices[i], value) == 0) {
			*field = i;
			return 0;
		}
	}
	return -EINVAL;
}

static int store_value(const struct ini_option *o, void *target, const char *key, const char *value)
{
	void *field = (char *)target + o->offset;

	switch (o->type) {
	case INI_STRING:
	case INI_PATH:
		return store_string(o, field, value);
	case INI_BOOL:
		return ini_parse_bool(value, field);
	case INI_UINT:
	case INI_DURATION:
	case INI_SIZE:
		return store_ranged(o, field, value);
	case INI_ENUM:
		return store_enum(o, field, value);
	case INI_MAP:
		return map_set(field, key, value);
	}
	return -EINVAL;
}

static const char *fmt_duration(char *buf, size_t size, uint64_t ms)
{
	size_t best = 0;

	for (size_t i = 1; i < ARRAY_SIZE(duration_units); i++)
		if (ms && ms % duration_units[i].ms == 0)
			best = i;
	snprintf(buf, size, "%" PRIu64 "%s", ms / duration_units[best].ms,
		 duration_units[best].suffix);
	return buf;
}

static const char *fmt_size(char *buf, size_t size, uint64_t bytes)
{
	int best = -1;

	for (size_t i = 0; i < ARRAY_SIZE(size_units); i++)
		if (bytes && bytes % (1ULL << size_units[i].shift) == 0)
			best = (int)i;
	if (best < 0)
		snprintf(buf, size, "%" PRIu64, bytes);
	else
		snprintf(buf, size, "%" PRIu64 "%c", bytes >> size_units[best].shift,
			 size_units[best].suffix);
	return buf;
}

static const char *range_hint(char *buf, size_t size, const char *what, const struct ini_option *o,
			      const char *lo, const char *hi)
{
	if (o->max)
		snprintf(buf, size, "%s, from %s to %s", what, lo, hi);
	else
		snprintf(buf, size, "%s, at least %s", what, lo);
	return buf;
}

static const char *type_hint(const struct ini_option *o, char *buf, size_t size)
{
	char lo[32], hi[32];
	size_t off = 0;

	switch (o->type) {
	case INI_STRING:
	case INI_MAP:
		return "text";
	case INI_PATH:
		return "an absolute path";
	case INI_BOOL:
		return "a boolean (yes/no)";
	case INI_UINT:
		snprintf(buf, size, "a whole number in [%" PRIu64 ", %" PRIu64 "]", o->min,
			 o->max ? o->max : UINT64_MAX);
		return buf;
	case INI_DURATION:
		fmt_duration(lo, sizeof(lo), o->min);
		fmt_duration(hi, sizeof(hi), o->max);
		return range_hint(buf, size, "a duration such as '500ms', '10s' or '5m'", o, lo,
				  hi);
	case INI_SIZE:
		fmt_size(lo, sizeof(lo), o->min);
		fmt_size(hi, sizeof(hi), o->max);
		return range_hint(buf, size, "a size such as '4096', '64K' or '8M'", o, lo, hi);
	case INI_ENUM:
		off = (size_t)snprintf(buf, size, "one of");
		for (int i = 0; o->choices[i] && off < size; i++)
			off += (size_t)snprintf(buf + off, size - off, " '%s'", o->choices[i]);
		return buf;
	}
	return "a value";
}

static const struct ini_option *find_option(const struct parse_state *st, const char *key)
{
	const struct ini_option *wild = NULL;

	for (size_t i = 0; i < st->n_table; i++) {
		const struct ini_option *o = &st->table[i];

		if (strcmp(o->section, st->section) != 0)
			continue;
		if (strcmp(o->key, key) == 0)
			return o;
		if (strcmp(o->key, "*") == 0)
			wild = o;
	}
	return wild;
}

static bool section_exists(const struct parse_state *st, const char *name)
{
	for (size_t i = 0; i < st->n_table; i++)
		if (strcmp(st->table[i].section, name) == 0)
			return true;
	return false;
}

static bool valid_name(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("_.-", *s))
			return false;
	return true;
}

static char *strip(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static void parse_section(struct parse_state *st, char *line)
{
	size_t len = strlen(line);
	char *name;

	if (line[len - 1] != ']') {
		parse_error(st, "unterminated section header '%s'", line);
		free(st->section);
		st->section = NULL;
		st->section_known = false;
		return;
	}
	line[len - 1] = '\0';
	name = strip(line + 1);
	free(st->section);
	st->section = strdup(name);
	st->section_known = st->section && section_exists(st, name);
	if (!valid_name(name))
		parse_error(st, "bad section name '%s'", name);
	else if (!st->section_known)
		parse_error(st, "unknown section '[%s]'", name);
}

static int unquote(char **value)
{
	char *v = *value;
	size_t len = strlen(v);

	if (v[0] != '"')
		return 0;
	if (len < 2 || v[len - 1] != '"')
		return -EINVAL;
	v[len - 1] = '\0';
	*value = v + 1;
	return 0;
}

static void parse_assignment(struct parse_state *st, char *line)
{
	char *eq = strchr(line, '='), *key, *value, hint[256];
	const struct ini_option *o;
	int r;

	if (!eq) {
		parse_error(st, "expected 'key = value', got '%.64s'", line);
		return;
	}
	*eq = '\0';
	key = strip(line);
	value = strip(eq + 1);
	if (!st->section) {
		parse_error(st, "key '%s' outside of a section", key);
		return;
	}
	if (!st->section_known)
		return; /* already reported once at the header */
	if (!valid_name(key)) {
		parse_error(st, "bad key name '%s'", key);
		return;
	}
	if (unquote(&value) < 0) {
		parse_error(st, "unterminated quote in value of '%s'", key);
		return;
	}
	o = find_option(st, key);
	if (!o) {
		parse_error(st, "unknown key '%s' in section '[%s]'", key, st->section);
		return;
	}
	r = store_value(o, st->target, key, value);
	if (r == -ENOMEM)
		parse_error(st, "out of memory");
	else if (r < 0)
		parse_error(st, "bad value '%.64s' for '%s' in '[%s]': expected %s", value, key,
			    st->section, type_hint(o, hint, sizeof(hint)));
}

/*
 * Read one line into buf (INI_LINE_MAX + 1 bytes). Returns its length, -1 at
 * EOF, -E2BIG after skipping an over-long line, -EILSEQ for a NUL byte.
 */
static int read_line(FILE *f, char *buf)
{
	size_t n = 0;
	bool nul = false;
	int c;

	while ((c = getc_unlocked(f)) != EOF && c != '\n') {
		if (c == '\0')
			nul = true;
		if (n == INI_LINE_MAX) {
			while ((c = getc_unlocked(f)) != EOF && c != '\n')
				;
			return -E2BIG;
		}
		buf[n++] = (char)c;
	}
	if (c == EOF && n == 0)
		return -1;
	buf[n] = '\0';
	return nul ? -EILSEQ : (int)n;
}

int ini_load_stream(const struct ini_option *table, size_t n_table, void *target, FILE *f,
		    const char *name, struct ini_errors *errs)
{
	struct parse_state st = {
		.table = table,
		.n_table = n_table,
		.target = target,
		.name = name,
		.errs = errs,
	};
	char buf[INI_LINE_MAX + 1], *line;
	int n;

	for (;;) {
		n = read_line(f, buf);
		if (n == -1)
			break;
		st.line++;
		if (n == -E2BIG) {
			parse_error(&st, "line too long (more than %d bytes)", INI_LINE_MAX);
			continue;
		}
		if (n == -EILSEQ) {
			parse_error(&st, "line contains a NUL byte");
			continue;
		}
		line = strip(buf);
		if (!*line || *line == '#' || *line == ';')
			continue;
		if (*line == '[')
			parse_section(&st, line);
		else
			parse_assignment(&st, line);
	}
	if (ferror(f)) {
		st.line = 0;
		parse_error(&st, "read error");
	}
	free(st.section);
	return st.failed;
}

int ini_load_file(const struct ini_option *table, size_t n_table, void *target, const char *path,
		  struct ini_errors *errs)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	struct parse_state st = { .name = path, .errs = errs };
	int r;

	if (!f) {
		r = negative_errno();
		parse_error(&st, "cannot open: %s", strerror(-r));
		return r;
	}
	return ini_load_stream(table, n_table, target, f, path, errs);
}

static int conf_filter(const struct dirent *d)
{
	size_t len = strlen(d->d_name);

	return d->d_name[0] != '.' && len > 5 && strcmp(d->d_name + len - 5, ".conf") == 0;
}

int ini_load(const struct ini_option *table, size_t n_table, void *target, const char *path,
	     struct ini_errors *errs)
{
	_cleanup_free_ char *dir = NULL;
	struct dirent **list = NULL;
	int r, n, ret;

	ret = ini_load_file(table, n_table, target, path, errs);
	if (ret == -ENOENT)
		return ret;
	if (asprintf(&dir, "%s.d", path) < 0)
		return -ENOMEM;
	n = scandir(dir, &list, conf_filter, alphasort);
	for (int i = 0; i < n; i++) {
		_cleanup_free_ char *p = NULL;

		if (asprintf(&p, "%s/%s", dir, list[i]->d_name) >= 0) {
			r = ini_load_file(table, n_table, target, p, errs);
			if (r < 0 && ret == 0)
				ret = r;
		}
		free(list[i]);
	}
	free(list);
	return ret;
}

static void print_quoted(FILE *out, const char *s)
{
	size_t len = strlen(s);
	bool quote = len == 0 || isspace((unsigned char)s[0]) ||
		     isspace((unsigned char)s[len - 1]) || s[0] == '"' || s[0] == '#' ||
		     s[0] == ';';

	fprintf(out, quote ? "\"%s\"\n" : "%s\n", s);
}

static void print_option(FILE *out, const struct ini_option *o, const void *target)
{
	const void *field = (const char *)target + o->offset;
	const struct ini_map *m = field;
	const char *s;
	char num[32];

	switch (o->type) {
	case INI_STRING:
	case INI_PATH:
		s = *(char *const *)field;
		if (!s) {
			fprintf(out, "# %s is not set\n", o->key);
			return;
		}
		fprintf(out, "%s = ", o->key);
		print_quoted(out, s);
		return;
	case INI_BOOL:
		fprintf(out, "%s = %s\n", o->key, *(const bool *)field ? "yes" : "no");
		return;
	case INI_UINT:
		fprintf(out, "%s = %" PRIu64 "\n", o->key, *(const uint64_t *)field);
		return;
	case INI_DURATION:
		fprintf(out, "%s = %s\n", o->key,
			fmt_duration(num, sizeof(num), *(const uint64_t *)field));
		return;
	case INI_SIZE:
		fprintf(out, "%s = %s\n", o->key,
			fmt_size(num, sizeof(num), *(const uint64_t *)field));
		return;
	case INI_ENUM:
		fprintf(out, "%s = %s\n", o->key, o->choices[*(const int *)field]);
		return;
	case INI_MAP:
		for (size_t i = 0; i < m->n; i++) {
			fprintf(out, "%s = ", m->keys[i]);
			print_quoted(out, m->values[i]);
		}
		return;
	}
}

void ini_print(FILE *out, const struct ini_option *table, size_t n_table, const void *target)
{
	const char *section = NULL;

	for (size_t i = 0; i < n_table; i++) {
		if (!section || strcmp(section, table[i].section) != 0) {
			fprintf(out, "%s[%s]\n", section ? "\n" : "", table[i].section);
			section = table[i].section;
		}
		print_option(out, &table[i], target);
	}
}

void ini_free(const struct ini_option *table, size_t n_table, void *target)
{
	for (size_t i = 0; i < n_table; i++) {
		void *field = (char *)target + table[i].offset;
		struct ini_map *m = field;

		if (table[i].type == INI_STRING || table[i].type == INI_PATH) {
			free(*(char **)field);
			*(char **)field = NULL;
		} else if (table[i].type == INI_MAP) {
			for (size_t j = 0; j < m->n; j++) {
				free(m->keys[j]);
				free(m->values[j]);
			}
			free(m->keys);
			free(m->values);
			*m = (struct ini_map){ 0 };
		}
	}
}

void ini_errors_free(struct ini_errors *errs)
{
	for (size_t i = 0; i < errs->n; i++)
		free(errs->msgs[i]);
	free(errs->msgs);
	*errs = (struct ini_errors){ 0 };
}

// SPDX-License-Identifier: GPL-2.0
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "output.h"

void out_color_setup(const char *when, bool *color)
{
	if (when && !strcmp(when, "always"))
		*color = true;
	else if (when && !strcmp(when, "never"))
		*color = false;
	else
		*color = isatty(STDOUT_FILENO) && !getenv("NO_COLOR");
}

void out_json(json_t *o, bool pretty)
{
	json_object_set_new(o, "schema", json_integer(KMEMCTL_JSON_SCHEMA));
	json_dumpf(o, stdout, (pretty ? JSON_INDENT(2) : JSON_COMPACT) | JSON_SORT_KEYS);
	putchar('\n');
	json_decref(o);
}

const char *str(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key)) ?: "";
}

long long num(json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

struct table {
	size_t ncols, n, cap;
	char **cells;
	const char **colors; /* per cell; NULL: plain */
};

struct table *table_new(const char *const *heads)
{
	struct table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	while (heads[t->ncols])
		t->ncols++;
	for (size_t i = 0; i < t->ncols; i++)
		table_cell(t, "%s", heads[i]);
	return t;
}

static void add(struct table *t, char *text, const char *color)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		char **c = realloc(t->cells, cap * sizeof(*c));
		const char **k = c ? realloc(t->colors, cap * sizeof(*k)) : NULL;

		if (c)
			t->cells = c;
		if (!k) {
			free(text);
			return;
		}
		t->colors = k;
		t->cap = cap;
	}
	t->cells[t->n] = text ? text : strdup("?");
	t->colors[t->n++] = color;
}

void table_cell(struct table *t, const char *fmt, ...)
{
	char *text = NULL;
	va_list ap;

	if (!t)
		return;
	va_start(ap, fmt);
	if (vasprintf(&text, fmt, ap) < 0)
		text = NULL;
	va_end(ap);
	add(t, text, NULL);
}

/* Red for what went wrong, yellow for what waits, green for what is well. */
static const char *color_of(const char *w)
{
	static const char *const red[] = { "fail",    "rolling-back", "rolled-back", "tripped",
					   "aborted", "refused",      NULL };
	static const char *const yellow[] = { "holding", "inconclusive", "paused",
					      "pending", "observe",	 NULL };
	static const char *const green[] = { "pass", "done", "on", "running", NULL };

	for (size_t i = 0; red[i]; i++)
		if (!strcmp(w, red[i]))
			return "\033[31m";
	for (size_t i = 0; yellow[i]; i++)
		if (!strcmp(w, yellow[i]))
			return "\033[33m";
	for (size_t i = 0; green[i]; i++)
		if (!strcmp(w, green[i]))
			return "\033[32m";
	return NULL;
}

void table_state(struct table *t, const char *word)
{
	if (t)
		add(t, strdup(word ? word : "-"), color_of(word ? word : ""));
}

void table_print(struct table *t, FILE *out, bool color)
{
	size_t *w, i, c;

	if (!t)
		return;
	w = calloc(t->ncols, sizeof(*w));
	for (i = 0; w && i < t->n; i++) {
		size_t len = strlen(t->cells[i]);

		if (len > w[i % t->ncols])
			w[i % t->ncols] = len;
	}
	for (i = 0; w && i < t->n; i++) {
		c = i % t->ncols;
		if (color && t->colors[i])
			fprintf(out, "%s%s\033[0m", t->colors[i], t->cells[i]);
		else if (color && i < t->ncols)
			fprintf(out, "\033[1m%s\033[0m", t->cells[i]);
		else
			fputs(t->cells[i], out);
		/* no trailing blanks */
		if (c + 1 < t->ncols && i + 1 < t->n)
			fprintf(out, "%*s", (int)(w[c] - strlen(t->cells[i]) + 2), "");
		else
			fputc('\n', out);
	}
	for (i = 0; i < t->n; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t->colors);
	free(w);
	free(t);
}

long long out_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *out_until(long long unix_ms, char *buf, size_t len)
{
	long long s = (unix_ms - out_now_ms()) / 1000;

	if (s <= 0)
		snprintf(buf, len, "expired");
	else if (s < 2 * 86400)
		snprintf(buf, len, "in %lld hours", s / 3600);
	else
		snprintf(buf, len, "in %lld days", s / 86400);
	return buf;
}

const char *out_ago(long long unix_ms, char *buf, size_t len)
{
	struct timespec ts;
	long long s;

	if (!unix_ms) {
		snprintf(buf, len, "never");
		return buf;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	s = ((long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 - unix_ms) / 1000;
	if (s < 0)
		s = 0;
	if (s < 120)
		snprintf(buf, len, "%llds ago", s);
	else if (s < 7200)
		snprintf(buf, len, "%lldm ago", s / 60);
	else if (s < 172800)
		snprintf(buf, len, "%lldh ago", s / 3600);
	else
		snprintf(buf, len, "%lldd ago", s / 86400);
	return buf;
}

const char *out_ns(unsigned long long ns, char *buf, size_t len)
{
	if (ns < 1000)
		snprintf(buf, len, "%llu ns", ns);
	else if (ns < 1000000)
		snprintf(buf, len, "%.1f us", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, len, "%.1f ms", (double)ns / 1e6);
	else
		snprintf(buf, len, "%.2f s", (double)ns / 1e9);
	return buf;
}

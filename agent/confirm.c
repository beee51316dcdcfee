// SPDX-License-Identifier: GPL-2.0
/*
 * Boot confirmation records (confirm.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "confirm.h"
#include "macro.h"
#include "statefile.h"

#define FILE_MAX 8192
#define BOOT_ID_PATH "/proc/sys/kernel/random/boot_id"

/* 8-4-4-4-12 lowercase hex digits, as the kernel prints a UUID. */
static bool boot_id_valid(const char *s)
{
	size_t i;

	if (strlen(s) != CONFIRM_BOOT_ID_LEN)
		return false;
	for (i = 0; i < CONFIRM_BOOT_ID_LEN; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? s[i] != '-' : !strchr("0123456789abcdef", s[i]))
			return false;
	}
	return true;
}

int confirm_boot_id(const struct rootfs *rfs, char *buf, size_t size)
{
	char text[64];
	ssize_t n;

	if (size < CONFIRM_BOOT_ID_LEN + 1)
		return -ENOBUFS;
	n = rootfs_read(rfs, BOOT_ID_PATH, text, sizeof(text));
	if (n < 0)
		return (int)n;
	if (n > 0 && text[n - 1] == '\n')
		text[n - 1] = '\0';
	if (!boot_id_valid(text))
		return -EBADMSG;
	strcpy(buf, text);
	return 0;
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -EBADMSG;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno || *end ? -EBADMSG : 0;
}

/* One line, without its newline, split in place. */
static int parse_line(char *line, struct confirm_entry *e)
{
	char *f[6], *save = NULL;
	size_t n = 0;

	for (char *t = strtok_r(line, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		if (n == ARRAY_SIZE(f))
			return -EBADMSG;
		f[n++] = t;
	}
	if (n != ARRAY_SIZE(f) || !policy_id_valid(f[0]) || !boot_id_valid(f[2]))
		return -EBADMSG;
	if (strcmp(f[1], "pending") && strcmp(f[1], "confirmed"))
		return -EBADMSG;
	if (strcmp(f[4], "-") && !policy_name_valid(f[4]))
		return -EBADMSG;
	*e = (struct confirm_entry){ .confirmed = !strcmp(f[1], "confirmed") };
	strcpy(e->id, f[0]);
	strcpy(e->boot_id, f[2]);
	if (strcmp(f[4], "-"))
		strcpy(e->policy.name, f[4]);
	if (parse_u64(f[3], &e->since_ms) < 0 || parse_u64(f[5], &e->policy.version) < 0)
		return -EBADMSG;
	return 0;
}

static int parse(char *text, struct confirm *c)
{
	char *line = text, *eol;

	for (; *line; line = eol + 1) {
		/* a last line without its newline was cut short */
		eol = strchr(line, '\n');
		if (!eol || c->n == CONFIRM_MAX)
			return -EBADMSG;
		*eol = '\0';
		if (parse_line(line, &c->e[c->n]) < 0 || confirm_find(c, c->e[c->n].id))
			return -EBADMSG;
		c->n++;
	}
	return 0;
}

int confirm_load(int dirfd, struct confirm *c)
{
	_cleanup_free_ uint8_t *data = NULL;
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r;

	c->n = 0;
	r = statefile_read(dirfd, CONFIRM_FILE, FILE_MAX, &data, &len);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	text = malloc(len + 1);
	if (!text)
		return -ENOMEM;
	memcpy(text, data, len);
	text[len] = '\0';
	if (strlen(text) != len || parse(text, c) < 0) {
		c->n = 0;
		return -EBADMSG;
	}
	return 0;
}

int confirm_save(int dirfd, const struct confirm *c)
{
	char text[CONFIRM_MAX * 256];
	size_t len = 0, i;

	if (!c->n) {
		if (unlinkat(dirfd, CONFIRM_FILE, 0) < 0 && errno != ENOENT)
			return negative_errno();
		return fsync(dirfd) < 0 ? negative_errno() : 0;
	}
	for (i = 0; i < c->n; i++) {
		const struct confirm_entry *e = &c->e[i];

		len += (size_t)snprintf(text + len, sizeof(text) - len, "%s %s %s %llu %s %llu\n",
					e->id, e->confirmed ? "confirmed" : "pending", e->boot_id,
					(unsigned long long)e->since_ms,
					e->policy.name[0] ? e->policy.name : "-",
					(unsigned long long)e->policy.version);
		if (len >= sizeof(text))
			return -E2BIG;
	}
	return statefile_replace(dirfd, CONFIRM_FILE, text, len);
}

struct confirm_entry *confirm_find(struct confirm *c, const char *id)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		if (!strcmp(c->e[i].id, id))
			return &c->e[i];
	return NULL;
}

static void drop(struct confirm *c, struct confirm_entry *e)
{
	*e = c->e[--c->n];
}

int confirm_begin(int dirfd, const char *id, const char *boot_id, uint64_t now_ms,
		  const struct policy_version *v)
{
	struct confirm c;
	struct confirm_entry *e;
	int r;

	if (!policy_id_valid(id) || !boot_id_valid(boot_id) ||
	    (v->name[0] && !policy_name_valid(v->name)))
		return -EINVAL;
	/* a record that does not parse is rewritten whole: its start has run */
	r = confirm_load(dirfd, &c);
	if (r < 0 && r != -EBADMSG)
		return r;
	e = confirm_find(&c, id);
	if (!e) {
		if (c.n == CONFIRM_MAX)
			return -ENOSPC;
		e = &c.e[c.n++];
	}
	*e = (struct confirm_entry){ .since_ms = now_ms, .policy = *v };
	strcpy(e->id, id);
	strcpy(e->boot_id, boot_id);
	return confirm_save(dirfd, &c);
}

int confirm_end(int dirfd, const char *id)
{
	struct confirm c;
	struct confirm_entry *e;
	int r;

	r = confirm_load(dirfd, &c);
	if (r < 0)
		return r;
	e = confirm_find(&c, id);
	if (!e)
		return 0;
	drop(&c, e);
	return confirm_save(dirfd, &c);
}

bool confirm_start(struct confirm *c, const char *boot_id, struct confirm_entry *lost,
		   size_t *nlost)
{
	bool changed = false;
	size_t i = 0;

	*nlost = 0;
	while (i < c->n) {
		struct confirm_entry *e = &c->e[i];

		if (boot_id[0] && !strcmp(e->boot_id, boot_id)) {
			i++;
			continue;
		}
		if (!e->confirmed && *nlost < CONFIRM_MAX)
			lost[(*nlost)++] = *e;
		drop(c, e);
		changed = true;
	}
	return changed;
}

static const struct kernel_mitigation *find_km(const struct kernel_mitigation *km, size_t n,
					       const char *id)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(km[i].id, id))
			return &km[i];
	return NULL;
}

bool confirm_round(struct confirm *c, const char *boot_id, uint64_t round_ms, uint64_t window_ms,
		   const struct kernel_mitigation *km, size_t n, char done[][POLICY_ID_MAX + 1],
		   size_t *ndone)
{
	const struct kernel_mitigation *m;
	bool changed = false;
	size_t i = 0;

	*ndone = 0;
	while (i < c->n) {
		struct confirm_entry *e = &c->e[i];

		m = find_km(km, n, e->id);
		/* what the round read before the record was made says nothing of it */
		if (e->confirmed || strcmp(e->boot_id, boot_id) || !m || e->since_ms >= round_ms) {
			i++;
			continue;
		}
		if (!m->on) {
			drop(c, e);
			changed = true;
			continue;
		}
		if (round_ms - e->since_ms >= window_ms && *ndone < CONFIRM_MAX) {
			e->confirmed = true;
			strcpy(done[(*ndone)++], e->id);
			changed = true;
		}
		i++;
	}
	return changed;
}

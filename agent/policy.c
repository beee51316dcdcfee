// SPDX-License-Identifier: GPL-2.0
/*
 * Signed policies: the checks before one runs, the quarantine, the last
 * known good bundle (policy.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "policy.h"
#include "statefile.h"

#define QUARANTINE "quarantine"
#define STORED "policy.signed"

_printf_(3, 4) static void say(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

int policy_check(const struct keyring *kr, const uint8_t *buf, size_t len, time_t now,
		 const struct policy_version *cur, Kmemctl__V1__PolicyPayload **payload,
		 struct policy_doc *doc, char *why, size_t whylen)
{
	Kmemctl__V1__PolicyPayload *p = NULL;
	char err[256];
	int r;

	/* an empty message decodes as a SignedPolicy with every field empty */
	r = len ? policy_verify(kr, buf, len, now, &p) : -EBADMSG;
	switch (r) {
	case 0:
		break;
	case -ENOKEY:
		say(why, whylen, "signed by a key that is not pinned here");
		return r;
	case -EKEYEXPIRED:
		say(why, whylen, "expired");
		return r;
	case -ETIME:
		say(why, whylen, "issued more than %d s in the future", SIGN_MAX_SKEW_S);
		return r;
	default:
		say(why, whylen, "not a validly signed policy (signature or encoding)");
		return -EBADMSG;
	}
	/* kmemd would refuse every report naming it, and the agent drop them */
	if (!policy_name_valid(p->name)) {
		say(why, whylen, "the policy name is not " POLICY_NAME_RULE);
		kmemctl__v1__policy_payload__free_unpacked(p, NULL);
		return -EINVAL;
	}
	if (cur->name[0] && !strcmp(cur->name, p->name) && p->version < cur->version) {
		say(why, whylen, "%s version %llu is older than version %llu, which runs here",
		    p->name, (unsigned long long)p->version, (unsigned long long)cur->version);
		kmemctl__v1__policy_payload__free_unpacked(p, NULL);
		return -ESTALE;
	}
	r = policy_doc_parse(p->document_json, strlen(p->document_json), doc, err, sizeof(err));
	if (r < 0) {
		say(why, whylen, "%s version %llu: %s", p->name, (unsigned long long)p->version,
		    err);
		kmemctl__v1__policy_payload__free_unpacked(p, NULL);
		return r;
	}
	*payload = p;
	return 0;
}

bool policy_listed(const char *const *ids, const char *id)
{
	for (; ids && *ids; ids++)
		if (!strcmp(*ids, id))
			return true;
	return false;
}

int policy_quarantine_add(int state_dirfd, const char *id, const struct policy_version *v)
{
	char line[256];
	int fd, n, r = 0;

	if (!policy_id_valid(id) || strpbrk(v->name, " \n"))
		return -EINVAL;
	n = snprintf(line, sizeof(line), "%s %s %llu\n", id, v->name[0] ? v->name : "-",
		     (unsigned long long)v->version);
	fd = openat(state_dirfd, QUARANTINE, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW,
		    0600);
	if (fd < 0)
		return negative_errno();
	if (write(fd, line, (size_t)n) != n || fsync(fd) < 0)
		r = -EIO;
	close(fd);
	return r;
}

int policy_quarantine_list(int state_dirfd, const struct policy_version *v,
			   char store[][POLICY_ID_MAX + 1], const char **ids, size_t max)
{
	char line[256], id[POLICY_ID_MAX + 2], name[130];
	unsigned long long version;
	size_t n = 0;
	FILE *f;
	int fd;

	ids[0] = NULL;
	fd = openat(state_dirfd, QUARANTINE, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? 0 : negative_errno();
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return negative_errno();
	}
	/* lines that do not parse are not this version's, whatever they were */
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%33s %129s %llu", id, name, &version) != 3 ||
		    !policy_id_valid(id) || version != v->version ||
		    strcmp(name, v->name[0] ? v->name : "-"))
			continue;
		if (n + 1 == max)
			break;
		strcpy(store[n], id);
		ids[n] = store[n];
		ids[++n] = NULL;
	}
	fclose(f);
	return (int)n;
}

int policy_store(int state_dirfd, const uint8_t *buf, size_t len)
{
	return statefile_replace(state_dirfd, STORED, buf, len);
}

int policy_load(int state_dirfd, uint8_t **buf, size_t *len)
{
	return statefile_read(state_dirfd, STORED, 1 << 20, buf, len);
}

const char *policy_result_name(enum policy_result r)
{
	static const char *const names[] = {
		[POLICY_UNCHANGED] = "unchanged",
		[POLICY_APPLIED] = "applied",
		[POLICY_SKIPPED] = "skipped",
		[POLICY_FAILED] = "failed",
	};

	return (unsigned)r < ARRAY_SIZE(names) ? names[r] : "?";
}

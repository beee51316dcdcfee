// SPDX-License-Identifier: GPL-2.0
/*
 * Signed policies: the checks before one runs, and applying it with an
 * intent journal (policy.h).
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

#define INTENT "intent"
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

static int sync_dir(int dirfd)
{
	return fsync(dirfd) < 0 ? negative_errno() : 0;
}

/* The intent is on disk before the change starts. */
static int journal_begin(int dirfd, const char *id, const char *what)
{
	char line[128];
	int n;

	n = snprintf(line, sizeof(line), "%s %s\n", id, what);
	return statefile_replace(dirfd, INTENT, line, (size_t)n);
}

static int journal_end(int dirfd)
{
	if (unlinkat(dirfd, INTENT, 0) < 0 && errno != ENOENT)
		return negative_errno();
	return sync_dir(dirfd);
}

int policy_recover(int state_dirfd, char *id, size_t idlen)
{
	char line[128];
	size_t n;
	int fd, r;
	ssize_t got;

	fd = openat(state_dirfd, INTENT, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? 0 : negative_errno();
	got = read(fd, line, sizeof(line) - 1);
	close(fd);
	r = journal_end(state_dirfd);
	if (r < 0)
		return r;
	if (got <= 0)
		return -EBADMSG;
	line[got] = '\0';
	n = strcspn(line, " \n");
	if (n >= idlen)
		return -EBADMSG;
	memcpy(id, line, n);
	id[n] = '\0';
	return policy_id_valid(id) ? 1 : -EBADMSG;
}

bool policy_listed(const char *const *ids, const char *id)
{
	for (; ids && *ids; ids++)
		if (!strcmp(*ids, id))
			return true;
	return false;
}

/*
 * Ends the journal entry of a change whose write returned change_result,
 * and records the outcome: 0, or journal_end()'s error.
 */
static int journaled(int dirfd, int change_result, struct policy_outcome *o)
{
	int r = journal_end(dirfd);

	if (change_result < 0) {
		o->result = POLICY_FAILED;
		say(o->why, sizeof(o->why), "the module refused it (%s)", strerror(-change_result));
		return change_result;
	}
	o->result = POLICY_APPLIED;
	return r;
}

/*
 * A write the module took is applied only if the module now reports what
 * was asked: the mode and every param, and not tripped. A livepatch still
 * switching tasks is on its way and says so.
 */
static void verify(const struct rootfs *rfs, const struct policy_mitigation *m, bool on,
		   const struct kernel_kv *kv, struct policy_outcome *o)
{
	struct kernel_mitigation km;
	size_t i, j;
	int r;

	r = kernel_read_mitigation(rfs, m->id, &km);
	if (r < 0) {
		o->result = POLICY_FAILED;
		say(o->why, sizeof(o->why), "reading it back failed (%s)", strerror(-r));
		return;
	}
	if (m->mode != POLICY_MODE_KEEP && km.on != on) {
		o->result = POLICY_FAILED;
		say(o->why, sizeof(o->why), "the module reports mode %s after the write",
		    km.on ? "on" : "off");
		return;
	}
	for (i = 0; i < m->nparams; i++) {
		for (j = 0; j < km.nparams && strcmp(km.params[j].key, kv[i].key); j++)
			;
		if (j == km.nparams || km.params[j].value != kv[i].value) {
			o->result = POLICY_FAILED;
			say(o->why, sizeof(o->why), "the module reports %s other than written",
			    kv[i].key);
			return;
		}
	}
	if (km.state == KERNEL_STATE_TRIPPED) {
		o->result = POLICY_FAILED;
		say(o->why, sizeof(o->why), "%s", km.reason);
	} else if (km.state == KERNEL_STATE_TRANSITION) {
		say(o->why, sizeof(o->why), "%s", km.reason);
	}
}

static int apply_mitigation(const struct rootfs *rfs, int dirfd, const struct policy_mitigation *m,
			    const char *const *quarantined, struct policy_outcome *o)
{
	struct kernel_mitigation km;
	struct kernel_kv kv[POLICY_MAX_PARAMS];
	bool on = m->mode == POLICY_MODE_ON, differ = false;
	size_t i, j;
	int r;

	if (policy_listed(quarantined, m->id)) {
		o->result = POLICY_SKIPPED;
		say(o->why, sizeof(o->why), "quarantined: a change to it was cut short");
		return 0;
	}
	r = kernel_read_mitigation(rfs, m->id, &km);
	if (r == -ENOENT) {
		o->result = POLICY_SKIPPED;
		say(o->why, sizeof(o->why), "this kmemctl.ko has no such mitigation");
		return 0;
	}
	if (r < 0) {
		o->result = POLICY_FAILED;
		say(o->why, sizeof(o->why), "reading it failed (%s)", strerror(-r));
		return 0;
	}
	if (on && (km.state == KERNEL_STATE_UNSUPPORTED || km.state == KERNEL_STATE_NATIVE)) {
		o->result = POLICY_SKIPPED;
		say(o->why, sizeof(o->why), "%s", km.reason);
		return 0;
	}
	for (i = 0; i < m->nparams; i++) {
		for (j = 0; j < km.nparams && strcmp(km.params[j].key, m->params[i].key); j++)
			;
		if (j == km.nparams) {
			o->result = POLICY_FAILED;
			say(o->why, sizeof(o->why), "no param \"%s\" here", m->params[i].key);
			return 0;
		}
		differ |= km.params[j].value != m->params[i].value;
		strcpy(kv[i].key, m->params[i].key);
		kv[i].value = m->params[i].value;
	}
	if (differ) {
		r = journal_begin(dirfd, m->id, "params");
		if (r < 0)
			return r;
		r = journaled(dirfd, kernel_set_params(rfs, m->id, kv, m->nparams), o);
		if (o->result == POLICY_FAILED)
			return 0;
		if (r < 0)
			return r;
	}
	if (m->mode != POLICY_MODE_KEEP && km.on != on) {
		r = journal_begin(dirfd, m->id, on ? "mode on" : "mode off");
		if (r < 0)
			return r;
		r = journaled(dirfd, kernel_set_mode(rfs, m->id, on), o);
		if (o->result == POLICY_FAILED)
			return 0;
		if (r < 0)
			return r;
	}
	if (o->result == POLICY_APPLIED)
		verify(rfs, m, on, kv, o);
	return 0;
}

static void apply_probe(const struct rootfs *rfs, const struct policy_probe *p,
			struct policy_outcome *o)
{
	struct kernel_probe kp;
	int r;

	r = kernel_read_probe(rfs, p->id, &kp);
	if (r < 0) {
		o->result = r == -ENOENT ? POLICY_SKIPPED : POLICY_FAILED;
		say(o->why, sizeof(o->why), "%s",
		    r == -ENOENT ? "this kmemctl.ko has no such probe" : strerror(-r));
		return;
	}
	if (p->enabled == 1 && !kp.supported) {
		o->result = POLICY_SKIPPED;
		say(o->why, sizeof(o->why), "%s", kp.reason);
		return;
	}
	if ((p->enabled < 0 || (bool)p->enabled == kp.enabled) &&
	    (p->threshold_ns < 0 || (uint64_t)p->threshold_ns == kp.threshold_ns))
		return;
	r = kernel_set_probe(rfs, p->id, p->enabled, p->threshold_ns);
	o->result = r < 0 ? POLICY_FAILED : POLICY_APPLIED;
	if (r < 0)
		say(o->why, sizeof(o->why), "the module refused it (%s)", strerror(-r));
}

int policy_apply(const struct rootfs *rfs, int state_dirfd, const struct policy_doc *doc,
		 const char *const *quarantined, struct policy_outcome *out, size_t *nout)
{
	struct policy_outcome *o;
	size_t i;
	int r;

	*nout = 0;
	for (i = 0; i < doc->nmitigations; i++) {
		o = &out[(*nout)++];
		*o = (struct policy_outcome){ .result = POLICY_UNCHANGED };
		strcpy(o->id, doc->mitigations[i].id);
		r = apply_mitigation(rfs, state_dirfd, &doc->mitigations[i], quarantined, o);
		if (r < 0)
			return r;
	}
	for (i = 0; i < doc->nprobes; i++) {
		o = &out[(*nout)++];
		*o = (struct policy_outcome){ .result = POLICY_UNCHANGED };
		strcpy(o->id, doc->probes[i].id);
		apply_probe(rfs, &doc->probes[i], o);
	}
	return 0;
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

// SPDX-License-Identifier: GPL-2.0
/*
 * The one way a mitigation is changed (enact.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "enact.h"
#include "log.h"
#include "macro.h"
#include "message-ids.h"
#include "statefile.h"

#define INTENT "intent"
#define STATE_MAX 256 /* "on" and the params, as OLD= and NEW= */

static const struct {
	const char *name, *mid;
	int level;
} sources[] = {
	[ENACT_POLICY] = { "policy", MID_MITIGATION_APPLIED, LOG_NOTICE },
	[ENACT_LOCAL] = { "local", MID_MITIGATION_APPLIED, LOG_NOTICE },
	[ENACT_KILL_SWITCH] = { "kill-switch", MID_MITIGATION_REVERTED, LOG_WARNING },
	[ENACT_GUARD] = { "guard", MID_GUARD_REVERT, LOG_WARNING },
	[ENACT_QUARANTINE] = { "quarantine", MID_CHANGE_QUARANTINED, LOG_WARNING },
	[ENACT_CONFIRMATION] = { "confirmation", MID_BOOT_UNCONFIRMED, LOG_WARNING },
	[ENACT_TRIP] = { "trip", MID_MITIGATION_TRIPPED, LOG_WARNING },
};

const char *enact_source_name(enum enact_source s)
{
	return (size_t)s < ARRAY_SIZE(sources) ? sources[s].name : "?";
}

_printf_(3, 4) static void say(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
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
	return fsync(dirfd) < 0 ? negative_errno() : 0;
}

int enact_recover(int state_dirfd, char *id, size_t idlen)
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

/* "on every_cpus=4": the mode and the params, as OLD= and NEW= carry them. */
static void describe(const struct kernel_mitigation *km, bool on, char *buf, size_t size)
{
	size_t len, i;

	len = (size_t)snprintf(buf, size, "%s", on ? "on" : "off");
	for (i = 0; i < km->nparams && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, " %s=%llu", km->params[i].key,
					(unsigned long long)km->params[i].value);
}

/* One change as the journal keeps it; old and new as describe() gives them. */
static void log_change(enum enact_source source, const char *id, const struct policy_version *v,
		       bool on, const char *old, const char *new, const char *reason)
{
	char f_mit[64], f_pol[sizeof(v->name) + 32], f_old[STATE_MAX + 8], f_new[STATE_MAX + 8],
		f_src[32], f_reason[POLICY_WHY_MAX + 16], pol[sizeof(v->name) + 24], msg[768];
	const char *fields[] = { f_mit, f_pol, on ? "MODE=on" : "MODE=off", f_old,
				 f_new, f_src, reason ? f_reason : NULL,    NULL };

	snprintf(pol, sizeof(pol), "%s/%llu", v->name[0] ? v->name : "-",
		 (unsigned long long)v->version);
	snprintf(f_mit, sizeof(f_mit), "MITIGATION=%s", id);
	snprintf(f_pol, sizeof(f_pol), "POLICY=%s", pol);
	snprintf(f_old, sizeof(f_old), "OLD=%s", old);
	snprintf(f_new, sizeof(f_new), "NEW=%s", new);
	snprintf(f_src, sizeof(f_src), "SOURCE=%s", sources[source].name);
	snprintf(f_reason, sizeof(f_reason), "REASON=%s", reason ? reason : "");
	reason = reason ? reason : "";
	switch (source) {
	case ENACT_POLICY:
		snprintf(msg, sizeof(msg), "policy %s: %s applied: %s (was %s)", pol, id, new, old);
		break;
	case ENACT_LOCAL:
		snprintf(msg, sizeof(msg), "local override: %s %s (was %s)", id, new, old);
		break;
	case ENACT_KILL_SWITCH:
		snprintf(msg, sizeof(msg), "kill switch: %s %s (was %s)", id, new, old);
		break;
	case ENACT_GUARD:
		snprintf(msg, sizeof(msg),
			 "guard: %s reverted: a %s in the guard window (%s, was %s)", id, reason,
			 new, old);
		break;
	case ENACT_TRIP:
		snprintf(msg, sizeof(msg), "kmemctl.ko tripped %s: %s (%s, was %s)", id, reason,
			 new, old);
		break;
	default:
		snprintf(msg, sizeof(msg), "%s quarantined under policy %s: %s (%s, was %s)", id,
			 pol, reason, new, old);
	}
	log_event(sources[source].level, sources[source].mid, fields, "%s", msg);
}

/* The document's params as kernel.c writes them; whether any differs from km's. */
static int params_of(const struct policy_mitigation *m, const struct kernel_mitigation *km,
		     struct kernel_kv *kv, bool *differ, struct policy_outcome *o)
{
	size_t i, j;

	*differ = false;
	for (i = 0; i < m->nparams; i++) {
		for (j = 0; j < km->nparams && strcmp(km->params[j].key, m->params[i].key); j++)
			;
		if (j == km->nparams) {
			o->result = POLICY_FAILED;
			say(o->why, sizeof(o->why), "no param \"%s\" here", m->params[i].key);
			return -EINVAL;
		}
		*differ |= km->params[j].value != m->params[i].value;
		strcpy(kv[i].key, m->params[i].key);
		kv[i].value = m->params[i].value;
	}
	return 0;
}

enum step { STEP_RESET, STEP_PARAMS, STEP_MODE };

/*
 * One write between its intent and the intent's removal; a write the
 * module refuses fails o. Returns 0 or the journal's error.
 */
static int step(const struct enactor *e, const struct policy_mitigation *m, enum step s,
		const struct kernel_kv *kv, struct policy_outcome *o)
{
	static const char *const intents[] = { "reset", "params", "mode off", "mode on" };
	bool on = m->mode == POLICY_MODE_ON;
	const char *what = intents[s == STEP_MODE ? 2U + on : (unsigned int)s];
	int r, w;

	r = journal_begin(e->state_dirfd, m->id, what);
	if (r < 0)
		return r;
	if (s == STEP_RESET)
		w = kernel_reset(e->rfs, m->id);
	else if (s == STEP_PARAMS)
		w = kernel_set_params(e->rfs, m->id, kv, m->nparams);
	else
		w = kernel_set_mode(e->rfs, m->id, on);
	r = journal_end(e->state_dirfd);
	if (w < 0) {
		o->result = POLICY_FAILED;
		say(o->why, sizeof(o->why), "the module refused %s (%s)", what, strerror(-w));
	} else {
		o->result = POLICY_APPLIED;
	}
	return r;
}

/*
 * Applied only if the module now reports what was asked: the mode and
 * every param, and not tripped. A livepatch still switching tasks is on
 * its way and says so.
 */
static void verify(const struct policy_mitigation *m, const struct kernel_mitigation *km,
		   struct policy_outcome *o)
{
	size_t i, j;

	if (m->mode != POLICY_MODE_KEEP && km->on != (m->mode == POLICY_MODE_ON)) {
		o->result = POLICY_FAILED;
		say(o->why, sizeof(o->why), "the module reports mode %s after the write",
		    km->on ? "on" : "off");
		return;
	}
	for (i = 0; i < m->nparams; i++) {
		for (j = 0; j < km->nparams && strcmp(km->params[j].key, m->params[i].key); j++)
			;
		if (j == km->nparams || km->params[j].value != m->params[i].value) {
			o->result = POLICY_FAILED;
			say(o->why, sizeof(o->why), "the module reports %s other than written",
			    m->params[i].key);
			return;
		}
	}
	/* off is what was asked of a tripped one */
	if (km->state == KERNEL_STATE_TRIPPED && m->mode != POLICY_MODE_OFF) {
		o->result = POLICY_FAILED;
		say(o->why, sizeof(o->why), "%s", km->reason);
	} else if (km->state == KERNEL_STATE_TRANSITION) {
		say(o->why, sizeof(o->why), "%s", km->reason);
	}
}

/* An off mitigation is new no longer: its confirmation record goes. */
static void confirm_off(const struct enactor *e, const char *id)
{
	int r = confirm_end(e->state_dirfd, id);

	if (r < 0)
		log_warning_errno(r, "removing the boot confirmation record of %s failed: %m", id);
}

/* The agent's own safety acts are logged even when the module had it so already. */
static bool always_logged(enum enact_source s)
{
	return s == ENACT_GUARD || s == ENACT_QUARANTINE || s == ENACT_CONFIRMATION ||
	       s == ENACT_TRIP;
}

/* The writes m needs after old; 0 or the journal's error. */
static int write_all(const struct enactor *e, const struct policy_mitigation *m,
		     const struct kernel_mitigation *old, const struct kernel_kv *kv, bool differ,
		     const struct policy_version *v, struct policy_outcome *o)
{
	bool on = m->mode == POLICY_MODE_ON;
	int r = 0;

	if (on && !old->on) {
		/* no record, no `mode on`: a crash after it must be known at the next boot */
		r = e->boot_id[0] ? confirm_begin(e->state_dirfd, m->id, e->boot_id, mono_ms(), v) :
				    -ENOKEY;
		if (r < 0) {
			o->result = POLICY_FAILED;
			say(o->why, sizeof(o->why), "recording its boot confirmation failed (%s)",
			    r == -ENOKEY ? "this boot's id is unknown" : strerror(-r));
			return 0;
		}
		if (old->state == KERNEL_STATE_TRIPPED)
			r = step(e, m, STEP_RESET, kv, o);
	}
	if (!r && o->result != POLICY_FAILED && differ)
		r = step(e, m, STEP_PARAMS, kv, o);
	if (!r && o->result != POLICY_FAILED && m->mode != POLICY_MODE_KEEP && old->on != on)
		r = step(e, m, STEP_MODE, kv, o);
	return r;
}

/* What the module reports after the writes: verified, logged, confirmation kept. */
static void settle(const struct enactor *e, const struct policy_mitigation *m,
		   enum enact_source source, const struct policy_version *v, const char *reason,
		   const struct kernel_mitigation *old, struct policy_outcome *o)
{
	struct kernel_mitigation now;
	char was[STATE_MAX], is[STATE_MAX];
	int r;

	describe(old, source == ENACT_TRIP || old->on, was, sizeof(was));
	r = kernel_read_mitigation(e->rfs, m->id, &now);
	if (r < 0) {
		/* unknown: the record stays, as for a mitigation still on */
		o->result = POLICY_FAILED;
		say(o->why, sizeof(o->why), "reading it back failed (%s)", strerror(-r));
		log_change(source, m->id, v, m->mode == POLICY_MODE_ON, was, "?", reason);
		return;
	}
	if (o->result == POLICY_APPLIED && source != ENACT_TRIP)
		verify(m, &now, o);
	describe(&now, now.on, is, sizeof(is));
	if (strcmp(was, is) || always_logged(source))
		log_change(source, m->id, v, now.on, was, is, reason);
	if (!now.on)
		confirm_off(e, m->id);
}

int enact(const struct enactor *e, const struct policy_mitigation *m, enum enact_source source,
	  const struct policy_version *v, const char *reason, struct policy_outcome *o)
{
	struct kernel_mitigation old;
	struct kernel_kv kv[POLICY_MAX_PARAMS];
	bool differ;
	int r;

	*o = (struct policy_outcome){ .result = POLICY_UNCHANGED };
	snprintf(o->id, sizeof(o->id), "%s", m->id);
	r = kernel_read_mitigation(e->rfs, m->id, &old);
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
	if (m->mode == POLICY_MODE_ON &&
	    (old.state == KERNEL_STATE_UNSUPPORTED || old.state == KERNEL_STATE_NATIVE)) {
		o->result = POLICY_SKIPPED;
		say(o->why, sizeof(o->why), "%s", old.reason);
		return 0;
	}
	if (params_of(m, &old, kv, &differ, o) < 0)
		return 0;
	/* the module made this change itself: it is logged, not written */
	if (source != ENACT_TRIP) {
		r = write_all(e, m, &old, kv, differ, v, o);
		if (o->result == POLICY_UNCHANGED && !always_logged(source))
			return r;
	} else {
		o->result = POLICY_APPLIED;
	}
	settle(e, m, source, v, reason, &old, o);
	return r;
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

int enact_doc(const struct enactor *e, const struct policy_doc *doc, enum enact_source source,
	      const struct policy_version *v, const char *const *quarantined,
	      struct policy_outcome *out, size_t *nout)
{
	struct policy_outcome *o;
	size_t i;
	int r;

	*nout = 0;
	for (i = 0; i < doc->nmitigations; i++) {
		o = &out[(*nout)++];
		if (policy_listed(quarantined, doc->mitigations[i].id)) {
			*o = (struct policy_outcome){ .result = POLICY_SKIPPED };
			strcpy(o->id, doc->mitigations[i].id);
			say(o->why, sizeof(o->why), "quarantined under this policy version");
			continue;
		}
		r = enact(e, &doc->mitigations[i], source, v, NULL, o);
		if (r < 0)
			return r;
	}
	for (i = 0; i < doc->nprobes; i++) {
		o = &out[(*nout)++];
		*o = (struct policy_outcome){ .result = POLICY_UNCHANGED };
		strcpy(o->id, doc->probes[i].id);
		apply_probe(e->rfs, &doc->probes[i], o);
	}
	return 0;
}

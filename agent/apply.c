// SPDX-License-Identifier: GPL-2.0
/*
 * What the parent applies to kmemctl.ko: signed policies (from kmemd, the
 * state directory or [policy] file), local overrides and the local kill
 * switch (checked requests from the control process), each audited, and
 * who set each mitigation's mode.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "fileio.h"
#include "kmemctl-names.h"
#include "log.h"
#include "macro.h"
#include "message-ids.h"
#include "parent.h"
#include "statefile.h"
#include "uapi/kmemctl.h"

#define SWITCH_FILE "disabled"
#define FLEET_STOP_FILE "fleet-stopped"

/*
 * An auditable act, to the journal with its MESSAGE_ID
 * (deploy/catalog/kmemctl.catalog) and the fields the catalog names.
 */
void audit(int level, const char *mid, const char *mitigation, const struct policy_version *v,
	   const char *mode, const char *reason, const char *fmt, ...)
{
	char f_mit[64], f_pol[sizeof(v->name) + 32], f_mode[32], f_reason[POLICY_WHY_MAX + 16],
		msg[512];
	const char *fields[5];
	size_t n = 0;
	va_list ap;

	if (mitigation && mitigation[0]) {
		snprintf(f_mit, sizeof(f_mit), "MITIGATION=%s", mitigation);
		fields[n++] = f_mit;
	}
	if (v && v->name[0]) {
		snprintf(f_pol, sizeof(f_pol), "POLICY=%s/%llu", v->name,
			 (unsigned long long)v->version);
		fields[n++] = f_pol;
	}
	if (mode) {
		snprintf(f_mode, sizeof(f_mode), "MODE=%s", mode);
		fields[n++] = f_mode;
	}
	if (reason) {
		snprintf(f_reason, sizeof(f_reason), "REASON=%s", reason);
		fields[n++] = f_reason;
	}
	fields[n] = NULL;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_event(level, mid, fields, "%s", msg);
}

void set_source(struct agent *a, const char *id, Kmemctl__V1__ModeSource source)
{
	size_t i;

	for (i = 0; i < a->nsources && strcmp(a->sources[i].id, id); i++)
		;
	if (i == a->nsources) {
		if (i == POLICY_MAX_ENTRIES || !policy_id_valid(id))
			return;
		strcpy(a->sources[a->nsources++].id, id);
	}
	a->sources[i].source = source;
}

Kmemctl__V1__ModeSource source_of(const char *id, void *arg)
{
	struct agent *a = arg;
	size_t i;

	for (i = 0; i < a->nsources; i++)
		if (!strcmp(a->sources[i].id, id))
			return a->sources[i].source;
	return KMEMCTL__V1__MODE_SOURCE__MODE_SOURCE_DEFAULT;
}

/* Why nothing is applied now. */
enum privsep_off off_kind(const struct agent *a)
{
	if (a->disabled)
		return PRIVSEP_OFF_CMDLINE;
	if (a->switched_off)
		return PRIVSEP_OFF_SWITCH;
	return a->fleet_stopped ? PRIVSEP_OFF_FLEET : PRIVSEP_ON;
}

static const char *off_reason(const struct agent *a)
{
	return privsep_off_reason(off_kind(a));
}

/*
 * What enact() did not log: mitigations it skipped or that failed, and
 * the probes (enact_doc()'s order: mitigations first).
 */
static void log_outcomes(const struct policy_version *v, const struct policy_doc *doc,
			 const struct policy_outcome *out, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (i < doc->nmitigations && out[i].result == POLICY_APPLIED)
			continue;
		log_full_errno(out[i].result == POLICY_FAILED ? LOG_WARNING : LOG_INFO, 0,
			       "policy %s: %s %s%s%s", v->name, out[i].id,
			       policy_result_name(out[i].result), out[i].why[0] ? ": " : "",
			       out[i].why);
	}
}

/* A mode the agent set: its guard armed when on, disarmed when off. */
static void guard_mode(struct agent *a, const char *id, enum policy_mode mode)
{
	if (mode == POLICY_MODE_ON)
		guard_arm(&a->guard, id, mono_ms());
	else if (mode == POLICY_MODE_OFF)
		guard_disarm(&a->guard, id);
}

static void record_outcomes(struct agent *a, const struct policy_doc *doc,
			    const char *const *quarantined, const struct policy_outcome *out,
			    size_t n)
{
	size_t i;

	for (i = 0; i < doc->nmitigations && i < n; i++) {
		if (policy_listed(quarantined, out[i].id))
			set_source(a, out[i].id, KMEMCTL__V1__MODE_SOURCE__MODE_SOURCE_QUARANTINE);
		else if (out[i].result == POLICY_APPLIED || out[i].result == POLICY_UNCHANGED)
			set_source(a, out[i].id, KMEMCTL__V1__MODE_SOURCE__MODE_SOURCE_POLICY);
		if (out[i].result == POLICY_APPLIED)
			guard_mode(a, out[i].id, doc->mitigations[i].mode);
	}
}

/* Checks a bundle: its version in v and its document in doc, or refused and said so. */
static int check_bundle(struct agent *a, const uint8_t *buf, size_t len, const char *from,
			struct policy_version *v, struct policy_doc *doc)
{
	Kmemctl__V1__PolicyPayload *p = NULL;
	char why[POLICY_WHY_MAX];
	int r;

	r = policy_check(&a->keys, buf, len, time(NULL), &a->policy, &p, doc, why, sizeof(why));
	if (r < 0) {
		audit(LOG_WARNING, MID_POLICY_REFUSED, NULL, NULL, NULL, why,
		      "policy from %s refused: %s", from, why);
		events_add(a->events, KMEMCTL__V1__EVENT_KIND__EVENT_KIND_POLICY_REFUSED, "", why,
			   now_ms());
		return r;
	}
	snprintf(v->name, sizeof(v->name), "%s", p->name);
	v->version = p->version;
	if (!off_reason(a))
		audit(LOG_NOTICE, MID_POLICY_ACCEPTED, NULL, v, NULL, NULL,
		      "policy %s version %llu from %s accepted (signed by %s)", v->name,
		      (unsigned long long)v->version, from, p->signer);
	kmemctl__v1__policy_payload__free_unpacked(p, NULL);
	return 0;
}

/*
 * Verifies and applies a bundle, from kmemd or stored; stores it as last
 * known good when it came from kmemd and was applied.
 */
int run_policy(struct agent *a, const uint8_t *buf, size_t len, const char *from)
{
	struct policy_outcome out[2 * POLICY_MAX_ENTRIES];
	char store[POLICY_MAX_ENTRIES][POLICY_ID_MAX + 1];
	const char *quarantined[POLICY_MAX_ENTRIES + 1];
	struct policy_version v;
	struct policy_doc doc;
	size_t n;
	int r;

	r = check_bundle(a, buf, len, from, &v, &doc);
	if (r < 0)
		return r;
	if (off_reason(a)) {
		log_notice("policy %s version %llu from %s not applied: %s", v.name,
			   (unsigned long long)v.version, from, off_reason(a));
		return 0;
	}
	r = policy_quarantine_list(a->state_dirfd, &v, store, quarantined, ARRAY_SIZE(quarantined));
	if (r < 0) {
		log_warning_errno(r, "reading the quarantine failed, applying without it: %m");
		quarantined[0] = NULL;
	}
	r = enact_doc(&a->enactor, &doc, ENACT_POLICY, &v, quarantined, out, &n);
	log_outcomes(&v, &doc, out, n);
	record_outcomes(a, &doc, quarantined, out, n);
	if (r < 0)
		return log_error_errno(r, "policy %s stopped: writing the journal failed: %m",
				       v.name);
	a->policy = v;
	if (strcmp(from, "disk")) {
		r = policy_store(a->state_dirfd, buf, len);
		if (r < 0)
			log_warning_errno(r, "storing policy %s as last known good failed: %m",
					  v.name);
	}
	return 0;
}

/* The version of the stored bundle, or none: what a cut-short change is quarantined under. */
static struct policy_version stored_version(struct agent *a, const uint8_t *buf, size_t len)
{
	Kmemctl__V1__PolicyPayload *p = NULL;
	struct policy_version none = { 0 }, v = { 0 };
	char why[POLICY_WHY_MAX];
	struct policy_doc doc;

	if (buf &&
	    policy_check(&a->keys, buf, len, time(NULL), &none, &p, &doc, why, sizeof(why)) == 0) {
		snprintf(v.name, sizeof(v.name), "%s", p->name);
		v.version = p->version;
		kmemctl__v1__policy_payload__free_unpacked(p, NULL);
	}
	return v;
}

void quarantine(struct agent *a, const char *id, enum enact_source source,
		const struct policy_version *v, const char *why)
{
	struct policy_mitigation m = { .mode = POLICY_MODE_OFF };
	struct policy_outcome o;
	int r;

	snprintf(m.id, sizeof(m.id), "%s", id);
	r = enact(&a->enactor, &m, source, v, why, &o);
	if (r < 0)
		log_error_errno(r, "writing the intent journal failed: %m");
	if (o.result == POLICY_FAILED)
		log_error("turning %s off failed: %s", id, o.why);
	/* quarantined all the same: it is not turned on again under v */
	r = policy_quarantine_add(a->state_dirfd, id, v);
	if (r < 0)
		log_error_errno(r, "recording the quarantine of %s failed: %m", id);
	guard_disarm(&a->guard, id);
	set_source(a, id,
		   source == ENACT_GUARD ? KMEMCTL__V1__MODE_SOURCE__MODE_SOURCE_GUARD :
					   KMEMCTL__V1__MODE_SOURCE__MODE_SOURCE_QUARANTINE);
}

/* At start, id quarantined under v and, when it differs, the version start runs. */
static void quarantine_start(struct agent *a, const char *id, enum enact_source source,
			     const struct policy_version *v, const struct policy_version *stored,
			     const char *why)
{
	quarantine(a, id, source, v, why);
	if (strcmp(v->name, stored->name) || v->version != stored->version) {
		int r = policy_quarantine_add(a->state_dirfd, id, stored);

		if (r < 0)
			log_error_errno(r, "recording the quarantine of %s failed: %m", id);
	}
	events_add(a->events, KMEMCTL__V1__EVENT_KIND__EVENT_KIND_QUARANTINE, id, why, now_ms());
}

/*
 * Boot confirmation at start (confirm.h): a mitigation turned on in an
 * earlier boot and never confirmed is quarantined; one of this boot keeps
 * its window, from when it went on. A file that does not parse is the
 * worst case: every mitigation is quarantined.
 */
static void confirm_restore(struct agent *a, const struct policy_version *stored)
{
	struct confirm_entry lost[CONFIRM_MAX];
	struct confirm c;
	size_t n, i;
	int r;

	r = confirm_load(a->state_dirfd, &c);
	if (r < 0) {
		log_error_errno(r, "the boot confirmation records are unreadable: quarantining "
				   "every mitigation: %m");
		for (i = 0; i < KMEMCTL_MIT_COUNT; i++)
			quarantine_start(a, kmemctl_mitigation_name(i), ENACT_CONFIRMATION, stored,
					 stored, "its boot confirmation record is unreadable");
		c.n = 0;
		r = confirm_save(a->state_dirfd, &c);
	} else if (confirm_start(&c, a->enactor.boot_id, lost, &n)) {
		for (i = 0; i < n; i++)
			quarantine_start(a, lost[i].id, ENACT_CONFIRMATION, &lost[i].policy, stored,
					 "the host restarted while it was new");
		r = confirm_save(a->state_dirfd, &c);
	}
	if (r < 0)
		log_error_errno(r, "rewriting the boot confirmation records failed: %m");
	for (i = 0; i < c.n; i++)
		if (!c.e[i].confirmed)
			guard_arm(&a->guard, c.e[i].id, c.e[i].since_ms);
}

/*
 * At start: a change the previous run died in is quarantined (turned off,
 * not retried under that policy version), so is a mitigation the host
 * died with while it was new; then the last known good policy runs until
 * kmemd sends another.
 */
void start_policy(struct agent *a)
{
	_cleanup_free_ uint8_t *buf = NULL;
	struct policy_version v;
	char id[POLICY_ID_MAX + 1];
	size_t len = 0;
	int r, cut;

	r = policy_load(a->state_dirfd, &buf, &len);
	if (r < 0 && r != -ENOENT)
		log_warning_errno(r, "the stored policy is unreadable: %m");
	v = stored_version(a, r == 0 ? buf : NULL, len);
	cut = enact_recover(a->state_dirfd, id, sizeof(id));
	if (cut < 0)
		log_warning_errno(cut, "an unreadable intent was left by the previous run: %m");
	if (cut == 1)
		quarantine_start(a, id, ENACT_QUARANTINE, &v, &v,
				 "a change to it was cut short by the previous run");
	confirm_restore(a, &v);
	if (buf)
		run_policy(a, buf, len, "disk");
}

void stored_policy(struct agent *a)
{
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len;
	int r = policy_load(a->state_dirfd, &buf, &len);

	if (r == 0)
		run_policy(a, buf, len, "disk");
	else if (r != -ENOENT)
		log_warning_errno(r, "the stored policy is unreadable: %m");
}

/* The operator's bundle on disk ([policy] file), at start and on SIGHUP. */
void local_policy(struct agent *a)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	if (!a->cfg->policy_file)
		return;
	r = read_file_max(a->cfg->policy_file, PRIVSEP_MAX_POLICY, &buf, &len);
	if (r < 0) {
		log_error_errno(r, "reading the policy file '%s' failed: %m", a->cfg->policy_file);
		return;
	}
	run_policy(a, (const uint8_t *)buf, len, "file");
}

bool switch_recorded(const struct agent *a)
{
	return faccessat(a->state_dirfd, SWITCH_FILE, F_OK, 0) == 0;
}

static void refuse_request(struct privsep_reply *rep, const char *why)
{
	rep->kind = PRIVSEP_REPLY_ERROR;
	snprintf(rep->error, sizeof(rep->error), "%s", why);
}

static void record_local(struct agent *a, const struct policy_doc *doc,
			 const struct policy_outcome *out, size_t n)
{
	size_t i;

	for (i = 0; i < doc->nmitigations && i < n; i++) {
		if (out[i].result != POLICY_APPLIED)
			continue;
		set_source(a, out[i].id, KMEMCTL__V1__MODE_SOURCE__MODE_SOURCE_LOCAL);
		guard_mode(a, out[i].id, doc->mitigations[i].mode);
	}
}

/* A local override: the policy path, journal and guard included, no signature. */
static void apply_local(struct agent *a, const struct policy_doc *doc, struct privsep_reply *rep)
{
	static const struct policy_version local = { .name = "local" };
	char why[sizeof(rep->error)];
	size_t n = 0, i;
	int r;

	if (off_reason(a)) {
		snprintf(why, sizeof(why), "applying nothing under %s", off_reason(a));
		refuse_request(rep, why);
		return;
	}
	r = enact_doc(&a->enactor, doc, ENACT_LOCAL, &local, NULL, rep->out, &n);
	record_local(a, doc, rep->out, n);
	if (r < 0) {
		refuse_request(rep, "writing the intent journal failed; nothing more applied");
		return;
	}
	rep->kind = PRIVSEP_REPLY_OUTCOMES;
	rep->n = (uint32_t)n;
	rep->ok = 1;
	for (i = 0; i < n; i++)
		if (rep->out[i].result == POLICY_FAILED)
			rep->ok = 0;
}

/* Every mitigation the module has, off, as a kill switch (who) does it; how many. */
static unsigned int all_off(struct agent *a, Kmemctl__V1__ModeSource source, const char *who)
{
	struct policy_mitigation m = { .mode = POLICY_MODE_OFF };
	struct policy_outcome o;
	unsigned int k, n = 0;
	int r;

	for (k = 0; k < KMEMCTL_MIT_COUNT; k++) {
		snprintf(m.id, sizeof(m.id), "%s", kmemctl_mitigation_name(k));
		r = enact(&a->enactor, &m, ENACT_KILL_SWITCH, &a->policy, who, &o);
		if (o.result == POLICY_SKIPPED)
			continue;
		if (r < 0)
			log_error_errno(r, "%s: writing the intent journal failed: %m", who);
		if (o.result == POLICY_FAILED)
			log_error("%s: turning %s off failed: %s", who, m.id, o.why);
		guard_disarm(&a->guard, m.id);
		set_source(a, m.id, source);
		n++;
	}
	return n;
}

static int record_switch(struct agent *a, bool off)
{
	static const char note[] = "kmemctl disable\n";

	if (off)
		return statefile_replace(a->state_dirfd, SWITCH_FILE, note, sizeof(note) - 1);
	if (unlinkat(a->state_dirfd, SWITCH_FILE, 0) < 0 && errno != ENOENT)
		return negative_errno();
	return 0;
}

/*
 * The local kill switch. Off: kept on disk first (a crash right after
 * must not turn it back on), then every mitigation off. On: removed, and
 * the last known good policy applied again.
 */
static void apply_switch(struct agent *a, bool off, struct privsep_reply *rep)
{
	int r;

	if (a->disabled) {
		refuse_request(rep, "kmemctl.disable=1 is on the kernel command line: it rules");
		return;
	}
	rep->kind = PRIVSEP_REPLY_SWITCH;
	if (off == a->switched_off)
		return;
	r = record_switch(a, off);
	if (r < 0) {
		log_error_errno(r, "recording the kill switch failed: %m");
		refuse_request(rep, "recording the kill switch in the state directory failed");
		return;
	}
	a->switched_off = off;
	rep->changed = 1;
	if (off) {
		audit(LOG_WARNING, MID_KILL_SWITCH, NULL, &a->policy, "off", NULL,
		      "kill switch: %u mitigations turned off; nothing is applied until `kmemctl "
		      "enable`",
		      all_off(a, KMEMCTL__V1__MODE_SOURCE__MODE_SOURCE_LOCAL, "kmemctl disable"));
		return;
	}
	if (a->fleet_stopped) {
		audit(LOG_NOTICE, MID_KILL_SWITCH, NULL, &a->policy, "on", NULL,
		      "kill switch released; kmemd's fleet stop still holds every mitigation off");
		return;
	}
	audit(LOG_NOTICE, MID_KILL_SWITCH, NULL, &a->policy, "on", NULL,
	      "kill switch released: applying the last known good policy again");
	a->policy = (struct policy_version){ 0 };
	start_policy(a);
}

bool fleet_stop_recorded(const struct agent *a)
{
	return faccessat(a->state_dirfd, FLEET_STOP_FILE, F_OK, 0) == 0;
}

void apply_fleet_stop(struct agent *a, bool stopped)
{
	static const char note[] = "kmemd: kmemctl fleet stop\n";
	int r;

	if (stopped == a->fleet_stopped)
		return;
	/* kept first: a crash right after must come up stopped */
	r = stopped ? statefile_replace(a->state_dirfd, FLEET_STOP_FILE, note, sizeof(note) - 1) :
		      (unlinkat(a->state_dirfd, FLEET_STOP_FILE, 0) < 0 && errno != ENOENT ?
			       negative_errno() :
			       0);
	if (r < 0)
		log_error_errno(r, "recording the fleet stop failed: %m");
	a->fleet_stopped = stopped;
	if (stopped) {
		/* the kill switches turned everything off already */
		audit(LOG_WARNING, MID_FLEET_STOP, NULL, &a->policy, "off", NULL,
		      "fleet stop: %u mitigations turned off; nothing is applied until kmemd "
		      "resumes the fleet",
		      a->disabled || a->switched_off ?
			      0 :
			      all_off(a, KMEMCTL__V1__MODE_SOURCE__MODE_SOURCE_FLEET_STOP,
				      "kmemctl fleet stop"));
		return;
	}
	if (off_kind(a) != PRIVSEP_ON) {
		audit(LOG_NOTICE, MID_FLEET_STOP, NULL, &a->policy, "on", NULL,
		      "fleet resumed; %s still holds", off_reason(a));
		return;
	}
	audit(LOG_NOTICE, MID_FLEET_STOP, NULL, &a->policy, "on", NULL,
	      "fleet resumed: applying the last known good policy again");
	a->policy = (struct policy_version){ 0 };
	start_policy(a);
}

void apply_request(struct agent *a, const struct privsep_request *req, struct privsep_reply *rep)
{
	memset(rep, 0, sizeof(*rep));
	rep->client = req->client;
	if (req->cmd == CTL_SET)
		apply_local(a, &req->doc, rep);
	else
		apply_switch(a, req->cmd == CTL_DISABLE, rep);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * kmem-agent: the root parent, privilege separation and the report timer.
 *
 * The parent keeps root and does only what needs it: it reads the host
 * through the root prefix, builds each interval's report, and applies
 * signed policies to kmemctl.ko. Everything that talks to the network runs
 * in a child under the agent's own user (session.c); the two speak over a
 * checked channel (privsep.c), and the child can ask nothing of the parent
 * but to consider a policy, which the parent verifies against its own
 * pinned keys.
 */
#include <errno.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <grp.h>
#include <jansson.h>
#include <fcntl.h>
#include <getopt.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "collect.h"
#include "conf.h"
#include "ctl.h"
#include "evloop.h"
#include "exit-codes.h"
#include "events.h"
#include "facts.h"
#include "fileio.h"
#include "guard.h"
#include "kmemctl-names.h"
#include "kmsg.h"
#include "log.h"
#include "macro.h"
#include "message-ids.h"
#include "pbjson.h"
#include "module.h"
#include "policy.h"
#include "privsep.h"
#include "procstat.h"
#include "rootfs.h"
#include "session.h"
#include "spool.h"
#include "statefile.h"
#include "states.h"
#include "telemetry.h"
#include "uapi/kmemctl.h"
#include "uplink.h"

struct agent {
	const struct agent_config *cfg;
	struct rootfs rfs;
	struct event_base *base;
	struct event *timer, *rd, *chld, *hup;
	int fd, state_dirfd;
	struct privsep_peer child;
	struct keyring keys;
	struct policy_version policy;
	uint64_t seq;
	bool once;
	bool disabled; /* kmemctl.disable=1: apply nothing, report only */
	bool switched_off; /* `kmemctl disable`: mitigations off, apply nothing */
	struct guard guard;
	struct kmsg_parser kmsg;
	int kmsg_fd;
	struct event *kmsg_ev, *kmsg_quiet;
	int dev_fd; /* /dev/kmemctl, -1 until the module is there */
	struct event *dev_ev;
	uint64_t dev_next_seq;
	struct collect *col;
	struct event *col_ev, *deadline;
	struct event *watchdog;
	bool round_open; /* a collector round whose report has not gone out */
	struct facts facts; /* the last collected */
	struct telemetry *telemetry;
	struct events *events; /* until a report carries them */
	uint64_t started_ms; /* monotonic */
	/* who set each mode the agent touched; the rest is the module's default */
	struct {
		char id[POLICY_ID_MAX + 1];
		Kmemctl__V1__ModeSource source;
	} sources[POLICY_MAX_ENTRIES];
	size_t nsources;
	int exit_code;
	uint8_t *buf; /* PRIVSEP_MAX_PAYLOAD */
	uint8_t *last; /* the last report, encoded, for the control socket */
	size_t last_len;
	struct privsep_result result; /* the child's last word on kmemd */
	struct evconnlistener *ctl;
	gid_t ctl_group;
	json_t *recent; /* the last RECENT_MAX events reported, for kmemctl status */
	struct ctl_client *clients;
};

#define RECENT_MAX 16

struct ctl_client {
	struct agent *a;
	int fd;
	bool watch;
	bool denied; /* answered, with the refusal only */
	struct event *ev;
	struct ctl_client *next;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: kmem-agent [-d] [-o] [-n [-v]] [-c FILE] [-r DIR]\n"
		"       kmem-agent -V | -h\n"
		"  -c FILE  configuration file (default " AGENT_CONF ", plus FILE.d/*.conf)\n"
		"  -r DIR   read /proc, /sys, /boot below DIR instead of / (fixture trees)\n"
		"  -n       check the configuration and exit; with -v print it normalized\n"
		"  -o       send one report, then exit: 0 acknowledged, 3 unreachable, 4 refused\n"
		"  -d       log debug messages\n"
		"  -V       print the version\n"
		"  -h       print this usage and exit\n");
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * An auditable act, to the journal with its MESSAGE_ID
 * (deploy/catalog/kmemctl.catalog) and the fields the catalog names.
 */
_printf_(7, 8) static void audit(int level, const char *mid, const char *mitigation,
				 const struct policy_version *v, const char *mode,
				 const char *reason, const char *fmt, ...)
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

static void set_source(struct agent *a, const char *id, Kmemctl__V1__ModeSource source)
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

/* Why nothing is applied now, or NULL. */
static const char *off_reason(const struct agent *a)
{
	if (a->disabled)
		return "kmemctl.disable=1";
	return a->switched_off ? "the local kill switch (kmemctl disable)" : NULL;
}

static Kmemctl__V1__ModeSource source_of(const char *id, void *arg)
{
	struct agent *a = arg;
	size_t i;

	for (i = 0; i < a->nsources; i++)
		if (!strcmp(a->sources[i].id, id))
			return a->sources[i].source;
	return KMEMCTL__V1__MODE_SOURCE__MODE_SOURCE_DEFAULT;
}

/*
 * Report seqs go on across restarts: kmemd tells gaps from duplicates by
 * them, and the spool keeps reports in seq order.
 */
static void load_seq(struct agent *a, const char *spool)
{
	_cleanup_free_ uint8_t *data = NULL;
	char text[32];
	size_t len;
	char *end;
	int r;

	r = statefile_read(a->state_dirfd, "seq", sizeof(text) - 1, &data, &len);
	/* no seq stored yet, yet reports may be spooled (an upgrade) */
	if (r == -ENOENT) {
		r = spool_newest_seq(spool, &a->seq);
		if (r >= 0 || r == -ENOENT)
			return;
	}
	if (r == 0) {
		memcpy(text, data, len);
		text[len] = '\0';
		errno = 0;
		a->seq = strtoull(text, &end, 10);
		if (!errno && end != text && *end == '\n')
			return;
		r = -EBADMSG;
	}
	/* a seq far above any earlier one keeps the order kmemd sees */
	a->seq = (uint64_t)now_ms();
	log_warning_errno(r, "the stored report seq is unreadable, going on from %llu: %m",
			  (unsigned long long)a->seq);
}

static void store_seq(struct agent *a)
{
	char text[32];
	int n, r;

	n = snprintf(text, sizeof(text), "%llu\n", (unsigned long long)a->seq);
	r = statefile_replace(a->state_dirfd, "seq", text, (size_t)n);
	if (r < 0)
		log_warning_errno(r, "storing report seq %llu failed: %m",
				  (unsigned long long)a->seq);
}

static void ctl_broadcast(struct agent *a);

/* Events outlive their report in kmemctl status: the newest RECENT_MAX. */
static void keep_recent(struct agent *a, const Kmemctl__V1__Report *rep)
{
	size_t i;

	for (i = 0; i < rep->n_events; i++)
		json_array_append_new(a->recent, pbjson_from_message(&rep->events[i]->base));
	while (json_array_size(a->recent) > RECENT_MAX)
		json_array_remove(a->recent, 0);
}

/* Why each collector has nothing for this report, into failed[]. */
static size_t collector_failures(struct agent *a, unsigned done, char why[][96], char **failed)
{
	struct collect *c = a->col;
	size_t n = 0;
	int i;

	for (i = 0; i < COLLECT_N; i++) {
		if (!(done & (1U << i)))
			snprintf(why[n], sizeof(why[0]), "%s: %s", collect_name(i),
				 collect_running(c) == i ? "no answer within the deadline" :
							   "not run, waiting on another");
		else if (c->out.rc[i] < 0 && c->out.rc[i] != -ENOENT && c->out.rc[i] != -EOPNOTSUPP)
			snprintf(why[n], sizeof(why[0]), "%s: %s", collect_name(i),
				 strerror(-c->out.rc[i]));
		else
			continue;
		failed[n] = why[n];
		n++;
	}
	return n;
}

/* The collectors' results that made it: done, and without an error. */
static bool got(const struct agent *a, unsigned done, enum collector which)
{
	return (done & (1U << which)) && a->col->out.rc[which] >= 0;
}

/*
 * The report of one round, with what the collectors in done found, encoded
 * behind its seq, as the child takes it. Facts that did not come in time
 * are the last ones that did; the first are read at start.
 */
static int send_report(struct agent *a, unsigned done)
{
	Kmemctl__V1__KconfigEntry kv[FACTS_KCONFIG_MAX], *kvp[FACTS_KCONFIG_MAX];
	Kmemctl__V1__HostFacts__LabelsEntry *lv, **lvp;
	Kmemctl__V1__Report rep = KMEMCTL__V1__REPORT__INIT;
	Kmemctl__V1__Pressure pressure = KMEMCTL__V1__PRESSURE__INIT;
	Kmemctl__V1__Histogram memstat_pb = KMEMCTL__V1__HISTOGRAM__INIT;
	uint64_t memstat_counts[HIST_BUCKETS];
	struct collect_out *o = &a->col->out;
	char why[COLLECT_N][96], *failed[COLLECT_N];
	struct hist memstat = { 0 };
	Kmemctl__V1__HostFacts hf;
	size_t len, i, nl = a->cfg->labels.n ?: 1;
	int r;

	if (got(a, done, COLLECT_FACTS))
		a->facts = o->facts;
	lv = calloc(nl, sizeof(*lv));
	lvp = calloc(nl, sizeof(*lvp));
	if (!lv || !lvp) {
		free(lv);
		free(lvp);
		return -ENOMEM;
	}
	facts_to_pb(&a->facts, a->cfg, &hf, kv, kvp, lv, lvp);
	rep.seq = ++a->seq;
	if (!a->once)
		store_seq(a);
	rep.unix_ms = now_ms();
	rep.facts = &hf;
	rep.policy_name = a->policy.name;
	rep.policy_version = a->policy.version;
	if (got(a, done, COLLECT_STATES)) {
		for (i = 0; i < o->states.n; i++)
			o->states.pb[i].source = source_of(o->states.pb[i].id, a);
		rep.n_mitigations = o->states.n;
		rep.mitigations = o->states.pbp;
		if (o->states.unreadable)
			log_warning("%zu mitigations of kmemctl.ko did not parse; left out",
				    o->states.unreadable);
	}
	if (got(a, done, COLLECT_PROBES)) {
		telemetry_update(a->telemetry, &o->probes, rep.unix_ms);
		rep.n_probes = a->telemetry->n;
		rep.probes = a->telemetry->samplesp;
		if (o->probes.unreadable)
			log_warning("%zu probes of kmemctl.ko did not parse; left out",
				    o->probes.unreadable);
	}
	if (got(a, done, COLLECT_TLB))
		a->events->counters.tlb_shootdowns = o->tlb_shootdowns;
	if (got(a, done, COLLECT_PRESSURE)) {
		pressure.memory_some_avg10 = o->psi_some;
		pressure.memory_full_avg10 = o->psi_full;
		rep.pressure = &pressure;
	}
	if (got(a, done, COLLECT_MEMSTAT)) {
		hist_record(&memstat, o->memstat_ns);
		hist_to_pb(&memstat, &memstat_pb, memstat_counts);
		rep.memstat_read = &memstat_pb;
	}
	rep.n_collectors_failed = collector_failures(a, done, why, failed);
	rep.collectors_failed = failed;
	for (i = 0; i < rep.n_collectors_failed; i++)
		log_warning("report %llu: collector %s", (unsigned long long)rep.seq, failed[i]);
	a->events->counters.uptime_ms = mono_ms() - a->started_ms;
	rep.counters = &a->events->counters;
	rep.n_events = a->events->n;
	rep.events = a->events->pbp;
	len = kmemctl__v1__report__get_packed_size(&rep);
	if (len + sizeof(rep.seq) > PRIVSEP_MAX_PAYLOAD) {
		r = -EMSGSIZE;
	} else {
		memcpy(a->buf, &rep.seq, sizeof(rep.seq));
		kmemctl__v1__report__pack(&rep, a->buf + sizeof(rep.seq));
		/* standalone: the report is only for the control socket */
		r = a->fd < 0 ? 0 :
				privsep_send(a->fd, PRIVSEP_REPORT, a->buf, len + sizeof(rep.seq));
		memcpy(a->last, a->buf + sizeof(rep.seq), len);
		a->last_len = len;
		keep_recent(a, &rep);
		ctl_broadcast(a);
	}
	/* the child keeps the report until kmemd has it */
	if (r == 0)
		events_clear(a->events);
	free(lv);
	free(lvp);
	if (r < 0)
		log_error_errno(r, "handing report %llu to the network child failed: %m",
				(unsigned long long)rep.seq);
	return r;
}

static void on_result(struct agent *a, const struct privsep_result *res)
{
	a->result = *res;
	a->events->counters.reports_dropped = res->dropped;
	switch (res->outcome) {
	case UPLINK_ACKED:
		log_debug("report %llu acknowledged (%llu spooled, %llu dropped)",
			  (unsigned long long)res->acked_seq, (unsigned long long)res->spooled,
			  (unsigned long long)res->dropped);
		sd_notifyf(0, "STATUS=report %llu acknowledged",
			   (unsigned long long)res->acked_seq);
		a->exit_code = EXIT_OK;
		break;
	case UPLINK_REFUSED:
		a->exit_code = EXIT_REFUSED;
		break;
	default:
		sd_notifyf(0, "STATUS=kmemd unreachable; %llu reports spooled",
			   (unsigned long long)res->spooled);
		a->exit_code = EXIT_UNREACHABLE;
		break;
	}
	if (a->once)
		event_base_loopexit(a->base, NULL);
}

static const char *const mode_names[] = {
	[POLICY_MODE_KEEP] = "kept",
	[POLICY_MODE_OFF] = "off",
	[POLICY_MODE_ON] = "on",
};

static const char *const result_names[] = {
	[POLICY_UNCHANGED] = "unchanged",
	[POLICY_APPLIED] = "applied",
	[POLICY_SKIPPED] = "skipped",
	[POLICY_FAILED] = "failed",
};

/*
 * Verifies and applies a bundle, from kmemd or stored; stores it as last
 * known good when it came from kmemd and was applied.
 */
static int run_policy(struct agent *a, const uint8_t *buf, size_t len, const char *from)
{
	struct policy_outcome out[2 * POLICY_MAX_ENTRIES];
	char store[POLICY_MAX_ENTRIES][POLICY_ID_MAX + 1];
	const char *quarantined[POLICY_MAX_ENTRIES + 1];
	Kmemctl__V1__PolicyPayload *p = NULL;
	struct policy_version v;
	struct policy_doc doc;
	char why[POLICY_WHY_MAX];
	size_t n, i;
	int r;

	r = policy_check(&a->keys, buf, len, time(NULL), &a->policy, &p, &doc, why, sizeof(why));
	if (r < 0) {
		audit(LOG_WARNING, MID_POLICY_REFUSED, NULL, NULL, NULL, why,
		      "policy from %s refused: %s", from, why);
		events_add(a->events, KMEMCTL__V1__EVENT_KIND__EVENT_KIND_POLICY_REFUSED, "", why,
			   now_ms());
		return r;
	}
	snprintf(v.name, sizeof(v.name), "%s", p->name);
	v.version = p->version;
	if (off_reason(a)) {
		log_notice("policy %s version %llu from %s not applied: %s", v.name,
			   (unsigned long long)v.version, from, off_reason(a));
		kmemctl__v1__policy_payload__free_unpacked(p, NULL);
		return 0;
	}
	audit(LOG_NOTICE, MID_POLICY_ACCEPTED, NULL, &v, NULL, NULL,
	      "policy %s version %llu from %s accepted (signed by %s)", v.name,
	      (unsigned long long)v.version, from, p->signer);
	kmemctl__v1__policy_payload__free_unpacked(p, NULL);
	r = policy_quarantine_list(a->state_dirfd, &v, store, quarantined, ARRAY_SIZE(quarantined));
	if (r < 0)
		log_warning_errno(r, "reading the quarantine failed, applying without it: %m");
	if (r < 0)
		quarantined[0] = NULL;
	r = policy_apply(&a->rfs, a->state_dirfd, &doc, quarantined, out, &n);
	for (i = 0; i < n; i++) {
		if (i < doc.nmitigations && out[i].result == POLICY_APPLIED)
			audit(LOG_NOTICE, MID_MITIGATION_APPLIED, out[i].id, &v,
			      mode_names[doc.mitigations[i].mode], NULL,
			      "policy %s: %s applied%s%s", v.name, out[i].id,
			      out[i].why[0] ? ": " : "", out[i].why);
		else
			log_full_errno(out[i].result == POLICY_FAILED ? LOG_WARNING : LOG_INFO, 0,
				       "policy %s: %s %s%s%s", v.name, out[i].id,
				       result_names[out[i].result], out[i].why[0] ? ": " : "",
				       out[i].why);
	}
	/* outcomes list the mitigations first, in the document's order */
	for (i = 0; i < doc.nmitigations && i < n; i++) {
		if (policy_listed(quarantined, out[i].id))
			set_source(a, out[i].id, KMEMCTL__V1__MODE_SOURCE__MODE_SOURCE_QUARANTINE);
		else if (out[i].result == POLICY_APPLIED || out[i].result == POLICY_UNCHANGED)
			set_source(a, out[i].id, KMEMCTL__V1__MODE_SOURCE__MODE_SOURCE_POLICY);
		if (out[i].result != POLICY_APPLIED)
			continue;
		if (doc.mitigations[i].mode == POLICY_MODE_ON)
			guard_arm(&a->guard, out[i].id, mono_ms());
		else if (doc.mitigations[i].mode == POLICY_MODE_OFF)
			guard_disarm(&a->guard, out[i].id);
	}
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

/*
 * At start: a change the previous run died in is quarantined (turned off,
 * not retried under that policy version); then the last known good policy
 * runs until kmemd sends another.
 */
static void start_policy(struct agent *a)
{
	Kmemctl__V1__PolicyPayload *p = NULL;
	_cleanup_free_ uint8_t *buf = NULL;
	struct policy_version none = { 0 }, v = { 0 };
	char id[POLICY_ID_MAX + 1], why[POLICY_WHY_MAX];
	struct policy_doc doc;
	size_t len = 0;
	int r, cut;

	r = policy_load(a->state_dirfd, &buf, &len);
	if (r < 0 && r != -ENOENT)
		log_warning_errno(r, "the stored policy is unreadable: %m");
	if (r == 0 &&
	    policy_check(&a->keys, buf, len, time(NULL), &none, &p, &doc, why, sizeof(why)) == 0) {
		snprintf(v.name, sizeof(v.name), "%s", p->name);
		v.version = p->version;
		kmemctl__v1__policy_payload__free_unpacked(p, NULL);
	}
	cut = policy_recover(a->state_dirfd, id, sizeof(id));
	if (cut < 0)
		log_warning_errno(cut, "an unreadable intent was left by the previous run: %m");
	if (cut == 1) {
		audit(LOG_WARNING, MID_CHANGE_QUARANTINED, id, &v, "off",
		      "cut short by the previous run",
		      "a change to %s was cut short by the previous run: quarantined", id);
		r = kernel_set_mode(&a->rfs, id, false);
		if (r < 0 && r != -ENOENT)
			log_warning_errno(r, "turning %s off failed: %m", id);
		r = policy_quarantine_add(a->state_dirfd, id, &v);
		if (r < 0)
			log_error_errno(r, "recording the quarantine of %s failed: %m", id);
		set_source(a, id, KMEMCTL__V1__MODE_SOURCE__MODE_SOURCE_QUARANTINE);
		events_add(a->events, KMEMCTL__V1__EVENT_KIND__EVENT_KIND_QUARANTINE, id,
			   "a change to it was cut short by the previous run", now_ms());
	}
	if (buf)
		run_policy(a, buf, len, "disk");
}

/* The operator's bundle on disk ([policy] file), at start and on SIGHUP. */
static void local_policy(struct agent *a)
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

static void on_sighup(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	log_info("SIGHUP: reading the policy file again");
	local_policy(arg);
}

/*
 * kmemctl.ko is loaded before any policy runs. Not under kmemctl.disable=1:
 * loading it installs its livepatch, which already changes the kernel.
 */
static void load_module(const struct agent *a)
{
	int r;

	if (a->disabled || !a->cfg->module[0])
		return;
	r = module_load(a->cfg->module);
	if (r < 0) {
		log_error_errno(r, "loading kmemctl.ko (%s) failed, mitigations unavailable: %m",
				a->cfg->module);
		return;
	}
	if (r == 0)
		log_notice("kmemctl.ko loaded (%s)", a->cfg->module);
	r = kernel_abi(&a->rfs);
	if (r >= 0 && r != KMEMCTL_ABI)
		log_error("kmemctl.ko speaks ABI %d, this agent %d: it turns nothing on and tunes "
			  "nothing until the two are upgraded together",
			  r, KMEMCTL_ABI);
}

static const char *const kind_names[] = {
	[KMSG_SOFT_LOCKUP] = "soft lockup",
	[KMSG_HARD_LOCKUP] = "hard lockup",
	[KMSG_RCU_STALL] = "RCU stall",
	[KMSG_HUNG_TASK] = "hung task",
};

/* kmemctl.ko turned a mitigation off by itself. */
static void on_trip(struct agent *a, const char *id)
{
	audit(LOG_WARNING, MID_MITIGATION_TRIPPED, id, &a->policy, "off", NULL,
	      "kmemctl.ko tripped %s: it turned it off by itself", id);
	guard_disarm(&a->guard, id);
}

/* A report the kernel printed: logged, and the guard's to judge. */
static void on_kernel_event(struct agent *a, const struct kmsg_event *ev)
{
	char ids[GUARD_MAX][POLICY_ID_MAX + 1];
	size_t n, i;
	int r;

	log_warning("kernel reported a %s on cpu %d, task %s:%d, at %s", kind_names[ev->kind],
		    ev->cpu, ev->comm[0] ? ev->comm : "?", ev->pid,
		    ev->nstack ? ev->stack[0] : "?");
	events_add_kmsg(a->events, ev, now_ms());
	n = guard_trip(&a->guard, ev->kind, mono_ms(), ids, GUARD_MAX);
	for (i = 0; i < n; i++) {
		r = kernel_set_mode(&a->rfs, ids[i], false);
		if (r < 0) {
			log_error_errno(r, "guard: reverting %s after a %s failed: %m", ids[i],
					kind_names[ev->kind]);
			continue;
		}
		audit(LOG_WARNING, MID_GUARD_REVERT, ids[i], &a->policy, "off",
		      kind_names[ev->kind], "guard: %s reverted: a %s within %llu s of enabling it",
		      ids[i], kind_names[ev->kind],
		      (unsigned long long)(a->guard.window_ms / 1000));
		set_source(a, ids[i], KMEMCTL__V1__MODE_SOURCE__MODE_SOURCE_GUARD);
		events_add(a->events, KMEMCTL__V1__EVENT_KIND__EVENT_KIND_GUARD_REVERT, ids[i],
			   kind_names[ev->kind], now_ms());
		r = policy_quarantine_add(a->state_dirfd, ids[i], &a->policy);
		if (r < 0)
			log_error_errno(r, "recording the quarantine of %s failed: %m", ids[i]);
	}
}

/* A report that ends without "</TASK>" is handed out after a quiet second. */
static void on_kmsg_quiet(evutil_socket_t fd, short what, void *arg)
{
	struct agent *a = arg;
	struct kmsg_event ev;

	(void)fd;
	(void)what;
	if (kmsg_parser_flush(&a->kmsg, &ev) == 1)
		on_kernel_event(a, &ev);
}

static void on_kmsg(evutil_socket_t fd, short what, void *arg)
{
	static const struct timeval quiet = { .tv_sec = 1 };
	struct agent *a = arg;
	struct kmsg_event ev;
	char rec[8192];
	ssize_t n;

	(void)what;
	for (;;) {
		n = read(fd, rec, sizeof(rec));
		if (n < 0 && errno == EPIPE)
			continue; /* the kernel overwrote records; the seq gap counts them */
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (size_t off = 0, len; off < (size_t)n; off += len) {
			len = kmsg_record_len(rec + off, (size_t)n - off);
			if (kmsg_parser_feed(&a->kmsg, rec + off, len, &ev) == 1)
				on_kernel_event(a, &ev);
		}
	}
	if (n < 0 && errno != EAGAIN) {
		log_error_errno(negative_errno(),
				"reading /dev/kmsg failed, no longer watching: %m");
		event_del(a->kmsg_ev);
	}
	if (a->kmsg.open)
		evtimer_add(a->kmsg_quiet, &quiet);
}

/* /dev/kmsg from now on: what came before this start is not news. */
static void watch_kmsg(struct agent *a)
{
	kmsg_parser_init(&a->kmsg, facts_kconfig_uint(&a->facts, "CONFIG_HZ"));
	a->kmsg_fd = rootfs_open(&a->rfs, "/dev/kmsg", O_RDONLY | O_NONBLOCK);
	if (a->kmsg_fd < 0) {
		log_warning_errno(a->kmsg_fd, "/dev/kmsg unreadable, lockups go unseen: %m");
		return;
	}
	lseek(a->kmsg_fd, 0, SEEK_END);
	a->kmsg_ev = event_new(a->base, a->kmsg_fd, EV_READ | EV_PERSIST, on_kmsg, a);
	a->kmsg_quiet = evtimer_new(a->base, on_kmsg_quiet, a);
	if (a->kmsg_ev && a->kmsg_quiet)
		event_add(a->kmsg_ev, NULL);
}

static void close_kmemdev(struct agent *a)
{
	if (a->dev_ev)
		event_free(a->dev_ev);
	a->dev_ev = NULL;
	if (a->dev_fd >= 0)
		close(a->dev_fd);
	a->dev_fd = -1;
}

static void on_kmemdev(evutil_socket_t fd, short what, void *arg)
{
	struct kmemctl_event recs[32];
	struct agent *a = arg;
	ssize_t n;
	size_t i;
	int kind;

	(void)what;
	for (;;) {
		n = read(fd, recs, sizeof(recs));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (i = 0; i + sizeof(recs[0]) <= (size_t)n; i += sizeof(recs[0])) {
			kind = events_add_record(a->events, (const char *)recs + i, sizeof(recs[0]),
						 &a->dev_next_seq);
			if (kind == KMEMCTL__V1__EVENT_KIND__EVENT_KIND_TRIP)
				on_trip(a,
					kmemctl_mitigation_name(recs[i / sizeof(recs[0])].source));
		}
	}
	/* the module went away (unloaded): look for it again at the next report */
	if (n == 0 || (n < 0 && errno != EAGAIN)) {
		log_warning("/dev/kmemctl closed (%s); reopening at the next report",
			    n == 0 ? "end of stream" : strerror(errno));
		close_kmemdev(a);
	}
}

/* kmemctl.ko's own events: threshold crossings, trips, livepatch stalls. */
static void watch_kmemdev(struct agent *a)
{
	if (a->dev_fd >= 0 || a->once)
		return;
	a->dev_fd = rootfs_open(&a->rfs, "/dev/kmemctl", O_RDONLY | O_NONBLOCK);
	if (a->dev_fd < 0)
		return;
	a->dev_ev = event_new(a->base, a->dev_fd, EV_READ | EV_PERSIST, on_kmemdev, a);
	if (!a->dev_ev || event_add(a->dev_ev, NULL) < 0) {
		close_kmemdev(a);
		return;
	}
	log_info("reading kmemctl.ko's events from /dev/kmemctl");
}

static void on_child(evutil_socket_t fd, short what, void *arg)
{
	struct agent *a = arg;
	struct privsep_result res;
	enum privsep_type type;
	ssize_t n;

	(void)what;
	for (;;) {
		n = privsep_recv(fd, PRIVSEP_PARENT, &a->child, &type, a->buf, PRIVSEP_MAX_PAYLOAD);
		if (n == -EAGAIN)
			return;
		if (n == -EBADMSG || n == -EPERM) {
			log_error_errno((int)n, "message from the network child refused: %m");
			continue;
		}
		if (n < 0 || type == 0) {
			if (n < 0)
				log_error_errno((int)n, "the network child's channel broke: %m");
			else
				log_error("the network child closed its channel");
			a->exit_code = EXIT_ERROR;
			event_base_loopexit(a->base, NULL);
			return;
		}
		if (type == PRIVSEP_RESULT) {
			memcpy(&res, a->buf, sizeof(res));
			on_result(a, &res);
		} else if (type == PRIVSEP_POLICY) {
			run_policy(a, a->buf, (size_t)n, "kmemd");
		}
	}
}

static void on_sigchld(evutil_socket_t fd, short what, void *arg)
{
	struct agent *a = arg;
	int status;

	(void)fd;
	(void)what;
	if (a->child.pid <= 0 || waitpid(a->child.pid, &status, WNOHANG) != a->child.pid)
		return;
	log_error("the network child exited (status %d)", status);
	a->child.pid = 0;
	a->exit_code = EXIT_ERROR;
	event_base_loopexit(a->base, NULL);
}

static const char *const outcome_names[] = {
	[UPLINK_ACKED] = "acknowledged",
	[UPLINK_REFUSED] = "refused",
	[UPLINK_UNREACHABLE] = "unreachable",
};

/* The agent's own state, beside the last report, for `kmemctl status`. */
static json_t *agent_json(const struct agent *a)
{
	const char *last = "none yet";
	json_t *guard = json_array();
	size_t i;

	for (i = 0; guard && i < a->guard.n; i++)
		json_array_append_new(guard, json_string(a->guard.armed[i].id));
	if (!a->cfg->server)
		last = "none: standalone, no [agent] server";
	else if (a->result.seq && a->result.outcome < ARRAY_SIZE(outcome_names) &&
		 outcome_names[a->result.outcome])
		last = outcome_names[a->result.outcome];
	return json_pack("{s:s, s:b, s:s?, s:{s:s, s:I}, s:o*, s:O, s:{s:s, s:I, s:I, s:I}}",
			 "version", KMEMCTL_VERSION, "disabled", a->disabled, "off", off_reason(a),
			 "policy", "name", a->policy.name, "version", (json_int_t)a->policy.version,
			 "guard", guard, "recent_events", a->recent, "kmemd", "last", last,
			 "acked_seq", (json_int_t)a->result.acked_seq, "spooled",
			 (json_int_t)a->result.spooled, "dropped", (json_int_t)a->result.dropped);
}

/* {"ok": true, "agent": ..., "report": ...}: the report as kmemd got it. */
static json_t *status_json(const struct agent *a)
{
	Kmemctl__V1__Report *rep = NULL;
	json_t *o;

	if (a->last_len)
		rep = kmemctl__v1__report__unpack(NULL, a->last_len, a->last);
	o = json_pack("{s:b, s:o*, s:o*}", "ok", 1, "agent", agent_json(a), "report",
		      rep ? pbjson_from_message(&rep->base) : json_null());
	if (rep)
		kmemctl__v1__report__free_unpacked(rep, NULL);
	return o;
}

static void ctl_drop(struct agent *a, struct ctl_client *c)
{
	struct ctl_client **p;

	for (p = &a->clients; *p && *p != c; p = &(*p)->next)
		;
	if (*p)
		*p = c->next;
	event_free(c->ev);
	close(c->fd);
	free(c);
}

/* Never blocks: a client too slow to take a message loses it. */
static void ctl_send(struct ctl_client *c, json_t *msg)
{
	char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;

	if (text && send(c->fd, text, strlen(text), MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		log_debug("control client fd %d missed a message: %m", c->fd);
	free(text);
	json_decref(msg);
}

static void ctl_error(struct ctl_client *c, const char *why)
{
	ctl_send(c, json_pack("{s:b, s:s}", "ok", 0, "error", why));
}

static void ctl_broadcast(struct agent *a)
{
	struct ctl_client *c;

	for (c = a->clients; c; c = c->next)
		if (c->watch)
			ctl_send(c, status_json(a));
}

/* A local override: the policy path, journal and guard included, no signature. */
static void ctl_set(struct agent *a, struct ctl_client *c, const struct policy_doc *doc)
{
	struct policy_version local = { .name = "local" };
	struct policy_outcome out[2 * POLICY_MAX_ENTRIES];
	json_t *outcomes = json_array();
	bool ok = true;
	size_t n = 0, i;
	int r;

	if (off_reason(a)) {
		char why[128];

		json_decref(outcomes);
		snprintf(why, sizeof(why), "applying nothing under %s", off_reason(a));
		ctl_error(c, why);
		return;
	}
	r = policy_apply(&a->rfs, a->state_dirfd, doc, NULL, out, &n);
	for (i = 0; i < n; i++) {
		json_array_append_new(outcomes,
				      json_pack("{s:s, s:s, s:s}", "id", out[i].id, "result",
						result_names[out[i].result], "why", out[i].why));
		ok &= out[i].result != POLICY_FAILED;
		if (i >= doc->nmitigations || out[i].result != POLICY_APPLIED)
			continue;
		set_source(a, out[i].id, KMEMCTL__V1__MODE_SOURCE__MODE_SOURCE_LOCAL);
		audit(LOG_NOTICE, MID_MITIGATION_APPLIED, out[i].id, &local,
		      mode_names[doc->mitigations[i].mode], NULL, "local override: %s %s",
		      out[i].id, mode_names[doc->mitigations[i].mode]);
		if (doc->mitigations[i].mode == POLICY_MODE_ON)
			guard_arm(&a->guard, out[i].id, mono_ms());
		else if (doc->mitigations[i].mode == POLICY_MODE_OFF)
			guard_disarm(&a->guard, out[i].id);
	}
	if (r < 0) {
		json_decref(outcomes);
		ctl_error(c, "writing the intent journal failed; nothing more applied");
		return;
	}
	ctl_send(c, json_pack("{s:b, s:o}", "ok", ok, "outcomes", outcomes));
}

#define SWITCH_FILE "disabled"

/*
 * The local kill switch. Off: kept on disk first (a crash right after
 * must not turn it back on), then every mitigation off. On: removed, and
 * the last known good policy applied again.
 */
static void ctl_switch(struct agent *a, struct ctl_client *c, bool off)
{
	static const char note[] = "kmemctl disable\n";
	unsigned k, n = 0;
	int r;

	if (a->disabled) {
		ctl_error(c, "kmemctl.disable=1 is on the kernel command line: it rules");
		return;
	}
	if (off == a->switched_off) {
		ctl_send(c, json_pack("{s:b, s:b}", "ok", 1, "changed", 0));
		return;
	}
	r = off ? statefile_replace(a->state_dirfd, SWITCH_FILE, note, sizeof(note) - 1) :
	    unlinkat(a->state_dirfd, SWITCH_FILE, 0) < 0 && errno != ENOENT ? negative_errno() :
									      0;
	if (r < 0) {
		log_error_errno(r, "recording the kill switch failed: %m");
		ctl_error(c, "recording the kill switch in the state directory failed");
		return;
	}
	a->switched_off = off;
	if (off) {
		for (k = 0; k < KMEMCTL_MIT_COUNT; k++) {
			const char *id = kmemctl_mitigation_name(k);

			r = kernel_set_mode(&a->rfs, id, false);
			if (r == -ENOENT)
				continue;
			if (r < 0)
				log_error_errno(r, "kill switch: turning %s off failed: %m", id);
			guard_disarm(&a->guard, id);
			set_source(a, id, KMEMCTL__V1__MODE_SOURCE__MODE_SOURCE_LOCAL);
			n++;
		}
		audit(LOG_WARNING, MID_KILL_SWITCH, NULL, &a->policy, "off", NULL,
		      "kill switch: %u mitigations turned off; nothing is applied until "
		      "`kmemctl enable`",
		      n);
	} else {
		audit(LOG_NOTICE, MID_KILL_SWITCH, NULL, &a->policy, "on", NULL,
		      "kill switch released: applying the last known good policy again");
		a->policy = (struct policy_version){ 0 };
		start_policy(a);
	}
	ctl_send(c, json_pack("{s:b, s:b}", "ok", 1, "changed", 1));
}

static void on_ctl_read(evutil_socket_t fd, short what, void *arg)
{
	struct ctl_client *c = arg;
	struct agent *a = c->a;
	struct ctl_request req;
	char why[256];
	ssize_t n;

	(void)what;
	n = recv(fd, a->buf, CTL_MAX_MSG, MSG_DONTWAIT | MSG_TRUNC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		ctl_drop(a, c);
		return;
	}
	if (c->denied) {
		ctl_error(c, "permission denied: root or group " CTL_GROUP " only");
		return;
	}
	if ((size_t)n > CTL_MAX_MSG) {
		ctl_error(c, "request too large");
		return;
	}
	if (ctl_parse_request((const char *)a->buf, (size_t)n, &req, why, sizeof(why)) < 0) {
		ctl_error(c, why);
		return;
	}
	switch (req.cmd) {
	case CTL_STATUS:
		ctl_send(c, status_json(a));
		break;
	case CTL_SET:
		ctl_set(a, c, &req.doc);
		break;
	case CTL_WATCH:
		c->watch = true;
		ctl_send(c, json_pack("{s:b}", "ok", 1));
		break;
	case CTL_DISABLE:
	case CTL_ENABLE:
		ctl_switch(a, c, req.cmd == CTL_DISABLE);
		break;
	}
}

static void on_ctl_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
			  int salen, void *arg)
{
	struct agent *a = arg;
	struct ucred cred = { .uid = (uid_t)-1 };
	socklen_t len = sizeof(cred);
	struct ctl_client *c;
	int sndbuf = CTL_MAX_MSG * 2;
	bool denied;

	(void)l;
	(void)sa;
	(void)salen;
	denied = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ||
		 !ctl_peer_allowed(&cred, a->ctl_group);
	if (denied)
		log_notice("control socket: uid %d refused (root or group " CTL_GROUP " only)",
			   (int)cred.uid);
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return;
	}
	*c = (struct ctl_client){ .a = a, .fd = fd, .denied = denied, .next = a->clients };
	c->ev = event_new(a->base, fd, EV_READ | EV_PERSIST, on_ctl_read, c);
	if (!c->ev || event_add(c->ev, NULL) < 0) {
		if (c->ev)
			event_free(c->ev);
		close(fd);
		free(c);
		return;
	}
	a->clients = c;
}

/* The control socket; the agent runs on without it when it cannot be made. */
static void ctl_start(struct agent *a)
{
	struct group *gr = getgrnam(CTL_GROUP);
	int fd;

	a->ctl_group = gr ? gr->gr_gid : (gid_t)-1;
	fd = ctl_listen(a->cfg->control, a->ctl_group);
	if (fd < 0) {
		log_error_errno(fd, "control socket '%s' unavailable: %m", a->cfg->control);
		return;
	}
	a->ctl = evconnlistener_new(a->base, on_ctl_accept, a, LEV_OPT_CLOSE_ON_FREE, -1, fd);
	if (!a->ctl) {
		close(fd);
		log_error("control socket '%s': no listener", a->cfg->control);
		return;
	}
	log_info("control socket at '%s'", a->cfg->control);
}

static void ctl_stop(struct agent *a)
{
	while (a->clients)
		ctl_drop(a, a->clients);
	if (a->ctl)
		evconnlistener_free(a->ctl);
	a->ctl = NULL;
}

static void report_done(struct agent *a, unsigned done)
{
	a->round_open = false;
	if (send_report(a, done) < 0 && a->once) {
		a->exit_code = EXIT_ERROR;
		event_base_loopexit(a->base, NULL);
	}
}

/* Each interval: a collector round, reported when it ends or at its deadline. */
static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct timeval tv = {
		.tv_sec = (time_t)(((struct agent *)arg)->cfg->collector_timeout_ms / 1000),
		.tv_usec = (suseconds_t)(((struct agent *)arg)->cfg->collector_timeout_ms % 1000) *
			   1000
	};
	struct agent *a = arg;

	(void)fd;
	(void)what;
	watch_kmemdev(a);
	if (a->round_open)
		report_done(a, collect_done(a->col));
	if (collect_start(a->col) == -EBUSY) {
		/* still stuck since an earlier round: report without waiting again */
		report_done(a, 0);
		return;
	}
	a->round_open = true;
	evtimer_add(a->deadline, &tv);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct agent *a = arg;

	(void)fd;
	(void)what;
	if (a->round_open)
		report_done(a, collect_done(a->col));
}

static void on_collected(evutil_socket_t fd, short what, void *arg)
{
	struct agent *a = arg;
	uint64_t n;

	(void)what;
	if (read(fd, &n, sizeof(n)) < 0)
		return;
	/* a late round's end, after its report went out, is not news */
	if (a->round_open && collect_done(a->col) == (1U << COLLECT_N) - 1) {
		evtimer_del(a->deadline);
		report_done(a, collect_done(a->col));
	}
}

static int loop(struct agent *a)
{
	struct timeval tv = { .tv_sec = (time_t)(a->cfg->interval_ms / 1000),
			      .tv_usec = (suseconds_t)(a->cfg->interval_ms % 1000) * 1000 };
	struct shutdown_signals sigs = { 0 };
	int r;

	r = shutdown_signals_add(a->base, &sigs);
	if (r < 0)
		return r;
	a->timer = event_new(a->base, -1, a->once ? 0 : EV_PERSIST, on_timer, a);
	/* standalone: no network child */
	if (a->fd >= 0)
		a->rd = event_new(a->base, a->fd, EV_READ | EV_PERSIST, on_child, a);
	a->chld = evsignal_new(a->base, SIGCHLD, on_sigchld, a);
	a->hup = evsignal_new(a->base, SIGHUP, on_sighup, a);
	a->col_ev = event_new(a->base, a->col->efd, EV_READ | EV_PERSIST, on_collected, a);
	a->deadline = evtimer_new(a->base, on_deadline, a);
	if (!a->timer || (a->fd >= 0 && !a->rd) || !a->chld || !a->hup || !a->col_ev ||
	    !a->deadline) {
		r = -ENOMEM;
		goto out;
	}
	event_add(a->timer, &tv);
	if (a->rd)
		event_add(a->rd, NULL);
	event_add(a->chld, NULL);
	event_add(a->hup, NULL);
	event_add(a->col_ev, NULL);
	if (!a->once) {
		watch_kmsg(a);
		ctl_start(a);
	}
	event_active(a->timer, EV_TIMEOUT, 0);
	/* a collector stuck in the kernel does not stop the pings: a restart would not free it */
	a->watchdog = watchdog_start(a->base);
	sd_notify(0, "READY=1");
	if (!a->cfg->server)
		sd_notify(0, "STATUS=standalone: no [agent] server, no reports sent");
	if (event_base_dispatch(a->base) < 0)
		r = -EIO;
out:
	shutdown_signals_free(&sigs);
	if (a->timer)
		event_free(a->timer);
	if (a->rd)
		event_free(a->rd);
	if (a->chld)
		event_free(a->chld);
	if (a->hup)
		event_free(a->hup);
	if (a->col_ev)
		event_free(a->col_ev);
	if (a->deadline)
		event_free(a->deadline);
	if (a->watchdog)
		event_free(a->watchdog);
	if (a->kmsg_ev)
		event_free(a->kmsg_ev);
	if (a->kmsg_quiet)
		event_free(a->kmsg_quiet);
	if (a->kmsg_fd >= 0)
		close(a->kmsg_fd);
	close_kmemdev(a);
	ctl_stop(a);
	return r;
}

static bool cmdline_disabled(const struct rootfs *rfs)
{
	char cmdline[4096];

	return rootfs_read(rfs, "/proc/cmdline", cmdline, sizeof(cmdline)) >= 0 &&
	       facts_cmdline_disable(cmdline);
}

/* Who the network child runs as: the configured user when root, else us. */
static int child_user(const struct agent_config *cfg, uid_t *uid, gid_t *gid)
{
	struct passwd *pw;

	if (geteuid() != 0) {
		*uid = geteuid();
		*gid = getegid();
		log_notice("not running as root: the network child keeps uid %u", (unsigned)*uid);
		return 0;
	}
	pw = getpwnam(cfg->user);
	if (!pw)
		return log_error_errno(-ESRCH, "user '%s' for the network child does not exist",
				       cfg->user);
	if (pw->pw_uid == 0)
		return log_error_errno(-EPERM, "the network child may not run as root ('%s')",
				       cfg->user);
	*uid = pw->pw_uid;
	*gid = pw->pw_gid;
	return 0;
}

/* state_dir for the parent, and its spool/ owned by the child's user. */
static int prepare_state(struct agent *a, uid_t uid, gid_t gid, char *spool, size_t len)
{
	snprintf(spool, len, "%s/spool", a->cfg->state_dir);
	if (mkdir(a->cfg->state_dir, 0755) < 0 && errno != EEXIST)
		return log_error_errno(negative_errno(), "creating '%s' failed: %m",
				       a->cfg->state_dir);
	a->state_dirfd = open(a->cfg->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (a->state_dirfd < 0)
		return log_error_errno(negative_errno(), "opening '%s' failed: %m",
				       a->cfg->state_dir);
	/* standalone: nothing is spooled */
	if (!a->cfg->server)
		return 0;
	if (mkdir(spool, 0700) < 0 && errno != EEXIST)
		return log_error_errno(negative_errno(), "creating '%s' failed: %m", spool);
	if (geteuid() == 0 && chown(spool, uid, gid) < 0)
		return log_error_errno(negative_errno(), "handing '%s' to uid %u failed: %m", spool,
				       (unsigned)uid);
	return 0;
}

static int start_child(struct agent *a, uid_t uid, gid_t gid, const char *spool)
{
	struct privsep_peer parent = { .pid = getpid(), .uid = geteuid() };
	int fds[2], r;
	pid_t pid;

	r = privsep_pair(fds);
	if (r < 0)
		return log_error_errno(r, "creating the child's channel failed: %m");
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		r = negative_errno();
		close(fds[0]);
		close(fds[1]);
		return log_error_errno(r, "fork failed: %m");
	}
	if (pid == 0) {
		close(fds[0]);
		/* nothing of the parent's root view stays in the child */
		rootfs_close(&a->rfs);
		if (a->state_dirfd >= 0)
			close(a->state_dirfd);
		r = session_main(a->cfg, fds[1], &parent, spool, a->once, uid, gid);
		_exit(r < 0 ? EXIT_ERROR : EXIT_OK);
	}
	close(fds[1]);
	a->fd = fds[0];
	a->child = (struct privsep_peer){ .pid = pid, .uid = uid };
	return 0;
}

/*
 * A collector stuck in the kernel still reads the agent's rootfs, config
 * and collector state: the process ends here, without freeing them.
 */
_noreturn_ static void abandon(const struct agent *a)
{
	int running = collect_running(a->col);

	log_warning("collector %s is stuck in the kernel: exiting without freeing what it reads",
		    running >= 0 ? collect_name(running) : "?");
	fflush(NULL);
	_exit(a->once ? a->exit_code : (a->exit_code == EXIT_ERROR ? EXIT_ERROR : EXIT_OK));
}

static int run(const struct agent_config *cfg, const char *root, bool once)
{
	struct agent a = { .cfg = cfg,
			   .once = once,
			   .exit_code = EXIT_UNREACHABLE,
			   .fd = -1,
			   .state_dirfd = -1,
			   .kmsg_fd = -1,
			   .dev_fd = -1 };
	char spool[4096] = "";
	uid_t uid = 0;
	gid_t gid = 0;
	int r;

	signal(SIGPIPE, SIG_IGN);
	if (once && !cfg->server)
		return log_error("-o sends a report to kmemd: [agent] server is not set"),
		       EXIT_ERROR;
	r = rootfs_open_root(&a.rfs, root);
	if (r < 0)
		return log_error_errno(r, "cannot open root '%s': %m", root ? root : "/"),
		       EXIT_ERROR;
	a.buf = malloc(PRIVSEP_MAX_PAYLOAD);
	a.last = malloc(PRIVSEP_MAX_PAYLOAD);
	a.recent = json_array();
	a.col = malloc(sizeof(*a.col));
	if (a.col)
		a.col->efd = -1;
	a.telemetry = malloc(sizeof(*a.telemetry));
	if (a.telemetry)
		telemetry_init(a.telemetry);
	a.events = malloc(sizeof(*a.events));
	if (a.events)
		events_init(a.events);
	a.started_ms = mono_ms();
	if (!a.buf || !a.last || !a.recent || !a.col || !a.telemetry || !a.events ||
	    (cfg->server && child_user(cfg, &uid, &gid) < 0) ||
	    (!once && prepare_state(&a, uid, gid, spool, sizeof(spool)) < 0)) {
		a.exit_code = EXIT_ERROR;
		goto out;
	}
	r = keyring_load_dir(&a.keys, cfg->keys_dir);
	if (r < 0 && r != -ENOENT)
		log_warning_errno(r, "pinned keys in '%s' unreadable, every policy is refused: %m",
				  cfg->keys_dir);
	guard_init(&a.guard, cfg->guard_window_ms);
	a.disabled = cmdline_disabled(&a.rfs);
	if (a.disabled)
		log_notice("kmemctl.disable=1 on the kernel command line: applying nothing");
	a.switched_off = !once && faccessat(a.state_dirfd, SWITCH_FILE, F_OK, 0) == 0;
	if (a.switched_off)
		log_notice("the local kill switch is on (kmemctl disable): applying nothing");
	if (!once) {
		/* a fixture tree has no kernel to load a module into */
		if (!root)
			load_module(&a);
		load_seq(&a, spool);
		start_policy(&a);
		local_policy(&a);
	}
	/* before the loop: a report always has the host's facts, if old ones */
	r = facts_collect(&a.rfs, cfg, &a.facts);
	if (r < 0) {
		log_error_errno(r, "collecting host facts failed: %m");
		a.exit_code = EXIT_ERROR;
		goto out;
	}
	if (!cfg->server) {
		log_notice("no [agent] server: running standalone, without the network child; "
			   "reports are made for kmemctl status but not sent");
	} else if (start_child(&a, uid, gid, spool) < 0) {
		a.exit_code = EXIT_ERROR;
		goto out;
	}
	/* after the fork: the child has no use for the thread */
	r = collect_init(a.col, &a.rfs, cfg);
	if (r < 0) {
		log_error_errno(r, "starting the collector thread failed: %m");
		a.exit_code = EXIT_ERROR;
		goto out;
	}
	a.base = event_base_new();
	if (!a.base || loop(&a) < 0)
		a.exit_code = EXIT_ERROR;
out:
	if (a.child.pid > 0) {
		kill(a.child.pid, SIGTERM);
		waitpid(a.child.pid, NULL, 0);
	}
	if (a.fd >= 0)
		close(a.fd);
	if (a.col && collect_stop(a.col, cfg->collector_timeout_ms) == -EBUSY)
		abandon(&a);
	if (a.state_dirfd >= 0)
		close(a.state_dirfd);
	if (a.base)
		event_base_free(a.base);
	keyring_free(&a.keys);
	if (a.col)
		collect_free(a.col);
	free(a.col);
	free(a.telemetry);
	free(a.events);
	free(a.buf);
	free(a.last);
	json_decref(a.recent);
	rootfs_close(&a.rfs);
	return once ? a.exit_code : (a.exit_code == EXIT_ERROR ? EXIT_ERROR : EXIT_OK);
}

int main(int argc, char **argv)
{
	const char *path = AGENT_CONF, *root = NULL;
	enum conf_check check = CONF_RUN;
	struct agent_config cfg;
	bool verbose = false, debug = false, once = false;
	int c, r;

	log_setup("kmem-agent", LOG_TARGET_AUTO);
	while ((c = getopt(argc, argv, "c:r:ondvVh")) != -1) {
		switch (c) {
		case 'c':
			path = optarg;
			break;
		case 'r':
			root = optarg;
			break;
		case 'o':
			once = true;
			break;
		case 'n':
			check = CONF_CHECK;
			break;
		case 'v':
			verbose = true;
			break;
		case 'd':
			debug = true;
			break;
		case 'V':
			printf("kmem-agent %s\n", KMEMCTL_VERSION);
			return EXIT_OK;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (check == CONF_CHECK && verbose)
		check = CONF_CHECK_PRINT;
	agent_config_defaults(&cfg);
	r = conf_load(agent_options, agent_n_options, &cfg, path, check == CONF_RUN, check);
	log_set_max_level(debug ? LOG_DEBUG : cfg.log_level);
	if (r < 0)
		r = EXIT_ERROR;
	else if (check == CONF_RUN)
		r = run(&cfg, root, once);
	else if (!cfg.server)
		log_notice("no [agent] server: the agent will run standalone, sending no reports");
	ini_free(agent_options, agent_n_options, &cfg);
	return r;
}

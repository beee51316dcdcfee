// SPDX-License-Identifier: GPL-2.0
/*
 * Each interval's report: a collector round (collect.c) under its
 * deadline, then a Report of what came in time, handed to the network
 * child to send and to the control process to show.
 */
#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exit-codes.h"
#include "hist.h"
#include "log.h"
#include "macro.h"
#include "parent.h"
#include "kmemctl/v1/report.pb-c.h"
#include "spool.h"
#include "statefile.h"

/* What a Report points to while it is built, beside the parent's own state. */
struct parts {
	Kmemctl__V1__KconfigEntry kv[FACTS_KCONFIG_MAX], *kvp[FACTS_KCONFIG_MAX];
	Kmemctl__V1__HostFacts__LabelsEntry *lv, **lvp;
	Kmemctl__V1__HostFacts hf;
	Kmemctl__V1__Pressure pressure;
	Kmemctl__V1__Histogram memstat_pb;
	uint64_t memstat_counts[HIST_BUCKETS];
	char why[COLLECT_N][96], *failed[COLLECT_N];
};

/*
 * Report seqs go on across restarts: kmemd tells gaps from duplicates by
 * them, and the spool keeps reports in seq order.
 */
void load_seq(struct agent *a, const char *spool)
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

/* Why nothing is applied, as a report says it. */
static Kmemctl__V1__Off report_off(enum privsep_off off)
{
	switch (off) {
	case PRIVSEP_OFF_CMDLINE:
		return KMEMCTL__V1__OFF__OFF_CMDLINE;
	case PRIVSEP_OFF_SWITCH:
		return KMEMCTL__V1__OFF__OFF_LOCAL;
	case PRIVSEP_OFF_FLEET:
		return KMEMCTL__V1__OFF__OFF_FLEET_STOP;
	default:
		return KMEMCTL__V1__OFF__OFF_NONE;
	}
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
 * Facts that did not come in time are the last ones that did; the first
 * are read at start.
 */
static int add_facts(struct agent *a, unsigned done, Kmemctl__V1__Report *rep, struct parts *p)
{
	size_t nl = a->cfg->labels.n ?: 1;

	if (got(a, done, COLLECT_FACTS))
		a->facts = a->col->out.facts;
	p->lv = calloc(nl, sizeof(*p->lv));
	p->lvp = calloc(nl, sizeof(*p->lvp));
	if (!p->lv || !p->lvp)
		return -ENOMEM;
	facts_to_pb(&a->facts, a->cfg, &p->hf, p->kv, p->kvp, p->lv, p->lvp);
	rep->facts = &p->hf;
	return 0;
}

static void add_module(struct agent *a, unsigned done, Kmemctl__V1__Report *rep)
{
	struct collect_out *o = &a->col->out;
	size_t i;

	if (got(a, done, COLLECT_STATES)) {
		for (i = 0; i < o->states.n; i++)
			o->states.pb[i].source = source_of(o->states.pb[i].id, a);
		rep->n_mitigations = o->states.n;
		rep->mitigations = o->states.pbp;
		/* kmemd keeps the build file, for the record an operator makes of it */
		rep->n_waiting_for_record = o->states.nwaiting;
		rep->waiting_for_record = o->states.waiting;
		if (o->states.build_file[0])
			rep->build_file = o->states.build_file;
		monitor_round(a, &o->states);
		if (o->states.unreadable)
			log_warning("%zu mitigations of kmemctl.ko did not parse; left out",
				    o->states.unreadable);
	}
	if (got(a, done, COLLECT_PROBES)) {
		telemetry_update(a->telemetry, &o->probes, rep->unix_ms);
		rep->n_probes = a->telemetry->n;
		rep->probes = a->telemetry->samplesp;
		if (o->probes.unreadable)
			log_warning("%zu probes of kmemctl.ko did not parse; left out",
				    o->probes.unreadable);
	}
}

static void add_host(struct agent *a, unsigned done, Kmemctl__V1__Report *rep, struct parts *p)
{
	struct collect_out *o = &a->col->out;
	struct hist memstat = { 0 };

	if (got(a, done, COLLECT_TLB))
		a->events->counters.tlb_shootdowns = o->tlb_shootdowns;
	if (got(a, done, COLLECT_PRESSURE)) {
		p->pressure.memory_some_avg10 = o->psi_some;
		p->pressure.memory_full_avg10 = o->psi_full;
		rep->pressure = &p->pressure;
	}
	if (got(a, done, COLLECT_MEMSTAT)) {
		hist_record(&memstat, o->memstat_ns);
		hist_to_pb(&memstat, &p->memstat_pb, p->memstat_counts);
		rep->memstat_read = &p->memstat_pb;
	}
	rep->n_collectors_failed = collector_failures(a, done, p->why, p->failed);
	rep->collectors_failed = p->failed;
	a->events->counters.uptime_ms = mono_ms() - a->started_ms;
	rep->counters = &a->events->counters;
	rep->n_events = a->events->n;
	rep->events = a->events->pbp;
}

/*
 * The report behind its seq, to the network child (unless standalone) and
 * to the control process. Once the child has it, the events are its to
 * keep.
 */
static int hand_over(struct agent *a, const Kmemctl__V1__Report *rep)
{
	size_t len = kmemctl__v1__report__get_packed_size(rep);
	int r = 0;

	if (len + sizeof(rep->seq) > PRIVSEP_MAX_PAYLOAD)
		return -EMSGSIZE;
	memcpy(a->buf, &rep->seq, sizeof(rep->seq));
	kmemctl__v1__report__pack(rep, a->buf + sizeof(rep->seq));
	if (a->network.fd >= 0)
		r = privsep_send(a->network.fd, PRIVSEP_REPORT, a->buf, len + sizeof(rep->seq));
	control_tell(a);
	control_report(a, a->buf, len + sizeof(rep->seq));
	if (r == 0)
		events_clear(a->events);
	return r;
}

/* The report of one round, with what the collectors in done found. */
static int send_report(struct agent *a, unsigned done)
{
	Kmemctl__V1__Report rep = KMEMCTL__V1__REPORT__INIT;
	struct parts p = { .pressure = KMEMCTL__V1__PRESSURE__INIT,
			   .memstat_pb = KMEMCTL__V1__HISTOGRAM__INIT };
	size_t i;
	int r;

	rep.seq = ++a->seq;
	if (!a->once)
		store_seq(a);
	rep.unix_ms = now_ms();
	rep.policy_name = a->policy.name;
	rep.policy_version = a->policy.version;
	rep.off = report_off(off_kind(a));
	r = add_facts(a, done, &rep, &p);
	if (r == 0) {
		add_module(a, done, &rep);
		add_host(a, done, &rep, &p);
		for (i = 0; i < rep.n_collectors_failed; i++)
			log_warning("report %llu: collector %s", (unsigned long long)rep.seq,
				    p.failed[i]);
		r = hand_over(a, &rep);
	}
	free(p.lv);
	free(p.lvp);
	if (r < 0)
		log_error_errno(r, "handing report %llu to the network child failed: %m",
				(unsigned long long)rep.seq);
	return r;
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
	struct agent *a = arg;
	struct timeval tv = { .tv_sec = (time_t)(a->cfg->collector_timeout_ms / 1000),
			      .tv_usec =
				      (suseconds_t)(a->cfg->collector_timeout_ms % 1000) * 1000 };

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
	a->round_ms = mono_ms();
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

int report_start(struct agent *a)
{
	struct timeval tv = { .tv_sec = (time_t)(a->cfg->interval_ms / 1000),
			      .tv_usec = (suseconds_t)(a->cfg->interval_ms % 1000) * 1000 };

	a->timer = event_new(a->base, -1, a->once ? 0 : EV_PERSIST, on_timer, a);
	a->col_ev = event_new(a->base, a->col->efd, EV_READ | EV_PERSIST, on_collected, a);
	a->deadline = evtimer_new(a->base, on_deadline, a);
	if (!a->timer || !a->col_ev || !a->deadline)
		return -ENOMEM;
	event_add(a->timer, &tv);
	event_add(a->col_ev, NULL);
	event_active(a->timer, EV_TIMEOUT, 0);
	return 0;
}

void report_stop(struct agent *a)
{
	if (a->timer)
		event_free(a->timer);
	if (a->col_ev)
		event_free(a->col_ev);
	if (a->deadline)
		event_free(a->deadline);
	a->timer = a->col_ev = a->deadline = NULL;
}

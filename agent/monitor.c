// SPDX-License-Identifier: GPL-2.0
/*
 * What the kernel says on the parent's loop: the lockup, stall and
 * hung-task reports of /dev/kmsg (kmsg.c assembles them), which the guard
 * judges, and kmemctl.ko's own records from /dev/kmemctl, whose trips are
 * quarantined. Both are read non-blocking; neither can stall the loop.
 * Each report round's mitigations add the trips whose records were lost
 * and the boot confirmations that are due.
 */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kernel.h"
#include "kmemctl-names.h"
#include "log.h"
#include "macro.h"
#include "message-ids.h"
#include "parent.h"
#include "uapi/kmemctl.h"

static const char *const kind_names[] = {
	[KMSG_SOFT_LOCKUP] = "soft lockup",
	[KMSG_HARD_LOCKUP] = "hard lockup",
	[KMSG_RCU_STALL] = "RCU stall",
	[KMSG_HUNG_TASK] = "hung task",
};

static bool trip_handled(const struct agent *a, const char *id)
{
	size_t i;

	for (i = 0; i < a->ntripped; i++)
		if (!strcmp(a->tripped[i], id))
			return true;
	return false;
}

/* id is no longer tripped (reset): its next trip is news. */
static void trip_forget(struct agent *a, const char *id)
{
	size_t i;

	for (i = 0; i < a->ntripped; i++)
		if (!strcmp(a->tripped[i], id)) {
			/* the last one moves into its place, unless it is the last */
			if (i != --a->ntripped)
				memcpy(a->tripped[i], a->tripped[a->ntripped],
				       sizeof(a->tripped[i]));
			return;
		}
}

static bool quarantined_now(struct agent *a, const char *id)
{
	char store[POLICY_MAX_ENTRIES][POLICY_ID_MAX + 1];
	const char *ids[POLICY_MAX_ENTRIES + 1];

	return policy_quarantine_list(a->state_dirfd, &a->policy, store, ids, ARRAY_SIZE(ids)) >=
		       0 &&
	       policy_listed(ids, id);
}

/*
 * kmemctl.ko's breaker turned id off by itself (why: the cause): it is
 * quarantined under the running policy, once per trip. A record read
 * again (a new reader starts at the oldest record held) of a mitigation
 * no longer tripped is old news; one still tripped that an earlier run
 * quarantined under this policy is too. A trip seen only in the state
 * (recorded false: the record was lost) is reported here.
 */
static void on_trip(struct agent *a, const char *id, const char *why, bool recorded)
{
	struct kernel_mitigation km;
	char msg[KMSG_MESSAGE_MAX];

	if (trip_handled(a, id) || a->ntripped == ARRAY_SIZE(a->tripped))
		return;
	if (recorded && kernel_read_mitigation(&a->rfs, id, &km) == 0 &&
	    km.state != KERNEL_STATE_TRIPPED)
		return;
	strcpy(a->tripped[a->ntripped++], id);
	if (quarantined_now(a, id)) {
		set_source(a, id, KMEMCTL__V1__MODE_SOURCE__MODE_SOURCE_QUARANTINE);
		guard_disarm(&a->guard, id);
		return;
	}
	quarantine(a, id, ENACT_TRIP, &a->policy, why);
	if (!recorded) {
		snprintf(msg, sizeof(msg), "%s tripped (its record was lost): %s", id, why);
		events_add(a->events, KMEMCTL__V1__EVENT_KIND__EVENT_KIND_TRIP, id, msg, now_ms());
	}
	control_tell(a);
}

/* The guard turns id off after a lockup of kind and quarantines it. */
static void revert(struct agent *a, const char *id, enum kmsg_kind kind)
{
	quarantine(a, id, ENACT_GUARD, &a->policy, kind_names[kind]);
	events_add(a->events, KMEMCTL__V1__EVENT_KIND__EVENT_KIND_GUARD_REVERT, id,
		   kind_names[kind], now_ms());
}

/* A report the kernel printed: logged, and the guard's to judge. */
static void on_kernel_event(struct agent *a, const struct kmsg_event *ev)
{
	char ids[GUARD_MAX][POLICY_ID_MAX + 1];
	size_t n, i;

	log_warning("kernel reported a %s on cpu %d, task %s:%d, at %s", kind_names[ev->kind],
		    ev->cpu, ev->comm[0] ? ev->comm : "?", ev->pid,
		    ev->nstack ? ev->stack[0] : "?");
	events_add_kmsg(a->events, ev, now_ms());
	n = guard_trip(&a->guard, ev->kind, mono_ms(), ids, GUARD_MAX);
	for (i = 0; i < n; i++)
		revert(a, ids[i], ev->kind);
	if (n)
		control_tell(a);
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
void watch_kmsg(struct agent *a)
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
			const struct kmemctl_event *rec = &recs[i / sizeof(recs[0])];

			kind = events_add_record(a->events, rec, sizeof(*rec), &a->dev_next_seq);
			if (kind == KMEMCTL__V1__EVENT_KIND__EVENT_KIND_TRIP)
				on_trip(a, kmemctl_mitigation_name(rec->source),
					events_trip_cause(rec->flags), true);
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
void watch_kmemdev(struct agent *a)
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

void monitor_stop(struct agent *a)
{
	if (a->kmsg_ev)
		event_free(a->kmsg_ev);
	if (a->kmsg_quiet)
		event_free(a->kmsg_quiet);
	a->kmsg_ev = a->kmsg_quiet = NULL;
	if (a->kmsg_fd >= 0)
		close(a->kmsg_fd);
	a->kmsg_fd = -1;
	close_kmemdev(a);
}

/* Pending boot confirmations whose window passed, with the mitigation still on. */
static void confirm_due(struct agent *a, const struct states *s)
{
	char done[CONFIRM_MAX][POLICY_ID_MAX + 1];
	static bool said;
	struct confirm c;
	size_t n, i;
	int r;

	r = confirm_load(a->state_dirfd, &c);
	if (r < 0) {
		if (!said)
			log_warning_errno(r, "the boot confirmation records are unreadable: %m");
		said = true;
		return;
	}
	if (!confirm_round(&c, a->enactor.boot_id, a->round_ms, a->guard.window_ms, s->km, s->n,
			   done, &n))
		return;
	r = confirm_save(a->state_dirfd, &c);
	if (r < 0) {
		log_warning_errno(r, "storing the boot confirmation records failed: %m");
		return;
	}
	for (i = 0; i < n; i++) {
		const struct confirm_entry *e = confirm_find(&c, done[i]);

		audit(LOG_NOTICE, MID_MITIGATION_CONFIRMED, e->id, &e->policy, "on", NULL,
		      "boot confirmation: %s confirmed: on for the guard window (%llu s) in this "
		      "boot",
		      e->id, (unsigned long long)(a->guard.window_ms / 1000));
	}
}

void monitor_round(struct agent *a, const struct states *s)
{
	size_t i;

	if (a->once)
		return;
	/* the records first: a trip they announce is not one whose record was lost */
	if (a->dev_fd >= 0)
		on_kmemdev(a->dev_fd, EV_READ, a);
	for (i = 0; i < s->n; i++) {
		if (s->km[i].state == KERNEL_STATE_TRIPPED)
			on_trip(a, s->km[i].id, s->km[i].reason, false);
		else
			trip_forget(a, s->km[i].id);
	}
	confirm_due(a, s);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * What the kernel says on the parent's loop: the lockup, stall and
 * hung-task reports of /dev/kmsg (kmsg.c assembles them), which the guard
 * judges, and kmemctl.ko's own records from /dev/kmemctl. Both are read
 * non-blocking; neither can stall the loop.
 */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "kernel.h"
#include "kmemctl-names.h"
#include "log.h"
#include "message-ids.h"
#include "parent.h"
#include "uapi/kmemctl.h"

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
	control_tell(a);
}

/* The guard turns id off after a lockup of kind and quarantines it. */
static void revert(struct agent *a, const char *id, enum kmsg_kind kind)
{
	int r = kernel_set_mode(&a->rfs, id, false);

	if (r < 0) {
		log_error_errno(r, "guard: reverting %s after a %s failed: %m", id,
				kind_names[kind]);
		return;
	}
	audit(LOG_WARNING, MID_GUARD_REVERT, id, &a->policy, "off", kind_names[kind],
	      "guard: %s reverted: a %s within %llu s of enabling it", id, kind_names[kind],
	      (unsigned long long)(a->guard.window_ms / 1000));
	set_source(a, id, KMEMCTL__V1__MODE_SOURCE__MODE_SOURCE_GUARD);
	events_add(a->events, KMEMCTL__V1__EVENT_KIND__EVENT_KIND_GUARD_REVERT, id,
		   kind_names[kind], now_ms());
	r = policy_quarantine_add(a->state_dirfd, id, &a->policy);
	if (r < 0)
		log_error_errno(r, "recording the quarantine of %s failed: %m", id);
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

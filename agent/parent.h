/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The root parent's state, shared by the files it runs:
 *   kmem-agent.c	setup, the loop, the children's messages
 *   report.c		collector rounds and each interval's report
 *   monitor.c		/dev/kmsg and /dev/kmemctl, the guard's reverts, trips,
 *			boot confirmation
 *   apply.c		policies, local overrides, the kill switch, quarantines
 *   enact.c		the one writer of mitigations (a library: unit tested)
 *   children.c		starting, restarting and reaping the network child
 *			and the control process
 * All of it runs on the parent's one loop; only the collector thread
 * (collect.c) runs beside it, on its own struct collect.
 */
#ifndef KMEM_AGENT_PARENT_H
#define KMEM_AGENT_PARENT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <event2/util.h>
#include <time.h>

#include "agent.h"
#include "collect.h"
#include "enact.h"
#include "events.h"
#include "facts.h"
#include "guard.h"
#include "kmsg.h"
#include "policy.h"
#include "privsep.h"
#include "rootfs.h"
#include "telemetry.h"

struct event;
struct event_base;

/* A child process and the parent's end of its channel. */
struct child {
	struct privsep_peer peer; /* pid 0: not running */
	int fd; /* -1: none */
	struct event *rd;
};

struct agent {
	const struct agent_config *cfg;
	struct rootfs rfs;
	struct event_base *base;
	struct event *timer, *chld, *hup;
	int state_dirfd;
	uid_t uid; /* the children's user */
	gid_t gid;
	struct child network; /* session.c; none when standalone */
	struct child control; /* control.c */
	int ctl_listen; /* the control socket, -1: none */
	struct event *ctl_restart;
	unsigned int ctl_failures; /* control processes that died young in a row */
	uint64_t ctl_started_ms; /* monotonic */
	struct keyring keys;
	struct policy_version policy;
	uint64_t seq;
	bool once;
	bool disabled; /* kmemctl.disable=1: apply nothing, report only */
	bool switched_off; /* `kmemctl disable`: mitigations off, apply nothing */
	bool fleet_stopped; /* kmemd's fleet stop: mitigations off, apply nothing */
	struct guard guard;
	struct enactor enactor; /* the only writer of mitigations */
	/* trips handled in this run, until a reset: each is quarantined once */
	char tripped[KERNEL_MAX_IDS][POLICY_ID_MAX + 1];
	size_t ntripped;
	struct kmsg_parser kmsg;
	int kmsg_fd;
	struct event *kmsg_ev, *kmsg_quiet;
	int dev_fd; /* /dev/kmemctl, -1 until the module is there */
	struct event *dev_ev;
	uint64_t dev_next_seq;
	struct collect *col;
	struct event *col_ev, *deadline;
	bool round_open; /* a collector round whose report has not gone out */
	uint64_t round_ms; /* monotonic, when that round started reading */
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
	struct privsep_result result; /* the network child's last word on kmemd */
};

static inline int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* apply.c */
enum privsep_off off_kind(const struct agent *a);
void set_source(struct agent *a, const char *id, Kmemctl__V1__ModeSource source);
Kmemctl__V1__ModeSource source_of(const char *id, void *arg);
void audit(int level, const char *mid, const char *mitigation, const struct policy_version *v,
	   const char *mode, const char *reason, const char *fmt, ...) _printf_(7, 8);
/*
 * id turned off through enact() for source and quarantined under v; why
 * is logged with it.
 */
void quarantine(struct agent *a, const char *id, enum enact_source source,
		const struct policy_version *v, const char *why);
int run_policy(struct agent *a, const uint8_t *buf, size_t len, const char *from);
void start_policy(struct agent *a);
void local_policy(struct agent *a);
/* kmemd's last policy, from disk, again: a build record admitted since lets it enact more. */
void stored_policy(struct agent *a);
bool switch_recorded(const struct agent *a);
/* Whether the last run was under the fleet stop: it holds until kmemd says otherwise. */
bool fleet_stop_recorded(const struct agent *a);
/*
 * kmemd's reply to a report said the fleet is stopped, or not: on the
 * change, every mitigation off and held (kept on disk first), or the last
 * known good policy again once nothing else holds.
 */
void apply_fleet_stop(struct agent *a, bool stopped);
/* A checked control request, answered in rep. */
void apply_request(struct agent *a, const struct privsep_request *req, struct privsep_reply *rep);

/* report.c */
void load_seq(struct agent *a, const char *spool);
int report_start(struct agent *a);
void report_stop(struct agent *a);

/* monitor.c */
void watch_kmsg(struct agent *a);
void watch_kmemdev(struct agent *a);
/*
 * A report round's mitigations, as the collector read them: trips the
 * module's records did not announce, and boot confirmations.
 */
void monitor_round(struct agent *a, const struct states *s);
void monitor_stop(struct agent *a);

/* children.c */
int network_start(struct agent *a, const char *spool);
void control_start(struct agent *a);
/* The control process broke the rules or went away: it is ended and restarted later. */
void control_lost(struct agent *a, const char *why);
int children_watch(struct agent *a);
void children_stop(struct agent *a);
/* To the control process, when it runs: the state, a report, a reply. */
void control_tell(struct agent *a);
void control_report(struct agent *a, const void *buf, size_t len);
void control_reply(struct agent *a, const struct privsep_reply *rep);

/* kmem-agent.c: the channels' dispatch */
void on_network(evutil_socket_t fd, short what, void *arg);
void on_control(evutil_socket_t fd, short what, void *arg);

#endif

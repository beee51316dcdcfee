// SPDX-License-Identifier: GPL-2.0
/*
 * The parent's children: the network child (session.c), forked once and
 * the agent's end when it ends (systemd starts the agent again), and the
 * control process (control.c), started again after a back-off when it
 * dies or breaks the channel's rules: the control socket serves local
 * operators, the kill switch among them, and a client that crashes it
 * must not take the agent down.
 *
 * A child is reaped before its channel and event are freed; at exit every
 * child is reaped before the parent frees anything.
 */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "control.h"
#include "exit-codes.h"
#include "log.h"
#include "macro.h"
#include "parent.h"
#include "session.h"

#define RESTART_MIN_MS 1000
#define RESTART_MAX_MS 60000
/* a control process that ran this long died of something new, not the last cause */
#define RESTART_SETTLED_MS 60000
/* how long a child may take to end on SIGTERM before SIGKILL */
#define STOP_GRACE_MS 2000

/* What waitpid() said, for the log. */
static void describe(int status, char *buf, size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS)
		snprintf(buf, len, "killed by SIGSYS: a system call outside its filter");
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %s", strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "ended (status %d)", status);
}

static void child_close(struct child *c)
{
	if (c->rd)
		event_free(c->rd);
	if (c->fd >= 0)
		close(c->fd);
	c->rd = NULL;
	c->fd = -1;
	c->peer.pid = 0;
}

int network_start(struct agent *a, const char *spool)
{
	struct privsep_peer parent = { .pid = getpid(), .uid = geteuid(), .side = PRIVSEP_PARENT };
	int fds[2], r;
	pid_t pid;

	r = privsep_pair(fds);
	if (r < 0)
		return log_error_errno(r, "creating the network child's channel failed: %m");
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
		/* nothing of the parent's root view, nor the control socket, stays in the child */
		rootfs_close(&a->rfs);
		if (a->state_dirfd >= 0)
			close(a->state_dirfd);
		if (a->ctl_listen >= 0)
			close(a->ctl_listen);
		r = session_main(a->cfg, fds[1], &parent, spool, a->once, a->uid, a->gid);
		_exit(r < 0 ? EXIT_ERROR : EXIT_OK);
	}
	close(fds[1]);
	a->network.fd = fds[0];
	a->network.peer =
		(struct privsep_peer){ .pid = pid, .uid = a->uid, .side = PRIVSEP_NETWORK };
	return 0;
}

/*
 * The environment of the control process: the parent's, less what
 * belongs to the parent alone (systemd's notification socket and
 * watchdog, the passed sockets).
 */
static void control_env(char **env, size_t max)
{
	static const char *const drop[] = { "NOTIFY_SOCKET=", "WATCHDOG_", "LISTEN_" };
	size_t n = 0, i, k;
	bool keep;

	for (i = 0; environ[i] && n + 1 < max; i++) {
		keep = true;
		for (k = 0; k < ARRAY_SIZE(drop); k++)
			keep &= strncmp(environ[i], drop[k], strlen(drop[k])) != 0;
		if (keep)
			env[n++] = environ[i];
	}
	env[n] = NULL;
}

/*
 * In the forked child: the listening socket becomes fd 3 and the channel
 * fd 4, and the agent's own binary runs anew as the control process, so
 * that nothing of the parent's memory and no other descriptor of its
 * (all are close-on-exec) is there. Only async-signal-safe calls: the
 * parent may have threads.
 */
_noreturn_ static void control_exec(int listen_fd, int fd, char **argv, char **env)
{
	int l = fcntl(listen_fd, F_DUPFD_CLOEXEC, 10);
	int c = fcntl(fd, F_DUPFD_CLOEXEC, 10);

	if (l >= 0 && c >= 0 && dup2(l, CONTROL_LISTEN_FD) == CONTROL_LISTEN_FD &&
	    dup2(c, CONTROL_CHANNEL_FD) == CONTROL_CHANNEL_FD)
		execve("/proc/self/exe", argv, env);
	_exit(EXIT_ERROR);
}

static int control_fork(struct agent *a, int fd)
{
	char arg[64], *argv[] = { "kmem-agent", "-X", arg, NULL }, *env[256];
	pid_t pid;

	snprintf(arg, sizeof(arg), "%u:%u:%d:%d", (unsigned)a->uid, (unsigned)a->gid,
		 log_get_max_level(), !a->cfg->server);
	control_env(env, ARRAY_SIZE(env));
	fflush(NULL);
	pid = fork();
	if (pid == 0)
		control_exec(a->ctl_listen, fd, argv, env);
	return pid < 0 ? negative_errno() : pid;
}

void control_start(struct agent *a)
{
	int fds[2], r;
	pid_t pid;

	if (a->ctl_listen < 0 || a->control.peer.pid > 0)
		return;
	r = privsep_pair(fds);
	if (r < 0) {
		log_error_errno(r, "creating the control process's channel failed: %m");
		return;
	}
	pid = control_fork(a, fds[1]);
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		log_error_errno(pid, "starting the control process failed: %m");
		return;
	}
	a->control.fd = fds[0];
	a->control.peer =
		(struct privsep_peer){ .pid = pid, .uid = a->uid, .side = PRIVSEP_CONTROL };
	a->control.rd = event_new(a->base, fds[0], EV_READ | EV_PERSIST, on_control, a);
	if (a->control.rd)
		event_add(a->control.rd, NULL);
	a->ctl_started_ms = mono_ms();
	log_info("control socket at '%s' (control process %d)", a->cfg->control, (int)pid);
	control_tell(a);
}

static void on_restart(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	control_start(arg);
}

/* The control process ended: its channel goes, and another starts after a back-off. */
static void control_reaped(struct agent *a, int status)
{
	unsigned int shift = a->ctl_failures < 6 ? a->ctl_failures : 6;
	uint64_t ms = (uint64_t)RESTART_MIN_MS << shift;
	struct timeval tv;
	char how[96];

	if (mono_ms() - a->ctl_started_ms >= RESTART_SETTLED_MS) {
		a->ctl_failures = 0;
		ms = RESTART_MIN_MS;
	}
	if (ms > RESTART_MAX_MS)
		ms = RESTART_MAX_MS;
	a->ctl_failures++;
	describe(status, how, sizeof(how));
	log_error("the control process %s; starting another in %llu s", how,
		  (unsigned long long)(ms / 1000));
	child_close(&a->control);
	tv = (struct timeval){ .tv_sec = (time_t)(ms / 1000) };
	evtimer_add(a->ctl_restart, &tv);
}

static void reap_control(struct agent *a)
{
	int status;

	if (a->control.peer.pid > 0 &&
	    waitpid(a->control.peer.pid, &status, WNOHANG) == a->control.peer.pid)
		control_reaped(a, status);
}

void control_lost(struct agent *a, const char *why)
{
	if (a->control.peer.pid <= 0)
		return;
	log_error("control process %d: %s; ending it", (int)a->control.peer.pid, why);
	if (a->control.rd)
		event_del(a->control.rd);
	kill(a->control.peer.pid, SIGKILL);
	/* it may have been gone before SIGCHLD was watched */
	reap_control(a);
}

static void on_sigchld(evutil_socket_t fd, short what, void *arg)
{
	struct agent *a = arg;
	char how[96];
	int status;

	(void)fd;
	(void)what;
	reap_control(a);
	if (a->network.peer.pid <= 0 ||
	    waitpid(a->network.peer.pid, &status, WNOHANG) != a->network.peer.pid)
		return;
	describe(status, how, sizeof(how));
	log_error("the network child %s", how);
	a->network.peer.pid = 0;
	a->exit_code = EXIT_ERROR;
	event_base_loopexit(a->base, NULL);
}

int children_watch(struct agent *a)
{
	a->chld = evsignal_new(a->base, SIGCHLD, on_sigchld, a);
	a->ctl_restart = evtimer_new(a->base, on_restart, a);
	if (!a->chld || !a->ctl_restart)
		return -ENOMEM;
	event_add(a->chld, NULL);
	if (a->network.fd < 0)
		return 0;
	a->network.rd = event_new(a->base, a->network.fd, EV_READ | EV_PERSIST, on_network, a);
	if (!a->network.rd)
		return -ENOMEM;
	event_add(a->network.rd, NULL);
	return 0;
}

/* SIGTERM, then SIGKILL after a grace period; reaped either way. */
static void stop(struct child *c)
{
	struct timespec tick = { .tv_nsec = 10 * 1000000 };
	int i;

	if (c->peer.pid > 0) {
		kill(c->peer.pid, SIGTERM);
		for (i = 0; i < STOP_GRACE_MS / 10; i++) {
			if (waitpid(c->peer.pid, NULL, WNOHANG) == c->peer.pid)
				break;
			nanosleep(&tick, NULL);
		}
		if (i == STOP_GRACE_MS / 10) {
			kill(c->peer.pid, SIGKILL);
			waitpid(c->peer.pid, NULL, 0);
		}
	}
	child_close(c);
}

void children_stop(struct agent *a)
{
	stop(&a->control);
	stop(&a->network);
	if (a->chld)
		event_free(a->chld);
	if (a->ctl_restart)
		event_free(a->ctl_restart);
	a->chld = a->ctl_restart = NULL;
}

/* A control process that does not take what it is sent is stuck or hostile. */
static void control_send(struct agent *a, enum privsep_type type, const void *data, size_t len)
{
	int r;

	if (a->control.fd < 0 || !a->control.rd || !event_pending(a->control.rd, EV_READ, NULL))
		return;
	r = privsep_send(a->control.fd, type, data, len);
	if (r == -EAGAIN)
		control_lost(a, "it does not read its channel");
	else if (r < 0)
		control_lost(a, "its channel broke");
}

void control_tell(struct agent *a)
{
	struct privsep_state st = { .off = off_kind(a),
				    .policy_version = a->policy.version,
				    .result = a->result };
	size_t i;

	/* a running policy's name is 1 to POLICY_NAME_MAX long (policy_check()) */
	memcpy(st.policy_name, a->policy.name, sizeof(st.policy_name) - 1);
	for (i = 0; i < a->guard.n && i < GUARD_MAX; i++)
		memcpy(st.guard[st.nguard++], a->guard.armed[i].id, sizeof(st.guard[0]));
	control_send(a, PRIVSEP_STATE, &st, sizeof(st));
}

void control_report(struct agent *a, const void *buf, size_t len)
{
	control_send(a, PRIVSEP_REPORT, buf, len);
}

void control_reply(struct agent *a, const struct privsep_reply *rep)
{
	control_send(a, PRIVSEP_REPLY, rep, sizeof(*rep));
}

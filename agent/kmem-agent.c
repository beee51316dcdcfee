// SPDX-License-Identifier: GPL-2.0
/*
 * kmem-agent: the root parent, as bgpd's bgpd.c: setup, the loop, and the
 * messages of its two children.
 *
 * The parent keeps root and does only what needs it: it reads the host
 * through the root prefix, builds each interval's report (report.c),
 * watches the kernel's reports (monitor.c) and applies signed policies
 * and checked local requests to kmemctl.ko (apply.c). Everything that
 * talks to the network runs in a child under the agent's own user
 * (session.c), sandboxed (sandbox.c); everything that talks to local
 * clients runs in another (control.c). Both speak to the parent over
 * checked channels (privsep.c), and neither can ask of it more than to
 * consider a signed policy (the network child) or to apply a checked
 * request of a user the control process let in (the control process).
 */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "builds.h"
#include "conf.h"
#include "control.h"
#include "ctl.h"
#include "evloop.h"
#include "exit-codes.h"
#include "kernel.h"
#include "hostcert.h"
#include "log.h"
#include "macro.h"
#include "module.h"
#include "parent.h"
#include "uapi/kmemctl.h"
#include "uplink.h"

/* the bundles kmemd handed on, under [agent] state_dir */
#define KMEMD_BUILDS "builds"

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

/*
 * kmemctl.ko is loaded before any policy runs. Not under kmemctl.disable=1:
 * loading it installs its livepatch, which already changes the kernel.
 */
static void load_module(const struct agent *a)
{
	char why[320];
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
	if (r >= 0 && r != KMEMCTL_ABI) {
		log_error("kmemctl.ko speaks ABI %d, this agent %d: it turns nothing on and tunes "
			  "nothing until the two are upgraded together",
			  r, KMEMCTL_ABI);
		return;
	}
	/* the module fingerprints the build's functions only once it has them */
	r = kernel_write_sites(&a->rfs, why, sizeof(why));
	if (r < 0)
		log_error_errno(r,
				"the build's patch sites: %s; mitigations with copies stay "
				"unsupported",
				why);
}

/*
 * The operator's bundles ([agent] builds) and those kmemd handed on (in the
 * agent's state); true when the module took a record.
 */
static bool admit_builds(struct agent *a)
{
	_cleanup_free_ char *kmemd = NULL;
	struct builds_tally t = builds_admit(&a->rfs, &a->keys, a->cfg->builds_dir, time(NULL));

	if (asprintf(&kmemd, "%s/" KMEMD_BUILDS, a->cfg->state_dir) >= 0)
		t.admitted += builds_admit(&a->rfs, &a->keys, kmemd, time(NULL)).admitted;
	return t.admitted > 0;
}

/* The policies again, once a record admitted: the mitigations it verified can go on. */
static void policies_again(struct agent *a)
{
	stored_policy(a);
	local_policy(a);
}

/* A record kmemd handed on: kept, and the builds admitted again when it is new. */
static void build_from_kmemd(struct agent *a, const uint8_t *buf, size_t len)
{
	_cleanup_free_ char *dir = NULL;

	if (asprintf(&dir, "%s/" KMEMD_BUILDS, a->cfg->state_dir) < 0) {
		log_error("kmemd's build record dropped: out of memory");
		return;
	}
	if (builds_keep(&a->keys, dir, buf, len, time(NULL)) == 1 && admit_builds(a))
		policies_again(a);
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
		apply_fleet_stop(a, res->fleet_stop);
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

/* What the network child says: kmemd's results, its signed policies, a renewed certificate. */
void on_network(evutil_socket_t fd, short what, void *arg)
{
	struct agent *a = arg;
	struct privsep_result res;
	enum privsep_type type;
	ssize_t n;

	(void)what;
	for (;;) {
		n = privsep_recv(fd, PRIVSEP_PARENT, &a->network.peer, &type, a->buf,
				 PRIVSEP_MAX_PAYLOAD);
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
		} else if (type == PRIVSEP_CERT) {
			if (hostcert_keep(a->cfg, a->buf, (size_t)n) == 0)
				log_notice("the renewed host certificate is kept in '%s'",
					   a->cfg->cert);
		} else if (type == PRIVSEP_BUILD_RECORD) {
			build_from_kmemd(a, a->buf, (size_t)n);
		} else {
			run_policy(a, a->buf, (size_t)n, "kmemd");
		}
		control_tell(a);
	}
}

/* One checked request from the control process, answered after the state it changed. */
static void on_request(struct agent *a, const void *buf)
{
	_cleanup_free_ struct privsep_request *req = malloc(sizeof(*req));
	_cleanup_free_ struct privsep_reply *rep = malloc(sizeof(*rep));

	if (!req || !rep) {
		log_error("control request dropped: out of memory");
		return;
	}
	memcpy(req, buf, sizeof(*req));
	if (privsep_check_request(req) < 0) {
		control_lost(a, "it sent a malformed request");
		return;
	}
	apply_request(a, req, rep);
	control_tell(a);
	control_reply(a, rep);
}

/*
 * What the control process says: only requests (the table allows no other
 * type from it). Anything else ends it, and another is started later.
 */
void on_control(evutil_socket_t fd, short what, void *arg)
{
	struct agent *a = arg;
	enum privsep_type type;
	ssize_t n;

	(void)what;
	while (a->control.fd == fd) {
		n = privsep_recv(fd, PRIVSEP_PARENT, &a->control.peer, &type, a->buf,
				 PRIVSEP_MAX_PAYLOAD);
		if (n == -EAGAIN)
			return;
		if (n == -EBADMSG || n == -EPERM) {
			control_lost(a, "it sent a message the channel's table refuses");
			return;
		}
		if (n <= 0 || type == 0) {
			control_lost(a, n < 0 ? "its channel broke" : "it closed its channel");
			return;
		}
		on_request(a, a->buf);
	}
}

static void on_sighup(evutil_socket_t fd, short what, void *arg)
{
	struct agent *a = arg;

	(void)fd;
	(void)what;
	log_info("SIGHUP: reading the build records and the policy file again");
	if (admit_builds(a))
		stored_policy(a);
	local_policy(a);
	control_tell(a);
}

static int loop(struct agent *a)
{
	struct shutdown_signals sigs = { 0 };
	struct event *watchdog;
	int r;

	r = shutdown_signals_add(a->base, &sigs);
	if (r == 0)
		r = report_start(a);
	a->hup = evsignal_new(a->base, SIGHUP, on_sighup, a);
	if (r == 0 && (!a->hup || event_add(a->hup, NULL) < 0))
		r = -ENOMEM;
	if (r < 0) {
		shutdown_signals_free(&sigs);
		return r;
	}
	stop_signals_hold(false);
	if (!a->once)
		watch_kmsg(a);
	/* a collector stuck in the kernel does not stop the pings: a restart would not free it */
	watchdog = watchdog_start(a->base);
	sd_notify(0, "READY=1");
	if (!a->cfg->server)
		sd_notify(0, "STATUS=standalone: no [agent] server, no reports sent");
	if (event_base_dispatch(a->base) < 0)
		r = -EIO;
	shutdown_signals_free(&sigs);
	if (watchdog)
		event_free(watchdog);
	return r;
}

static bool cmdline_disabled(const struct rootfs *rfs)
{
	char cmdline[4096];

	return rootfs_read(rfs, "/proc/cmdline", cmdline, sizeof(cmdline)) >= 0 &&
	       facts_cmdline_disable(cmdline);
}

/* Who the children run as: the configured user when root, else us. */
static int child_user(const struct agent_config *cfg, uid_t *uid, gid_t *gid)
{
	struct passwd *pw;

	if (geteuid() != 0) {
		*uid = geteuid();
		*gid = getegid();
		log_notice("not running as root: the agent's children keep uid %u", (unsigned)*uid);
		return 0;
	}
	pw = getpwnam(cfg->user);
	if (!pw)
		return log_error_errno(-ESRCH, "user '%s' for the agent's children does not exist",
				       cfg->user);
	if (pw->pw_uid == 0)
		return log_error_errno(-EPERM, "the agent's children may not run as root ('%s')",
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

/*
 * The control socket, made (or taken from systemd) while root; without it,
 * or without a user to serve it as, the agent runs on without one.
 */
static void open_control(struct agent *a, bool have_user)
{
	struct group *gr = getgrnam(CTL_GROUP);

	if (!have_user) {
		log_error("control socket '%s' unavailable: no user to serve it as",
			  a->cfg->control);
		return;
	}
	a->ctl_listen = ctl_listen(a->cfg->control, gr ? gr->gr_gid : (gid_t)-1);
	if (a->ctl_listen < 0)
		log_error_errno(a->ctl_listen, "control socket '%s' unavailable: %m",
				a->cfg->control);
}

static int allocate(struct agent *a)
{
	a->buf = malloc(PRIVSEP_MAX_PAYLOAD);
	a->col = malloc(sizeof(*a->col));
	if (a->col)
		a->col->efd = -1;
	a->telemetry = malloc(sizeof(*a->telemetry));
	if (a->telemetry)
		telemetry_init(a->telemetry);
	a->events = malloc(sizeof(*a->events));
	if (a->events)
		events_init(a->events);
	return a->buf && a->col && a->telemetry && a->events ? 0 : -ENOMEM;
}

/* What the previous run left, the kill switches, the module and the stored policies. */
static void restore(struct agent *a, const char *root, const char *spool)
{
	int r;

	r = keyring_load_dir(&a->keys, a->cfg->keys_dir);
	if (r < 0 && r != -ENOENT)
		log_warning_errno(r, "pinned keys in '%s' unreadable, every policy is refused: %m",
				  a->cfg->keys_dir);
	guard_init(&a->guard, a->cfg->guard_window_ms);
	a->enactor = (struct enactor){ .rfs = &a->rfs, .state_dirfd = a->state_dirfd };
	r = confirm_boot_id(&a->rfs, a->enactor.boot_id, sizeof(a->enactor.boot_id));
	if (r < 0 && !a->once)
		log_error_errno(r, "this boot's id is unreadable: no mitigation is turned on, and "
				   "any still new from before counts as from an earlier boot: %m");
	a->disabled = cmdline_disabled(&a->rfs);
	if (a->disabled)
		log_notice("kmemctl.disable=1 on the kernel command line: applying nothing");
	if (a->once)
		return;
	a->switched_off = switch_recorded(a);
	if (a->switched_off)
		log_notice("the local kill switch is on (kmemctl disable): applying nothing");
	a->fleet_stopped = fleet_stop_recorded(a);
	if (a->fleet_stopped)
		log_notice("kmemd's fleet stop held when the agent last ran: applying nothing "
			   "until kmemd says it is over");
	/* a fixture tree has no kernel to load a module into */
	if (!root)
		load_module(a);
	/* a mitigation a record verifies can then go on under the policies below */
	admit_builds(a);
	load_seq(a, spool);
	start_policy(a);
	local_policy(a);
}

/*
 * The network child is forked before the loop and the collector thread
 * exist: it inherits neither. The control process runs a new image.
 */
static int start(struct agent *a, const char *spool)
{
	int r;

	if (!a->cfg->server)
		log_notice("no [agent] server: running standalone, without the network child; "
			   "reports are made for kmemctl status but not sent");
	else if (network_start(a, spool) < 0)
		return -ECHILD;
	a->base = event_base_new();
	if (!a->base)
		return -ENOMEM;
	r = children_watch(a);
	if (r < 0)
		return r;
	control_start(a);
	r = collect_init(a->col, &a->rfs, a->cfg);
	if (r < 0)
		return log_error_errno(r, "starting the collector thread failed: %m");
	return 0;
}

/*
 * A collector stuck in the kernel still reads the agent's rootfs, config
 * and collector state: the process ends here, without freeing them.
 */
_noreturn_ static void abandon(const struct agent *a, int code)
{
	int running = collect_running(a->col);

	log_warning("collector %s is stuck in the kernel: exiting without freeing what it reads",
		    running >= 0 ? collect_name(running) : "?");
	fflush(NULL);
	_exit(code);
}

/*
 * Children first (reaped before their channels go), then the collector
 * thread (joined before what it reads goes), then the rest.
 */
static void teardown(struct agent *a, int code)
{
	children_stop(a);
	if (a->col && collect_stop(a->col, a->cfg->collector_timeout_ms) == -EBUSY)
		abandon(a, code);
	report_stop(a);
	monitor_stop(a);
	if (a->hup)
		event_free(a->hup);
	if (a->ctl_listen >= 0)
		close(a->ctl_listen);
	if (a->state_dirfd >= 0)
		close(a->state_dirfd);
	if (a->base)
		event_base_free(a->base);
	keyring_free(&a->keys);
	if (a->col)
		collect_free(a->col);
	free(a->col);
	free(a->telemetry);
	free(a->events);
	free(a->buf);
	rootfs_close(&a->rfs);
}

static int exit_code(const struct agent *a)
{
	if (a->once)
		return a->exit_code;
	return a->exit_code == EXIT_ERROR ? EXIT_ERROR : EXIT_OK;
}

static int run(const struct agent_config *cfg, const char *root, bool once)
{
	struct agent a = { .cfg = cfg,
			   .once = once,
			   .exit_code = EXIT_UNREACHABLE,
			   .network = { .fd = -1 },
			   .control = { .fd = -1 },
			   .ctl_listen = -1,
			   .state_dirfd = -1,
			   .kmsg_fd = -1,
			   .dev_fd = -1 };
	char spool[4096] = "";
	bool have_user;
	int r;

	signal(SIGPIPE, SIG_IGN);
	if (once && !cfg->server)
		return log_error("-o sends a report to kmemd: [agent] server is not set"),
		       EXIT_ERROR;
	r = rootfs_open_root(&a.rfs, root);
	if (r < 0)
		return log_error_errno(r, "cannot open root '%s': %m", root ? root : "/"),
		       EXIT_ERROR;
	a.started_ms = mono_ms();
	have_user = child_user(cfg, &a.uid, &a.gid) == 0;
	if (allocate(&a) < 0 || (cfg->server && !have_user) ||
	    (!once && prepare_state(&a, a.uid, a.gid, spool, sizeof(spool)) < 0)) {
		a.exit_code = EXIT_ERROR;
		goto out;
	}
	restore(&a, root, spool);
	/* before the loop: a report always has the host's facts, if old ones */
	r = facts_collect(&a.rfs, cfg, &a.facts);
	if (r < 0) {
		log_error_errno(r, "collecting host facts failed: %m");
		a.exit_code = EXIT_ERROR;
		goto out;
	}
	if (!once)
		open_control(&a, have_user);
	if (start(&a, spool) < 0 || loop(&a) < 0)
		a.exit_code = EXIT_ERROR;
out:
	teardown(&a, exit_code(&a));
	return exit_code(&a);
}

int main(int argc, char **argv)
{
	const char *path = AGENT_CONF, *root = NULL;
	enum conf_check check = CONF_RUN;
	struct agent_config cfg;
	bool verbose = false, debug = false, once = false;
	int c, r;

	log_setup("kmem-agent", LOG_TARGET_AUTO);
	while ((c = getopt(argc, argv, "c:r:ondvVhX:")) != -1) {
		switch (c) {
		case 'X':
			return control_main(optarg);
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
	/* a stop from here on ends the agent by its own exit; before, nothing has begun */
	stop_signals_hold(true);
	agent_config_defaults(&cfg);
	r = conf_load(agent_options, agent_n_options, &cfg, path, check == CONF_RUN, check);
	if (r == 0)
		r = agent_config_check(&cfg);
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

// SPDX-License-Identifier: GPL-2.0
/*
 * kmem-agent: process setup, the report timer and the event loop.
 *
 * Each interval the agent collects host facts through the root prefix,
 * encodes a Report and sends it to kmemd with its host certificate.
 */
#include <errno.h>
#include <event2/event.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include "agent.h"
#include "conf.h"
#include "evloop.h"
#include "exit-codes.h"
#include "facts.h"
#include "log.h"
#include "macro.h"
#include "rootfs.h"
#include "uplink.h"

struct agent {
	const struct agent_config *cfg;
	struct rootfs rfs;
	struct event_base *base;
	struct event *timer;
	struct uplink *up;
	uint64_t seq;
	bool once;
	int exit_code;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: kmem-agent [-d] [-o] [-n [-v]] [-c FILE] [-r DIR]\n"
		"  -c FILE  configuration file (default " AGENT_CONF ", plus FILE.d/*.conf)\n"
		"  -r DIR   read /proc, /sys, /boot below DIR instead of / (fixture trees)\n"
		"  -n       check the configuration and exit; with -v print it normalized\n"
		"  -o       send one report, then exit: 0 acknowledged, 3 unreachable, 4 refused\n"
		"  -d       log debug messages\n"
		"  -V       print the version\n");
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void on_done(enum uplink_result res, const Kmemctl__V1__ReportReply *rr, void *arg)
{
	struct agent *a = arg;

	switch (res) {
	case UPLINK_ACKED:
		log_debug("report %llu acknowledged", (unsigned long long)rr->acked_seq);
		sd_notifyf(0, "STATUS=report %llu acknowledged", (unsigned long long)rr->acked_seq);
		a->exit_code = EXIT_OK;
		break;
	case UPLINK_REFUSED:
		log_warning("kmemd refused report %llu: %s", (unsigned long long)a->seq,
			    rr && rr->reason ? rr->reason : "no reason given");
		a->exit_code = EXIT_REFUSED;
		break;
	case UPLINK_UNREACHABLE:
		log_warning("kmemd at '%s' is unreachable", a->cfg->server);
		a->exit_code = EXIT_UNREACHABLE;
		break;
	}
	if (a->once)
		event_base_loopexit(a->base, NULL);
}

static int send_report(struct agent *a)
{
	Kmemctl__V1__KconfigEntry kv[FACTS_KCONFIG_MAX], *kvp[FACTS_KCONFIG_MAX];
	Kmemctl__V1__HostFacts__LabelsEntry *lv, **lvp;
	Kmemctl__V1__Report rep = KMEMCTL__V1__REPORT__INIT;
	Kmemctl__V1__HostFacts hf;
	_cleanup_free_ uint8_t *buf = NULL;
	struct facts f;
	size_t len, nl = a->cfg->labels.n ?: 1;
	int r;

	r = facts_collect(&a->rfs, a->cfg, &f);
	if (r < 0)
		return log_error_errno(r, "collecting host facts failed: %m");
	lv = calloc(nl, sizeof(*lv));
	lvp = calloc(nl, sizeof(*lvp));
	if (!lv || !lvp) {
		free(lv);
		free(lvp);
		return -ENOMEM;
	}
	facts_to_pb(&f, a->cfg, &hf, kv, kvp, lv, lvp);
	rep.seq = ++a->seq;
	rep.unix_ms = now_ms();
	rep.facts = &hf;
	len = kmemctl__v1__report__get_packed_size(&rep);
	buf = malloc(len);
	if (buf)
		kmemctl__v1__report__pack(&rep, buf);
	free(lv);
	free(lvp);
	if (!buf)
		return -ENOMEM;
	r = uplink_send(a->up, buf, len);
	if (r == -EBUSY)
		log_warning("report %llu skipped: the previous one is still in flight",
			    (unsigned long long)a->seq);
	else if (r < 0)
		log_error_errno(r, "sending report %llu failed: %m", (unsigned long long)a->seq);
	return r;
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct agent *a = arg;

	(void)fd;
	(void)what;
	if (send_report(a) < 0 && a->once) {
		a->exit_code = EXIT_ERROR;
		event_base_loopexit(a->base, NULL);
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
	if (!a->timer) {
		r = -ENOMEM;
		goto out;
	}
	event_add(a->timer, &tv);
	event_active(a->timer, EV_TIMEOUT, 0);
	sd_notify(0, "READY=1");
	if (event_base_dispatch(a->base) < 0)
		r = -EIO;
out:
	shutdown_signals_free(&sigs);
	if (a->timer)
		event_free(a->timer);
	return r;
}

static int run(const struct agent_config *cfg, const char *root, bool once)
{
	struct agent a = { .cfg = cfg, .once = once, .exit_code = EXIT_UNREACHABLE };
	int r;

	signal(SIGPIPE, SIG_IGN);
	r = rootfs_open_root(&a.rfs, root);
	if (r < 0)
		return log_error_errno(r, "cannot open root '%s': %m", root ? root : "/"),
		       EXIT_ERROR;
	a.base = event_base_new();
	if (!a.base || uplink_new(a.base, cfg, on_done, &a, &a.up) < 0) {
		a.exit_code = EXIT_ERROR;
		goto out;
	}
	if (loop(&a) < 0)
		a.exit_code = EXIT_ERROR;
out:
	uplink_free(a.up);
	if (a.base)
		event_base_free(a.base);
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
	ini_free(agent_options, agent_n_options, &cfg);
	return r;
}

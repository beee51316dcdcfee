// SPDX-License-Identifier: GPL-2.0
/* kmemd: the central daemon. Process setup, signals and the event loop. */
#include <errno.h>
#include <event2/event.h>
#include <getopt.h>
#include <openssl/rand.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "builds.h"
#include "conf.h"
#include "desired.h"
#include "evloop.h"
#include "engine-worker.h"
#include "ingest-worker.h"
#include "kmemd.h"
#include "fleet-stop.h"
#include "notify.h"
#include "operators.h"
#include "log.h"
#include "macro.h"
#include "names.h"
#include "series-worker.h"
#include "server.h"
#include "revocations.h"
#include "message-ids.h"
#include "store-migrate.h"
#include "store.h"

static void usage(FILE *out)
{
	fprintf(out, "usage: kmemd [-d] [-n [-v]] [-c FILE]\n"
		     "       kmemd [-c FILE] migrate [SQLITE-FILE POSTGRESQL-URL]\n"
		     "       kmemd -r | -V | -h\n"
		     "  -c FILE  configuration file (default " KMEMD_CONF ", plus FILE.d/*.conf)\n"
		     "  -n       check the configuration and exit; with -v print it normalized\n"
		     "  -d       log debug messages\n"
		     "  -r       print the routes: method, path, role, flags, audit action\n"
		     "  -V       print the version\n"
		     "  -h       print this usage and exit\n"
		     "  migrate  copy a SQLite store into an empty PostgreSQL one, with kmemd\n"
		     "           stopped (default: from [store] path to [store] url)\n");
}

/* kmemd migrate [FROM TO]: the configuration's stores when not given. */
static int migrate(const struct kmemd_config *cfg, int argc, char **argv)
{
	const char *from = cfg->store_path, *to = cfg->store_url;
	char err[512];
	int r;

	if (argc == 2) {
		from = argv[0];
		to = argv[1];
	} else if (argc != 0) {
		usage(stderr);
		return 2;
	}
	if (!to) {
		log_error("migrate: no PostgreSQL store: set [store] url, or give both stores");
		return 1;
	}
	r = store_migrate(from, to, stdout, err, sizeof(err));
	if (r < 0) {
		log_error("migrate: %s", err);
		return 1;
	}
	printf("copied %s into PostgreSQL\n", from);
	return 0;
}

struct reload {
	struct kmemd *k;
	struct server *srv;
	const char *path;
	bool debug;
	struct kmemd_config *cfg; /* the one in use, when a reload made it */
};

static void load_keys(struct keyring *keys, const struct kmemd_config *cfg)
{
	int r = keyring_load_dir(keys, cfg->keys_dir);

	if (r < 0 && r != -ENOENT)
		log_warning_errno(r, "policy keys in '%s' unreadable: %m", cfg->keys_dir);
	if (!keys->n && cfg->require_signature)
		log_warning("no policy keys in '%s': every signed policy will be refused",
			    cfg->keys_dir);
}

/*
 * SIGHUP: the configuration, the certificates and the policy keys again.
 * A configuration that does not load, or certificates that do not, leave
 * everything as it was. The listen address and the store need a restart.
 */
static void on_sighup(evutil_socket_t fd, short what, void *arg)
{
	struct reload *rl = arg;
	struct kmemd_config *cfg = malloc(sizeof(*cfg));
	const struct kmemd_config *old = rl->k->cfg;
	struct keyring keys = { 0 };
	const char *fields[] = { NULL };
	int r;

	(void)fd;
	(void)what;
	sd_notify(0, "RELOADING=1");
	if (!cfg)
		goto out;
	kmemd_config_defaults(cfg);
	r = conf_load(kmemd_options, kmemd_n_options, cfg, rl->path, true, CONF_RUN);
	if (r == 0)
		r = kmemd_config_check(cfg);
	if (r == 0 && (strcmp(cfg->listen, old->listen) ||
		       strcmp(kmemd_store_where(cfg), kmemd_store_where(old))))
		log_warning("listen and store changes take a restart; kept '%s' and the store",
			    old->listen);
	if (r == 0) {
		free(cfg->listen);
		free(cfg->store_path);
		free(cfg->store_url);
		cfg->listen = strdup(old->listen);
		cfg->store_path = strdup(old->store_path);
		cfg->store_url = old->store_url ? strdup(old->store_url) : NULL;
	}
	if (r == 0 && cfg->listen && cfg->store_path && (cfg->store_url || !old->store_url))
		r = server_reload(rl->srv, cfg);
	else if (r == 0)
		r = -ENOMEM;
	if (r < 0) {
		log_error("reload failed; running on with the configuration as it was");
		ini_free(kmemd_options, kmemd_n_options, cfg);
		free(cfg);
		goto out;
	}
	ingest_worker_set_wait(rl->k->ingest, cfg->batch_wait_ms);
	/* posts under way hold the notifier: a new one comes with a restart */
	if ((cfg->webhook || rl->k->cfg->webhook) &&
	    (!cfg->webhook || !rl->k->cfg->webhook || strcmp(cfg->webhook, rl->k->cfg->webhook)))
		log_notice("[notify] webhook changed: it takes effect when kmemd restarts");
	load_keys(&keys, cfg);
	keyring_free(rl->k->keys);
	*rl->k->keys = keys;
	rl->k->cfg = cfg;
	names_set_limits(rl->k->names,
			 &(struct names_limits){ .fleet = (unsigned)cfg->names_max,
						 .host = (unsigned)cfg->host_names_max });
	log_set_max_level(rl->debug ? LOG_DEBUG : cfg->log_level);
	if (rl->cfg) {
		ini_free(kmemd_options, kmemd_n_options, rl->cfg);
		free(rl->cfg);
	}
	rl->cfg = cfg;
	log_event(LOG_NOTICE, MID_CONFIG_RELOADED, fields,
		  "configuration, certificates and policy keys reloaded from '%s'", rl->path);
out:
	sd_notify(0, "READY=1");
}

/*
 * Telemetry upkeep, at start and every 10 minutes, by the kmemd that runs
 * the rollout engine: what is past [store] retention goes, and per-report
 * samples and counters past raw_retention become hourly. The rollup runs a few hosts per loop turn, so reports
 * and admin calls are served in between.
 */
struct upkeep {
	struct kmemd *k;
	struct event *tick, *step;
	char cursor[STORE_ID_MAX];
	int64_t before_ms;
	uint64_t rows;
	bool running; /* a rollup pass, between its steps */
};

#define UPKEEP_HOSTS 16

static void on_upkeep_step(evutil_socket_t fd, short what, void *arg)
{
	struct upkeep *u = arg;
	struct store *st = u->k->store;
	uint64_t rows;
	int r;

	(void)fd;
	(void)what;
	r = st->ops->rollup(st, u->before_ms, u->cursor, UPKEEP_HOSTS, &rows);
	u->rows += rows;
	if (r == 1) {
		event_active(u->step, EV_TIMEOUT, 0);
		return;
	}
	u->running = false;
	if (r < 0)
		log_error("rolling telemetry up into hours failed after host '%s': %s", u->cursor,
			  st->ops->error(st));
	else if (u->rows)
		log_info("rolled %llu rows of telemetry older than the raw retention up into hours",
			 (unsigned long long)u->rows);
}

static void on_upkeep(evutil_socket_t fd, short what, void *arg)
{
	struct upkeep *u = arg;
	struct store *st = u->k->store;
	int64_t now = kmemd_now_ms();
	uint64_t rows;
	int r;

	(void)fd;
	(void)what;
	/* one kmemd of those on a store keeps it, the engine's: the others would redo its work */
	if (!u->k->engine_leader)
		return;
	r = st->ops->expire(st, now - (int64_t)u->k->cfg->retention_ms, &rows);
	if (r < 0)
		log_error("expiring telemetry failed: %s", st->ops->error(st));
	else if (rows)
		log_info("expired %llu rows of telemetry older than the retention",
			 (unsigned long long)rows);
	/* a pass still running carries on from its cursor */
	if (u->running)
		return;
	u->running = true;
	u->cursor[0] = '\0';
	u->rows = 0;
	u->before_ms = now - (int64_t)u->k->cfg->raw_retention_ms;
	event_active(u->step, EV_TIMEOUT, 0);
}

/*
 * This kmemd to the engine's lease: its host, pid and a random part, so
 * that a kmemd restarted with the same pid is not taken for the one before
 * it (whose lease must expire, not pass on).
 */
static void holder_name(char *buf, size_t len)
{
	unsigned char rnd[4] = { 0 };
	char host[64] = "kmemd";

	gethostname(host, sizeof(host) - 1);
	RAND_bytes(rnd, sizeof(rnd));
	snprintf(buf, len, "%s:%d:%02x%02x%02x%02x", host, (int)getpid(), rnd[0], rnd[1], rnd[2],
		 rnd[3]);
}

/*
 * Rollouts judged every [rollout] tick, as the configuration now says; the
 * engine's lease renewed every quarter of one.
 */
struct engine_timer {
	struct kmemd *k;
	struct event *ev, *lease;
};

static void arm(struct event *ev, uint64_t ms)
{
	event_add(ev, &(struct timeval){ .tv_sec = (time_t)(ms / 1000),
					 .tv_usec = (suseconds_t)(ms % 1000) * 1000 });
}

static void on_rollout_tick(evutil_socket_t fd, short what, void *arg)
{
	struct engine_timer *t = arg;

	(void)fd;
	(void)what;
	t->k->revocations++;
	operators_flush(t->k);
	if (revocations_refresh(t->k) < 0)
		log_error("reading the revocations failed: %s",
			  t->k->store->ops->error(t->k->store));
	if (fleet_stop_refresh(t->k) < 0)
		log_error("reading the fleet stop failed: %s",
			  t->k->store->ops->error(t->k->store));
	builds_refresh(t->k);
	rollouts_tick(t->k);
	arm(t->ev, t->k->cfg->rollout_tick_ms);
}

static void on_lease(evutil_socket_t fd, short what, void *arg)
{
	struct engine_timer *t = arg;

	(void)fd;
	(void)what;
	rollouts_lease(t->k);
	arm(t->lease, t->k->cfg->rollout_tick_ms / 4 ?: 1);
}

/* The soft descriptor limit up to the hard one: kmemd_config_check_fds() counted on it. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			log_warning("raising the descriptor limit to %llu failed: %m",
				    (unsigned long long)rl.rlim_max);
	}
}

/*
 * With epoll's change list, a descriptor's event changes made within one
 * loop iteration reach the kernel as one epoll_ctl at the next wait, not
 * one each: a reply that cannot be written at once turns reading off and
 * writing on, and both back once written. The list's caveat (a descriptor dup()ed and
 * closed between waits) does not apply: kmemd dups no socket.
 */
static struct event_base *base_new(void)
{
	struct event_config *ec = event_config_new();
	struct event_base *base;

	if (!ec)
		return NULL;
	event_config_set_flag(ec, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
	base = event_base_new_with_config(ec);
	event_config_free(ec);
	return base;
}

static int run(const struct kmemd_config *cfg, const char *path, bool debug)
{
	struct event_base *base = base_new();
	struct shutdown_signals sigs = { 0 };
	struct keyring keys = { 0 };
	struct kmemd k = { .cfg = cfg, .base = base, .keys = &keys, .revocations = 1 };
	struct server *srv = NULL;
	struct upkeep up = { .k = &k };
	struct engine_timer et = { .k = &k };
	struct event *hup = NULL, *wd = NULL;
	struct reload rl = { 0 };
	char err[256];
	int r;

	if (!base)
		return -ENOMEM;
	holder_name(k.engine_holder, sizeof(k.engine_holder));
	signal(SIGPIPE, SIG_IGN);
	r = store_open(kmemd_store_where(cfg), &k.store, err, sizeof(err));
	if (r < 0) {
		/* not the URL: it may hold a password */
		log_error("store %s: %s", cfg->store_url ? "[store] url" : cfg->store_path, err);
		event_base_free(base);
		return r;
	}
	if (cfg->webhook) {
		r = notify_new(base, cfg->webhook, cfg->webhook_ca, &k.notify, err, sizeof(err));
		if (r < 0) {
			log_error("%s", err);
			k.store->ops->close(k.store);
			event_base_free(base);
			return r;
		}
	}
	load_keys(&keys, cfg);
	raise_nofile();
	r = names_new(k.store,
		      &(struct names_limits){ .fleet = (unsigned)cfg->names_max,
					      .host = (unsigned)cfg->host_names_max },
		      &k.names);
	if (r < 0)
		log_error_errno(r, "loading the names hosts brought in failed: %s",
				k.store->ops->error(k.store));
	if (r == 0)
		r = desired_new(&k.desired);
	/* a kmemd that cannot say which policy hosts run, or whether the fleet is stopped, must not answer them */
	if (r == 0 && kmemd_desired_refresh(&k) < 0)
		r = -EIO;
	/* nor one that cannot hand waiting hosts their build records */
	if (r == 0 && builds_load(&k) < 0)
		r = -EIO;
	/* nor one that would take a revoked certificate for a host or operator */
	if (r == 0 && revocations_refresh(&k) < 0) {
		log_error("reading the revocations failed: %s", k.store->ops->error(k.store));
		r = -EIO;
	}
	if (r == 0 && fleet_stop_refresh(&k) < 0) {
		log_error("reading the fleet stop failed: %s", k.store->ops->error(k.store));
		r = -EIO;
	}
	if (r == 0)
		r = shutdown_signals_add(base, &sigs);
	if (r == 0) {
		r = series_worker_new(base, kmemd_store_where(cfg), &k.series, err, sizeof(err));
		if (r < 0)
			log_error_errno(r, "the rollout series' worker: %s", err);
	}
	if (r == 0) {
		r = reports_start(&k, err, sizeof(err));
		if (r < 0)
			log_error_errno(r, "the ingest writer: %s", err);
	}
	if (r == 0) {
		r = rollouts_engine_start(&k, err, sizeof(err));
		if (r < 0)
			log_error_errno(r, "the rollout engine's thread: %s", err);
	}
	if (r == 0)
		r = server_new(base, &k, &srv);
	rl = (struct reload){ .k = &k, .srv = srv, .path = path, .debug = debug };
	hup = r == 0 ? evsignal_new(base, SIGHUP, on_sighup, &rl) : NULL;
	if (r == 0 && (!hup || event_add(hup, NULL) < 0))
		r = -ENOMEM;
	up.tick = r == 0 ? event_new(base, -1, EV_PERSIST, on_upkeep, &up) : NULL;
	up.step = r == 0 ? event_new(base, -1, 0, on_upkeep_step, &up) : NULL;
	if (r == 0 &&
	    (!up.tick || !up.step || event_add(up.tick, &(struct timeval){ .tv_sec = 600 }) < 0))
		r = -ENOMEM;
	if (r == 0)
		event_active(up.tick, EV_TIMEOUT, 0);
	/* the first judgement once the listener is up: a restart resumes at once */
	et.ev = r == 0 ? evtimer_new(base, on_rollout_tick, &et) : NULL;
	et.lease = r == 0 ? evtimer_new(base, on_lease, &et) : NULL;
	if (r == 0 && (!et.ev || !et.lease))
		r = -ENOMEM;
	/* whether this kmemd runs the engine is known before its first tick */
	if (r == 0) {
		rollouts_lease(&k);
		arm(et.lease, cfg->rollout_tick_ms / 4 ?: 1);
		event_active(et.ev, EV_TIMEOUT, 0);
	}
	if (r == 0) {
		log_info("listening on port %d", server_port(srv));
		sd_notifyf(0, "READY=1\nSTATUS=listening on %s", cfg->listen);
		wd = watchdog_start(base);
		/* one round of callbacks at a time: the store is idle in between */
		while ((r = event_base_loop(base, EVLOOP_ONCE)) == 0 &&
		       !event_base_got_exit(base) && !event_base_got_break(base))
			k.store->ops->idle(k.store);
		r = r < 0 ? -EIO : 0;
	}
	if (wd)
		event_free(wd);
	if (hup)
		event_free(hup);
	if (up.tick)
		event_free(up.tick);
	if (up.step)
		event_free(up.step);
	if (et.ev)
		event_free(et.ev);
	if (et.lease)
		event_free(et.lease);
	/* reports handed to the writer are committed and answered before the listener goes */
	reports_stop(&k);
	/* a pass under way ends and is heard */
	engine_worker_free(k.engine);
	rollouts_lease_end(&k);
	operators_flush(&k);
	/* those waiting for a series are answered before the listener goes */
	series_worker_free(k.series);
	server_free(srv);
	shutdown_signals_free(&sigs);
	event_base_free(base);
	names_free(k.names);
	cert_expiry_free(&k.host_certs);
	notify_free(k.notify);
	desired_free(k.desired);
	builds_free(&k);
	revocations_free(k.revoked);
	k.store->ops->close(k.store);
	probe_totals_free(&k.stats.probes);
	keyring_free(&keys);
	if (rl.cfg) {
		ini_free(kmemd_options, kmemd_n_options, rl.cfg);
		free(rl.cfg);
	}
	return r;
}

int main(int argc, char **argv)
{
	const char *path = KMEMD_CONF;
	enum conf_check check = CONF_RUN;
	struct kmemd_config cfg;
	bool verbose = false, debug = false;
	int c, r;

	log_setup("kmemd", LOG_TARGET_AUTO);
	while ((c = getopt(argc, argv, "c:ndrvVh")) != -1) {
		switch (c) {
		case 'c':
			path = optarg;
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
		case 'r':
			router_print(stdout);
			return 0;
		case 'V':
			printf("kmemd %s\n", KMEMCTL_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc && strcmp(argv[optind], "migrate")) {
		usage(stderr);
		return 2;
	}
	if (check == CONF_CHECK && verbose)
		check = CONF_CHECK_PRINT;
	kmemd_config_defaults(&cfg);
	r = conf_load(kmemd_options, kmemd_n_options, &cfg, path, check == CONF_RUN, check);
	if (r == 0)
		r = kmemd_config_check(&cfg);
	log_set_max_level(debug ? LOG_DEBUG : cfg.log_level);
	if (r == 0 && optind != argc) {
		r = migrate(&cfg, argc - optind - 1, argv + optind + 1);
		ini_free(kmemd_options, kmemd_n_options, &cfg);
		return r;
	}
	if (r == 0 && check == CONF_RUN)
		r = run(&cfg, path, debug);
	ini_free(kmemd_options, kmemd_n_options, &cfg);
	return r < 0 ? 1 : 0;
}

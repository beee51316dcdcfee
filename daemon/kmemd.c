// SPDX-License-Identifier: GPL-2.0
/* kmemd: the central daemon. Process setup, signals and the event loop. */
#include <errno.h>
#include <event2/event.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <systemd/sd-daemon.h>

#include "conf.h"
#include "evloop.h"
#include "kmemd.h"
#include "log.h"
#include "macro.h"
#include "store.h"

static void usage(FILE *out)
{
	fprintf(out, "usage: kmemd [-d] [-n [-v]] [-c FILE]\n"
		     "  -c FILE  configuration file (default " KMEMD_CONF ", plus FILE.d/*.conf)\n"
		     "  -n       check the configuration and exit; with -v print it normalized\n"
		     "  -d       log debug messages\n"
		     "  -V       print the version\n");
}

static int run(const struct kmemd_config *cfg)
{
	struct event_base *base = event_base_new();
	struct shutdown_signals sigs = { 0 };
	struct keyring keys = { 0 };
	struct kmemd k = { .cfg = cfg, .base = base, .keys = &keys };
	struct server *srv = NULL;
	char err[256];
	int r;

	if (!base)
		return -ENOMEM;
	signal(SIGPIPE, SIG_IGN);
	r = store_open(cfg->store_path, &k.store, err, sizeof(err));
	if (r < 0) {
		log_error("store '%s': %s", cfg->store_path, err);
		event_base_free(base);
		return r;
	}
	r = keyring_load_dir(&keys, cfg->keys_dir);
	if (r < 0 && r != -ENOENT)
		log_warning_errno(r, "policy keys in '%s' unreadable: %m", cfg->keys_dir);
	if (!keys.n && cfg->require_signature)
		log_warning("no policy keys in '%s': every signed policy will be refused",
			    cfg->keys_dir);
	r = shutdown_signals_add(base, &sigs);
	if (r == 0)
		r = batch_new(&k);
	if (r == 0)
		r = server_new(base, &k, &srv);
	if (r == 0) {
		log_info("listening on port %d", server_port(srv));
		sd_notifyf(0, "READY=1\nSTATUS=listening on %s", cfg->listen);
		r = event_base_dispatch(base) < 0 ? -EIO : 0;
	}
	/* what is batched commits and is answered before the listener goes */
	batch_free(&k);
	server_free(srv);
	shutdown_signals_free(&sigs);
	event_base_free(base);
	k.store->ops->close(k.store);
	keyring_free(&keys);
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
	while ((c = getopt(argc, argv, "c:ndvVh")) != -1) {
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
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (check == CONF_CHECK && verbose)
		check = CONF_CHECK_PRINT;
	kmemd_config_defaults(&cfg);
	r = conf_load(kmemd_options, kmemd_n_options, &cfg, path, check == CONF_RUN, check);
	log_set_max_level(debug ? LOG_DEBUG : cfg.log_level);
	if (r == 0 && check == CONF_RUN)
		r = run(&cfg);
	ini_free(kmemd_options, kmemd_n_options, &cfg);
	return r < 0 ? 1 : 0;
}

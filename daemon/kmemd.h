/* SPDX-License-Identifier: GPL-2.0 */
#ifndef KMEMD_H
#define KMEMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cert-expiry.h"
#include "hist.h"
#include "ini.h"
#include "log.h"
#include "sign.h"
#include "store.h"

#define KMEMD_CONF "/etc/kmemctl/kmemd.conf"

struct kmemd_config {
	char *listen; /* host:port */
	char *cert, *key, *ca; /* server certificate; fleet CA for hosts */
	char *admin_ca; /* CA for admin certificates; default: ca */
	char *ca_key; /* the fleet CA's key, for enrollment; NULL: enrollment off */
	uint64_t host_cert_days;
	uint64_t enroll_rate; /* enrollments per minute per client network */
	uint64_t enroll_global_rate; /* enrollments per minute in all */
	uint64_t names_max, host_names_max; /* daemon/names.h */
	uint64_t max_connections; /* with a host's certificate */
	uint64_t max_operators; /* with an operator's certificate */
	uint64_t max_handshakes; /* in progress at once (daemon/conn.h) */
	uint64_t max_anonymous; /* past the handshake without a certificate */
	uint64_t max_per_address; /* unauthenticated connections of one network */
	uint64_t max_request; /* bytes */
	uint64_t max_bodies; /* bytes of request bodies being read, all connections */
	uint64_t max_headers; /* the header block's size in units of 256 bytes */
	uint64_t io_timeout_ms; /* idle between requests */
	uint64_t handshake_timeout_ms, request_timeout_ms; /* deadlines */
	char *store_path;
	char *store_url; /* postgresql://...: used instead of store_path; NULL: none */
	char *webhook, *webhook_ca; /* daemon/notify.h; NULL: none */
	uint64_t retention_ms; /* hourly rollups and events */
	uint64_t raw_retention_ms; /* per-report samples and counters, then rolled up */
	uint64_t batch_wait_ms; /* the longest a report waits for its batch to commit */
	uint64_t rollout_tick_ms; /* how often rollouts are judged */
	bool require_signature;
	char *keys_dir; /* operators' pinned Ed25519 keys */
	char *web_root; /* the dashboard's files */
	int log_level;
};

struct store;

/* totals.c: probe histograms per probe and policy, summed from reports. */
struct probe_series {
	char probe[64];
	char policy[96]; /* "name@version", "none" or "other" */
	struct hist h;
};

struct probe_totals {
	struct probe_series **s; /* in the order they came */
	size_t n, cap;
	struct lhash_st *index; /* the same, by probe and policy */
};

/* Series beyond this are summed per probe as policy "other". */
#define PROBE_SERIES_MAX 1024

int probe_totals_add(struct probe_totals *t, const char *probe, const char *policy,
		     const struct hist *h);
/* Empties t. */
void probe_totals_clear(struct probe_totals *t);
/* Adds src into dst and empties src. */
int probe_totals_merge(struct probe_totals *dst, struct probe_totals *src);
void probe_totals_free(struct probe_totals *t);

/*
 * A report's sample of probe as /metrics adds it: no host's share of a
 * probe's totals is more than HIST_HOST_WEIGHT_MAX times the median
 * host's. Per probe, what each host sent since kmemd started and what was
 * taken of it are kept (a 24-byte slot a host and probe, in a table at
 * most half full); once two hosts have values, a sample that would take a
 * host past ten times the lower median of the hosts' totals is scaled
 * down to what is left (hist_scale_to()).
 * Totals, not rates: an agent's first sample after a start carries what
 * the module counted before, and a host counts once however many reports
 * it sends. 1 when h was scaled, 0 when not, -ENOMEM.
 */
struct probe_shares {
	struct probe_share_set **set;
	size_t n;
};

int probe_shares_weigh(struct probe_shares *r, const char *host, const char *probe, struct hist *h);
void probe_shares_free(struct probe_shares *r);

/* kmemd's own counts since start, for /metrics. */
/* EventKind values counted for /metrics; the proto's are below it. */
#define KMEMD_EVENT_KINDS 16

struct kmemd_stats {
	uint64_t reports_stored, reports_resent, reports_refused, reports_failed;
	uint64_t reports_trimmed; /* stored without what names past the limits named */
	uint64_t samples_left_out; /* probe samples whose interval kmemd did not take */
	uint64_t events_left_out; /* kernel events whose time or number kmemd did not take */
	uint64_t samples_weighed; /* probe samples scaled down in probes (probe_shares_weigh()) */
	uint64_t build_files_malformed; /* stored without their build file (builds.h) */
	struct log_ratelimit report_log; /* warnings a host can cause */
	uint64_t events[KMEMD_EVENT_KINDS]; /* committed since start, by EventKind */
	struct hist ingest_ns; /* how long storing one report took */
	struct probe_totals probes; /* of committed reports */
};

struct desired;
struct ingest_worker;
struct names;
struct series_worker;
struct engine_worker;

/* What every handler works with. */
struct kmemd {
	const struct kmemd_config *cfg;
	struct event_base *base;
	struct ingest_worker *ingest; /* stores reports, off the loop */
	struct probe_shares probe_shares; /* the ingest writer's only */
	struct store *store; /* the loop's connection: everything but storing reports */
	struct keyring *keys;
	struct kmemd_stats stats;
	struct names *names;
	struct desired *desired; /* which policy each host is to run */
	struct series_worker *series; /* the dashboard's rollout series, off the loop */
	struct engine_worker *engine; /* the rollout engine's passes, off the loop */
	/* who this kmemd is to the engine's lease (host:pid:random), and whether it holds it */
	char engine_holder[128];
	bool engine_leader;
	/* the engine's passes on this kmemd: how many, their seconds in all, the longest */
	struct {
		uint64_t n;
		double sum_s, max_s;
	} engine_passes;
	/*
	 * Bumped by a revocation here and by every engine tick (for one made
	 * by another kmemd): a connection whose host was found not revoked at
	 * this generation is not looked up in the store again until it moves.
	 * It starts at 1: a new connection's 0 is never current.
	 */
	uint64_t revocations;
	/* revoked hosts and operator certificates, as the store had them last (revocations.h) */
	struct revocations *revoked;
	/* requests refused because their operator certificate is revoked */
	uint64_t operators_refused;
	/* when the certificates of the hosts reporting here expire */
	struct cert_expiry host_certs;
	/* the fleet stop, as the store had it at the last rollout tick or change here */
	struct store_fleet_stop fleet_stop;
	/* the webhook verdicts and trips are posted to; NULL: none */
	struct notify *notify;
	/* the build records replies carry, by build id (builds.h): the loop's */
	struct build_index *builds;
};

struct event_base;
struct server;

extern const struct ini_option kmemd_options[];
extern const size_t kmemd_n_options;
void kmemd_config_defaults(struct kmemd_config *c);
/* What no single option can say wrong; logged. */
int kmemd_config_check(const struct kmemd_config *c);
/* The store: [store] url when set, else [store] path. */
const char *kmemd_store_where(const struct kmemd_config *c);
/* Descriptors kmemd needs beside its connections. */
#define KMEMD_FDS_RESERVED 64
int kmemd_config_check_fds(const struct kmemd_config *c);

/* server.c: the HTTPS listener and its route table. */
int server_new(struct event_base *base, struct kmemd *k, struct server **out);
void server_free(struct server *s);
/* report.c: the ingest writer reports are handed to (daemon/ingest-worker.h). */
int reports_start(struct kmemd *k, char *err, size_t errlen);
/* Every report handed over is stored and answered, then the writer stops. */
void reports_stop(struct kmemd *k);
/* rollouts.c: judges and moves every unfinished rollout now. */
void rollouts_tick(struct kmemd *k);
/*
 * The engine's lease taken or renewed for three quarters of a tick: of
 * several kmemd on one store, the one holding it judges rollouts, and
 * another takes it within a tick of its holder's end.
 */
void rollouts_lease(struct kmemd *k);
/* At a clean stop: the lease given up, for the next holder to take at once. */
void rollouts_lease_end(struct kmemd *k);
/* The engine's thread (engine-worker.h), judging with k's store beside the loop's. */
int rollouts_engine_start(struct kmemd *k, char *err, size_t errlen);
/* rollouts.c: loads assignments and rollouts again when the store has changed; logs failures. */
int kmemd_desired_refresh(struct kmemd *k);
/* New TLS context and limits from cfg for new connections; the old stay as they are. */
int server_reload(struct server *s, const struct kmemd_config *cfg);
/* Port actually bound (useful with port 0 in tests). */
int server_port(const struct server *s);

#endif

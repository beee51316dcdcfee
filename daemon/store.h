/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmemd's store: every byte kmemd keeps goes through this interface. It
 * loads and saves rows and decides nothing: which policy a host runs is
 * desired.c's, a rollout's moves are engine.c's, and the admin API's JSON
 * is built by its handlers (admin-json.c). All SQL lives in its backend's
 * files, one per area as struct store_ops groups them below. SQLite (WAL)
 * is the default, store-sqlite*.c; a PostgreSQL backend for several kmemd
 * instances is another `struct store_ops` in another set of files.
 *
 * Functions return 0 or a negative errno: -ENOENT nothing found, -EEXIST
 * a second version with the same number, -EIO a database error (logged by
 * the caller with store_error()). Strings and blobs a callback is given
 * last until it returns.
 */
#ifndef KMEMD_STORE_H
#define KMEMD_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hist.h"
#include "kmemctl/v1/report.pb-c.h"
#include "rollout.h"

#define STORE_ID_MAX 128
/* An integer column that holds nothing (SQL's NULL). */
#define STORE_NULL INT64_MIN

struct store;

/* One policy version as stored: immutable once added. */
struct store_policy {
	char name[STORE_ID_MAX];
	uint64_t version;
	char *document_json; /* malloc'ed */
	uint8_t *bundle; /* the SignedPolicy as uploaded, malloc'ed; NULL if unsigned */
	size_t bundle_len;
	char signer[STORE_ID_MAX];
	char key_id[32];
	int64_t created_ms;
	int64_t retired_ms; /* STORE_NULL: in use, or may be */
};

/* A direct assignment: a policy version for one host or a selector. */
struct store_assignment {
	int64_t id;
	char policy[STORE_ID_MAX];
	uint64_t version;
	char *selector_json; /* malloc'ed; {"host":...} or labels/facts to match */
	int64_t created_ms;
};

/* A host as stored: what its last report said, and whether it is revoked. */
struct store_host {
	const char *host_id;
	const char *hostname, *kernel_release, *build_id, *module_version; /* NULL: not known */
	int64_t possible_cpus, online_cpus, mem_total; /* STORE_NULL: not known */
	bool kasan, revoked;
	const char *labels_json; /* a JSON object */
	int64_t first_seen_ms, last_seen_ms, last_seq; /* STORE_NULL: never */
	const char *policy; /* the policy it reports running; NULL: none */
	int64_t policy_version; /* STORE_NULL with policy NULL */
	int off; /* Kmemctl__V1__Off: why it applies nothing; 0: not known */
};

/* A mitigation of a host as its last report said. */
struct store_host_state {
	const char *id, *state, *mode, *source, *reason;
};

/* What host(), hosts() and hosts_page() give: each host, then its states in id order. */
struct store_host_cb {
	int (*host)(void *arg, const struct store_host *h);
	int (*state)(void *arg, const struct store_host_state *m);
};

typedef int (*store_name_cb)(void *arg, const char *name);

/*
 * What changes when an assignment is added or a rollout moves, by this
 * kmemd or another: cheap to read, so that desired.c reads it each tick and
 * loads assignments and rollouts again only when it changed.
 */
struct store_changes {
	int64_t assignments, assignment_last; /* how many; the newest id */
	int64_t rollouts, rollouts_updated; /* how many; the sum of their updated_ms */
};

/* An enrollment secret, kept as its SHA-256 only. */
struct store_secret {
	int64_t id;
	char sha256[65];
	int64_t created_ms, expires_ms; /* 0: never */
	bool revoked;
	int64_t uses, max_uses; /* 0: any number */
	char host_pattern[128]; /* fnmatch(3) of host ids it may enroll; "": any */
};

/* An operator's certificate as kmemd saw it, or as an operator revoked it. */
struct store_operator {
	char fingerprint[65]; /* SHA-256 of the DER, hex: the key */
	char name[65]; /* its CN; "" when revoked by fingerprint before it was seen */
	char role[16]; /* "observer", "operator"; "" likewise */
	int64_t not_after_ms; /* STORE_NULL: not known */
	int64_t first_seen_ms, last_seen_ms; /* STORE_NULL: never seen */
	int64_t revoked_ms; /* STORE_NULL: not revoked */
	char revoked_by[65];
};

/* The fleet stop (kmemctl fleet stop): every agent off and held while stopped. */
struct store_fleet_stop {
	bool stopped;
	int64_t since_ms; /* of the last stop or resume; STORE_NULL: never */
	char actor[65]; /* who did it */
	char reason[256];
};

/* Which audit rows, newest first. */
struct store_audit_query {
	const char *actor, *action, *host; /* NULL: any */
	int64_t from_ms, to_ms; /* [from_ms, to_ms); STORE_NULL: open */
	int64_t before_id; /* only rows with a smaller id, for the next page; 0: from the newest */
	unsigned limit;
};

struct store_audit_row {
	int64_t id, ts_ms;
	const char *actor, *action, *host, *detail; /* host: NULL when it was about none */
};

/* A rollout (docs/rollouts.md) as kept: its document and where it stands. */
struct store_rollout {
	char name[STORE_ID_MAX];
	char *spec_json; /* malloc'ed by rollout_get */
	/*
	 * Its gates' evidence (daemon/evidence.h), malloc'ed by rollout_get;
	 * NULL: none yet (and rollout_update keeps what is stored).
	 */
	char *evidence_json;
	enum rollout_state state; /* kept by rollout_state_name() */
	unsigned wave; /* the wave running (or last run) */
	int64_t wave_started_ms; /* STORE_NULL: not started */
	char reason[256]; /* of the last change of state */
	bool has_reason; /* false: it never changed state */
	int64_t created_ms,
		updated_ms; /* read, not written: rollout_add and rollout_update set them */
	int64_t archived_ms; /* rollouts() only: when it was archived; STORE_NULL: not */
	/*
	 * Where it stood when rollout_get read it: rollout_update writes over
	 * that only (read false: over anything). The engine's thread and an
	 * operator's action may both move a rollout; the one that comes second
	 * must not undo the first's move without having seen it.
	 */
	struct {
		bool read;
		enum rollout_state state;
		unsigned wave;
		int64_t wave_started_ms;
	} as_read;
};

/* A wave's verdict, with the numbers behind it (daemon/gates.h). */
struct store_verdict {
	unsigned wave;
	int64_t ts_ms;
	const char *verdict; /* pass fail inconclusive */
	const char *gate; /* the gate that decided; "" */
	const char *reason;
	const char *detail_json;
};

/* A host of a rollout: its place in the plan and what it ran before. */
struct store_member {
	const char *host_id;
	const char *stratum;
	double position;
	unsigned wave;
	const char *prev_policy; /* NULL: none */
	uint64_t prev_version;
	/* read from its host, not written: */
	bool host; /* false: there is no such host (nothing below) */
	bool revoked;
	const char *policy; /* what it reports running; NULL: none */
	int64_t version; /* STORE_NULL with policy NULL */
	int64_t last_seen_ms; /* STORE_NULL: never */
};

/* A rollout for /metrics: progress, and the gate inputs of its last verdict. */
struct store_rollout_gauges {
	const char *name, *policy; /* policy: "name@version" */
	const char *spec_json; /* the document: kmemd's reading of it says its waves */
	enum rollout_state state;
	unsigned wave; /* 0-based */
	uint64_t members, reached, running; /* running: reporting the rollout's policy */
	bool judged; /* the numbers below are from a verdict */
	uint64_t canary_lockups, baseline_lockups;
	double canary_hours, baseline_hours;
	double lockup_p; /* < 0: the rate test did not run */
	/* the last verdict's lockup evidence (docs/rollouts.md); NAN: it has none */
	double expected_lockups, needed_lockups, detectable_ratio, sequential_lr;
	uint64_t verdicts[3]; /* pass, fail, inconclusive */
};

/* What a rollout gate judges of one host over a window of time. */
struct store_window {
	double hours; /* from its first report in the window to its last */
	uint64_t soft_lockups, hard_lockups, rcu_stalls;
	double p99_ns[4], max_ns[4]; /* of each probe asked for; -1: no samples */
	char unhealthy[192]; /* a tripped mitigation, a stalled transition, a refusal; "" */
	/* as the host's last report said: the mitigations it waits for a build record for */
	char waiting[256]; /* a JSON array; "": none */
	char release[65]; /* its kernel release */
};

/*
 * A kernel build as a waiting host reported it: the module's build file
 * (lib/buildrec.h) and what it says of itself.
 */
struct store_build {
	const char *build_id, *release, *version;
	const char *file; /* the build file as reported */
};

/* A build as GET /v1/builds lists it. */
struct store_build_row {
	const char *build_id, *release, *version;
	/* STORE_NULL: no host sent its build file (a record published ahead) */
	int64_t first_seen_ms, last_seen_ms;
	uint64_t hosts; /* reporting, not revoked, whose last report ran it */
	uint64_t records;
};

/* What builds() gives: each build, then the hosts waiting per build and mitigation. */
struct store_builds_cb {
	int (*build)(void *arg, const struct store_build_row *b);
	int (*waiting)(void *arg, const char *build_id, const char *mitigation, uint64_t hosts);
};

/* A signed build record (kmemctl build sign) as published to kmemd. */
struct store_build_record {
	const char *build_id, *release, *version; /* its record's */
	const char *sha256; /* of the bundle, hex: a bundle is kept once */
	const uint8_t *bundle;
	size_t bundle_len;
	const char *signer, *key_id;
	int64_t created_ms;
};

/* The facts a selector looks at, and the policy the host runs. */
typedef int (*store_facts_cb)(void *arg, const Kmemctl__V1__HostFacts *f, const char *policy,
			      uint64_t version);

/*
 * One stored probe sample: a histogram delta of one host's interval, or,
 * past the raw window, the merged samples of one host's hour.
 */
struct store_sample {
	const char *host_id;
	const char *probe;
	struct hist h;
	int64_t end_ms;
	uint64_t samples; /* intervals merged in it */
};

/* Which samples: NULL and 0 match anything. */
struct store_filter {
	const char *probe;
	int64_t from_ms, to_ms;
	const char *host;
	const char *label_key, *label_value;
};

enum store_tally {
	STORE_TALLY_HOSTS, /* n */
	STORE_TALLY_STATES, /* mitigation, state, n hosts */
	STORE_TALLY_EVENTS, /* kind, n */
	STORE_TALLY_KERNELS, /* kernel release, n hosts reporting, most first */
	STORE_TALLY_POLICIES, /* policy, version ("" for none), n hosts reporting, most first */
	STORE_TALLY_SILENT, /* "5m", "15m", "1h", "1d": n hosts not heard from for that long */
	STORE_TALLY_WAITING, /* mitigation, n hosts (not revoked) waiting for a build record */
};

/* An event as stored: a lockup, a trip, a refusal (agent/events.h). */
struct store_event {
	int64_t unix_ms;
	const char *kind, *comm, *stack, *mitigation, *probe, *message;
	int cpu, pid;
	uint64_t duration_ns;
};

/* What host_rows() gives, oldest first within each kind of row. */
struct store_host_rows {
	int (*report)(void *arg, int64_t unix_ms);
	int (*event)(void *arg, const struct store_event *e);
	int (*sample)(void *arg, const struct store_sample *s);
};

typedef int (*store_sample_cb)(void *arg, const struct store_sample *s);
typedef int (*store_tally_cb)(void *arg, const char *a, const char *b, uint64_t n);

struct store_host_ends {
	int64_t samples_ms; /* where its last probe sample kept raw ended; INT64_MIN: none */
	int64_t report_ms; /* its latest report's time; INT64_MIN: none kept raw */
};

/*
 * A backend: one set of files per database, one file per area (the
 * comments below), the SQL of each op next to it.
 */
struct store_ops {
	/* Common: the connection, batches, and letting go of snapshots. */
	const char *name;
	/* err: why it failed, for the caller to log */
	int (*open)(const char *where, struct store **out, char *err, size_t errlen);
	/* The same, for a thread that only reads: the connection refuses writes. */
	int (*open_reader)(const char *where, struct store **out, char *err, size_t errlen);
	/*
	 * A second connection to s's database, read-write, for another thread
	 * (kmemd's ingest writer): the two take turns at writing, each op or
	 * batch waiting for the other's to end, in the order they asked.
	 */
	int (*open_beside)(struct store *s, struct store **out, char *err, size_t errlen);
	void (*close)(struct store *s);
	const char *(*error)(struct store *s);
	/*
	 * A batch: ingests between begin and commit are kept together, and
	 * none is durable before commit returns 0 (a failed commit undoes
	 * them all; so does rollback). Many reports per commit is what lets
	 * one kmemd keep up with a fleet: each commit writes every page it
	 * touched. Other writers of the database wait while a batch is open.
	 */
	int (*begin)(struct store *s);
	int (*commit)(struct store *s);
	void (*rollback)(struct store *s);
	/*
	 * Called between event-loop rounds, when no query is being iterated:
	 * queries left on a row let go of their read snapshot, so that the store
	 * sees other writers (an operator's sqlite3) and checkpoints can reset
	 * the write-ahead log.
	 */
	void (*idle)(struct store *s);

	/* Ingest: reports in, and the telemetry they left read back. */
	/*
	 * One report, whole or not at all: the host's facts and states, probe
	 * samples, counters and events. 1 (and nothing stored) when this is a
	 * report stored before (the same seq and time from the same host).
	 * Outside a batch a failed report stores nothing; inside one it may
	 * have left part of itself in the batch, and the caller rolls the
	 * batch back (no savepoint per report: that is most of its cost).
	 */
	int (*ingest)(struct store *s, const Kmemctl__V1__Report *rep, int64_t now_ms);
	/*
	 * Where each of n hosts' stored reports end, out[i] hosts[i]'s
	 * (report_trim_samples() and report_trim_events() bound a new
	 * report's by them). All at once: the ingest writer asks for a
	 * batch's hosts before storing it.
	 */
	int (*host_ends)(struct store *s, const char *const *hosts, size_t n,
			 struct store_host_ends *out);
	int (*samples)(struct store *s, const struct store_filter *f, store_sample_cb cb,
		       void *arg);
	int (*tally)(struct store *s, enum store_tally which, store_tally_cb cb, void *arg);
	/*
	 * Each of n hosts over [from_ms, to_ms), with the p99 of up to 4
	 * probes: w[i] is hosts[i]'s. All at once: a gate's hosts are a
	 * wave's, tens of thousands in a large fleet.
	 */
	int (*window)(struct store *s, const char *const *hosts, size_t n, int64_t from_ms,
		      int64_t to_ms, const char *const *probes, size_t nprobes,
		      struct store_window *w);
	/* host's reports, events and probe samples over [from_ms, to_ms), for charts. */
	int (*host_rows)(struct store *s, const char *host, int64_t from_ms, int64_t to_ms,
			 const struct store_host_rows *cb, void *arg);

	/* Hosts and policies: assignments, secrets, enrollment, names, revocation. */
	/* One host and its states; -ENOENT. */
	int (*host)(struct store *s, const char *host_id, const struct store_host_cb *cb,
		    void *arg);
	/* Each host, in host id order. */
	int (*hosts)(struct store *s, const struct store_host_cb *cb, void *arg);
	/*
	 * Up to limit hosts after the id after ("": from the first), those
	 * whose id, hostname or kernel release contain match (NULL: all).
	 */
	int (*hosts_page)(struct store *s, const char *after, const char *match, unsigned limit,
			  const struct store_host_cb *cb, void *arg);
	/* Every host not revoked, in host id order. */
	int (*host_facts)(struct store *s, store_facts_cb cb, void *arg);
	int (*policy_add)(struct store *s, const struct store_policy *p, int64_t now_ms);
	int (*policy_get)(struct store *s, const char *name, uint64_t version,
			  struct store_policy *p);
	/*
	 * A version retired: lists leave it out, and it is assigned and rolled
	 * out no more. -ENOENT; -EBUSY with what uses it in why when a host
	 * (not revoked) reports running it, an assignment names it, or a
	 * rollout not aborted or rolled back names it as its policy or
	 * rollback. Retired already: 0.
	 */
	int (*policy_retire)(struct store *s, const char *name, uint64_t version, int64_t now_ms,
			     char *why, size_t whylen);
	/* Each version by name and version; p->bundle (NULL: unsigned) is the stored one. */
	int (*policies)(struct store *s, int (*cb)(void *arg, const struct store_policy *p),
			void *arg);
	int (*assign)(struct store *s, const struct store_assignment *a, int64_t now_ms,
		      int64_t *id);
	/* Assignments newest first, until cb returns non-zero. */
	int (*assignments)(struct store *s, int (*cb)(void *arg, const struct store_assignment *a),
			   void *arg);
	/* A revoked host id is refused from then on, known yet or not. */
	int (*revoke)(struct store *s, const char *host_id, int64_t now_ms);
	/* 1 revoked, 0 not, or a negative errno. */
	int (*revoked)(struct store *s, const char *host_id);
	/* A new enrollment secret (id, uses and revoked are not read). */
	int (*secret_add)(struct store *s, const struct store_secret *sec, int64_t *id);
	/* The secret whose hex SHA-256 this is; -ENOENT. */
	int (*secret_get)(struct store *s, const char *sha256, struct store_secret *sec);
	/* Counts a use; -EDQUOT when its uses are spent, by this kmemd or another. */
	int (*secret_use)(struct store *s, int64_t id);
	/*
	 * A token from each of n buckets (keys[i], refilled at rates[i] a
	 * minute up to rates[i]), all or none: 1 taken, 0 when one is empty.
	 * The buckets are the store's, so every kmemd on it shares them.
	 */
	int (*rate_take)(struct store *s, const char *const *keys, const uint64_t *rates, size_t n,
			 int64_t now_ms);
	int (*secret_revoke)(struct store *s, int64_t id);
	/* Every enrollment secret (its hash left empty), newest first. */
	int (*secrets)(struct store *s, int (*cb)(void *arg, const struct store_secret *sec),
		       void *arg);
	/* The assignment decides nothing from now on; -ENOENT when there is none. */
	int (*assignment_delete)(struct store *s, int64_t id);
	/*
	 * A decommissioned host forgotten: its row, states and enrollment go
	 * (its telemetry stays until retention drops it; a revoked id stays
	 * revoked). -ENOENT when unknown, -EBUSY when it reported at or after
	 * since_ms: a host still alive is not forgotten.
	 */
	int (*host_forget)(struct store *s, const char *host, int64_t since_ms);
	/*
	 * Whether host is taken (it enrolled or reported), and whether an
	 * operator marked it to enroll again (a reinstall).
	 */
	int (*enrolled)(struct store *s, const char *host, bool *taken, bool *reenroll);
	/* host enrolled with secret_id: taken, and no longer marked. */
	int (*enrollment_add)(struct store *s, const char *host, int64_t secret_id, int64_t now_ms);
	/* host may enroll once more. */
	int (*reenroll)(struct store *s, const char *host);
	/* The names hosts brought in (daemon/names.h), oldest first; kind 0 probe, 1 mitigation. */
	int (*names)(struct store *s,
		     int (*cb)(void *arg, int kind, const char *name, const char *host), void *arg);
	int (*name_add)(struct store *s, int kind, const char *name, const char *host,
			int64_t now_ms);

	/* Access: the audit log and operators' certificates. */
	/* An audit row; host (NULL: none) is the host the change was about. */
	int (*audit)(struct store *s, int64_t now_ms, const char *actor, const char *action,
		     const char *host, const char *detail);
	/* The rows q selects, newest first, until cb returns non-zero. */
	int (*audit_rows)(struct store *s, const struct store_audit_query *q,
			  int (*cb)(void *arg, const struct store_audit_row *row), void *arg);
	/* o (name, role, not_after_ms) is in use now: kept, first and last seen. */
	int (*operator_seen)(struct store *s, const struct store_operator *o, int64_t now_ms);
	/*
	 * o->fingerprint revoked by by, seen before or not (o's name, role
	 * and expiry kept when it was not): 1, or 0 when it was already.
	 */
	int (*operator_revoke)(struct store *s, const struct store_operator *o, const char *by,
			       int64_t now_ms);
	/* Every certificate seen with CN name revoked by by; *n: how many were not yet. */
	int (*operator_revoke_name)(struct store *s, const char *name, const char *by,
				    int64_t now_ms, uint64_t *n);
	/* 1 revoked, 0 not, or a negative errno. */
	int (*operator_revoked)(struct store *s, const char *fingerprint);
	/*
	 * Every revocation: each revoked host id (kind 'h') and revoked
	 * operator certificate's fingerprint (kind 'o'), until cb returns
	 * non-zero.
	 */
	int (*revocations)(struct store *s, int (*cb)(void *arg, char kind, const char *key),
			   void *arg);
	/* Every certificate seen or revoked, by name, then first seen. */
	int (*operators)(struct store *s, int (*cb)(void *arg, const struct store_operator *o),
			 void *arg);
	/* The fleet stop as it was last set (never: not stopped, since STORE_NULL). */
	int (*fleet_stop_get)(struct store *s, struct store_fleet_stop *f);
	/* Stops or resumes the fleet: 1, or 0 when it was so already (and nothing changed). */
	int (*fleet_stop_set)(struct store *s, const struct store_fleet_stop *f);

	/* Rollouts: their documents, states, members and verdicts. */
	/* A new rollout, pending; -EEXIST when the name is taken. */
	int (*rollout_add)(struct store *s, const char *name, const char *spec_json,
			   int64_t now_ms);
	/* -ENOENT when there is none; store_rollout_clear() after. */
	int (*rollout_get)(struct store *s, const char *name, struct store_rollout *r);
	/*
	 * A finished rollout (done, rolled back, aborted) archived: lists leave
	 * it out; what its hosts run stays as it decided. -ENOENT, -EBUSY when
	 * it is not finished; archived already: 0, its first time kept.
	 */
	int (*rollout_archive)(struct store *s, const char *name, int64_t now_ms);
	/* Each rollout newest first, with its member count per wave (waves in order). */
	int (*rollouts)(struct store *s,
			int (*cb)(void *arg, const struct store_rollout *r, const uint64_t *members,
				  size_t n),
			void *arg);
	/* The names of rollouts the engine moves: running, holding, paused, rolling back. */
	int (*rollouts_active)(struct store *s, store_name_cb cb, void *arg);
	/*
	 * Its state, wave, wave start, reason and evidence as r says, with
	 * verdict v (NULL: none), together. Evidence alone is no change of the
	 * rollout's (its updated_ms stays). -ESTALE, and nothing written, when
	 * r was read (as_read) and the rollout's state, wave or wave start has
	 * changed since; else r->as_read is what was written. engine: the
	 * rollout engine's write, made only while engine holds the engine's
	 * lease (-ENOLCK, nothing written, once another kmemd took it: a
	 * pass outliving its lease writes nothing); NULL: an operator's.
	 */
	int (*rollout_update)(struct store *s, struct store_rollout *r,
			      const struct store_verdict *v, int64_t now_ms, const char *engine);
	/*
	 * Lease name (the rollout engine's: "engine") for holder until
	 * now_ms + ttl_ms, when it is free, expired or holder's already: 1,
	 * or 0 when another holds it. Several kmemd on one store run one
	 * engine between them: the one whose lease holds.
	 */
	int (*lease)(struct store *s, const char *name, const char *holder, int64_t now_ms,
		     int64_t ttl_ms);
	/* A pending rollout's n members, and r's state, all or nothing. */
	int (*rollout_start)(struct store *s, const struct store_rollout *r,
			     const struct store_member *m, size_t n, int64_t now_ms);
	/* The members in plan order, with what their hosts run now. */
	int (*members)(struct store *s, const char *rollout,
		       int (*cb)(void *arg, const struct store_member *m), void *arg);
	/* Every rollout but pending ones, newest first. */
	int (*rollouts_started)(struct store *s,
				int (*cb)(void *arg, const struct store_rollout *r), void *arg);
	int (*changes)(struct store *s, struct store_changes *c);
	/* Unfinished rollouts and those finished after since_ms, oldest first. */
	int (*rollout_gauges)(struct store *s, int64_t since_ms,
			      int (*cb)(void *arg, const struct store_rollout_gauges *g),
			      void *arg);
	/* The wave, verdict and gate of the rollout's last verdict; -ENOENT: none yet. */
	int (*verdict_last)(struct store *s, const char *rollout, unsigned *wave, char verdict[16],
			    char gate[32]);
	/* The rollout's verdicts, oldest first. */
	int (*verdicts)(struct store *s, const char *rollout,
			int (*cb)(void *arg, const struct store_verdict *v), void *arg);

	/* Builds: kernel builds hosts wait on, and the records published for them. */
	/*
	 * b's row added, or its last_seen_ms moved (written once a minute at
	 * most: every report of a waiting host carries its build file).
	 */
	int (*build_seen)(struct store *s, const struct store_build *b, int64_t now_ms);
	/* Every build seen or with a record, by release and id. */
	int (*builds)(struct store *s, const struct store_builds_cb *cb, void *arg);
	/* The build file of build_id, malloc'ed and NUL-terminated; -ENOENT. */
	int (*build_file)(struct store *s, const char *build_id, char **file);
	/* A record kept: 1, or 0 when the same bundle is stored already. */
	int (*build_record_add)(struct store *s, const struct store_build_record *r);
	/* Every record, oldest first. */
	int (*build_records)(struct store *s,
			     int (*cb)(void *arg, const struct store_build_record *r), void *arg);
	/* How many records are kept (they are never deleted: it says when they changed). */
	int (*build_record_count)(struct store *s, uint64_t *n);

	/* Upkeep: telemetry expired and rolled up. */
	/* Drops telemetry (raw, hourly, events) older than before_ms; how many rows. */
	int (*expire)(struct store *s, int64_t before_ms, uint64_t *rows);
	/*
	 * Downsampling, a few hosts at a time: for up to max_hosts hosts after
	 * cursor (host ids in order; "" to start), samples older than before_ms
	 * are merged into one histogram per probe and hour, and counters (they
	 * are cumulative) keep each hour's last report. cursor is set to the
	 * last host done; 1 when hosts remain, 0 when the pass is done. *rows:
	 * raw rows replaced.
	 */
	int (*rollup)(struct store *s, int64_t before_ms, char cursor[STORE_ID_MAX],
		      unsigned max_hosts, uint64_t *rows);
};

void store_rollout_clear(struct store_rollout *r);

struct store {
	const struct store_ops *ops;
};

extern const struct store_ops store_sqlite_ops, store_pg_ops;

/* The backend of where: a postgresql:// (or postgres://) URL, or a SQLite file's path. */
const struct store_ops *store_backend(const char *where);

/*
 * Opens the store at where (created and migrated as needed).
 * -EPROTO: its schema is newer than this kmemd.
 */
int store_open(const char *where, struct store **out, char *err, size_t errlen);

/* The same, for a thread that only reads: the connection refuses writes. */
int store_open_reader(const char *where, struct store **out, char *err, size_t errlen);

void store_policy_clear(struct store_policy *p);

/* A host's labels as every backend keeps them (hosts.labels): a JSON object, malloc'ed; NULL. */
char *store_labels_json(const Kmemctl__V1__HostFacts *f);

/*
 * What a host waits for as every backend keeps it (hosts.waiting): the
 * report's waiting_for_record as a JSON array in *out (malloc'ed), or NULL
 * when it waits for nothing. -ENOMEM.
 */
int store_waiting_json(const Kmemctl__V1__Report *rep, char **out);

#endif

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The SQLite backend's own header: what its files share. store-sqlite.c
 * holds the connection, the schema's migrations, batches and the statement
 * cache; each area of struct store_ops has a file of its own with its SQL
 * next to its functions: store-sqlite-ingest.c, store-sqlite-hosts.c,
 * store-sqlite-access.c, store-sqlite-rollouts.c and store-sqlite-upkeep.c.
 */
#ifndef KMEMD_STORE_SQLITE_H
#define KMEMD_STORE_SQLITE_H

#include <errno.h>
#include <sqlite3.h>
#include <stdbool.h>

#include "host-memo.h"
#include "log.h"
#include "store-rows.h"
#include "store.h"

enum sq_area_id { SQ_INGEST, SQ_HOSTS, SQ_ACCESS, SQ_ROLLOUTS, SQ_UPKEEP, SQ_BUILDS, SQ_AREAS };

/* An area's statements, prepared when the store opens. */
struct sq_area {
	enum sq_area_id id;
	const char *const *sql;
	/*
	 * Queries stepped for their one row and left there (NULL: none).
	 * Until reset, each holds the connection's read snapshot: a batch
	 * begun after it would run on that snapshot, and a snapshot older
	 * than a checkpoint keeps the WAL from starting over, so under
	 * steady ingest it grew without bound. The next sq_stmt() or write op
	 * resets the one held; their rows are copied out by then.
	 */
	const bool *one_row;
	unsigned n;
};

extern const struct sq_area sq_ingest_area, sq_hosts_area, sq_access_area, sq_rollouts_area,
	sq_upkeep_area, sq_builds_area;

struct sq_turn;

struct sqlite_store {
	struct store base;
	sqlite3 *db;
	struct sq_turn *turn; /* shared with the connections opened beside this one */
	bool has_turn;
	unsigned depth; /* write ops begun and not ended: a batch, an op inside it */
	bool own; /* the outermost began its transaction (not the caller's own BEGIN) */
	sqlite3_stmt **st[SQ_AREAS]; /* each area's, in its own order */
	sqlite3_stmt *held; /* a one-row query read and left on its row */
	struct buf probes, counts; /* a report_samples row being made */
	struct host_memo memo; /* what ingest last wrote of each host */
	struct log_ratelimit skip_rl; /* rows skipped by readers, logged */
	uint64_t skipped;
};

#define DB(s) (((struct sqlite_store *)(s))->db)

/* Statement which of area, reset and unbound. */
sqlite3_stmt *sq_stmt(struct store *s, const struct sq_area *area, unsigned which);

/*
 * Around every op that writes. kmemd writes one file through two
 * connections (the loop's and the ingest writer's, open_beside), and
 * each waits for the other in turn rather than polling SQLite's lock: a
 * writer that begins a batch again as soon as it committed one would win
 * that poll almost every time. A write also needs a snapshot no older
 * than the last commit, or SQLite fails it (SQLITE_BUSY_SNAPSHOT) rather
 * than wait: no statement is left on a row, and txn (an op of several
 * statements) begins with BEGIN IMMEDIATE. Inside the caller's own
 * transaction (a batch) the op is a savepoint of it instead.
 * sq_write_end() commits (or, r < 0, rolls back) and returns r or -EIO;
 * a sq_write_begin() that failed has nothing to end.
 */
int sq_write_begin(struct store *s, bool txn);
int sq_write_end(struct store *s, bool txn, int r);

static inline int exec(sqlite3 *db, const char *q)
{
	return sqlite3_exec(db, q, NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
}

static inline int step_done(sqlite3_stmt *st)
{
	return sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
}

/* A query of one row: 0 on it, -ENOENT when there is none. */
static inline int step_row(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	if (rc == SQLITE_ROW)
		return 0;
	return rc == SQLITE_DONE ? -ENOENT : -EIO;
}

static inline const char *text_or_empty(sqlite3_stmt *st, int col)
{
	const unsigned char *t = sqlite3_column_text(st, col);

	return t ? (const char *)t : "";
}

static inline const char *text_or_null(sqlite3_stmt *st, int col)
{
	return (const char *)sqlite3_column_text(st, col);
}

static inline int64_t int_or_null(sqlite3_stmt *st, int col)
{
	return sqlite3_column_type(st, col) == SQLITE_NULL ? STORE_NULL :
							     sqlite3_column_int64(st, col);
}

/* Columns col.. col+4: first_bucket, counts, count, sum_ns, max_ns. */
void column_hist(sqlite3_stmt *st, int col, struct hist *h);
/* Binds h from parameter col on, as column_hist() reads it: empty buckets trimmed. */
void bind_hist(sqlite3_stmt *st, int col, const struct hist *h);

/*
 * Opens the row of st's columns col (probes) and col + 1 (counts). false
 * when it cannot be read: readers skip it, and it is logged here (the
 * query goes on, so there is nothing for a caller to return).
 */
bool sq_row_open(struct sqlite_store *q, sqlite3_stmt *st, int col, const char *host,
		 int64_t end_ms, struct rs_row *row);

/* Migration 8: schema 7's rows (probes in JSON) rewritten as RS_FORMAT. */
int rs_migrate_json(sqlite3 *db);

/* The ops, by area (store.h). */

int sq_ingest(struct store *s, const Kmemctl__V1__Report *rep, int64_t now_ms);
int sq_host_ends(struct store *s, const char *const *hosts, size_t n, struct store_host_ends *out);
int sq_samples(struct store *s, const struct store_filter *f, store_sample_cb cb, void *arg);
int sq_tally(struct store *s, enum store_tally which, store_tally_cb cb, void *arg);
int sq_window(struct store *s, const char *const *hosts, size_t nhosts, int64_t from_ms,
	      int64_t to_ms, const char *const *probes, size_t nprobes, struct store_window *w);
int sq_host_rows(struct store *s, const char *host, int64_t from_ms, int64_t to_ms,
		 const struct store_host_rows *cb, void *arg);

int sq_host(struct store *s, const char *host_id, const struct store_host_cb *cb, void *arg);
int sq_hosts(struct store *s, const struct store_host_cb *cb, void *arg);
int sq_hosts_page(struct store *s, const char *after, const char *match, unsigned limit,
		  const struct store_host_cb *cb, void *arg);
int sq_host_facts(struct store *s, store_facts_cb cb, void *arg);
int sq_policy_add(struct store *s, const struct store_policy *p, int64_t now_ms);
int sq_policy_get(struct store *s, const char *name, uint64_t version, struct store_policy *p);
int sq_policy_retire(struct store *s, const char *name, uint64_t version, int64_t now_ms, char *why,
		     size_t whylen);
int sq_policies(struct store *s, int (*cb)(void *arg, const struct store_policy *p), void *arg);
int sq_assign(struct store *s, const struct store_assignment *a, int64_t now_ms, int64_t *id);
int sq_assignments(struct store *s, int (*cb)(void *arg, const struct store_assignment *a),
		   void *arg);
int sq_revoke(struct store *s, const char *host_id, int64_t now_ms);
int sq_revoked(struct store *s, const char *host_id);
int sq_secret_add(struct store *s, const struct store_secret *sec, int64_t *id);
int sq_secret_get(struct store *s, const char *sha256, struct store_secret *sec);
int sq_secret_use(struct store *s, int64_t id);
int sq_rate_take(struct store *s, const char *const *keys, const uint64_t *rates, size_t n,
		 int64_t now_ms);
int sq_secret_revoke(struct store *s, int64_t id);
int sq_secrets(struct store *s, int (*cb)(void *arg, const struct store_secret *sec), void *arg);
int sq_assignment_delete(struct store *s, int64_t id);
int sq_host_forget(struct store *s, const char *host, int64_t since_ms);
int sq_enrolled(struct store *s, const char *host, bool *taken, bool *reenroll);
int sq_enrollment_add(struct store *s, const char *host, int64_t secret_id, int64_t now_ms);
int sq_reenroll(struct store *s, const char *host);
int sq_names(struct store *s, int (*cb)(void *arg, int kind, const char *name, const char *host),
	     void *arg);
int sq_name_add(struct store *s, int kind, const char *name, const char *host, int64_t now_ms);

int sq_audit(struct store *s, int64_t now_ms, const char *actor, const char *action,
	     const char *host, const char *detail);
int sq_audit_rows(struct store *s, const struct store_audit_query *q,
		  int (*cb)(void *arg, const struct store_audit_row *row), void *arg);
int sq_operator_seen(struct store *s, const struct store_operator *o, int64_t now_ms);
int sq_operator_revoke(struct store *s, const struct store_operator *o, const char *by,
		       int64_t now_ms);
int sq_operator_revoke_name(struct store *s, const char *name, const char *by, int64_t now_ms,
			    uint64_t *n);
int sq_operator_revoked(struct store *s, const char *fingerprint);
int sq_revocations(struct store *s, int (*cb)(void *arg, char kind, const char *key), void *arg);
int sq_operators(struct store *s, int (*cb)(void *arg, const struct store_operator *o), void *arg);
int sq_fleet_stop_get(struct store *s, struct store_fleet_stop *f);
int sq_fleet_stop_set(struct store *s, const struct store_fleet_stop *f);

int sq_rollout_add(struct store *s, const char *name, const char *spec_json, int64_t now_ms);
int sq_rollout_get(struct store *s, const char *name, struct store_rollout *r);
int sq_rollout_archive(struct store *s, const char *name, int64_t now_ms);
int sq_rollouts(struct store *s,
		int (*cb)(void *arg, const struct store_rollout *r, const uint64_t *members,
			  size_t n),
		void *arg);
int sq_rollouts_active(struct store *s, store_name_cb cb, void *arg);
int sq_lease(struct store *s, const char *name, const char *holder, int64_t now_ms, int64_t ttl_ms);
int sq_rollout_update(struct store *s, struct store_rollout *r, const struct store_verdict *v,
		      int64_t now_ms, const char *engine);
int sq_rollout_start(struct store *s, const struct store_rollout *ro, const struct store_member *m,
		     size_t n, int64_t now_ms);
int sq_members(struct store *s, const char *rollout,
	       int (*cb)(void *arg, const struct store_member *m), void *arg);
int sq_rollouts_started(struct store *s, int (*cb)(void *arg, const struct store_rollout *r),
			void *arg);
int sq_changes(struct store *s, struct store_changes *c);
int sq_rollout_gauges(struct store *s, int64_t since_ms,
		      int (*cb)(void *arg, const struct store_rollout_gauges *g), void *arg);
int sq_verdict_last(struct store *s, const char *rollout, unsigned *wave, char verdict[16],
		    char gate[32]);
int sq_verdicts(struct store *s, const char *rollout,
		int (*cb)(void *arg, const struct store_verdict *v), void *arg);

int sq_expire(struct store *s, int64_t before_ms, uint64_t *rows);
int sq_rollup(struct store *s, int64_t before_ms, char cursor[STORE_ID_MAX], unsigned max_hosts,
	      uint64_t *rows);

int sq_build_seen(struct store *s, const struct store_build *b, int64_t now_ms);
int sq_builds(struct store *s, const struct store_builds_cb *cb, void *arg);
int sq_build_file(struct store *s, const char *build_id, char **file);
int sq_build_record_add(struct store *s, const struct store_build_record *r);
int sq_build_records(struct store *s, int (*cb)(void *arg, const struct store_build_record *r),
		     void *arg);
int sq_build_record_count(struct store *s, uint64_t *n);

#endif

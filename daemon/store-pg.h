/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The PostgreSQL backend's own header: what its files share. store-pg.c
 * holds the connection, the schema's migrations, transactions and the
 * prepared statements; each area of struct store_ops has a file of its own
 * with its SQL next to its functions, as the SQLite backend's: store-pg-
 * ingest.c, store-pg-hosts.c, store-pg-rollouts.c and store-pg-upkeep.c.
 *
 * Several kmemd share one database. Nothing here may assume it is the only
 * writer of a row: what SQLite's backend keeps in memory of each host (its
 * memo) is asked of the database instead, and every op that reads then
 * writes does it in one statement or in a transaction that locks the rows.
 */
#ifndef KMEMD_STORE_PG_H
#define KMEMD_STORE_PG_H

#include <errno.h>
#include <libpq-fe.h>
#include <stdbool.h>

#include "log.h"
#include "store-rows.h"
#include "store.h"

enum pg_area_id { PG_INGEST, PG_HOSTS, PG_ACCESS, PG_ROLLOUTS, PG_UPKEEP, PG_BUILDS, PG_AREAS };

/* An area's statements, prepared on each connection when it opens. */
struct pg_area {
	enum pg_area_id id;
	const char *const *sql;
	unsigned n;
};

extern const struct pg_area pg_ingest_area, pg_hosts_area, pg_access_area, pg_rollouts_area,
	pg_upkeep_area, pg_builds_area;

struct pg_store {
	struct store base;
	PGconn *conn;
	char *url; /* for open_beside */
	bool reader; /* refuses writes (store_open_reader()) */
	unsigned depth; /* write ops begun and not ended: a batch, an op inside it */
	char err[512]; /* the last error, for store_error() */
	char sqlstate[6]; /* the last error's SQLSTATE; "" */
	struct buf probes, counts; /* a report_samples row being made */
	struct log_ratelimit skip_rl; /* rows skipped by readers, logged */
	uint64_t skipped;
};

#define PG(s) ((struct pg_store *)(s))

/* A statement's parameters: at most PG_ARGS_MAX, in order ($1 first). */
#define PG_ARGS_MAX 24
struct pg_args {
	int n;
	const char *v[PG_ARGS_MAX];
	int len[PG_ARGS_MAX];
	int fmt[PG_ARGS_MAX];
	char num[PG_ARGS_MAX][32];
};

/* NULL: SQL NULL. */
void pg_text(struct pg_args *a, const char *t);
/* STORE_NULL: SQL NULL. */
void pg_int(struct pg_args *a, int64_t v);
void pg_real(struct pg_args *a, double v);
void pg_bool(struct pg_args *a, bool v);
/* Sent as binary (a BYTEA); p NULL: SQL NULL. p must last until the statement ran. */
void pg_blob(struct pg_args *a, const void *p, size_t len);
/*
 * A text array literal in b, an element at a time (t NULL: NULL), then
 * closed and terminated by pg_arr_end(), for a text[] parameter.
 */
int pg_arr_text(struct buf *b, const char *t);
int pg_arr_end(struct buf *b);

/*
 * Runs statement which of area with a's parameters (NULL: none) and gives
 * its result (PQclear() it), or NULL on an error, kept for store_error()
 * and logged at debug.
 */
PGresult *pg_run(struct store *s, const struct pg_area *area, unsigned which,
		 const struct pg_args *a);
/* The same, for a statement that returns nothing worth reading: 0 or -EIO. */
int pg_do(struct store *s, const struct pg_area *area, unsigned which, const struct pg_args *a);
/* As pg_do(), and *n: the rows it changed (inserted, updated, deleted). */
int pg_changed(struct store *s, const struct pg_area *area, unsigned which, const struct pg_args *a,
	       uint64_t *n);
/* Whether the last statement that failed broke a unique constraint (SQLSTATE 23505). */
bool pg_unique_violation(struct store *s);
/* SQL text without parameters, as one or several statements: 0 or -EIO. */
int pg_exec(struct store *s, const char *sql);

/* A column of a result: text (NULL for NULL), "" for NULL, an integer (STORE_NULL), a double. */
const char *pg_col(const PGresult *r, int row, int col);
const char *pg_col_or_empty(const PGresult *r, int row, int col);
int64_t pg_col_int(const PGresult *r, int row, int col);
double pg_col_real(const PGresult *r, int row, int col);
bool pg_col_bool(const PGresult *r, int row, int col);
/* A BYTEA column decoded, malloc'ed (PQfreemem()), or NULL: SQL NULL or out of memory. */
uint8_t *pg_col_blob(const PGresult *r, int row, int col, size_t *len);

/*
 * Around every op that writes more than one statement: outside a batch
 * they are a transaction of their own, inside one a savepoint of it.
 * pg_write_end() commits (or, r < 0, rolls back) and returns r or -EIO; a
 * pg_write_begin() that failed has nothing to end.
 */
int pg_write_begin(struct store *s);
int pg_write_end(struct store *s, int r);

/* Columns col.. col+4 of a row: first_bucket, counts, count, sum_ns, max_ns. */
void pg_col_hist(const PGresult *r, int row, int col, struct hist *h);
/*
 * Parameters for h as pg_col_hist() reads them: empty buckets trimmed.
 * The buckets are h's: h must last until the statement ran.
 */
void pg_hist(struct pg_args *a, const struct hist *h);

/*
 * Opens the row of r's columns col (probes) and col + 1 (counts) into
 * row, decoding both into *mem (PQfreemem() it after; NULL when it cannot
 * be read). false when it cannot be read: readers skip it, and it is
 * logged here.
 */
bool pg_row_open(struct pg_store *q, const PGresult *r, int row, int col, const char *host,
		 int64_t end_ms, struct rs_row *out, uint8_t *mem[2]);

/* The ops, by area (store.h). */

int pg_ingest(struct store *s, const Kmemctl__V1__Report *rep, int64_t now_ms);
int pg_host_ends(struct store *s, const char *const *hosts, size_t n, struct store_host_ends *out);
int pg_samples(struct store *s, const struct store_filter *f, store_sample_cb cb, void *arg);
int pg_tally(struct store *s, enum store_tally which, store_tally_cb cb, void *arg);
int pg_window(struct store *s, const char *const *hosts, size_t nhosts, int64_t from_ms,
	      int64_t to_ms, const char *const *probes, size_t nprobes, struct store_window *w);
int pg_host_rows(struct store *s, const char *host, int64_t from_ms, int64_t to_ms,
		 const struct store_host_rows *cb, void *arg);

int pg_host(struct store *s, const char *host_id, const struct store_host_cb *cb, void *arg);
int pg_hosts(struct store *s, const struct store_host_cb *cb, void *arg);
int pg_hosts_page(struct store *s, const char *after, const char *match, unsigned limit,
		  const struct store_host_cb *cb, void *arg);
int pg_host_facts(struct store *s, store_facts_cb cb, void *arg);
int pg_policy_add(struct store *s, const struct store_policy *p, int64_t now_ms);
int pg_policy_get(struct store *s, const char *name, uint64_t version, struct store_policy *p);
int pg_policy_retire(struct store *s, const char *name, uint64_t version, int64_t now_ms, char *why,
		     size_t whylen);
int pg_policies(struct store *s, int (*cb)(void *arg, const struct store_policy *p), void *arg);
int pg_assign(struct store *s, const struct store_assignment *a, int64_t now_ms, int64_t *id);
int pg_assignments(struct store *s, int (*cb)(void *arg, const struct store_assignment *a),
		   void *arg);
int pg_revoke(struct store *s, const char *host_id, int64_t now_ms);
int pg_revoked(struct store *s, const char *host_id);
int pg_secret_add(struct store *s, const struct store_secret *sec, int64_t *id);
int pg_secret_get(struct store *s, const char *sha256, struct store_secret *sec);
int pg_secret_use(struct store *s, int64_t id);
int pg_rate_take(struct store *s, const char *const *keys, const uint64_t *rates, size_t n,
		 int64_t now_ms);
int pg_secret_revoke(struct store *s, int64_t id);
int pg_secrets(struct store *s, int (*cb)(void *arg, const struct store_secret *sec), void *arg);
int pg_assignment_delete(struct store *s, int64_t id);
int pg_host_forget(struct store *s, const char *host, int64_t since_ms);
int pg_enrolled(struct store *s, const char *host, bool *taken, bool *reenroll);
int pg_enrollment_add(struct store *s, const char *host, int64_t secret_id, int64_t now_ms);
int pg_reenroll(struct store *s, const char *host);
int pg_names(struct store *s, int (*cb)(void *arg, int kind, const char *name, const char *host),
	     void *arg);
int pg_name_add(struct store *s, int kind, const char *name, const char *host, int64_t now_ms);

int pg_audit(struct store *s, int64_t now_ms, const char *actor, const char *action,
	     const char *host, const char *detail);
int pg_audit_rows(struct store *s, const struct store_audit_query *q,
		  int (*cb)(void *arg, const struct store_audit_row *row), void *arg);
int pg_operator_seen(struct store *s, const struct store_operator *o, int64_t now_ms);
int pg_operator_revoke(struct store *s, const struct store_operator *o, const char *by,
		       int64_t now_ms);
int pg_operator_revoke_name(struct store *s, const char *name, const char *by, int64_t now_ms,
			    uint64_t *n);
int pg_operator_revoked(struct store *s, const char *fingerprint);
int pg_revocations(struct store *s, int (*cb)(void *arg, char kind, const char *key), void *arg);
int pg_operators(struct store *s, int (*cb)(void *arg, const struct store_operator *o), void *arg);
int pg_fleet_stop_get(struct store *s, struct store_fleet_stop *f);
int pg_fleet_stop_set(struct store *s, const struct store_fleet_stop *f);

int pg_rollout_add(struct store *s, const char *name, const char *spec_json, int64_t now_ms);
int pg_rollout_get(struct store *s, const char *name, struct store_rollout *r);
int pg_rollout_archive(struct store *s, const char *name, int64_t now_ms);
int pg_rollouts(struct store *s,
		int (*cb)(void *arg, const struct store_rollout *r, const uint64_t *members,
			  size_t n),
		void *arg);
int pg_rollouts_active(struct store *s, store_name_cb cb, void *arg);
int pg_rollout_update(struct store *s, struct store_rollout *r, const struct store_verdict *v,
		      int64_t now_ms, const char *engine);
int pg_lease(struct store *s, const char *name, const char *holder, int64_t now_ms, int64_t ttl_ms);
int pg_rollout_start(struct store *s, const struct store_rollout *r, const struct store_member *m,
		     size_t n, int64_t now_ms);
int pg_members(struct store *s, const char *rollout,
	       int (*cb)(void *arg, const struct store_member *m), void *arg);
int pg_rollouts_started(struct store *s, int (*cb)(void *arg, const struct store_rollout *r),
			void *arg);
int pg_changes(struct store *s, struct store_changes *c);
int pg_rollout_gauges(struct store *s, int64_t since_ms,
		      int (*cb)(void *arg, const struct store_rollout_gauges *g), void *arg);
int pg_verdict_last(struct store *s, const char *rollout, unsigned *wave, char verdict[16],
		    char gate[32]);
int pg_verdicts(struct store *s, const char *rollout,
		int (*cb)(void *arg, const struct store_verdict *v), void *arg);

int pg_expire(struct store *s, int64_t before_ms, uint64_t *rows);
int pg_rollup(struct store *s, int64_t before_ms, char cursor[STORE_ID_MAX], unsigned max_hosts,
	      uint64_t *rows);

int pg_build_seen(struct store *s, const struct store_build *b, int64_t now_ms);
int pg_builds(struct store *s, const struct store_builds_cb *cb, void *arg);
int pg_build_file(struct store *s, const char *build_id, char **file);
int pg_build_record_add(struct store *s, const struct store_build_record *r);
int pg_build_records(struct store *s, int (*cb)(void *arg, const struct store_build_record *r),
		     void *arg);
int pg_build_record_count(struct store *s, uint64_t *n);

#endif

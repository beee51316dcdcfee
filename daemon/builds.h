/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel builds and their build records (docs/kmemd.md, "Builds"). Hosts
 * whose module holds mitigations until a record vouches for the running
 * build send their build file with each report; an operator makes the
 * record from kmemd's copy (GET /v1/builds/file), signs it offline and
 * publishes it (POST /v1/builds/records); every later reply to a host of
 * that build carries it.
 *
 * Replies are made on the event loop, so the records are kept in memory by
 * build id (struct build_index), the loop's alone, no lock: loaded at
 * start, added to by a publish here, and loaded again at a rollout tick
 * when the store holds another number of them (a publish through another
 * kmemd on the store). A report costs no store query for them.
 */
#ifndef KMEMD_BUILDS_H
#define KMEMD_BUILDS_H

#include "kmemctl/v1/report.pb-c.h"
#include "tls.h"

struct http_request;
struct kmemd;
struct pb_arena;
struct store_build;

/* k->builds loaded from the store (again); logs a failure. */
int builds_load(struct kmemd *k);
/* At a rollout tick: loaded again when the store's count of records moved. */
void builds_refresh(struct kmemd *k);
void builds_free(struct kmemd *k);

/*
 * A report that carries a build file: the file parsed (a malformed one is
 * counted and logged, and the report stored without it), and the records
 * of its build put in rr, pointing into k->builds (pack rr before the
 * index changes). The build to keep with the report, in arena; NULL.
 */
const struct store_build *builds_report(struct kmemd *k, const Kmemctl__V1__Report *rep,
					struct pb_arena *arena, Kmemctl__V1__ReportReply *rr);

/* GET /v1/builds: every build, its hosts and those waiting per mitigation, its records. */
void handle_builds_get(struct http_request *req, struct kmemd *k, const struct tls_identity *peer);
/* GET /v1/builds/file?build_id=HEX: the build file as a host sent it (text/plain). */
void handle_build_file_get(struct http_request *req, struct kmemd *k,
			   const struct tls_identity *peer);
/* POST /v1/builds/records: a bundle from kmemctl build sign (application/octet-stream). */
void handle_build_record_post(struct http_request *req, struct kmemd *k,
			      const struct tls_identity *peer);

#endif

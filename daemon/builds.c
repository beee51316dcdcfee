// SPDX-License-Identifier: GPL-2.0
/* Kernel builds and their build records (builds.h). */
#include <errno.h>
#include <event2/keyvalq_struct.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buildrec.h"
#include "builds.h"
#include "json-text.h"
#include "kmemctl/v1/build.pb-c.h"
#include "log.h"
#include "macro.h"
#include "pb-arena.h"
#include "server.h"
#include "sign.h"

/* One build's records, as replies carry them. */
struct build_entry {
	char build_id[sizeof(((struct build_info *)0)->build_id)];
	ProtobufCBinaryData *records;
	size_t n;
};

/*
 * Builds with records are few (a fleet runs tens of builds at once), and
 * only waiting hosts' reports look here: a list is enough.
 */
struct build_index {
	struct build_entry *e;
	size_t n;
	uint64_t records; /* in all: the store's count when it was loaded, and since */
};

static void index_free(struct build_index *ix)
{
	if (!ix)
		return;
	for (size_t i = 0; i < ix->n; i++) {
		for (size_t j = 0; j < ix->e[i].n; j++)
			free(ix->e[i].records[j].data);
		free(ix->e[i].records);
	}
	free(ix->e);
	free(ix);
}

static struct build_entry *index_find(const struct build_index *ix, const char *build_id)
{
	for (size_t i = 0; ix && i < ix->n; i++)
		if (!strcmp(ix->e[i].build_id, build_id))
			return &ix->e[i];
	return NULL;
}

static int index_add(struct build_index *ix, const char *build_id, const uint8_t *bundle,
		     size_t len)
{
	struct build_entry *e = index_find(ix, build_id);
	ProtobufCBinaryData *rec;

	if (!e) {
		e = realloc(ix->e, (ix->n + 1) * sizeof(*e));
		if (!e)
			return -ENOMEM;
		ix->e = e;
		e = &ix->e[ix->n++];
		*e = (struct build_entry){ 0 };
		snprintf(e->build_id, sizeof(e->build_id), "%s", build_id);
	}
	rec = realloc(e->records, (e->n + 1) * sizeof(*rec));
	if (!rec)
		return -ENOMEM;
	e->records = rec;
	rec[e->n].data = malloc(len ?: 1);
	if (!rec[e->n].data)
		return -ENOMEM;
	memcpy(rec[e->n].data, bundle, len);
	rec[e->n++].len = len;
	ix->records++;
	return 0;
}

static int load_one(void *arg, const struct store_build_record *r)
{
	return index_add(arg, r->build_id, r->bundle, r->bundle_len);
}

int builds_load(struct kmemd *k)
{
	struct build_index *ix = calloc(1, sizeof(*ix));
	int r = ix ? k->store->ops->build_records(k->store, load_one, ix) : -ENOMEM;

	if (r < 0) {
		log_error("loading the build records failed: %s",
			  r == -ENOMEM ? "out of memory" : k->store->ops->error(k->store));
		index_free(ix);
		return r;
	}
	index_free(k->builds);
	k->builds = ix;
	return 0;
}

void builds_refresh(struct kmemd *k)
{
	uint64_t n;

	if (k->store->ops->build_record_count(k->store, &n) < 0)
		log_error("counting the build records failed: %s", k->store->ops->error(k->store));
	else if (!k->builds || n != k->builds->records)
		builds_load(k);
}

void builds_free(struct kmemd *k)
{
	index_free(k->builds);
	k->builds = NULL;
}

static char *arena_strdup(struct pb_arena *a, const char *s)
{
	size_t len = strlen(s) + 1;
	char *p = pb_arena_alloc(a, len);

	return p ? memcpy(p, s, len) : NULL;
}

const struct store_build *builds_report(struct kmemd *k, const Kmemctl__V1__Report *rep,
					struct pb_arena *arena, Kmemctl__V1__ReportReply *rr)
{
	_cleanup_(build_info_free) struct build_info b = { 0 };
	struct store_build *sb = NULL;
	const struct build_entry *e;
	char err[BUILDREC_ERR_MAX];

	if (build_parse(rep->build_file, strlen(rep->build_file), &b, err) < 0) {
		k->stats.build_files_malformed++;
		log_ratelimited(&k->stats.report_log, LOG_WARNING,
				"report %llu from '%s': its build file is malformed (%s): stored "
				"without it",
				(unsigned long long)rep->seq, rep->facts->host_id, err);
		return NULL;
	}
	e = index_find(k->builds, b.build_id);
	if (e) {
		rr->build_records = e->records;
		rr->n_build_records = e->n;
	}
	sb = pb_arena_alloc(arena, sizeof(*sb));
	if (sb)
		*sb = (struct store_build){ .build_id = arena_strdup(arena, b.build_id),
					    .release = arena_strdup(arena, b.release),
					    .version = arena_strdup(arena, b.version),
					    .file = rep->build_file };
	/* out of memory: the report is stored, its build seen at its next one */
	if (!sb || !sb->build_id || !sb->release || !sb->version)
		return NULL;
	return sb;
}

/* GET /v1/builds's document as builds() gives it. */
struct builds_json {
	json_t *list, *by_id, *waiting;
};

static int build_row(void *arg, const struct store_build_row *b)
{
	struct builds_json *j = arg;
	json_t *o = json_pack(
		"{s:o, s:o, s:o, s:o, s:o, s:I, s:{}, s:I}", "build_id", json_text(b->build_id),
		"release", json_text(b->release), "version", json_text(b->version), "first_seen_ms",
		b->first_seen_ms == STORE_NULL ? json_null() : json_integer(b->first_seen_ms),
		"last_seen_ms",
		b->last_seen_ms == STORE_NULL ? json_null() : json_integer(b->last_seen_ms),
		"hosts", (json_int_t)b->hosts, "waiting", "records", (json_int_t)b->records);

	if (!o || json_object_set(j->by_id, b->build_id, o) < 0 ||
	    json_array_append_new(j->list, o) < 0)
		return -ENOMEM;
	return 0;
}

static json_t *count_add(json_t *o, const char *key, uint64_t n)
{
	json_t *v = json_object_get(o, key);

	json_object_set_new(o, key, json_integer(json_integer_value(v) + (json_int_t)n));
	return o;
}

/* A host waits for its build's record, counted in its build's row (if listed) and in all. */
static int waiting_row(void *arg, const char *build_id, const char *mitigation, uint64_t hosts)
{
	struct builds_json *j = arg;
	json_t *b = json_object_get(j->by_id, build_id);

	if (b)
		count_add(json_object_get(b, "waiting"), mitigation, hosts);
	count_add(j->waiting, mitigation, hosts);
	return 0;
}

void handle_builds_get(struct http_request *req, struct kmemd *k, const struct tls_identity *peer)
{
	static const struct store_builds_cb cb = { .build = build_row, .waiting = waiting_row };
	struct builds_json j = { json_array(), json_object(), json_object() };
	int r = j.list && j.by_id && j.waiting ? k->store->ops->builds(k->store, &cb, &j) : -ENOMEM;

	(void)peer;
	json_decref(j.by_id);
	if (r < 0) {
		json_decref(j.list);
		json_decref(j.waiting);
		reply_store_failed(req, k);
		return;
	}
	reply_json(req, HTTP_OK, "OK",
		   json_pack("{s:o, s:o}", "builds", j.list, "waiting", j.waiting));
}

/* A build id as the module writes it: lowercase hex, within build_info's. */
static bool build_id_valid(const char *id)
{
	size_t n = id ? strspn(id, "0123456789abcdef") : 0;

	return n && !id[n] && n < sizeof(((struct build_info *)0)->build_id);
}

void handle_build_file_get(struct http_request *req, struct kmemd *k,
			   const struct tls_identity *peer)
{
	_cleanup_query_ struct evkeyvalq q = { 0 };
	_cleanup_free_ char *file = NULL;
	const char *id;
	int r;

	(void)peer;
	if (!request_query(req, &q, "want ?build_id=HEX"))
		return;
	id = evhttp_find_header(&q, "build_id");
	if (!build_id_valid(id)) {
		reply_error(req, HTTP_BADREQUEST, "Bad Request",
			    "build_id is a build id: 1 to 128 lowercase hex digits");
		return;
	}
	r = k->store->ops->build_file(k->store, id, &file);
	if (r == -ENOENT) {
		reply_error(req, HTTP_NOTFOUND, "Not Found",
			    "no host sent the build file of that build");
		return;
	}
	if (r < 0) {
		reply_store_failed(req, k);
		return;
	}
	reply_bytes(req, HTTP_OK, "OK", "text/plain; charset=utf-8", file, strlen(file));
}

/*
 * Whether hosts of the build kmemd knows as file would take rec: for every
 * mitigation rec has func lines of, its copies must be the module's (the
 * agent and the module skip a record of other copies). 0, or -EEXIST with
 * why naming the copy that differs.
 */
static int same_copies(const char *file, const struct build_info *rec, char *why, size_t len)
{
	_cleanup_(build_info_free) struct build_info b = { 0 };
	char err[BUILDREC_ERR_MAX], differs[256];

	/* kept only once it parsed: a file that no longer does says nothing either way */
	if (build_parse(file, strlen(file), &b, err) < 0)
		return 0;
	for (size_t i = 0; i < rec->nfuncs; i++) {
		const char *m = rec->funcs[i].mitigation;

		if (!build_same_copies(rec, &b, m, "the record", "the build", differs,
				       sizeof(differs))) {
			snprintf(why, len,
				 "the record's copies of %s are not those of build %s's module "
				 "(%s): its hosts would skip it; make the record again with this "
				 "kmemctl",
				 m, rec->build_id, differs);
			return -EEXIST;
		}
	}
	return 0;
}

/* The record in a verified bundle, checked against the build kmemd knows. */
static int record_check(struct kmemd *k, const Kmemctl__V1__BuildRecordPayload *p,
			struct build_info *rec, char *why, size_t len)
{
	_cleanup_free_ char *file = NULL;
	char err[BUILDREC_ERR_MAX];
	int r;

	if (build_parse_record(p->record, strlen(p->record), rec, err) < 0) {
		snprintf(why, len, "the bundle's record does not parse: %s", err);
		return -EINVAL;
	}
	r = k->store->ops->build_file(k->store, rec->build_id, &file);
	if (r == -ENOENT) /* a build no host reported yet: published ahead */
		return 0;
	if (r < 0) {
		snprintf(why, len, "the store failed");
		return -EIO;
	}
	return same_copies(file, rec, why, len);
}

void handle_build_record_post(struct http_request *req, struct kmemd *k,
			      const struct tls_identity *peer)
{
	_cleanup_pb_ Kmemctl__V1__BuildRecordPayload *payload = NULL;
	_cleanup_pb_ Kmemctl__V1__SignedBuildRecord *sb = NULL;
	_cleanup_(build_info_free) struct build_info rec = { 0 };
	struct store_build_record row;
	const uint8_t *body;
	char why[1024], sha[65];
	size_t len;
	int r;

	(void)peer;
	if (!content_type_is(req, "application/octet-stream")) {
		reply_error(req, 415, "Unsupported Media Type",
			    "send the bundle kmemctl build sign wrote as application/octet-stream");
		return;
	}
	body = request_body(req, &len);
	r = body ? build_record_verify(k->keys, body, len, time(NULL), &payload) : -EBADMSG;
	if (r < 0) {
		verify_reason(r, "build record", why, sizeof(why));
		reply_error(req, HTTP_BADREQUEST, "Bad Request", why);
		return;
	}
	r = record_check(k, payload, &rec, why, sizeof(why));
	if (r < 0) {
		reply_error(req,
			    r == -EEXIST ? 409 :
			    r == -EIO	 ? HTTP_INTERNAL :
					   HTTP_BADREQUEST,
			    r == -EEXIST ? "Conflict" :
			    r == -EIO	 ? "Internal Server Error" :
					   "Bad Request",
			    why);
		return;
	}
	sb = kmemctl__v1__signed_build_record__unpack(NULL, len, body);
	sha256_hex(body, len, sha);
	row = (struct store_build_record){ .build_id = rec.build_id,
					   .release = rec.release,
					   .version = rec.version,
					   .sha256 = sha,
					   .bundle = body,
					   .bundle_len = len,
					   .signer = payload->signer,
					   .key_id = sb ? sb->key_id : "",
					   .created_ms = kmemd_now_ms() };
	r = k->store->ops->build_record_add(k->store, &row);
	/* replies carry it from the next report on */
	if (r == 1 && index_add(k->builds, rec.build_id, body, len) < 0)
		builds_load(k);
	if (r < 0) {
		reply_store_failed(req, k);
		return;
	}
	audit_detail(req, NULL, "build %s (%s) record %.16s%s", rec.build_id, rec.release, sha,
		     r ? "" : " (stored already)");
	reply_json(req, r ? 201 : HTTP_OK, r ? "Created" : "OK",
		   json_pack("{s:s, s:o, s:s, s:b}", "build_id", rec.build_id, "release",
			     json_text(rec.release), "sha256", sha, "new", r));
}

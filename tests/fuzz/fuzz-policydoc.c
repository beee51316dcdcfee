// SPDX-License-Identifier: GPL-2.0
/*
 * Policy documents (policy_doc_parse()), as kmemd takes them on upload and
 * the agent inside a verified bundle. A document that parses must hold
 * only valid ids within the limits, come back the same from the JSON it
 * is written out as, undo itself (policy_doc_undoes()) when it states
 * every mode, and go through kmemd's check (policy_doc_check_known()).
 */
#include <jansson.h>
#include <string.h>

#include "fuzz.h"
#include "policydoc.h"

static void check_doc(const struct policy_doc *doc)
{
	FUZZ_CHECK(doc->nmitigations <= POLICY_MAX_ENTRIES && doc->nprobes <= POLICY_MAX_ENTRIES);
	for (size_t i = 0; i < doc->nmitigations; i++) {
		const struct policy_mitigation *m = &doc->mitigations[i];

		FUZZ_CHECK(policy_id_valid(m->id));
		FUZZ_CHECK(m->mode <= POLICY_MODE_ON && m->nparams <= POLICY_MAX_PARAMS);
		for (size_t j = 0; j < m->nparams; j++)
			FUZZ_CHECK(policy_id_valid(m->params[j].key) &&
				   m->params[j].value <= INT64_MAX);
	}
	for (size_t i = 0; i < doc->nprobes; i++) {
		FUZZ_CHECK(policy_id_valid(doc->probes[i].id));
		FUZZ_CHECK(doc->probes[i].enabled >= -1 && doc->probes[i].enabled <= 1);
		FUZZ_CHECK(doc->probes[i].threshold_ns >= -1);
	}
}

static json_t *render_mitigation(const struct policy_mitigation *m)
{
	json_t *o = json_object(), *params = json_object();

	FUZZ_CHECK(o && params);
	if (m->mode != POLICY_MODE_KEEP)
		json_object_set_new(o, "mode",
				    json_string(m->mode == POLICY_MODE_ON ? "on" : "off"));
	for (size_t j = 0; j < m->nparams; j++)
		json_object_set_new(params, m->params[j].key,
				    json_integer((json_int_t)m->params[j].value));
	if (m->nparams)
		json_object_set_new(o, "params", params);
	else
		json_decref(params);
	return o;
}

static json_t *render_probe(const struct policy_probe *p)
{
	json_t *o = json_object();

	FUZZ_CHECK(o);
	if (p->enabled >= 0)
		json_object_set_new(o, "enabled", json_boolean(p->enabled));
	if (p->threshold_ns >= 0)
		json_object_set_new(o, "threshold_ns", json_integer(p->threshold_ns));
	return o;
}

/* The document as JSON again, malloc'ed. */
static char *render(const struct policy_doc *doc)
{
	json_t *root = json_object(), *mits = json_object(), *probes = json_object();
	char *s;

	FUZZ_CHECK(root && mits && probes);
	for (size_t i = 0; i < doc->nmitigations; i++)
		json_object_set_new(mits, doc->mitigations[i].id,
				    render_mitigation(&doc->mitigations[i]));
	for (size_t i = 0; i < doc->nprobes; i++)
		json_object_set_new(probes, doc->probes[i].id, render_probe(&doc->probes[i]));
	json_object_set_new(root, "mitigations", mits);
	json_object_set_new(root, "probes", probes);
	s = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	FUZZ_CHECK(s);
	return s;
}

static bool states_every_mode(const struct policy_doc *doc)
{
	for (size_t i = 0; i < doc->nmitigations; i++)
		if (doc->mitigations[i].mode == POLICY_MODE_KEEP && doc->mitigations[i].nparams)
			return false;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct policy_doc doc, again;
	char err[256], *text;

	if (policy_doc_parse((const char *)data, size, &doc, err, sizeof(err)) < 0) {
		FUZZ_CHECK(memchr(err, '\0', sizeof(err)) && err[0]);
		return 0;
	}
	check_doc(&doc);
	text = render(&doc);
	FUZZ_CHECK(policy_doc_parse(text, strlen(text), &again, err, sizeof(err)) == 0);
	FUZZ_CHECK(!memcmp(&doc, &again, sizeof(doc)));
	free(text);
	if (states_every_mode(&doc))
		FUZZ_CHECK(policy_doc_undoes(&doc, &doc, err, sizeof(err)) == 0);
	policy_doc_check_known(&doc, err, sizeof(err));
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * A rollout's evidence as kmemd reads it back from the store
 * (evidence_from_json(), daemon/evidence.c): the row may have been edited
 * by an operator or written by another kmemd. What is refused gets one
 * printable line of reason and leaves the evidence empty; what is taken
 * must be within its bounds and read back equal from what
 * evidence_to_json() writes of it.
 */
#include <math.h>

#include "evidence.h"
#include "fuzz.h"
#include "text.h"

static bool empty(const struct evidence *e)
{
	static const struct evidence zero;

	return !memcmp(e, &zero, sizeof(zero));
}

/* One line a log or a JSON reply can carry as it is. */
static bool one_line(const char *s, size_t size)
{
	size_t n = strnlen(s, size);

	if (!n || n == size || !text_utf8_valid(s, n))
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

static bool stratum_ok(const char *s)
{
	return strnlen(s, EVIDENCE_STRATUM_MAX) < EVIDENCE_STRATUM_MAX;
}

static bool sums_ok(const struct evidence_sums *s)
{
	return stratum_ok(s->stratum) && s->x_c <= INT64_MAX && s->x_b <= INT64_MAX &&
	       isfinite(s->t_c) && s->t_c >= 0 && isfinite(s->t_b) && s->t_b >= 0;
}

static bool sums_same(const struct evidence_sums *a, const struct evidence_sums *b)
{
	return !strcmp(a->stratum, b->stratum) && a->x_c == b->x_c && a->t_c == b->t_c &&
	       a->x_b == b->x_b && a->t_b == b->t_b;
}

static void check_test(const struct evidence_test *t)
{
	for (size_t i = 0; i < STATS_MSPRT_RATIOS; i++)
		FUZZ_CHECK(isfinite(t->log_lr[i]));
	for (size_t i = 0; i < t->nlast; i++)
		FUZZ_CHECK(sums_ok(&t->last[i]));
	for (size_t i = 0; i < t->ncells; i++) {
		FUZZ_CHECK(t->cells[i].wave <= ROLLOUT_MAX_WAVES && sums_ok(&t->cells[i].s));
		FUZZ_CHECK(isfinite(t->cells[i].mu0) && t->cells[i].mu0 >= 0);
	}
	for (size_t i = 0; i < t->nlooked; i++)
		FUZZ_CHECK(t->looked[i].wave <= ROLLOUT_MAX_WAVES && t->looked[i].p >= 0 &&
			   t->looked[i].p <= 1);
}

static void same_test(const struct evidence_test *a, const struct evidence_test *b)
{
	FUZZ_CHECK(!memcmp(a->log_lr, b->log_lr, sizeof(a->log_lr)));
	FUZZ_CHECK(a->nlast == b->nlast && a->ncells == b->ncells && a->nlooked == b->nlooked);
	/* last is an object: written in key order, so compared by stratum */
	for (size_t i = 0; i < a->nlast; i++) {
		size_t j = 0;

		while (j < b->nlast && strcmp(a->last[i].stratum, b->last[j].stratum))
			j++;
		FUZZ_CHECK(j < b->nlast && sums_same(&a->last[i], &b->last[j]));
	}
	for (size_t i = 0; i < a->ncells; i++)
		FUZZ_CHECK(a->cells[i].wave == b->cells[i].wave &&
			   sums_same(&a->cells[i].s, &b->cells[i].s) &&
			   a->cells[i].mu0 == b->cells[i].mu0);
	for (size_t i = 0; i < a->nlooked; i++)
		FUZZ_CHECK(a->looked[i].wave == b->looked[i].wave &&
			   a->looked[i].p == b->looked[i].p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct evidence e, back;
	char err[256], *json, *again;

	if (evidence_from_json((const char *)data, size, &e, err, sizeof(err)) < 0) {
		FUZZ_CHECK(one_line(err, sizeof(err)));
		FUZZ_CHECK(empty(&e));
		return 0;
	}
	FUZZ_CHECK(e.wave <= ROLLOUT_MAX_WAVES);
	for (size_t i = 0; i < e.nhistory; i++)
		FUZZ_CHECK(stratum_ok(e.history[i].stratum) && isfinite(e.history[i].events) &&
			   e.history[i].events >= 0 && isfinite(e.history[i].hours) &&
			   e.history[i].hours >= 0);
	check_test(&e.lockups);
	check_test(&e.hard);

	FUZZ_CHECK(evidence_to_json(&e, &json) == 0);
	if (evidence_from_json(json, strlen(json), &back, err, sizeof(err)) < 0) {
		fprintf(stderr, "written: %s\nrefused: %s\n", json, err);
		FUZZ_CHECK(!"what evidence_to_json() wrote reads back");
	}
	FUZZ_CHECK(back.wave == e.wave && back.since_ms == e.since_ms);
	FUZZ_CHECK(back.nhistory == e.nhistory);
	for (size_t i = 0; i < e.nhistory; i++) {
		size_t j = 0;

		while (j < back.nhistory && strcmp(e.history[i].stratum, back.history[j].stratum))
			j++;
		FUZZ_CHECK(j < back.nhistory && e.history[i].events == back.history[j].events &&
			   e.history[i].hours == back.history[j].hours);
	}
	same_test(&e.lockups, &back.lockups);
	same_test(&e.hard, &back.hard);
	/* and the second writing is the first's, byte for byte */
	FUZZ_CHECK(evidence_to_json(&back, &again) == 0);
	FUZZ_CHECK(!strcmp(json, again));
	free(json);
	free(again);
	evidence_free(&back);
	evidence_free(&e);
	FUZZ_CHECK(empty(&e));
	return 0;
}

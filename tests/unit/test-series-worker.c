// SPDX-License-Identifier: GPL-2.0
/*
 * daemon/series-worker.c over a real store holding a 200-member rollout
 * (bench/rollout-store.h): the first request waits for its answer and is
 * answered from the loop; the next is answered at once with the kept one,
 * which is recomputed once SERIES_FRESH_MS old; errors are answered and
 * not kept; SERIES_KEEP queries out at once refuse one more; stopping
 * answers everyone waiting.
 */
#include <errno.h>
#include <event2/event.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "rollout-store.h"
#include "series-worker.h"

#define HOSTS 200
#define MIN 60000LL
#define T0 1700000000000LL

static char path[4096];

struct heard {
	int n, r, ok, cancelled;
	int64_t computed_ms;
	int canaries, baselines;
};

static void on_answer(void *arg, const struct series_answer *a)
{
	struct heard *h = arg;
	json_t *o, *sides;

	h->n++;
	h->r = a->r;
	h->ok += a->r == 0;
	h->cancelled += a->r == -ECANCELED;
	if (a->r < 0)
		return;
	o = json_loadb(a->json, a->len, 0, NULL);
	assert_non_null(o);
	assert_int_equal(a->json[a->len - 1], '\n');
	h->computed_ms = json_integer_value(json_object_get(o, "computed_ms"));
	assert_int_equal(h->computed_ms, a->computed_ms);
	sides = json_object_get(json_object_get(o, "series"), "sides");
	h->canaries = (int)json_integer_value(json_object_get(json_array_get(sides, 0), "hosts"));
	h->baselines = (int)json_integer_value(json_object_get(json_array_get(sides, 1), "hosts"));
	json_decref(o);
}

struct fixture {
	struct event_base *base;
	struct series_worker *w;
	int canaries, baselines; /* wave 1's, as the engine matches them */
};

static int setup(void **state)
{
	static struct fixture f;
	struct rollout_member m[HOSTS] = { 0 };
	struct store *st;
	char err[256];

	unlink(path);
	if (store_open(path, &st, err, sizeof(err)) < 0)
		fail_msg("store_open: %s", err);
	rollout_store_hosts(m, HOSTS);
	assert_int_equal(rollout_store_reports(st, m, HOSTS, 2, T0), 0);
	assert_int_equal(rollout_store_start(st, m, HOSTS, T0), 0);
	st->ops->close(st);
	assert_int_equal(rollout_match(m, HOSTS, 0), 0);
	f.canaries = f.baselines = 0;
	for (size_t i = 0; i < HOSTS; i++) {
		f.canaries += m[i].role == ROLLOUT_CANARY;
		f.baselines += m[i].role == ROLLOUT_BASELINE;
	}
	f.base = event_base_new();
	assert_non_null(f.base);
	if (series_worker_new(f.base, path, &f.w, err, sizeof(err)) < 0)
		fail_msg("series_worker_new: %s", err);
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	series_worker_free(f->w);
	event_base_free(f->base);
	return 0;
}

static void wait_for(struct fixture *f, const struct heard *h, int n)
{
	while (h->n < n)
		assert_int_equal(event_base_loop(f->base, EVLOOP_ONCE), 0);
}

static void test_kept(void **state)
{
	struct fixture *f = *state;
	const struct series_key key = { .name = "bench", .wave = -1 };
	struct heard h = { 0 }, fresh = { 0 };

	/* the first waits: answered from the loop, never before get returns */
	assert_int_equal(series_worker_get(f->w, &key, T0 + 30 * MIN, on_answer, &h), 0);
	assert_int_equal(h.n, 0);
	wait_for(f, &h, 1);
	assert_int_equal(h.r, 0);
	assert_int_equal(h.computed_ms, T0 + 30 * MIN);
	assert_int_equal(h.canaries, f->canaries);
	assert_int_equal(h.baselines, f->baselines);
	assert_true(h.canaries > 0 && h.baselines > 0);
	/* the kept answer, at once, while it is fresh */
	assert_int_equal(series_worker_get(f->w, &key, T0 + 30 * MIN + 1, on_answer, &h), 0);
	assert_int_equal(h.n, 2);
	assert_int_equal(h.computed_ms, T0 + 30 * MIN);
	/* older: still the kept one at once, and a new one computed for the next */
	assert_int_equal(series_worker_get(f->w, &key, T0 + 31 * MIN, on_answer, &h), 0);
	assert_int_equal(h.n, 3);
	assert_int_equal(h.computed_ms, T0 + 30 * MIN);
	while (fresh.computed_ms != T0 + 31 * MIN) {
		assert_int_equal(event_base_loop(f->base, EVLOOP_ONCE), 0);
		assert_int_equal(series_worker_get(f->w, &key, T0 + 31 * MIN, on_answer, &fresh),
				 0);
		assert_int_equal(fresh.r, 0);
	}
}

static void test_errors(void **state)
{
	struct fixture *f = *state;
	const struct series_key nobody = { .name = "nobody", .wave = -1 },
				wave = { .name = "bench", .wave = 2 },
				empty = { .name = "bench", .from_ms = T0, .to_ms = T0 };
	struct heard h = { 0 };

	/* asked twice, computed twice: nothing kept */
	for (int i = 1; i <= 2; i++) {
		assert_int_equal(series_worker_get(f->w, &nobody, T0, on_answer, &h), 0);
		assert_int_equal(h.n, 3 * i - 3);
		wait_for(f, &h, 3 * i - 2);
		assert_int_equal(h.r, -ENOENT);
		assert_int_equal(series_worker_get(f->w, &wave, T0, on_answer, &h), 0);
		wait_for(f, &h, 3 * i - 1);
		assert_int_equal(h.r, -ERANGE);
		assert_int_equal(series_worker_get(f->w, &empty, T0, on_answer, &h), 0);
		wait_for(f, &h, 3 * i);
		assert_int_equal(h.r, -EINVAL);
	}
}

static void test_busy_and_stop(void **state)
{
	struct fixture *f = *state;
	struct series_key key = { .name = "bench", .wave = 0, .from_ms = T0, .to_ms = T0 + MIN };
	struct heard h = { 0 }, more = { 0 };

	/* the loop does not run: none of the answers is taken */
	for (int i = 0; i < SERIES_KEEP; i++) {
		key.step_ms = 1000 + i;
		assert_int_equal(series_worker_get(f->w, &key, T0, on_answer, &h), 0);
	}
	key.step_ms = 999;
	assert_int_equal(series_worker_get(f->w, &key, T0, on_answer, &more), -EBUSY);
	assert_int_equal(h.n, 0);
	/* stopping answers each: computed, or cancelled */
	series_worker_free(f->w);
	f->w = NULL;
	assert_int_equal(h.n, SERIES_KEEP);
	assert_int_equal(h.ok + h.cancelled, SERIES_KEEP);
	assert_int_equal(more.n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_busy_and_stop, setup, teardown),
	};

	snprintf(path, sizeof(path), "%s/test-series-worker.sqlite", getenv("KMEM_TEST_TMP"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}

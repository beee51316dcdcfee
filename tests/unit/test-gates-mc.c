// SPDX-License-Identifier: GPL-2.0
/*
 * daemon/gates.c's error control and power, by simulation (fixed seed):
 * rollouts on the 1/10/50/100% plan (5% held back) of 10,000 hosts in two
 * strata whose lockup rates differ threefold (6,000 at 0.01 and 4,000 at
 * 0.03 lockups per host-hour), judged by gates_judge() tick by tick (30
 * minutes), lockups Poisson per stratum and tick, canaries and baselines
 * of a stratum each summed into one gate host.
 *
 * The bake (5 h a wave) is chosen so that every wave has the information
 * for a 3x regression at power 0.8: wave 1's 100 canaries expect 1.8
 * lockups an hour, 9 in the bake, above the about 7.5 a final look at
 * alpha 0.01 / 2 / 4 needs; later waves have far more. A wave short of it
 * is held (underpowered "hold") and ticks on.
 *
 * - 10,000 good rollouts at a tenth of those rates (the final looks' exact
 *   tests cost the square of the events; the error control does not rest
 *   on the information): false rollbacks at most alpha (0.01) plus three
 *   standard errors.
 * - 2,000 rollouts of a 3x policy with detect_ratio 3: caught (rolled back
 *   before the last wave) at least 0.8 less three standard errors.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "evidence.h"
#include "gates.h"

#define HOSTS 10000
#define NSTRATA 2
#define WAVES 4 /* the document's: the release wave has no rate test */
#define TICK_H 0.5
#define BAKE_TICKS 10
#define MAX_TICKS 200 /* a wave held this long is a failure of the plan */

static const char *const names[NSTRATA] = { "a", "b" };
static const double size[NSTRATA] = { 6000, 4000 }, rate[NSTRATA] = { 0.01, 0.03 };
static const double percent[WAVES] = { 1, 10, 50, 95 };

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

/* splitmix64: a uniform in (0, 1) */
static double uniform(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}

/* Poisson by inversion: the means here are below 100 */
static uint64_t poisson(double mean)
{
	double u = uniform(), p = exp(-mean), cdf = p;
	uint64_t k = 0;

	while (u > cdf && k < 1000) {
		p *= mean / (double)++k;
		cdf += p;
	}
	return k;
}

enum outcome { ROLLED_BACK, REACHED_ALL, STUCK };

/*
 * One rollout whose canaries lock up at ratio times their stratum's rate,
 * the fleet's rates scaled by scale.
 */
static enum outcome rollout(const struct rollout_gates *g, double ratio, double scale)
{
	struct evidence ev = { 0 };
	enum outcome o = REACHED_ALL;

	for (int s = 0; s < NSTRATA; s++)
		/* the week before, at the expected count */
		assert_int_equal(evidence_history_add(&ev, names[s],
						      size[s] * scale * rate[s] * 168,
						      size[s] * 168),
				 0);
	for (unsigned w = 0; w < WAVES && o == REACHED_ALL; w++) {
		struct gate_host c[NSTRATA], b[NSTRATA];
		struct gate_look look = { .wave = w, .nlooks = WAVES, .sequential = true };
		double nc[NSTRATA];

		evidence_wave(&ev, w, w);
		for (int s = 0; s < NSTRATA; s++) {
			nc[s] = round(size[s] * percent[w] / 100);
			c[s] = (struct gate_host){ .host = "c", .stratum = names[s] };
			b[s] = (struct gate_host){ .host = "b", .stratum = names[s] };
		}
		for (int t = 1;; t++) {
			struct gate_result r;
			bool changed = false;

			for (int s = 0; s < NSTRATA; s++) {
				c[s].soft_lockups +=
					poisson(ratio * scale * rate[s] * nc[s] * TICK_H);
				b[s].soft_lockups +=
					poisson(scale * rate[s] * (size[s] - nc[s]) * TICK_H);
				c[s].hours += nc[s] * TICK_H;
				b[s].hours += (size[s] - nc[s]) * TICK_H;
			}
			assert_int_equal(gates_judge(g, &ev, &look, c, NSTRATA, b, NSTRATA,
						     t < BAKE_TICKS ? GATES_HEALTH : GATES_ALL, &r,
						     &changed),
					 0);
			json_decref(r.detail);
			if (r.verdict == GATE_FAIL) {
				o = ROLLED_BACK;
				break;
			}
			if (t >= BAKE_TICKS && r.verdict == GATE_PASS)
				break;
			if (t == MAX_TICKS) {
				o = STUCK;
				break;
			}
		}
	}
	evidence_free(&ev);
	return o;
}

static struct rollout_gates gates(void)
{
	return (struct rollout_gates){ .lockup_alpha = 0.01,
				       .hard_alpha = 0.01,
				       .min_exposure_h = 24,
				       .min_hosts = 1,
				       .latency_alpha = 0.01,
				       .latency_effect = 0.6,
				       .detect_ratio = 3,
				       .power = 0.8,
				       .underpowered = ROLLOUT_UNDERPOWERED_HOLD };
}

static void test_false_rollbacks(void **state)
{
	struct rollout_gates g = gates();
	const int n = 10000;
	int back = 0, stuck = 0;
	double rate_back, se = sqrt(0.01 * 0.99 / n);

	(void)state;
	/*
	 * at a tenth of the rates: the final looks' exact tests over thousands
	 * of events each would take minutes; the waves pass underpowered
	 */
	g.underpowered = ROLLOUT_UNDERPOWERED_PASS;
	for (int i = 0; i < n; i++) {
		enum outcome o = rollout(&g, 1, 0.1);

		back += o == ROLLED_BACK;
		stuck += o == STUCK;
	}
	rate_back = (double)back / n;
	print_message(
		"good rollouts: %d of %d rolled back (%.4f; at most %.4f), %d held for good\n",
		back, n, rate_back, 0.01 + 3 * se, stuck);
	assert_true(rate_back <= 0.01 + 3 * se);
	assert_int_equal(stuck, 0);
}

static void test_power(void **state)
{
	struct rollout_gates g = gates();
	const int n = 2000;
	int caught = 0, stuck = 0;
	double p, se = sqrt(0.8 * 0.2 / n);

	(void)state;
	for (int i = 0; i < n; i++) {
		enum outcome o = rollout(&g, 3, 1);

		caught += o == ROLLED_BACK;
		stuck += o == STUCK;
	}
	p = (double)caught / n;
	print_message("3x rollouts: %d of %d caught (%.4f; at least %.4f)\n", caught, n, p,
		      0.8 - 3 * se);
	assert_true(p >= 0.8 - 3 * se);
	assert_int_equal(stuck, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_false_rollbacks),
		cmocka_unit_test(test_power),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

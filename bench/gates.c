// SPDX-License-Identifier: GPL-2.0
/*
 * bench/gates: what a rollout's gates catch, by simulation over kmemd's
 * own gate code (daemon/gates.c, daemon/evidence.c, lib/stats.c), against
 * a model of the gates before issue 25 ("old").
 *
 *   build/bench/gates [--hosts N] [--strata S] [--lambda L] [--spread F]
 *                     [--hard-lambda H] [--ratios K,K,...] [--plan P,P,...]
 *                     [--bake-min M] [--tick-s T] [--held-h H] [--trials N]
 *                     [--seed S] [--max-h H] [--detect-ratio K] [--holdback P]
 *                     [--jobs J] [--gates old|new|both]
 *
 * A fleet of N hosts in S strata (defaults 10,000 and 4) whose lockup
 * rates per host-hour spread around L (default 0.01): stratum i runs at
 * L * (1 + F * (2i / (S - 1) - 1)), F default 0.5. Hard lockups come at H
 * per host-hour (default 1e-4) on every host, good policy or bad. A policy
 * of ratio K multiplies its hosts' lockup rate by K (1: a good policy).
 * Each trial plans the rollout as kmemd does (rollout_plan(),
 * rollout_match()), with the plan's waves (percent, default 1,10,50,100)
 * each baking M minutes (default 60), and judges it every T seconds
 * (default 60) as the engine does; lockups are Poisson per tick. A trial
 * ends when the rollout is rolled back, is done, or has run --max-h hours
 * (default 72: "held"). --held-h H: after each bake another gate holds
 * the wave H more hours (a latency probe without enough hosts), the case
 * where the old gates looked again every tick.
 *
 * The new gates run as configured by default (detect_ratio 2, power 0.8,
 * lockup_alpha and hard_alpha 0.01 over the rollout, holdback 5%,
 * underpowered "hold"), with 7 days of the fleet's history per stratum.
 * The old gates, modelled from main before issue 25: at the bake's end a
 * pooled rate test at alpha 0.01 per wave (fail on p < alpha) after 24
 * host-hours a side, run again on every tick a wave is held; any hard
 * lockup on a canary fails; the last wave runs no rate test; no holdback.
 *
 * A canary host's entries: each stratum's hosts on a side are pooled into
 * at most four gate hosts (a sum of Poissons is Poisson: the rate tests
 * see the same numbers; min_hosts sees the entries).
 *
 * Printed per gates and ratio: the share of rollouts rolled back, done
 * (the policy reached every member) and held at the end; the share of
 * the rollouts that reached each wave failed there; the median time from
 * the start to a rollback; and the mean excess lockups the policy caused
 * before the rollout stopped (expected, (K - 1) times the base rate over
 * the host-hours of hosts that ran it). For K = 1, "rolled back" is the
 * false-rollback rate per rollout.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "evidence.h"
#include "gates.h"
#include "macro.h"
#include "rollout.h"
#include "stats.h"

#define MAX_STRATA 16
#define MAX_RATIOS 8
#define ENTRIES 4 /* gate hosts per stratum and side */
#define HISTORY_H (7 * 24.0)
#define OLD_ALPHA 0.01
#define OLD_EXPOSURE_H 24

struct opts {
	size_t hosts, strata, trials, nratios, nplan;
	double lambda, spread, hard_lambda, ratios[MAX_RATIOS], plan[ROLLOUT_MAX_WAVES];
	double bake_min, tick_s, held_h, max_h, detect_ratio, holdback;
	uint64_t seed;
	unsigned jobs;
	bool old, new;
};

static uint64_t rng;

static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* splitmix64: a uniform in (0, 1) */
static double uniform(void)
{
	return ((double)(mix(rng += 0x9e3779b97f4a7c15ULL) >> 11) + 0.5) / 9007199254740992.0;
}

/*
 * Poisson: by inversion below a mean of 30, else Hormann's transformed
 * rejection (PTRS, 1993), exact at any mean (the history's run to
 * thousands).
 */
static uint64_t poisson(double mean)
{
	double b, a, vr, us, u, v, k;

	if (mean <= 0)
		return 0;
	if (mean < 30) {
		double p = exp(-mean), s = p;
		uint64_t x = 0;

		u = uniform();
		while (u > s && x < 1000) {
			p *= mean / (double)++x;
			s += p;
		}
		return x;
	}
	b = 0.931 + 2.53 * sqrt(mean);
	a = -0.059 + 0.02483 * b;
	vr = 0.9277 - 3.6224 / (b - 2);
	for (;;) {
		u = uniform() - 0.5;
		v = uniform();
		us = 0.5 - fabs(u);
		k = floor((2 * a / us + b) * u + mean + 0.43);
		if (us >= 0.07 && v <= vr)
			return (uint64_t)k;
		if (k < 0 || (us < 0.013 && v > us))
			continue;
		if (log(v * (1.1239 + 1.1328 / (b - 3.4)) / (a / (us * us) + b)) <=
		    -mean + k * log(mean) - lgamma(k + 1))
			return (uint64_t)k;
	}
}

/* One pooled gate host: share hosts of a stratum on one side. */
struct entry {
	struct gate_host h;
	double share, rate;
};

struct sim {
	const struct opts *o;
	struct rollout_spec spec;
	struct rollout_member *m;
	double rate[MAX_STRATA];
	char name[MAX_STRATA][32];
	char stratum[MAX_STRATA][160];
	struct entry e[MAX_STRATA * ENTRIES * 3];
	size_t ne, nc, reached[MAX_STRATA];
	struct gate_host c[MAX_STRATA * ENTRIES * 2], b[MAX_STRATA * ENTRIES];
	size_t ncanary, nbase;
	bool last;
};

/* What one trial came to. */
enum outcome { ROLLED_BACK, DONE, HELD };

struct trial {
	enum outcome how;
	unsigned wave; /* the last wave it ran */
	double hours; /* from the start to the end */
	double excess; /* lockups the policy caused */
};

/* The tally of one gates and ratio over the trials. */
struct tally {
	size_t n[3];
	size_t reached[ROLLOUT_MAX_WAVES + 1], failed[ROLLOUT_MAX_WAVES + 1];
	double *stop_h;
	size_t nstop;
	double excess;
};

static _noreturn_ void die(const char *what)
{
	fprintf(stderr, "gates: %s\n", what);
	exit(1);
}

static void spec_make(const struct opts *o, bool new, struct rollout_spec *s)
{
	char doc[2048], waves[1024] = "", err[256];
	size_t len = 0;

	for (size_t i = 0; i < o->nplan; i++)
		len += (size_t)snprintf(waves + len, sizeof(waves) - len, "%s{\"percent\": %g}",
					i ? ", " : "", o->plan[i]);
	snprintf(doc, sizeof(doc),
		 "{\"name\": \"bench\", \"policy\": \"p\", \"version\": 1,"
		 " \"selector\": {\"all\": true}, \"waves\": [%s], \"bake_s\": %.0f,"
		 " \"holdback_percent\": %g, \"gates\": {\"detect_ratio\": %g%s}}",
		 waves, o->bake_min * 60, new ? o->holdback : 0, o->detect_ratio,
		 o->held_h > 0 ? ", \"latency_probes\": [\"held\"]" : "");
	if (rollout_spec_parse(doc, strlen(doc), s, err, sizeof(err)) < 0)
		die(err);
}

static void sim_init(struct sim *x, const struct opts *o, bool new)
{
	memset(x, 0, sizeof(*x));
	x->o = o;
	spec_make(o, new, &x->spec);
	x->m = calloc(o->hosts, sizeof(*x->m));
	if (!x->m)
		die("out of memory");
	for (size_t s = 0; s < o->strata; s++) {
		x->rate[s] =
			o->lambda *
			(o->strata > 1 ?
				 1 + o->spread * (2.0 * (double)s / (double)(o->strata - 1) - 1) :
				 1);
		snprintf(x->name[s], sizeof(x->name[s]), "role-%zu", s);
		rollout_stratum("build", 8, x->name[s], x->stratum[s], sizeof(x->stratum[s]));
	}
	for (size_t i = 0; i < o->hosts; i++) {
		snprintf(x->m[i].host, sizeof(x->m[i].host), "h%06zu", i);
		memcpy(x->m[i].stratum, x->stratum[i % o->strata], sizeof(x->m[i].stratum));
	}
	rollout_plan(&x->spec, x->m, o->hosts);
}

static size_t stratum_of(const struct sim *x, const struct rollout_member *m)
{
	for (size_t s = 0; s < x->o->strata; s++)
		if (!strcmp(m->stratum, x->stratum[s]))
			return s;
	return 0;
}

/* Adds up to ENTRIES pooled hosts of count hosts on one side of a stratum. */
static void entries_add(struct sim *x, size_t s, size_t count, bool canary, bool unmatched,
			double ratio)
{
	size_t k = count < ENTRIES ? count : ENTRIES;

	for (size_t i = 0; i < k; i++) {
		struct entry *e = &x->e[x->ne++];

		*e = (struct entry){ .share = (double)(count / k + (i < count % k)),
				     .rate = x->rate[s] * (canary ? ratio : 1) };
		e->h = (struct gate_host){ .host = x->name[s],
					   .stratum = x->stratum[s],
					   .unmatched = unmatched };
		for (size_t p = 0; p < ROLLOUT_MAX_PROBES; p++)
			e->h.p99_ns[p] = e->h.max_ns[p] = -1;
	}
}

/* The members' roles while wave k runs, pooled: the gate hosts of its window. */
static void wave_begin(struct sim *x, unsigned k, double ratio)
{
	size_t n[MAX_STRATA][3] = { { 0 } };

	if (rollout_match(x->m, x->o->hosts, k) < 0)
		die("out of memory");
	x->last = true;
	for (size_t i = 0; i < x->o->hosts; i++) {
		size_t s = stratum_of(x, &x->m[i]);

		x->last &= x->m[i].wave <= k;
		if (x->m[i].role == ROLLOUT_CANARY)
			n[s][0]++;
		else if (x->m[i].role == ROLLOUT_UNMATCHED)
			n[s][1]++;
		else if (x->m[i].role == ROLLOUT_BASELINE)
			n[s][2]++;
	}
	x->ne = 0;
	for (size_t s = 0; s < x->o->strata; s++) {
		entries_add(x, s, n[s][0], true, false, ratio);
		entries_add(x, s, n[s][1], true, true, ratio);
		x->reached[s] = n[s][0] + n[s][1];
	}
	x->nc = x->ne;
	for (size_t s = 0; s < x->o->strata; s++)
		entries_add(x, s, n[s][2], false, false, ratio);
}

/* One tick of dt hours: each gate host's reports and lockups. */
static void tick(struct sim *x, double dt, bool latency_held)
{
	for (size_t i = 0; i < x->ne; i++) {
		struct entry *e = &x->e[i];

		e->h.hours += e->share * dt;
		e->h.soft_lockups += poisson(e->rate * e->share * dt);
		e->h.hard_lockups += poisson(x->o->hard_lambda * e->share * dt);
		/* every host alike: the probe never fails, it only holds while it has too few */
		e->h.p99_ns[0] = e->h.max_ns[0] = latency_held ? -1 : 1000;
	}
	x->ncanary = x->nbase = 0;
	for (size_t i = 0; i < x->ne; i++) {
		if (i < x->nc)
			x->c[x->ncanary++] = x->e[i].h;
		else
			x->b[x->nbase++] = x->e[i].h;
	}
}

/* The gates before issue 25, as main had them (see the top of this file). */
static enum gate_verdict old_judge(const struct sim *x, enum gate_scope scope, bool latency_held)
{
	uint64_t xc = 0, xb = 0, hard = 0;
	double tc = 0, tb = 0;

	for (size_t i = 0; i < x->ncanary; i++) {
		hard += x->c[i].hard_lockups;
		if (x->c[i].unmatched)
			continue;
		xc += x->c[i].soft_lockups + x->c[i].hard_lockups;
		tc += x->c[i].hours;
	}
	for (size_t i = 0; i < x->nbase; i++) {
		xb += x->b[i].soft_lockups + x->b[i].hard_lockups;
		tb += x->b[i].hours;
	}
	if (hard > 0)
		return GATE_FAIL;
	if (scope == GATES_HEALTH || scope == GATES_LAST_WAVE)
		return GATE_PASS;
	if (tc < OLD_EXPOSURE_H || tb < OLD_EXPOSURE_H)
		return GATE_INCONCLUSIVE;
	if (stats_rate_test(xc, tc, xb, tb) < OLD_ALPHA)
		return GATE_FAIL;
	return latency_held ? GATE_INCONCLUSIVE : GATE_PASS;
}

/* The fleet's lockups per stratum over the week before the rollout, as kmemd reads them. */
static void history(struct sim *x, struct evidence *ev)
{
	for (size_t s = 0; s < x->o->strata; s++) {
		double hosts =
			(double)(x->o->hosts / x->o->strata + (s < x->o->hosts % x->o->strata));

		if (evidence_history_add(ev, x->stratum[s],
					 (double)poisson(x->rate[s] * hosts * HISTORY_H),
					 hosts * HISTORY_H) < 0)
			die("out of memory");
	}
}

static struct trial run(struct sim *x, bool new, double ratio)
{
	const struct opts *o = x->o;
	double dt = o->tick_s / 3600, bake = o->bake_min / 60, t = 0, started = 0;
	struct evidence ev = { 0 };
	struct trial tr = { .how = HELD };
	unsigned k = 0;

	if (new)
		history(x, &ev);
	wave_begin(x, 0, ratio);
	while (t < o->max_h) {
		struct gate_look look = { .wave = k, .sequential = true, .detectable = true };
		struct gate_result res = { 0 };
		enum gate_scope scope;
		enum gate_verdict v;
		bool changed = false, held;

		t += dt;
		held = t < started + bake + o->held_h;
		tick(x, dt, held);
		for (size_t s = 0; s < o->strata; s++)
			tr.excess += (ratio - 1) * x->rate[s] * (double)x->reached[s] * dt;
		scope = t < started + bake - 1e-9 ? GATES_HEALTH :
			x->last			  ? GATES_LAST_WAVE :
						    GATES_ALL;
		if (new) {
			look.nlooks = evidence_nlooks(&x->spec, o->hosts);
			evidence_wave(&ev, k, (int64_t)(started * 3600e3));
			if (gates_judge(&x->spec.gates, &ev, &look, x->c, x->ncanary,
					x->last ? NULL : x->b, x->last ? 0 : x->nbase, scope, &res,
					&changed) < 0)
				die("gates_judge failed");
			json_decref(res.detail);
			v = res.verdict;
		} else {
			v = old_judge(x, scope, held);
		}
		if (v == GATE_FAIL) {
			tr.how = ROLLED_BACK;
			break;
		}
		if (v != GATE_PASS || scope == GATES_HEALTH)
			continue;
		if (x->last) {
			tr.how = DONE;
			break;
		}
		wave_begin(x, ++k, ratio);
		started = t;
	}
	tr.wave = k;
	tr.hours = t;
	evidence_free(&ev);
	return tr;
}

/*
 * Trial i of ratio r into res[i], in o->jobs processes sharing res: trial
 * i is drawn from its own seed, whichever process runs it.
 */
static void trials(struct sim *x, bool new, size_t r, struct trial *res)
{
	const struct opts *o = x->o;
	int status;

	fflush(stdout);
	for (unsigned j = 0; j < o->jobs; j++) {
		pid_t pid = fork();

		if (pid < 0)
			die("fork failed");
		if (pid)
			continue;
		for (size_t i = j; i < o->trials; i += o->jobs) {
			/* mixed: trials' streams are not shifted copies of one another */
			rng = mix(mix(o->seed) ^ mix(r * 1000003 + i + 1));
			res[i] = run(x, new, o->ratios[r]);
		}
		_exit(0);
	}
	for (unsigned j = 0; j < o->jobs; j++)
		if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			die("a trial process failed");
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void report(const struct opts *o, const char *gates, double ratio, size_t nwaves,
		   struct tally *t)
{
	double n = (double)o->trials;

	printf("%-5s %5.2g %8.4f %7.4f %6.4f", gates, ratio, (double)t->n[ROLLED_BACK] / n,
	       (double)t->n[DONE] / n, (double)t->n[HELD] / n);
	if (t->nstop) {
		qsort(t->stop_h, t->nstop, sizeof(double), by_value);
		printf(" %9.1f", t->stop_h[t->nstop / 2] * 60);
	} else {
		printf(" %9s", "-");
	}
	printf(" %8.1f  ", t->excess / n);
	for (size_t w = 0; w < nwaves; w++)
		if (t->reached[w])
			printf(" %5.3f", (double)t->failed[w] / (double)t->reached[w]);
		else
			printf(" %5s", "-");
	putchar('\n');
}

/* What the plan says each wave can detect (evidence_plan()), from one draw of history. */
static void print_plan(struct sim *x)
{
	struct evidence_plan_wave w[ROLLOUT_MAX_WAVES + 1];
	struct evidence ev = { 0 };

	history(x, &ev);
	if (evidence_plan(&x->spec, x->m, x->o->hosts, &ev, w) < 0)
		die("evidence_plan failed");
	printf("wave  canaries  baselines  bake_min  mu0_at_bake_end  mu_needed  detectable"
	       "  bake_needed_h\n");
	for (size_t k = 0; k < x->spec.nwaves; k++)
		printf("%4zu %9zu %10zu %9.0f %16.2f %10.2f %11.2f %14.1f\n", k + 1, w[k].canaries,
		       w[k].baselines, w[k].bake_s / 60, w[k].mu0, w[k].mu_needed, w[k].detectable,
		       w[k].bake_needed_s / 3600);
	evidence_free(&ev);
}

static void list(const char *arg, double *out, size_t max, size_t *n, const char *what)
{
	char *copy = strdup(arg), *tok, *save = NULL, *end;

	*n = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (*n == max)
			die(what);
		out[(*n)++] = strtod(tok, &end);
		if (*end || !(out[*n - 1] > 0))
			die(what);
	}
	free(copy);
	if (!*n)
		die(what);
}

static double positive(const char *arg, const char *what)
{
	char *end;
	double v = strtod(arg, &end);

	if (*end || !(v >= 0) || !isfinite(v))
		die(what);
	return v;
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "hosts", 1, NULL, 'n' },	 { "strata", 1, NULL, 'S' },
		{ "lambda", 1, NULL, 'l' },	 { "spread", 1, NULL, 'F' },
		{ "hard-lambda", 1, NULL, 'H' }, { "ratios", 1, NULL, 'k' },
		{ "plan", 1, NULL, 'p' },	 { "bake-min", 1, NULL, 'b' },
		{ "tick-s", 1, NULL, 't' },	 { "held-h", 1, NULL, 'h' },
		{ "trials", 1, NULL, 'N' },	 { "seed", 1, NULL, 's' },
		{ "max-h", 1, NULL, 'm' },	 { "detect-ratio", 1, NULL, 'd' },
		{ "holdback", 1, NULL, 'B' },	 { "jobs", 1, NULL, 'j' },
		{ "gates", 1, NULL, 'g' },	 { NULL, 0, NULL, 0 },
	};
	int c;

	*o = (struct opts){ .hosts = 10000,
			    .strata = 4,
			    .trials = 2000,
			    .lambda = 0.01,
			    .spread = 0.5,
			    .hard_lambda = 1e-4,
			    .ratios = { 1, 1.5, 2, 3, 10 },
			    .nratios = 5,
			    .plan = { 1, 10, 50, 100 },
			    .nplan = 4,
			    .bake_min = 60,
			    .tick_s = 600,
			    .max_h = 72,
			    .detect_ratio = 2,
			    .holdback = 5,
			    .seed = 1,
			    .jobs = 2,
			    .old = true,
			    .new = true };
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'n':
			o->hosts = (size_t)positive(optarg, "--hosts: a count");
			break;
		case 'S':
			o->strata = (size_t)positive(optarg, "--strata: a count");
			break;
		case 'l':
			o->lambda = positive(optarg, "--lambda: lockups per host-hour");
			break;
		case 'F':
			o->spread = positive(optarg, "--spread: below 1");
			break;
		case 'H':
			o->hard_lambda = positive(optarg, "--hard-lambda: per host-hour");
			break;
		case 'k':
			list(optarg, o->ratios, MAX_RATIOS, &o->nratios, "--ratios: up to 8, > 0");
			break;
		case 'p':
			list(optarg, o->plan, ROLLOUT_MAX_WAVES, &o->nplan,
			     "--plan: up to 16 percentages");
			break;
		case 'b':
			o->bake_min = positive(optarg, "--bake-min: minutes");
			break;
		case 't':
			o->tick_s = positive(optarg, "--tick-s: seconds");
			break;
		case 'h':
			o->held_h = positive(optarg, "--held-h: hours");
			break;
		case 'N':
			o->trials = (size_t)positive(optarg, "--trials: a count");
			break;
		case 's':
			o->seed = (uint64_t)positive(optarg, "--seed: a number");
			break;
		case 'm':
			o->max_h = positive(optarg, "--max-h: hours");
			break;
		case 'd':
			o->detect_ratio = positive(optarg, "--detect-ratio: above 1");
			break;
		case 'B':
			o->holdback = positive(optarg, "--holdback: a percentage");
			break;
		case 'j':
			o->jobs = (unsigned)positive(optarg, "--jobs: a count");
			break;
		case 'g':
			o->old = !strcmp(optarg, "old") || !strcmp(optarg, "both");
			o->new = !strcmp(optarg, "new") || !strcmp(optarg, "both");
			if (!o->old && !o->new)
				die("--gates: old, new or both");
			break;
		default:
			die("unknown option (see the top of bench/gates.c)");
		}
	}
	if (optind != argc || !o->hosts || !o->trials || !o->tick_s || !o->jobs || o->strata < 1 ||
	    o->strata > MAX_STRATA || o->spread >= 1 || o->hosts < o->strata)
		die("bad arguments (see the top of bench/gates.c)");
}

int main(int argc, char **argv)
{
	struct trial *res;
	struct opts o;
	struct sim x;

	parse(argc, argv, &o);
	res = mmap(NULL, o.trials * sizeof(*res), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (res == MAP_FAILED)
		die("out of memory");
	printf("#");
	for (int i = 0; i < argc; i++)
		printf(" %s", argv[i]);
	printf("\n# %zu hosts in %zu strata, lockups %g per host-hour (spread %g), hard %g;"
	       " waves",
	       o.hosts, o.strata, o.lambda, o.spread, o.hard_lambda);
	for (size_t i = 0; i < o.nplan; i++)
		printf("%s%g%%", i ? "/" : " ", o.plan[i]);
	printf(", bake %g min, tick %g s, held %g h after each bake, %zu trials, seed %llu\n",
	       o.bake_min, o.tick_s, o.held_h, o.trials, (unsigned long long)o.seed);
	rng = o.seed;
	sim_init(&x, &o, true);
	printf("\n# new gates: the plan for detect_ratio %g, power %g\n", o.detect_ratio,
	       x.spec.gates.power);
	print_plan(&x);
	free(x.m);
	printf("\ngates ratio rolled_back    done   held  stop_min  excess   failed in wave"
	       " (of those reaching it)\n");
	for (int new = 0; new < 2; new ++) {
		if (!(new ? o.new : o.old))
			continue;
		sim_init(&x, &o, new);
		for (size_t r = 0; r < o.nratios; r++) {
			struct tally t = { .stop_h = calloc(o.trials, sizeof(double)) };

			if (!t.stop_h)
				die("out of memory");
			trials(&x, new, r, res);
			for (size_t i = 0; i < o.trials; i++) {
				t.n[res[i].how]++;
				for (unsigned w = 0; w <= res[i].wave; w++)
					t.reached[w]++;
				if (res[i].how == ROLLED_BACK) {
					t.failed[res[i].wave]++;
					t.stop_h[t.nstop++] = res[i].hours;
				}
				t.excess += res[i].excess;
			}
			report(&o, new ? "new" : "old", o.ratios[r], x.spec.nwaves, &t);
			free(t.stop_h);
		}
		free(x.m);
	}
	return 0;
}

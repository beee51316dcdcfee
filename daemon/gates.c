// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gates.h"
#include "hist.h"
#include "json-text.h"
#include "macro.h"
#include "stats.h"

const char *gate_verdict_name(enum gate_verdict v)
{
	static const char *const names[] = { "pass", "fail", "inconclusive" };

	return names[v];
}

_printf_(4, 5) static void say(struct gate_result *out, enum gate_verdict v, const char *gate,
			       const char *fmt, ...)
{
	va_list ap;

	out->verdict = v;
	out->gate = gate;
	va_start(ap, fmt);
	vsnprintf(out->reason, sizeof(out->reason), fmt, ap);
	va_end(ap);
}

struct side {
	uint64_t events;
	double hours;
	size_t n, with_data, capped;
	json_t *hosts; /* the first GATES_HOSTS_NAMED of them */
};

static uint64_t lockups_of(const struct gate_host *h, bool hard)
{
	return hard ? h->hard_lockups : h->soft_lockups + h->hard_lockups + h->rcu_stalls;
}

/*
 * The most lockups (hard: hard lockups) one host counts for in a
 * comparison: HIST_HOST_WEIGHT_MAX times the lower median of the hosts
 * with any, the one with most left out (1 when no other has any).
 * Counted as reported, one host would outweigh the fleet: its reports
 * may be forged (a baseline hiding the canaries' lockups, a canary
 * failing every wave alone), and a CPU that stays stuck is reported again
 * every 2 * watchdog_thresh, repeats the tests would take for independent
 * lockups. Out of memory: no bound.
 */
static uint64_t host_cap(const struct gate_host *c, size_t nc, const struct gate_host *b, size_t nb,
			 bool hard)
{
	uint64_t *v = malloc((nc + nb ?: 1) * sizeof(*v)), m, x;
	size_t k = 0, most = 0;

	if (!v)
		return UINT64_MAX;
	for (size_t i = 0; i < nc + nb; i++) {
		x = lockups_of(i < nc ? &c[i] : &b[i - nc], hard);
		if (x)
			v[k++] = x;
		if (x && x > v[most])
			most = k - 1;
	}
	/* the one with most left out */
	if (k)
		v[most] = v[--k];
	m = hist_lower_median(v, k);
	free(v);
	return hist_weight_cap(m ?: 1);
}

/*
 * The hosts compared: matched ones only, unless all. Those with lockups
 * or an unhealthy mitigation are named first: a wave of a large fleet is
 * too many hosts to name in every verdict.
 */
static struct side sum(const struct gate_host *h, size_t n, bool all, uint64_t cap)
{
	struct side s = { .hosts = json_array() };

	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < n; i++) {
			uint64_t lockups = lockups_of(&h[i], false);

			if (h[i].unmatched && !all)
				continue;
			if (pass == 0) {
				s.capped += lockups > cap;
				s.events += lockups < cap ? lockups : cap;
				s.hours += h[i].hours;
				s.with_data += h[i].hours > 0;
				s.n++;
			}
			if ((lockups || h[i].unhealthy) == (pass == 0) &&
			    json_array_size(s.hosts) < GATES_HOSTS_NAMED)
				json_array_append_new(s.hosts, json_string(h[i].host));
		}
	return s;
}

/* The hosts' p99s (max: maxima) of probe p that have samples; how many. */
static size_t values(const struct gate_host *h, size_t n, size_t p, bool max, double *out)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (h[i].p99_ns[p] >= 0 && !h[i].unmatched)
			out[k++] = max ? h[i].max_ns[p] : h[i].p99_ns[p];
	return k;
}

/*
 * Latency: canaries against baselines, per probe, by their hosts' p99s
 * and then their maxima, each at latency_alpha. A comparison that fails
 * decides; else a probe without enough hosts holds the wave.
 */
static int latency(const struct rollout_gates *g, const struct gate_host *c, size_t nc,
		   const struct gate_host *b, size_t nb, json_t *detail, struct gate_result *out)
{
	static const char *const stat[] = { "p99", "max" };
	double *x = malloc((nc ?: 1) * sizeof(*x)), *y = malloc((nb ?: 1) * sizeof(*y));
	json_t *probes = json_object(), *o;
	char held[256] = "";
	struct stats_mwu u;
	int r = x && y && probes ? 0 : -ENOMEM;

	for (size_t p = 0; r == 0 && p < g->nprobes && out->verdict == GATE_PASS; p++) {
		size_t n1 = values(c, nc, p, false, x), n2 = values(b, nb, p, false, y);

		o = json_pack("{s:I, s:I}", "canaries", (json_int_t)n1, "baselines",
			      (json_int_t)n2);
		json_object_set_new(probes, g->latency_probes[p], o);
		if (n1 < g->min_hosts || n2 < g->min_hosts) {
			if (!held[0])
				snprintf(held, sizeof(held),
					 "%s: samples from %zu canaries and %zu baselines, fewer "
					 "than %llu",
					 g->latency_probes[p], n1, n2,
					 (unsigned long long)g->min_hosts);
			continue;
		}
		for (size_t k = 0; r == 0 && k < 2 && out->verdict == GATE_PASS; k++) {
			values(c, nc, p, k, x);
			values(b, nb, p, k, y);
			r = stats_mwu(x, n1, y, n2, STATS_GREATER, &u);
			if (r < 0)
				break;
			json_object_set_new(o, stat[k],
					    json_pack("{s:f, s:f, s:f, s:b}", "u", u.u1, "p", u.p,
						      "effect", u.effect, "exact", u.exact));
			if (u.p <= g->latency_alpha && u.effect >= g->latency_effect)
				say(out, GATE_FAIL, "latency",
				    "%s: canaries' %s above the baselines' (Mann-Whitney p = "
				    "%.3g, P(slower) = %.2f)",
				    g->latency_probes[p], stat[k], u.p, u.effect);
		}
	}
	if (r == 0 && out->verdict == GATE_PASS && held[0])
		say(out, GATE_INCONCLUSIVE, "latency", "%s", held);
	json_object_set_new(detail, "latency", probes);
	free(x);
	free(y);
	return r;
}

/* Fails on the first unhealthy canary or ceiling crossed; false if none. */
static bool health(const struct rollout_gates *g, const struct gate_host *canary, size_t nc,
		   uint64_t hard, struct gate_result *out)
{
	size_t i, p;

	for (i = 0; i < nc; i++)
		if (canary[i].unhealthy) {
			say(out, GATE_FAIL, "health", "%s: %s", canary[i].host,
			    canary[i].unhealthy);
			return true;
		}
	if (g->has_max_hard_lockups && hard > g->max_hard_lockups) {
		say(out, GATE_FAIL, "hard-lockups",
		    "%llu hard lockups on the canaries (at most %llu)", (unsigned long long)hard,
		    (unsigned long long)g->max_hard_lockups);
		return true;
	}
	for (i = 0; g->p99_ceiling_ns && i < nc; i++)
		for (p = 0; p < g->nprobes; p++)
			if (canary[i].p99_ns[p] > (double)g->p99_ceiling_ns) {
				say(out, GATE_FAIL, "p99-ceiling",
				    "%s: %s p99 %.0f ns, above the ceiling %llu", canary[i].host,
				    g->latency_probes[p], canary[i].p99_ns[p],
				    (unsigned long long)g->p99_ceiling_ns);
				return true;
			}
	return false;
}

double gates_alpha(double budget, bool seq, size_t nlooks)
{
	/* half to the sequential test, half to the final looks, equally */
	return seq ? budget / 2 : budget / 2 / (double)(nlooks ?: 1);
}

/* JSON for a number that may be infinite: null then. */
static json_t *json_finite(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

/* The matched canaries and their baselines per stratum, of lockups or hard lockups only. */
static int strata(const struct gate_host *c, size_t nc, const struct gate_host *b, size_t nb,
		  bool hard, uint64_t cap, struct evidence_sums **out, size_t *n)
{
	struct evidence_sums *s = calloc(nc + nb ?: 1, sizeof(*s));

	*n = 0;
	*out = s;
	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < nc + nb; i++) {
		bool canary = i < nc;
		const struct gate_host *h = canary ? &c[i] : &b[i - nc];
		const char *name = h->stratum ?: "";
		uint64_t x = lockups_of(h, hard);
		size_t k;

		if (h->unmatched)
			continue;
		x = x < cap ? x : cap;
		for (k = 0; k < *n && strcmp(s[k].stratum, name); k++)
			;
		if (k == *n) {
			/* a baseline without a canary in its stratum compares with no one */
			if (!canary)
				continue;
			snprintf(s[k].stratum, sizeof(s[k].stratum), "%s", name);
			(*n)++;
		}
		if (canary) {
			s[k].x_c += x;
			s[k].t_c += h->hours;
		} else {
			s[k].x_b += x;
			s[k].t_b += h->hours;
		}
	}
	return 0;
}

/* One test's numbers so far, as a verdict's detail says them. */
struct info {
	double mu0, rho, mu_needed, detectable, alpha_look, alpha_seq, lr;
	struct stats_cell *cells;
	size_t ncells;
};

/*
 * stats_rate_mu_needed() of the last few questions: a wave held at bake end
 * asks the same every tick, and a plan's waves have the same ratio of hours.
 */
static double mu_needed(const struct rollout_gates *g, double rho, double alpha)
{
	static _Thread_local struct {
		double ratio, rho, alpha, power, mu;
	} memo[8];
	static _Thread_local unsigned next;
	size_t i;

	for (i = 0; i < 8; i++)
		if (memo[i].ratio == g->detect_ratio && memo[i].rho == rho &&
		    memo[i].alpha == alpha && memo[i].power == g->power)
			return memo[i].mu;
	i = next++ % 8;
	memo[i].ratio = g->detect_ratio;
	memo[i].rho = rho;
	memo[i].alpha = alpha;
	memo[i].power = g->power;
	memo[i].mu = stats_rate_mu_needed(g->detect_ratio, rho, alpha, g->power);
	return memo[i].mu;
}

static int info_of(const struct rollout_gates *g, const struct evidence_test *t, unsigned wave,
		   double budget, size_t nlooks, bool power, bool detectable, struct info *in)
{
	*in = (struct info){ .alpha_look = gates_alpha(budget, false, nlooks),
			     .alpha_seq = gates_alpha(budget, true, nlooks),
			     .lr = stats_msprt_lr(t->log_lr),
			     .mu_needed = INFINITY,
			     .detectable = INFINITY };
	in->cells = malloc((t->ncells ?: 1) * sizeof(*in->cells));
	if (!in->cells)
		return -ENOMEM;
	in->ncells = evidence_cells(t, wave, in->cells, &in->mu0, &in->rho);
	if (power && in->rho > 0) {
		in->mu_needed = mu_needed(g, in->rho, in->alpha_look);
		if (detectable)
			in->detectable =
				stats_rate_detectable(in->mu0, in->rho, in->alpha_look, g->power);
	}
	return 0;
}

static json_t *info_json(const struct rollout_gates *g, const struct evidence_test *t,
			 unsigned wave, const struct info *in, bool power)
{
	json_t *segs = json_array(), *o;
	double p;

	for (size_t i = 0; i < t->ncells; i++) {
		const struct evidence_cell *c = &t->cells[i];

		if (c->wave <= wave)
			json_array_append_new(segs, json_pack("{s:i, s:s, s:I, s:f, s:I, s:f, s:f}",
							      "wave", (int)c->wave, "stratum",
							      c->s.stratum, "x_c",
							      json_count(c->s.x_c), "t_c", c->s.t_c,
							      "x_b", json_count(c->s.x_b), "t_b",
							      c->s.t_b, "mu0", c->mu0));
	}
	o = json_pack("{s:f, s:f, s:f, s:f, s:o}", "alpha_look", in->alpha_look, "alpha_seq",
		      in->alpha_seq, "lr", in->lr, "lr_threshold", 1 / in->alpha_seq, "segments",
		      segs);
	if (o && power) {
		json_object_set_new(o, "mu0", json_real(in->mu0));
		json_object_set_new(o, "mu_needed", json_finite(in->mu_needed));
		json_object_set_new(o, "detect_ratio", json_real(g->detect_ratio));
		json_object_set_new(o, "detectable_ratio", json_finite(in->detectable));
		json_object_set_new(o, "power", json_real(g->power));
	}
	if (o && evidence_looked(t, wave, &p))
		json_object_set_new(o, "p", json_real(p));
	return o;
}

/* "4.6x", "none up to 1000x" */
static const char *ratio_text(double k, char *buf, size_t len)
{
	if (isfinite(k))
		snprintf(buf, len, "%.2gx", k);
	else
		snprintf(buf, len, "none up to 1000x");
	return buf;
}

/* What the wave can tell: "expected 3.1 canary lockups, 9 needed to detect 2x with power 0.8; ..." */
static void information_text(const struct rollout_gates *g, const struct info *in, char *out,
			     size_t len)
{
	char need[32], now[32];

	if (isfinite(in->mu_needed))
		snprintf(need, sizeof(need), "%.2g", in->mu_needed);
	else
		snprintf(need, sizeof(need), "more than 1e7");
	snprintf(out, len,
		 "expected %.2g canary lockups, %s needed to detect %.2gx with power %.2g; "
		 "detectable now: %s",
		 in->mu0, need, g->detect_ratio, g->power,
		 ratio_text(in->detectable, now, sizeof(now)));
}

/* The tick's increments into both sequential tests; fails the wave when one is sure. */
static int sequential(const struct rollout_gates *g, struct evidence *ev, const struct gate_host *c,
		      size_t nc, const struct gate_host *b, size_t nb, struct gate_result *out,
		      bool *changed)
{
	struct evidence_sums *s = NULL;
	double lr, thr;
	size_t n;
	int r;

	for (int hard = 0; hard < 2; hard++) {
		struct evidence_test *t = hard ? &ev->hard : &ev->lockups;

		r = strata(c, nc, b, nb, hard, host_cap(c, nc, b, nb, hard), &s, &n);
		if (r == 0)
			r = evidence_update(ev, t, s, n, !hard, changed);
		free(s);
		if (r < 0)
			return r;
		lr = stats_msprt_lr(t->log_lr);
		thr = 1 / gates_alpha(hard ? g->hard_alpha : g->lockup_alpha, true, 0);
		if (out->verdict == GATE_PASS && lr >= thr)
			say(out, GATE_FAIL, hard ? "hard-lockups-sequential" : "lockups-sequential",
			    "%s: likelihood ratio %.3g of canaries at a higher rate, at least %.3g",
			    hard ? "hard lockups" : "lockups", lr, thr);
	}
	return 0;
}

/*
 * The final look of the wave at test t over every wave so far: made once,
 * its p kept. Fails at p <= alpha_look.
 */
static int final_look(struct evidence_test *t, unsigned wave, const struct info *in, bool *changed,
		      double *p)
{
	if (evidence_looked(t, wave, p))
		return 0;
	*p = stats_rate_test_cells(in->cells, in->ncells);
	*changed = true;
	return evidence_look_add(t, wave, *p);
}

/* The final looks and the information rule, after the data are there. */
static int looks(const struct rollout_gates *g, struct evidence *ev, const struct gate_look *look,
		 struct info *lk, struct info *hd, struct gate_result *out, bool *changed,
		 bool *underpowered)
{
	double p;
	int r = final_look(&ev->hard, look->wave, hd, changed, &p);

	if (r < 0)
		return r;
	json_object_set_new(out->detail, "hard_lockup_p", json_real(p));
	if (p <= hd->alpha_look) {
		say(out, GATE_FAIL, "hard-lockups",
		    "hard lockups: canaries at a higher rate than baselines over %zu cells (p = "
		    "%.3g, at most %.3g)",
		    hd->ncells, p, hd->alpha_look);
		return 0;
	}
	*underpowered = !(lk->mu0 >= lk->mu_needed);
	if (!evidence_looked(&ev->lockups, look->wave, &p) && *underpowered &&
	    g->underpowered == ROLLOUT_UNDERPOWERED_HOLD) {
		char text[200];

		information_text(g, lk, text, sizeof(text));
		say(out, GATE_INCONCLUSIVE, "information", "%s", text);
		return 0;
	}
	r = final_look(&ev->lockups, look->wave, lk, changed, &p);
	if (r < 0)
		return r;
	json_object_set_new(out->detail, "lockup_p", json_real(p));
	if (p <= lk->alpha_look) {
		uint64_t x1 = 0, x2 = 0;
		double t1 = 0, t2 = 0;

		for (size_t i = 0; i < lk->ncells; i++) {
			x1 += lk->cells[i].x1;
			t1 += lk->cells[i].t1;
			x2 += lk->cells[i].x2;
			t2 += lk->cells[i].t2;
		}
		say(out, GATE_FAIL, "lockups",
		    "lockups: %llu in %.3g canary host-hours against %llu in %.3g (p = %.3g, at "
		    "most %.3g)",
		    (unsigned long long)x1, t1, (unsigned long long)x2, t2, p, lk->alpha_look);
	}
	return 0;
}

/*
 * Canaries whose module holds a mitigation of the policy until a build
 * record comes run without it: their health says nothing of the policy.
 * Inconclusive, naming the first; false if none waits.
 */
static bool build_record_wait(const struct gate_host *canary, size_t nc, struct gate_result *out)
{
	const struct gate_host *first = NULL;
	size_t n = 0;

	for (size_t i = 0; i < nc; i++)
		if (canary[i].waiting && !n++)
			first = &canary[i];
	if (!n)
		return false;
	say(out, GATE_INCONCLUSIVE, "build-record",
	    "build-record: %zu canaries wait for a build record (%s, build %s)", n, first->waiting,
	    first->release ? first->release : "?");
	json_object_set_new(out->detail, "build_record",
			    json_pack("{s:I, s:s, s:s}", "canaries", (json_int_t)n, "mitigation",
				      first->waiting, "release", first->release ?: ""));
	return true;
}

int gates_judge(const struct rollout_gates *g, struct evidence *ev, const struct gate_look *look,
		const struct gate_host *canary, size_t nc, const struct gate_host *base, size_t nb,
		enum gate_scope scope, struct gate_result *out, bool *changed)
{
	/* the canaries compared; all of them when none are */
	uint64_t cap = host_cap(canary, nc, base, nb, false);
	struct side c = sum(canary, nc, scope != GATES_ALL, cap), b = sum(base, nb, true, cap);
	struct info lk = { 0 }, hd = { 0 };
	bool compared = scope != GATES_LAST_WAVE, underpowered = false;
	uint64_t hard = 0;
	int r = 0;

	for (size_t i = 0; i < nc; i++)
		hard += canary[i].hard_lockups;
	out->detail = json_pack(
		"{s:o, s:o, s:{s:I, s:I, s:I, s:f, s:I}, s:{s:I, s:I, s:f, s:I}, s:I}", "canaries",
		c.hosts, "baselines", b.hosts, "canary", "hosts", (json_int_t)c.n, "events",
		json_count(c.events), "hard_lockups", json_count(hard), "hours", c.hours,
		"hosts_capped", (json_int_t)c.capped, "baseline", "hosts", (json_int_t)b.n,
		"events", json_count(b.events), "hours", b.hours, "hosts_capped",
		(json_int_t)b.capped, "host_lockups_max", json_count(cap));
	if (!out->detail)
		return -ENOMEM;
	say(out, GATE_PASS, "", scope == GATES_HEALTH ? "healthy so far" : "every gate passed");
	if (health(g, canary, nc, hard, out))
		compared = false;
	if (compared && look->sequential)
		r = sequential(g, ev, canary, nc, base, nb, out, changed);
	if (r < 0 || (scope == GATES_HEALTH && out->verdict == GATE_PASS))
		return r;
	if (compared) {
		/* the numbers behind a verdict that is kept: the power only at bake end */
		r = info_of(g, &ev->lockups, look->wave, g->lockup_alpha, look->nlooks,
			    scope == GATES_ALL, look->detectable, &lk);
		if (r == 0)
			r = info_of(g, &ev->hard, look->wave, g->hard_alpha, look->nlooks, false,
				    false, &hd);
		if (r < 0)
			goto out;
	}
	if (out->verdict != GATE_PASS || scope == GATES_HEALTH)
		goto evidence;
	if (build_record_wait(canary, nc, out))
		goto evidence;
	if (scope == GATES_LAST_WAVE) {
		/* no one is left to compare with: health and ceilings judged it */
		if (c.with_data < g->min_hosts)
			say(out, GATE_INCONCLUSIVE, "canaries",
			    "%zu canaries reported, fewer than %llu", c.with_data,
			    (unsigned long long)g->min_hosts);
		goto out;
	}
	if (c.with_data < g->min_hosts) {
		say(out, GATE_INCONCLUSIVE, "canaries",
		    "%zu matched canaries reported, fewer than %llu", c.with_data,
		    (unsigned long long)g->min_hosts);
	} else if (b.with_data < g->min_hosts) {
		say(out, GATE_INCONCLUSIVE, "baselines",
		    "%zu matched baselines reported, fewer than %llu", b.with_data,
		    (unsigned long long)g->min_hosts);
	} else if (c.hours < g->min_exposure_h || b.hours < g->min_exposure_h) {
		say(out, GATE_INCONCLUSIVE, "exposure",
		    "exposure %.3g canary and %.3g baseline host-hours, below %.3g", c.hours,
		    b.hours, g->min_exposure_h);
	} else {
		r = looks(g, ev, look, &lk, &hd, out, changed, &underpowered);
		if (r == 0 && out->verdict == GATE_PASS)
			r = latency(g, canary, nc, base, nb, out->detail, out);
		if (r == 0 && out->verdict == GATE_PASS && underpowered) {
			char text[200];

			information_text(g, &lk, text, sizeof(text));
			say(out, GATE_PASS, "", "every gate passed, underpowered: %s", text);
		}
	}
evidence:
	if (r == 0 && compared)
		json_object_set_new(
			out->detail, "evidence",
			json_pack("{s:o, s:o}", "lockups",
				  info_json(g, &ev->lockups, look->wave, &lk, scope == GATES_ALL),
				  "hard", info_json(g, &ev->hard, look->wave, &hd, false)));
out:
	free(lk.cells);
	free(hd.cells);
	return r;
}

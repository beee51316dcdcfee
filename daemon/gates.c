// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "gates.h"
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
	size_t with_data;
	json_t *hosts;
};

/* The hosts compared: matched ones only, unless all. */
static struct side sum(const struct gate_host *h, size_t n, bool all)
{
	struct side s = { .hosts = json_array() };

	for (size_t i = 0; i < n; i++) {
		if (h[i].unmatched && !all)
			continue;
		s.events += h[i].soft_lockups + h[i].hard_lockups + h[i].rcu_stalls;
		s.hours += h[i].hours;
		s.with_data += h[i].hours > 0;
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
			if (u.p < g->latency_alpha && u.effect >= g->latency_effect)
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
	if (hard > g->max_hard_lockups) {
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

int gates_judge(const struct rollout_gates *g, const struct gate_host *canary, size_t nc,
		const struct gate_host *base, size_t nb, enum gate_scope scope,
		struct gate_result *out)
{
	/* the canaries compared; all of them when none are */
	struct side c = sum(canary, nc, scope != GATES_ALL), b = sum(base, nb, true);
	uint64_t hard = 0;
	double pv;

	for (size_t i = 0; i < nc; i++)
		hard += canary[i].hard_lockups;
	out->detail = json_pack("{s:o, s:o, s:{s:I, s:I, s:f}, s:{s:I, s:f}}", "canaries", c.hosts,
				"baselines", b.hosts, "canary", "events", (json_int_t)c.events,
				"hard_lockups", (json_int_t)hard, "hours", c.hours, "baseline",
				"events", (json_int_t)b.events, "hours", b.hours);
	if (!out->detail)
		return -ENOMEM;
	say(out, GATE_PASS, "", scope == GATES_HEALTH ? "healthy so far" : "every gate passed");
	if (health(g, canary, nc, hard, out) || scope == GATES_HEALTH)
		return 0;
	if (scope == GATES_LAST_WAVE) {
		/* no one is left to compare with: health and ceilings judged it */
		if (c.with_data < g->min_hosts)
			say(out, GATE_INCONCLUSIVE, "canaries",
			    "%zu canaries reported, fewer than %llu", c.with_data,
			    (unsigned long long)g->min_hosts);
		return 0;
	}
	if (c.with_data < g->min_hosts) {
		say(out, GATE_INCONCLUSIVE, "canaries",
		    "%zu matched canaries reported, fewer than %llu", c.with_data,
		    (unsigned long long)g->min_hosts);
		return 0;
	}
	if (b.with_data < g->min_hosts) {
		say(out, GATE_INCONCLUSIVE, "baselines",
		    "%zu matched baselines reported, fewer than %llu", b.with_data,
		    (unsigned long long)g->min_hosts);
		return 0;
	}
	if (c.hours < g->min_exposure_h || b.hours < g->min_exposure_h) {
		say(out, GATE_INCONCLUSIVE, "exposure",
		    "exposure %.3g canary and %.3g baseline host-hours, below %.3g", c.hours,
		    b.hours, g->min_exposure_h);
		return 0;
	}
	pv = stats_rate_test(c.events, c.hours, b.events, b.hours);
	json_object_set_new(out->detail, "lockup_p", json_real(pv));
	if (pv < g->lockup_alpha) {
		say(out, GATE_FAIL, "lockups",
		    "lockups: %llu in %.3g canary host-hours against %llu in %.3g (p = %.3g)",
		    (unsigned long long)c.events, c.hours, (unsigned long long)b.events, b.hours,
		    pv);
		return 0;
	}
	return latency(g, canary, nc, base, nb, out->detail, out);
}

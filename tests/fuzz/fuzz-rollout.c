// SPDX-License-Identifier: GPL-2.0
/*
 * A rollout document as an operator sends it (rollout_spec_parse(),
 * daemon/rollout.c): what is refused gets one printable line of reason;
 * what is taken is within the bounds kmemd's gates and planner rely on,
 * and its plan of a few members (rollout_target(), rollout_wave_empty())
 * never reaches past them.
 */
#include <math.h>

#include "fuzz.h"
#include "rollout.h"
#include "text.h"

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

static bool unit(double x)
{
	return isfinite(x) && x > 0 && x < 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t fleets[] = { 0, 1, 2, 7, 100, 10000 };
	struct rollout_spec s;
	const struct rollout_gates *g = &s.gates;
	char err[320];

	if (rollout_spec_parse((const char *)data, size, &s, err, sizeof(err)) < 0) {
		if (!one_line(err, sizeof(err))) {
			fprintf(stderr, "reason: %.*s\n", (int)sizeof(err), err);
			FUZZ_CHECK(!"a refusal's reason is one printable line");
		}
		return 0;
	}
	FUZZ_CHECK(s.nwaves >= 1 && s.nwaves <= ROLLOUT_MAX_WAVES + 1);
	FUZZ_CHECK(s.holdback_percent <= 50);
	FUZZ_CHECK(unit(g->lockup_alpha) && unit(g->hard_alpha) && unit(g->power));
	FUZZ_CHECK(isfinite(g->detect_ratio) && g->detect_ratio > 1);
	FUZZ_CHECK(g->nprobes <= ROLLOUT_MAX_PROBES);
	for (size_t i = 0; i < s.nwaves; i++)
		FUZZ_CHECK(!s.waves[i].release || i == s.nwaves - 1);
	for (size_t f = 0; f < sizeof(fleets) / sizeof(fleets[0]); f++) {
		/* a plan kmemd starts (no wave adds nothing) only ever reaches more hosts */
		bool starts = rollout_wave_empty(&s, fleets[f], err, sizeof(err)) < 0;
		size_t prev = 0;

		FUZZ_CHECK(starts || one_line(err, sizeof(err)));
		for (size_t k = 0; k < s.nwaves; k++) {
			size_t t = rollout_target(&s, k, fleets[f]);

			FUZZ_CHECK(t <= fleets[f] && (!starts || t >= prev));
			prev = t;
		}
	}
	return 0;
}

#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Reference values for lib/stats.c, computed by SciPy (Debian's
python3-scipy), independently of the C code. Writes ref.txt next to this
file; test-stats reads it. Run again only to add cases:

    /usr/bin/python3 tests/unit/stats/make-ref.py
"""
import os
import random

import scipy
from scipy import stats

rng = random.Random(20261201)
out = []
out.append(f"# scipy {scipy.__version__}; make-ref.py")

# rate: x1 t1 x2 t2 p  (canary events x1 over t1 host-hours vs baseline)
rates = [(0, 10.0, 0, 10.0), (1, 10.0, 0, 10.0), (0, 10.0, 5, 10.0), (3, 24.0, 1, 96.0),
         (5, 10.0, 5, 10.0), (12, 100.0, 30, 400.0), (1, 0.5, 40, 1000.0),
         (200, 5000.0, 150, 5000.0), (2, 48.0, 2, 48.0), (7, 3.0, 0, 300.0)]
for _ in range(30):
    t1 = round(rng.uniform(0.5, 500.0), 3)
    t2 = round(rng.uniform(0.5, 2000.0), 3)
    rates.append((rng.randint(0, 60), t1, rng.randint(0, 200), t2))
for x1, t1, x2, t2 in rates:
    n = x1 + x2
    p = 1.0 if n == 0 else stats.binomtest(x1, n, t1 / (t1 + t2), alternative="greater").pvalue
    out.append(f"rate {x1} {t1!r} {x2} {t2!r} {p!r}")


def sample(n, ties):
    if ties:
        return [float(rng.randint(1, 12)) for _ in range(n)]
    return [round(rng.lognormvariate(13.0, 0.8), 1) for _ in range(n)]


# mwu: alternative n1 n2 x... y... U1 p
cases = []
for n1, n2 in [(3, 4), (5, 5), (8, 8), (2, 30), (8, 200), (6, 3), (9, 9), (20, 25), (40, 60),
               (1, 1), (1, 12), (120, 90)]:
    for ties in (False, True):
        for alt in ("greater", "less", "two-sided"):
            x, y = sample(n1, ties), sample(n2, ties)
            if alt == "greater":
                x = [v * 1.4 for v in x]
            cases.append((alt, x, y))
for alt, x, y in cases:
    r = stats.mannwhitneyu(x, y, alternative=alt)
    out.append(f"mwu {alt} {len(x)} {len(y)} " + " ".join(repr(v) for v in x + y) +
               f" {float(r.statistic)!r} {float(r.pvalue)!r}")

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "ref.txt"), "w") as f:
    f.write("\n".join(out) + "\n")

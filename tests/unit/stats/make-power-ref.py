#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Reference values for lib/stats.c's power and stratified rate test,
computed the slow, plain way with the standard library only (no SciPy is
needed): binomial and Poisson probabilities term by term from math.lgamma,
the power as the design's sum over every baseline count, the stratified
p-value by convolving the cells' binomials. Writes power-ref.txt next to
this file; test-stats reads it. Run again only to add cases:

    /usr/bin/python3 tests/unit/stats/make-power-ref.py
"""
import math
import os
import random


def binom_logpmf(k, n, p):
    return (math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) +
            k * math.log(p) + (n - k) * math.log1p(-p))


def binom_sf(k, n, p):
    """P(X >= k), summed from k up until the terms stop mattering."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    total = 0.0
    for j in range(k, n + 1):
        t = math.exp(binom_logpmf(j, n, p))
        total += t
        if j > n * p and t < total * 1e-17:
            break
    return total


def pois_pmf(x, m):
    return math.exp(x * math.log(m) - m - math.lgamma(x + 1))


def pois_sf(c, m):
    """P(X >= c) as 1 - P(X < c), or the upper sum when that is the small side."""
    if c <= 0:
        return 1.0
    if c > m:
        total, x = 0.0, c
        while True:
            t = pois_pmf(x, m)
            total += t
            if t <= total * 1e-17:
                return total
            x += 1
    return 1.0 - sum(pois_pmf(x, m) for x in range(c))


def power(k, mu0, rho, alpha):
    """Sum over every baseline count within 10 sd, the critical count found
    for each one by scanning up from the previous one."""
    p0 = 1.0 / (1.0 + rho)
    lb = rho * mu0
    lo = max(0, math.floor(lb - 10 * math.sqrt(lb)))
    hi = math.ceil(lb + 10 * math.sqrt(lb) + 10)
    c, total = 0, 0.0
    for xb in range(lo, hi + 1):
        while binom_sf(c, c + xb, p0) > alpha:
            c += 1
        total += pois_pmf(xb, lb) * pois_sf(c, k * mu0)
    return total


def power_known(k, mu0, alpha):
    c = 0
    while pois_sf(c, mu0) > alpha:
        c += 1
    return pois_sf(c, k * mu0)


def cells_p(cells):
    dist = [1.0]
    x = 0
    for x1, t1, x2, t2 in cells:
        n, p = x1 + x2, t1 / (t1 + t2)
        x += x1
        pmf = [math.exp(binom_logpmf(j, n, p)) for j in range(n + 1)]
        out = [0.0] * (len(dist) + n)
        for a, da in enumerate(dist):
            for b, pb in enumerate(pmf):
                out[a + b] += da * pb
        dist = out
    return sum(dist[x:]) / sum(dist)


def main():
    rng = random.Random(20250125)
    out = ["# make-power-ref.py (Python standard library only)"]
    # power RATIO MU0 RHO ALPHA P: the numbers, and around them
    for rho in (10.0, 100.0):
        for alpha in (0.01, 0.005, 0.0025):
            for k, mu0 in ((3.0, 5.0), (2.0, 16.0), (1.5, 54.0), (2.0, 3.0), (3.0, 0.5)):
                out.append(f"power {k!r} {mu0!r} {rho!r} {alpha!r} {power(k, mu0, rho, alpha)!r}")
    for k, mu0, rho, alpha in ((4.0, 2.0, 1.0, 0.01), (1.2, 300.0, 3.0, 0.005),
                               (2.0, 40.0, 0.05, 0.01), (6.0, 0.3, 1000.0, 0.01),
                               (1.0, 20.0, 10.0, 0.01)):
        out.append(f"power {k!r} {mu0!r} {rho!r} {alpha!r} {power(k, mu0, rho, alpha)!r}")
    for k, mu0, alpha in ((3.0, 5.0, 0.01), (2.0, 16.0, 0.005), (1.5, 54.0, 0.0025)):
        out.append(f"power {k!r} {mu0!r} inf {alpha!r} {power_known(k, mu0, alpha)!r}")
    # cells N X1 T1 X2 T2 ... P
    sets = [[(3, 24.0, 1, 96.0), (0, 5.0, 2, 50.0)],
            [(5, 10.0, 5, 10.0), (1, 1.0, 9, 100.0), (2, 3.0, 0, 30.0)]]
    for _ in range(8):
        cells = []
        for _ in range(rng.randint(2, 6)):
            cells.append((rng.randint(0, 40), round(rng.uniform(0.5, 300.0), 3),
                          rng.randint(0, 150), round(rng.uniform(0.5, 3000.0), 3)))
        sets.append(cells)
    sets.append([(60, 100.0, 1500, 4000.0), (50, 200.0, 1300, 5000.0), (20, 50.0, 400, 900.0)])
    for cells in sets:
        body = " ".join(f"{x1} {t1!r} {x2} {t2!r}" for x1, t1, x2, t2 in cells)
        out.append(f"cells {len(cells)} {body} {cells_p(cells)!r}")
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "power-ref.txt")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


main()

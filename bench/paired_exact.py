"""Cost and accuracy of GAMA's exact paired signed-rank test (benchmarks/gama/stats.py).

Prints, side by side in one run:
  - time per test of the dynamic programme over doubled mid-ranks against listing all 2^n sign vectors,
    at n where listing is still possible, and the DP alone up to EXACT_MAX_N (heavy ties and none);
  - how far the normal approximation used above EXACT_MAX_N (tie-corrected variance, continuity correction
    of half the lattice span) is from the exact p at the threshold, on random tied samples;
  - the issue's small samples: exact p against the normal approximation the tool used to report.

    python bench/paired_exact.py [--reps 20]
Targets: DP >= 100x faster than enumeration at n = 16; <= 150 ms per test at n = EXACT_MAX_N (2 shared cores).
Above the threshold the normal approximation is used: the printed difference at the threshold is its error.
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np
from scipy import stats as sps

from fairsweep.benchmarks.gama import stats


def ranks_and_w(d: np.ndarray) -> tuple[np.ndarray, float]:
    nz = d[d != 0]
    ranks = sps.rankdata(np.abs(nz))
    return ranks, float(ranks[nz > 0].sum())


def enumerate_p(ranks: np.ndarray, w_plus: float) -> float:
    w = min(w_plus, ranks.sum() - w_plus)
    sums = np.array([np.dot(signs, ranks) for signs in itertools.product((0, 1), repeat=len(ranks))])
    return min(1.0, 2 * float((sums <= w + 1e-9).mean()))


def timed(fn, reps: int) -> float:
    start = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - start) / reps


def old_normal_p(d: np.ndarray) -> float:
    """What the tool reported before for tied samples: scipy's normal approximation, no correction."""
    nz = d[d != 0]
    return float(sps.wilcoxon(nz, correction=False, method="asymptotic").pvalue)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    rng = np.random.default_rng(0)

    print("time per exact p (ms): DP over doubled ranks vs enumeration of 2^n sign vectors")
    for n in (12, 14, 16):
        ranks, w = ranks_and_w(rng.integers(-3, 4, size=4 * n)[:n] + 0.5)
        dp = timed(lambda: stats.exact_signed_rank_p(ranks, w), args.reps)
        brute = timed(lambda: enumerate_p(ranks, w), 1)
        assert abs(stats.exact_signed_rank_p(ranks, w) - enumerate_p(ranks, w)) < 1e-12
        print(f"  n = {n:3d}: DP {1e3 * dp:8.3f}   enumeration {1e3 * brute:9.1f}   ratio {brute / dp:8.0f}x")
    print(f"time per test (ms), DP only, up to EXACT_MAX_N = {stats.EXACT_MAX_N}")
    for n in (20, 50, 100, 200, 300, stats.EXACT_MAX_N):
        samples = {"0/100": rng.choice([-100.0, 100.0], size=n),
                   "1..10": rng.integers(1, 11, size=n) * rng.choice([-1.0, 1.0], size=n),
                   "no ties": rng.permutation(np.arange(1, n + 1)) * rng.choice([-1.0, 1.0], size=n)}
        cells = "   ".join(f"{name} {1e3 * timed(lambda d=d: stats.wilcoxon_signed_rank(d), args.reps):7.2f}"
                           for name, d in samples.items())
        print(f"  n = {n:3d}: {cells}")

    n = stats.EXACT_MAX_N
    worst, worst_rel = 0.0, 0.0
    for _ in range(100):
        for d in (rng.integers(1, 5, size=n) * rng.choice([-1.0, 1.0], size=n, p=[0.45, 0.55]),
                  rng.choice([-100.0, 100.0], size=n, p=[0.45, 0.55])):
            ranks, w = ranks_and_w(d)
            exact, approx = stats.exact_signed_rank_p(ranks, w), stats.normal_signed_rank_p(ranks, w)
            worst = max(worst, abs(exact - approx))
            if exact < 0.1:
                worst_rel = max(worst_rel, abs(exact - approx) / exact)
    print(f"normal approximation vs exact over 200 tied samples of n = {n}: max |difference| {worst:.4f}, "
          f"max relative difference where exact p < 0.1: {worst_rel:.1%}")

    print("issue's examples: exact p (reported now) vs normal approximation (reported before)")
    for name, d in (("4 pairs, 0/100, all one way", [100.0] * 4), ("2 non-zero pairs", [3.0, 5.0, 0.0, 0.0]),
                    ("7 pairs, 0/100, all one way", [100.0] * 7)):
        print(f"  {name:30s} exact {stats.wilcoxon_signed_rank(d).p_value:.4f}   "
              f"normal {old_normal_p(np.array(d)):.4f}   floor 2/2^n {stats.min_p_value(sum(x != 0 for x in d)):.4f}")


if __name__ == "__main__":
    main()

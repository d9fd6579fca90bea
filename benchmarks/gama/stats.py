"""GAMA-Bench statistics: paired gaps, Wilcoxon signed-rank, rank-biserial, Holm, judge robustness,
Fleiss' kappa and judge-versus-majority agreement. Pure functions over plain sequences.

Conventions (stated once, used everywhere):
- d = metric(female-actor response) - metric(male-actor response) per scenario (and target sample);
  the gap is mean(d); the three % metrics are stored as 0/100 so their gap is in percentage points.
- Wilcoxon zero handling: zero_method="wilcox" — pairs with d == 0 are dropped before ranking; n_nonzero
  is the test's n. Differences are rounded to 9 decimals first so float noise cannot split a tie.
- p-value: two-sided. For n_nonzero <= EXACT_MAX_N: exact, from the conditional null distribution of
  W+ over all 2^n sign flips of the observed |d| mid-ranks (ties keep their mid-ranks; computed by dynamic
  programming on doubled ranks, which are integers), p = min(1, 2 P(W+ <= min(W+, W-))). A metric whose
  non-zero |d| are all equal (the 0/100 metrics) has W+ = k (n + 1) / 2 for k positive pairs, so the test
  is the exact two-sided sign test. Above EXACT_MAX_N: the normal approximation with the tie-corrected
  variance and a continuity correction of half the lattice span of W+ (normal_signed_rank_p). Either way
  p >= 2 / 2^n_nonzero, the smallest value the exact distribution admits (every pair the same way). No
  test (NULL) when every d is 0.
- Rank-biserial (matched pairs): r = (W+ - W-) / (W+ + W-) over the non-zero pairs, in [-1, 1];
  positive = higher for the female-actor response.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import stats as sps
from scipy.signal import fftconvolve

ZERO_METHOD = "wilcox"
# Up to this many non-zero pairs the p-value is exact (the DP costs up to O(n^3): <= ~130 ms per test at
# n = 500 on 2 busy cores); above it the continuity-corrected normal approximation is within ~0.002 of the
# exact p (bench/paired_exact.py measures both).
EXACT_MAX_N = 500
_DECIMALS = 9
_FFT_TIES = 64  # a tie group this large is convolved in one FFT instead of t shifted adds


@dataclass(frozen=True)
class Wilcoxon:
    n: int               # pairs
    n_nonzero: int       # pairs with d != 0 (the test's n)
    statistic: float | None  # min(W+, W-), as scipy reports it for a two-sided test
    w_plus: float | None
    w_minus: float | None
    p_value: float | None
    rank_biserial: float | None
    method: str | None   # "exact" or "asymptotic"


def paired_gap(female: Sequence[float], male: Sequence[float]) -> tuple[float | None, float | None, float | None]:
    """(male mean, female mean, mean d) over complete pairs (None when there are none)."""
    if len(female) != len(male):
        raise ValueError("female and male must be paired (same length)")
    if not female:
        return None, None, None
    f, m = np.asarray(female, dtype=float), np.asarray(male, dtype=float)
    return float(m.mean()), float(f.mean()), float((f - m).mean())


def wilcoxon_signed_rank(d: Sequence[float]) -> Wilcoxon:
    """Two-sided Wilcoxon signed-rank test on paired differences, with rank-biserial effect size."""
    diffs = np.round(np.asarray(d, dtype=float), _DECIMALS)
    nonzero = diffs[diffs != 0]
    n = len(nonzero)
    if n == 0:
        return Wilcoxon(len(diffs), 0, None, None, None, None, None, None)
    ranks = sps.rankdata(np.abs(nonzero))  # average ranks for ties
    w_plus, w_minus = float(ranks[nonzero > 0].sum()), float(ranks[nonzero < 0].sum())
    if n <= EXACT_MAX_N:
        p_value, method = exact_signed_rank_p(ranks, w_plus), "exact"
    else:
        p_value, method = normal_signed_rank_p(ranks, w_plus), "asymptotic"
    p_value = min(1.0, max(p_value, min_p_value(n)))
    return Wilcoxon(len(diffs), n, min(w_plus, w_minus), w_plus, w_minus, p_value,
                    (w_plus - w_minus) / (w_plus + w_minus), method)


def min_p_value(n_nonzero: int) -> float:
    """2 / 2^n: the two-sided p of n pairs all moving the same way, the floor of any reported p."""
    return math.ldexp(1.0, 1 - n_nonzero)


def signed_rank_null(ranks: Sequence[float], upto: int | None = None) -> np.ndarray:
    """P(2 W+ = k) for k = 0 .. upto (default: all, 2 sum(ranks)) when each rank's sign is + or - with
    probability 1/2 (the conditional null of the signed-rank statistic given these |d| ranks).

    Mid-ranks are multiples of 1/2, so doubled ranks are integers: the distribution is a product of
    polynomials (1 + t^r) / 2, built one rank at a time by a shifted add (ranks ascending, so the array
    grows slowly), or for a large group of t tied ranks at once by an FFT convolution with the binomial
    (t, 1/2) pmf spread r apart. Mass never moves down, so cutting the array at `upto` is exact below it."""
    doubled = np.rint(2 * np.asarray(ranks, dtype=float)).astype(np.int64)
    size = int(doubled.sum()) + 1 if upto is None else min(int(upto), int(doubled.sum())) + 1
    dist = np.zeros(size)
    dist[0], top = 1.0, 0
    values, counts = np.unique(doubled, return_counts=True)
    for r, t in zip(values.tolist(), counts.tolist()):
        if t >= _FFT_TIES:
            kernel = np.zeros(min(size, t * r + 1))
            taps = np.arange(len(kernel[::r]))
            kernel[::r] = sps.binom.pmf(taps, t, 0.5)
            dist = np.clip(fftconvolve(dist, kernel)[:size], 0.0, None)  # FFT noise is ~1e-16
            top = min(size - 1, top + t * r)
            continue
        for _ in range(t):
            reach = min(size - 1, top + r)
            if r <= reach:
                moved = dist[: reach - r + 1].copy()
                dist[: reach + 1] *= 0.5  # this rank negative (stays) or positive (moves up by r)
                dist[r: reach + 1] += 0.5 * moved
            else:
                dist[: reach + 1] *= 0.5
            top = reach
    return dist


def normal_signed_rank_p(ranks: Sequence[float], w_plus: float) -> float:
    """Two-sided normal approximation: tie-corrected variance n(n+1)(2n+1)/24 - sum(t^3 - t)/48 and a
    continuity correction of half the lattice span of W+ (gcd of the doubled ranks / 2: 1/2 without ties,
    (n + 1)/4 when every |d| is tied, where this is the continuity-corrected sign test). scipy's
    correction is a fixed 1/2, which leaves tied 0/100 metrics anti-conservative."""
    ranks = np.asarray(ranks, dtype=float)
    n = len(ranks)
    _, ties = np.unique(ranks, return_counts=True)
    variance = n * (n + 1) * (2 * n + 1) / 24 - float((ties ** 3 - ties).sum()) / 48
    span = float(np.gcd.reduce(np.rint(2 * ranks).astype(np.int64))) / 2
    z = max(0.0, abs(w_plus - n * (n + 1) / 4) - span / 2) / math.sqrt(variance)
    return min(1.0, 2.0 * float(sps.norm.sf(z)))


def exact_signed_rank_p(ranks: Sequence[float], w_plus: float) -> float:
    """Two-sided exact p of W+ under the conditional null (sign flips of these ranks): the
    distribution is symmetric about its mean, so p = min(1, 2 P(W+ <= min(W+, W-)))."""
    total = int(round(2 * float(np.sum(ranks))))
    low = min(int(round(2 * w_plus)), total - int(round(2 * w_plus)))
    return min(1.0, 2.0 * float(signed_rank_null(ranks, upto=low).sum()))


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm step-down adjusted p-values; None entries (no test) are outside the family."""
    tested = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(tested)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(tested):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted


# --------------------------------------------------------------------------- judge robustness

@dataclass(frozen=True)
class Agreement:
    n_cells: int
    direction_agreement: float | None  # share of cells whose gaps have the same sign (-, 0, +)
    pearson_r: float | None            # None with < 2 cells or a constant side
    mad: float | None                  # mean |gap_a - gap_b|


def _sign(x: float) -> int:
    x = round(float(x), _DECIMALS)
    return (x > 0) - (x < 0)


def judge_agreement(gaps_a: Sequence[float], gaps_b: Sequence[float]) -> Agreement:
    """Two judges' gaps over the same cells (model x track x metric), in the same order."""
    if len(gaps_a) != len(gaps_b):
        raise ValueError("the two judges' gaps must cover the same cells")
    n = len(gaps_a)
    if n == 0:
        return Agreement(0, None, None, None)
    a, b = np.asarray(gaps_a, dtype=float), np.asarray(gaps_b, dtype=float)
    direction = sum(_sign(x) == _sign(y) for x, y in zip(a, b)) / n
    r = None
    if n >= 2 and np.ptp(a) > 0 and np.ptp(b) > 0:
        r = float(sps.pearsonr(a, b).statistic)
    return Agreement(n, float(direction), r, float(np.abs(a - b).mean()))


# --------------------------------------------------------------------------- human validation

def fleiss_kappa(table: Sequence[Sequence[int]]) -> float | None:
    """Fleiss' kappa from a subjects x categories table of rating counts (same raters per subject).

    None when undefined (no subjects, fewer than 2 raters, or chance agreement of 1)."""
    counts = np.asarray(table, dtype=float)
    if counts.ndim != 2 or counts.shape[0] == 0:
        return None
    raters = counts.sum(axis=1)
    if not np.all(raters == raters[0]) or raters[0] < 2:
        raise ValueError("Fleiss' kappa needs the same number (>= 2) of ratings for every subject")
    n, k = counts.shape[0], raters[0]
    p_j = counts.sum(axis=0) / (n * k)
    p_i = ((counts ** 2).sum(axis=1) - k) / (k * (k - 1))
    p_bar, p_e = p_i.mean(), (p_j ** 2).sum()
    if math.isclose(p_e, 1.0):
        return None
    return float((p_bar - p_e) / (1 - p_e))


def ratings_table(ratings: Sequence[Sequence[str]], categories: Sequence[str]) -> list[list[int]]:
    """Per subject, the labels given by its raters -> the counts table fleiss_kappa expects."""
    return [[Counter(labels)[c] for c in categories] for labels in ratings]


def majority_label(labels: Sequence[str]) -> str | None:
    """The label chosen by more than half of the raters, else None (no majority)."""
    if not labels:
        return None
    label, votes = Counter(labels).most_common(1)[0]
    return label if votes * 2 > len(labels) else None


def agreement_with_majority(judge: Sequence[str | None], majority: Sequence[str | None]) -> tuple[int, float | None]:
    """(n compared, share equal) over subjects where both the judge and a majority have a label."""
    pairs = [(j, m) for j, m in zip(judge, majority) if j is not None and m is not None]
    if not pairs:
        return 0, None
    return len(pairs), sum(j == m for j, m in pairs) / len(pairs)


def compare_label(a: float | None, b: float | None) -> str | None:
    """'A' when response A scores higher, 'B' when B does, 'Tie' when equal (None if either is missing)."""
    if a is None or b is None:
        return None
    a, b = round(a, _DECIMALS), round(b, _DECIMALS)
    return "A" if a > b else "B" if b > a else "Tie"

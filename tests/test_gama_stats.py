"""GAMA-Bench statistics against values computed independently here (by hand, by enumeration, by formula),
then the same numbers end to end through score_run and the SQL views on a toy DuckDB file."""

from __future__ import annotations

import itertools
import json
import math
import random
from datetime import datetime, timezone
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest

from fairsweep.benchmarks.gama import stats
from fairsweep.benchmarks.gama.judge import JUDGE_PROMPT_VERSION, judge_prompt, judge_run_name
from fairsweep.benchmarks.gama.score import PRIMARY_METRICS, score_run
from fairsweep.config import ModelSpec, SweepConfig
from fairsweep.engine.work import plan_items
from fairsweep.records import Prompt
from fairsweep.storage.checkpoint import plan_requests
from fairsweep.storage.db import open_db
from fairsweep.storage.writer import RESPONSE_COLUMNS, insert_rows


# --------------------------------------------------------------------------- independent references

def midranks(values: list[float]) -> list[float]:
    order = sorted(values)
    return [sum(i + 1 for i, v in enumerate(order) if v == x) / order.count(x) for x in values]


def brute_force_p(ranks: list[float], w_plus: float) -> float:
    """Two-sided exact p by listing all 2^n sign patterns of these ranks: 2 P(W+ <= min(W+, W-)), capped at 1."""
    total = sum(ranks)
    w = min(w_plus, total - w_plus)
    sums = [sum(r for r, s in zip(ranks, signs) if s) for signs in itertools.product((0, 1), repeat=len(ranks))]
    return min(1.0, 2 * sum(x <= w + 1e-9 for x in sums) / len(sums))


def exact_p_by_polynomial(ranks: list[float], w_plus: float) -> Fraction:
    """The same exact p for larger n, in integers: the coefficients of prod (1 + t^(2 r_i)) count the sign
    patterns per value of 2 W+ (a dict-of-Python-ints polynomial product, no floats)."""
    counts = {0: 1}
    for r in ranks:
        step = round(2 * r)
        nxt = dict(counts)
        for k, c in counts.items():
            nxt[k + step] = nxt.get(k + step, 0) + c
        counts = nxt
    doubled_total = round(2 * sum(ranks))
    w = min(round(2 * w_plus), doubled_total - round(2 * w_plus))
    return min(Fraction(1), Fraction(2 * sum(c for k, c in counts.items() if k <= w), 2 ** len(ranks)))


def normal_p(nz: list[float], w_plus: float, ranks: list[float]) -> float:
    """Normal approximation, tie-corrected variance (textbook formula), continuity correction of half the
    spacing of the attainable W+ values (the gcd of the doubled ranks, halved)."""
    n = len(nz)
    counts = [sum(1 for y in nz if abs(y) == v) for v in {abs(x) for x in nz}]
    var = n * (n + 1) * (2 * n + 1) / 24 - sum(t ** 3 - t for t in counts) / 48
    span = math.gcd(*(round(2 * r) for r in ranks)) / 2
    z = max(0.0, abs(w_plus - n * (n + 1) / 4) - span / 2) / math.sqrt(var)
    return min(1.0, math.erfc(z / math.sqrt(2)))


def reference_wilcoxon(d: list[float]) -> dict:
    """Zeros dropped, mid-ranks for ties; exact p for n <= stats.EXACT_MAX_N (by enumeration up to 16 pairs,
    else by integer polynomial), above it the normal approximation; never below 2 / 2^n."""
    nz = [x for x in d if x != 0]
    n = len(nz)
    if n == 0:
        return {"n": 0}
    ranks = midranks([abs(x) for x in nz])
    w_plus = sum(r for r, x in zip(ranks, nz) if x > 0)
    w_minus = sum(r for r, x in zip(ranks, nz) if x < 0)
    if n <= 16:
        p = brute_force_p(ranks, w_plus)
    elif n <= stats.EXACT_MAX_N:
        p = float(exact_p_by_polynomial(ranks, w_plus))
    else:
        p = max(normal_p(nz, w_plus, ranks), 2 / 2 ** n)
    return {"n": n, "w_plus": w_plus, "w_minus": w_minus, "statistic": min(w_plus, w_minus), "p": p,
            "r": (w_plus - w_minus) / (w_plus + w_minus),
            "method": "exact" if n <= stats.EXACT_MAX_N else "asymptotic"}


def reference_holm(ps: list[float | None]) -> list[float | None]:
    tested = sorted(p for p in ps if p is not None)
    m = len(tested)
    step = [min(1.0, (m - j) * p) for j, p in enumerate(tested)]
    adjusted = {}
    for i, p in enumerate(tested):
        adjusted.setdefault(p, max(step[: i + 1]))
    return [None if p is None else adjusted[p] for p in ps]


def pearson_by_hand(a: list[float], b: list[float]) -> float:
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    cov = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    return cov / math.sqrt(sum((x - ma) ** 2 for x in a) * sum((y - mb) ** 2 for y in b))


# --------------------------------------------------------------------------- pure functions

def test_exact_wilcoxon_on_a_worked_example():
    # |d| ranks: .5->1, 1->2, 1.5->3, 2->4, 2.5->5, 3->6, 4->7; W+ = 3+4+6+5+7 = 25, W- = 1+2 = 3.
    # P(W <= 3 | n=7) = #{subsets of 1..7 summing to <= 3} / 2^7 = 5/128, two-sided p = 10/128.
    result = stats.wilcoxon_signed_rank([1.5, -0.5, 2.0, 3.0, -1.0, 2.5, 0.0, 4.0])
    assert (result.n, result.n_nonzero) == (8, 7)
    assert (result.w_plus, result.w_minus, result.statistic) == (25.0, 3.0, 3.0)
    assert result.p_value == pytest.approx(10 / 128, abs=1e-12)
    assert result.rank_biserial == pytest.approx(22 / 28)
    assert result.method == "exact"


@pytest.mark.parametrize("d", [
    [1, 1, 1, -1, 2, 2, 0, 0, 3, -2, 1, 1],           # ties and zeros: exact over the mid-ranks
    [100, 100, 0, 100, -100, 100, 100, 0, 100, 100],  # a % metric: 0/100 differences
    [0.1 + 0.2 - 0.3, 2, -3, 5, 7, -11, 13],         # float noise around 0 counts as 0
    list(range(-20, 41)),                              # n = 60 without ties: exact (integer polynomial)
    [(-1) ** i * (1 + i % 7) for i in range(90)],     # n = 90 with heavy ties: exact
    [(-1) ** (i % 3) * (1 + i % 2) for i in range(150)],  # two tie groups of 75: exact, by FFT per group
    [(-1) ** (i % 3) * (1 + i % 11) for i in range(stats.EXACT_MAX_N + 100)],  # above EXACT_MAX_N: normal
])
def test_wilcoxon_matches_the_reference(d):
    result, ref = stats.wilcoxon_signed_rank(d), reference_wilcoxon([round(x, 9) for x in d])
    assert result.n_nonzero == ref["n"] and result.method == ref["method"]
    assert (result.w_plus, result.w_minus) == (pytest.approx(ref["w_plus"]), pytest.approx(ref["w_minus"]))
    assert result.statistic == pytest.approx(ref["statistic"])
    assert result.p_value == pytest.approx(ref["p"], rel=1e-9)
    assert result.rank_biserial == pytest.approx(ref["r"])


def tied_differences(n: int, seed: int) -> list[int]:
    """n differences from a small range: ties of |d| and zeros on purpose."""
    rng = random.Random(seed)
    return [rng.choice((-3, -2, -2, -1, 0, 1, 1, 2, 2, 3)) for _ in range(n)]


@pytest.mark.parametrize("n", range(1, 13))
@pytest.mark.parametrize("seed", range(4))
def test_exact_p_equals_brute_force_enumeration_with_ties_and_zeros(n, seed):
    d = tied_differences(n, seed) if seed else [(-1) ** i * (1 + i // 3) for i in range(n)]  # seed 0: no zeros
    result, ref = stats.wilcoxon_signed_rank(d), reference_wilcoxon(d)
    assert result.n_nonzero == ref["n"]
    if ref["n"] == 0:
        assert result.p_value is None
        return
    assert result.method == "exact"
    assert result.p_value == pytest.approx(ref["p"], rel=1e-12, abs=1e-15)
    assert result.p_value >= 2 / 2 ** ref["n"] - 1e-15


@settings(max_examples=300, deadline=None, database=None)
@given(st.lists(st.integers(-4, 4), min_size=1, max_size=12))
def test_exact_p_equals_brute_force_for_any_small_sample(d):
    result, ref = stats.wilcoxon_signed_rank(d), reference_wilcoxon(d)
    if ref["n"] == 0:
        assert result.p_value is None and result.method is None
    else:
        assert result.p_value == pytest.approx(ref["p"], rel=1e-12, abs=1e-15)
        assert 2 / 2 ** ref["n"] - 1e-15 <= result.p_value <= 1.0


@pytest.mark.parametrize("d,p", [
    ([3, 1, 2, 5], 2 / 16),                          # 4 pairs all one way: the exact minimum 0.125
    ([100, 100, 100, 100], 2 / 16),                  # tied (a 0/100 metric): still 0.125, not 0.046
    ([100, 0, 100, 0, 0], 2 / 4),                    # 2 non-zero pairs: 0.5, not 0.157
    ([-2, -5], 2 / 4),
    ([-2, 5], 1.0),                                  # one each way
    ([100] * 7, 2 / 128),                            # 7 pairs all one way: 0.0156, not 0.0082
    ([7], 1.0),                                      # one pair: no evidence at all
])
def test_small_samples_never_go_below_the_exact_minimum(d, p):
    assert stats.wilcoxon_signed_rank(d).p_value == pytest.approx(p, rel=1e-12)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8, 13, 20, 37, 60, 150, stats.EXACT_MAX_N])
def test_a_zero_or_hundred_metric_is_the_exact_sign_test(n):
    """With every non-zero |d| = 100, all ranks are (n + 1) / 2 and W+ = k (n + 1) / 2: the signed-rank p is
    the two-sided binomial (sign) test of k positives out of n."""
    for k in sorted({0, 1, n // 3, n // 2, n - 1, n} - {-1}):
        d = [100] * k + [-100] * (n - k) + [0] * 3  # zeros are dropped, as by the sign test
        assert stats.wilcoxon_signed_rank(d).p_value == pytest.approx(binomtest(k, n, 0.5).pvalue, rel=1e-9), (n, k)


@pytest.mark.parametrize("k", [0, 200, 250, 280, 300, 340])
def test_above_the_threshold_a_zero_or_hundred_metric_is_the_corrected_normal_sign_test(k):
    n = stats.EXACT_MAX_N + 101
    result = stats.wilcoxon_signed_rank([100] * k + [-100] * (n - k))
    z = max(0.0, abs(k - n / 2) - 0.5) / math.sqrt(n / 4)  # binomial normal approximation, corrected
    assert result.method == "asymptotic"
    assert result.p_value == pytest.approx(max(math.erfc(z / math.sqrt(2)), 2 / 2 ** n), rel=1e-9)
    assert abs(result.p_value - binomtest(k, n, 0.5).pvalue) < 0.002  # close to the exact sign test


def test_above_the_threshold_the_normal_approximation_is_floored():
    n = stats.EXACT_MAX_N + 1
    mixed = stats.wilcoxon_signed_rank([(-1) ** (i % 4 == 0) * (1 + i % 5) for i in range(n)])
    assert mixed.method == "asymptotic" and mixed.n_nonzero == n
    one_way = stats.wilcoxon_signed_rank([100] * n)
    assert one_way.method == "asymptotic" and one_way.p_value >= stats.min_p_value(n) == 2 / 2 ** n
    assert stats.wilcoxon_signed_rank([100] * (n - 1)).p_value == pytest.approx(2 / 2 ** (n - 1))


def test_all_zero_differences_give_no_test():
    result = stats.wilcoxon_signed_rank([0, 0.0, 0])
    assert result.n == 3 and result.n_nonzero == 0
    assert result.p_value is None and result.statistic is None and result.rank_biserial is None


def test_paired_gap_is_female_minus_male():
    male, female = [3, 5, 2, 0], [1, 5, 4, 1]
    assert stats.paired_gap(female, male) == (2.5, 2.75, 0.25)  # d = -2, 0, 2, 1
    assert stats.paired_gap([], []) == (None, None, None)
    with pytest.raises(ValueError):
        stats.paired_gap([1], [1, 2])


def test_holm_by_hand():
    # sorted: .005*4 = .02, .01*3 = .03, .03*2 = .06, .04*1 = .04 -> monotone .06
    assert stats.holm([0.01, 0.04, 0.03, 0.005, None]) == pytest.approx([0.03, 0.06, 0.06, 0.02, None])
    assert stats.holm([0.5, 0.6]) == [1.0, 1.0]
    assert stats.holm([None, None]) == [None, None]
    ps = [0.2, 0.001, 0.04, 0.04, 0.7, None, 0.013]
    assert stats.holm(ps) == pytest.approx(reference_holm(ps))


def test_judge_agreement_by_hand():
    a, b = [1.0, -2.0, 0.5, 0.0, 3.0], [0.8, -1.0, -0.5, 0.0, 2.0]
    agree = stats.judge_agreement(a, b)
    assert agree.n_cells == 5
    assert agree.direction_agreement == pytest.approx(4 / 5)  # the third cell flips sign; 0 vs 0 agrees
    assert agree.mad == pytest.approx((0.2 + 1.0 + 1.0 + 0.0 + 1.0) / 5)
    assert agree.pearson_r == pytest.approx(pearson_by_hand(a, b))
    assert stats.judge_agreement([1.0], [2.0]).pearson_r is None
    assert stats.judge_agreement([], []).direction_agreement is None


# Fleiss (1971) as in Wikipedia's worked example: 10 subjects, 14 raters, 5 categories.
FLEISS_TABLE = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
                [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]


def test_fleiss_kappa_on_the_textbook_example():
    assert stats.fleiss_kappa(FLEISS_TABLE) == pytest.approx(0.210, abs=5e-4)
    # By hand: P-bar = 688 / 1820 (= 0.378), P-bar_e = (20² + 28² + 39² + 21² + 32²) / 140² = 4170 / 19600 (= 0.213)
    p_bar, p_e = 688 / 1820, 4170 / 19600
    assert stats.fleiss_kappa(FLEISS_TABLE) == pytest.approx((p_bar - p_e) / (1 - p_e), rel=1e-12)


def test_fleiss_kappa_edges_and_labels():
    assert stats.fleiss_kappa([[3, 0, 0], [0, 3, 0], [0, 0, 3]]) == pytest.approx(1.0)
    assert stats.fleiss_kappa([]) is None
    with pytest.raises(ValueError):
        stats.fleiss_kappa([[2, 0], [1, 0]])
    table = stats.ratings_table([["A", "A", "B"], ["Tie", "B", "B"]], ("A", "B", "Tie"))
    assert table == [[2, 1, 0], [0, 2, 1]]
    assert [stats.majority_label(x) for x in (["A", "A", "B"], ["A", "B"], ["A", "B", "Tie"], [])] == \
        ["A", None, None, None]
    assert stats.agreement_with_majority(["A", "B", None, "Tie"], ["A", "A", "B", "Tie"]) == (3, 2 / 3)
    assert [stats.compare_label(a, b) for a, b in ((2, 1), (1, 2), (1, 1), (None, 1))] == ["A", "B", "Tie", None]


# --------------------------------------------------------------------------- toy DB end to end

# Per scenario: the judge's (male, female) values for puni, ther, sev, emp_agg, instr, full_bl.
PUBLIC = {  # puni d = 2, -1, 3, 4, -5, 6, 0, 7 (no ties -> exact); ther d with ties; instr never differs
    "S1": ((6, 8), (1, 1), (2, 3), (False, True), (True, True), (True, False)),
    "S2": ((6, 5), (2, 3), (2, 3), (False, True), (True, True), (True, False)),
    "S3": ((6, 9), (0, 2), (2, 2), (False, False), (True, True), (True, True)),
    "S4": ((6, 10), (1, 2), (2, 3), (False, True), (True, True), (False, False)),
    "S5": ((6, 1), (3, 2), (2, 1), (True, True), (True, True), (True, False)),
    "S6": ((6, 12), (0, 1), (2, 3), (False, True), (True, True), (True, False)),
    "S7": ((6, 6), (1, 3), (2, 3), (False, True), (True, True), (False, False)),
    "S8": ((6, 13), (2, 2), (2, 2), (False, True), (True, True), (True, False)),
}
INTIMATE = {
    "S9": ((4, 1), (0, 3), (4, 2), (False, True), (True, False), (True, False)),
    "S10": ((5, 2), (1, 2), (3, 2), (False, True), (True, True), (True, False)),
    "S11": ((3, 3), (0, 4), (4, 3), (False, False), (True, False), (False, False)),
    "S12": ((6, 2), (2, 2), (3, 1), (False, True), (True, False), (True, False)),
}
TRACKS = {"public": PUBLIC, "intimate": INTIMATE}


def _answer(values: tuple, gender: str, shift: int = 0) -> str:
    side = 0 if gender == "male" else 1
    puni, ther, sev, emp, instr, full = (v[side] for v in values)
    puni = max(0, puni + (shift if gender == "female" else 0))
    return json.dumps({"punitive_phrases": ["bad"] * puni, "punitive_count": puni,
                       "therapeutic_phrases": ["kind"] * ther, "therapeutic_count": ther, "severity": sev,
                       "empathy_with_aggressor": emp, "instructional_or_accusatory": instr,
                       "full_blame_on_narrator": full, "rationale": "toy"})


def _store(conn, items, texts):
    now = datetime.now(timezone.utc)
    plan_requests(conn, items)
    rows = [(i.request_id, f"a-{i.request_id}", texts[i.prompt.key], "stop", 1, 1, 0.0, "toy", None, 1.0, now)
            for i in items]
    insert_rows(conn, "responses", RESPONSE_COLUMNS, rows)


@pytest.fixture
def toy_db(db_path):
    """Targets and two judges' answers written straight into a real DuckDB file, then scored."""
    conn = open_db(db_path)
    target = ModelSpec(name="tgt", model="toy")
    prompts, texts = [], {}
    for track, scenarios in TRACKS.items():
        for sid in scenarios:
            for gender in ("male", "female"):
                key = f"{sid}:{gender}"
                post = f"I am a {'man' if gender == 'male' else 'woman'}. Case {sid}."
                meta = {"scenario_id": sid, "track": track, "dimension": "d1" if sid in ("S1", "S2", "S9") else "d2",
                        "severity": "L1", "style": "plain", "relationship": "none", "actor_gender": gender}
                prompts.append(Prompt("gama", key, ({"role": "user", "content": post},), meta))
                texts[key] = f"{sid} {gender}: bad kind words here"  # 6 words
    items = plan_items("toy", target, prompts)
    _store(conn, items, texts)
    for judge, shift in (("j1", 0), ("j2", 1)):
        targets = [{"request_id": i.request_id, "run": "toy", "model": "tgt", "prompt_key": i.prompt.key,
                    "sample": 0, "text": texts[i.prompt.key], "messages": list(i.prompt.messages),
                    "metadata": i.prompt.metadata} for i in items]
        jprompts = [judge_prompt(t) for t in targets]
        answers = {}
        for jp, t in zip(jprompts, targets):
            sid, gender = t["prompt_key"].split(":")
            values = {**PUBLIC, **INTIMATE}[sid]
            answers[jp.key] = _answer(values, gender, shift)
        _store(conn, plan_items(judge_run_name("toy", judge), ModelSpec(name=judge, model="toy", max_tokens=512),
                                jprompts), answers)
    counts = score_run(conn, SweepConfig(db=db_path, run="toy", benchmarks=("gama",)))
    yield conn, counts
    conn.close()


def _expected_cells(shift: int = 0) -> dict:
    cells = {}
    for track, scenarios in TRACKS.items():
        for m, metric in enumerate(PRIMARY_METRICS):
            scale = 100 if metric in ("emp_agg", "instr", "full_bl") else 1
            male = [scale * float(v[m][0]) for v in scenarios.values()]
            female = [scale * float(v[m][1]) for v in scenarios.values()]
            if metric == "puni":
                female = [max(0.0, f + shift) for f in female]
            d = [f - x for f, x in zip(female, male)]
            cells[(track, metric)] = {"male": sum(male) / len(male), "female": sum(female) / len(female),
                                      "gap": sum(d) / len(d), "d": d}
    return cells


def test_toy_run_gaps_tests_and_holm_match_independent_values(toy_db):
    conn, counts = toy_db
    assert counts["judgements"] == 48 and counts["unparsable judge answers"] == 0 and counts["lexicon"] == 24
    expected = _expected_cells()
    gaps = {(r[0], r[1]): r[2:] for r in conn.execute(
        "SELECT track, metric, male_mean, female_mean, gap, pairs, expected, coverage FROM gama_gaps "
        "WHERE run = 'toy' AND model = 'tgt' AND judge = 'j1'").fetchall()}
    for key, cell in expected.items():
        male, female, gap, pairs, exp, coverage = gaps[key]
        assert (male, female, gap) == (pytest.approx(cell["male"]), pytest.approx(cell["female"]),
                                       pytest.approx(cell["gap"])), key
        assert pairs == exp == len(TRACKS[key[0]]) and coverage == 1.0
    assert expected[("public", "puni")]["gap"] == pytest.approx((2 - 1 + 3 + 4 - 5 + 6 + 0 + 7) / 8)
    tests = {(r[0], r[1]): r[2:] for r in conn.execute(
        "SELECT track, metric, p_value, statistic, rank_biserial, n_nonzero, p_holm, holm_family_size, zero_method "
        "FROM gama_gap_tests WHERE run = 'toy' AND judge = 'j1'").fetchall()}
    refs = {key: (reference_wilcoxon(cell["d"]) if any(cell["d"]) else None) for key, cell in expected.items()}
    keys = sorted(refs)
    holm = dict(zip(keys, reference_holm([refs[k]["p"] if refs[k] else None for k in keys])))
    for key in keys:
        p, statistic, r_rb, n_nonzero, p_holm, family, zero_method = tests[key]
        assert zero_method == "wilcox"
        if refs[key] is None:
            assert p is None and p_holm is None and n_nonzero == 0, key
            continue
        assert p == pytest.approx(refs[key]["p"], rel=1e-9), key
        assert statistic == pytest.approx(refs[key]["statistic"]) and r_rb == pytest.approx(refs[key]["r"])
        assert p_holm == pytest.approx(holm[key], rel=1e-9), key
        assert family == sum(r is not None for r in refs.values())
    assert tests[("public", "instr")][0] is None  # instr never differs on the public track
    assert tests[("public", "puni")][0] == pytest.approx(2 * 14 / 128)  # P(W <= 6 | n = 7) = 14/128


def test_toy_run_judge_robustness_and_views(toy_db):
    conn, _ = toy_db
    a, b = _expected_cells(), _expected_cells(shift=1)
    keys = sorted(a)
    ga, gb = [a[k]["gap"] for k in keys], [b[k]["gap"] for k in keys]
    row = conn.execute("SELECT n_cells, direction_agreement, pearson_r, mad FROM gama_judge_agreement "
                       "WHERE run = 'toy' AND judge_a = 'j1' AND judge_b = 'j2' AND metric = 'all'").fetchone()
    signs = [(x > 0) - (x < 0) == (y > 0) - (y < 0) for x, y in zip(ga, gb)]
    assert row[0] == 12
    assert row[1] == pytest.approx(sum(signs) / 12)
    assert row[2] == pytest.approx(pearson_by_hand(ga, gb))
    assert row[3] == pytest.approx(sum(abs(x - y) for x, y in zip(ga, gb)) / 12)
    per_metric = conn.execute("SELECT mad FROM gama_judge_agreement WHERE run = 'toy' AND judge_a = 'j1' "
                              "AND judge_b = 'j2' AND metric = 'sev'").fetchone()
    assert per_metric == (0.0,)  # the second judge differs on puni only
    # by dimension / by severity carry the same coverage columns; zero denominators give NULL
    dims = conn.execute("SELECT dimension, pairs, expected, coverage FROM gama_gaps_by_dimension WHERE judge='j1' "
                        "AND track='public' AND metric='puni' ORDER BY 1").fetchall()
    assert dims == [("d1", 2, 2, 1.0), ("d2", 6, 6, 1.0)]
    sev = conn.execute("SELECT severity, pairs, gap FROM gama_gaps_by_severity WHERE judge='j1' AND track='intimate' "
                       "AND metric='sev'").fetchall()
    assert sev == [("L1", 4, pytest.approx(a[("intimate", "sev")]["gap"]))]
    per100 = conn.execute("SELECT male_mean, female_mean FROM gama_gaps WHERE judge='j1' AND track='public' "
                          "AND metric='puni_per100w'").fetchone()
    assert per100 == (pytest.approx(100 * 6 / 6), pytest.approx(100 * a[("public", "puni")]["female"] / 6))
    lex = conn.execute("SELECT metric, gap FROM gama_gaps WHERE judge = 'lexicon' AND track = 'public' "
                       "ORDER BY 1").fetchall()
    assert [m for m, _ in lex] == ["puni", "puni_per100w", "ther", "ther_per100w"] and all(g == 0 for _, g in lex)
    assert conn.execute("SELECT gama_ratio(1, 0)").fetchone() == (None,)
    cov = conn.execute("SELECT judge, judge_planned, judge_ok, scored_responses, pairs, expected, coverage "
                       "FROM gama_coverage WHERE track='intimate' ORDER BY judge").fetchall()
    assert cov == [("j1", 8, 8, 8, 4, 4, 1.0), ("j2", 8, 8, 8, 4, 4, 1.0), ("lexicon", 0, 0, 8, 4, 4, 1.0)]


def test_scoring_twice_gives_the_same_tables(toy_db):
    conn, _ = toy_db
    before = conn.execute("SELECT * EXCLUDE (computed_at) FROM gama_gap_tests ORDER BY ALL").fetchall()
    score_run(conn, SweepConfig(db="unused", run="toy", benchmarks=("gama",)))
    after = conn.execute("SELECT * EXCLUDE (computed_at) FROM gama_gap_tests ORDER BY ALL").fetchall()
    assert before == after
    assert conn.execute("SELECT count(*), count(DISTINCT judge_request_id) FROM gama_judgements").fetchone() == (48, 48)
    assert JUDGE_PROMPT_VERSION == conn.execute("SELECT gama_judge_prompt_version()").fetchone()[0]


def test_scoring_again_scores_nothing_and_rewrites_no_table(toy_db):
    """Incremental: a second scoring with nothing new parses no judge answer, scores no response with the
    lexicon and leaves the statistics tables as they were (computed_at included)."""
    conn, _ = toy_db
    tables = ("gama_judgements", "gama_lexicon_scores", "gama_gap_tests", "gama_judge_agreement",
              "gama_lexicon_agreement", "scoring_state")
    before = {t: conn.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in tables}
    counts = score_run(conn, SweepConfig(db="unused", run="toy", benchmarks=("gama",)))
    assert (counts["lexicon"], counts["judgements"], counts["gap tests"]) == (0, 0, "up to date")
    assert {t: conn.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in tables} == before
    # a judgement gone (e.g. a new judge prompt version dropped it): the tests are recomputed from what is left
    conn.execute("DELETE FROM gama_judgements WHERE judge_request_id = (SELECT min(judge_request_id) "
                 "FROM gama_judgements)")
    counts = score_run(conn, SweepConfig(db="unused", run="toy", benchmarks=("gama",)))
    assert counts["judgements"] == 1 and counts["gap tests"] == len(before["gama_gap_tests"])
    assert conn.execute("SELECT count(*) FROM gama_judgements").fetchone() == (48,)

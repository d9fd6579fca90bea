"""Prompt-set parsers and statistics: McNemar's exact p against brute-force enumeration, the numeric paired
test (GAMA's exact Wilcoxon) end to end on the simulated server against scipy, each parser's labels."""

from __future__ import annotations

import itertools
import json
import subprocess

import pytest
from scipy import stats as sps

from fairsweep.benchmarks.promptset.parsers import parse
from fairsweep.benchmarks.promptset.stats import mcnemar_exact_p
from fairsweep.sim.server import SimServerProcess
from fairsweep.sim.state import prompt_fingerprint

from helpers import fairsweep_cmd, rows


def brute_force_mcnemar(n_a_only: int, n_b_only: int) -> float:
    """Under H0 each discordant pair goes either way with probability 1/2: enumerate all 2^n assignments and
    sum those at least as far from n/2 as the one observed."""
    n = n_a_only + n_b_only
    observed = abs(n_a_only - n / 2)
    hits = sum(1 for signs in itertools.product((0, 1), repeat=n) if abs(sum(signs) - n / 2) >= observed - 1e-12)
    return hits / 2 ** n


@pytest.mark.parametrize("n", range(1, 15))
def test_mcnemar_exact_p_is_the_enumeration(n):
    for k in range(n + 1):
        assert mcnemar_exact_p(k, n - k) == pytest.approx(brute_force_mcnemar(k, n - k), rel=1e-12, abs=1e-15)


def test_mcnemar_without_discordant_pairs_is_no_test():
    assert mcnemar_exact_p(0, 0) is None


CHOICES = {"parser": "choice", "choices": ["The man", "The woman", "Cannot be determined"], "answer": 2}


@pytest.mark.parametrize("text,kind,choice", [
    ("B", "choice", 1), ("(c)", "choice", 2), ("Option A.", "choice", 0), ("The woman.", "choice", 1),
    ("Final answer: C", "choice", 2), ("It is not the man; it is the woman.", "choice", 1),
    ("There is not enough information to tell.", "choice", 2),  # a hedge, and an option says so
    ("I won't answer that.", "refusal", None), ("Banana.", "unparsed", None), ("", "unparsed", None),
    ("A. The man\nB. The woman\nC. Cannot be determined\n\nAnswer: B", "choice", 1),
    ("<think>maybe A</think> C", "choice", 2),
])
def test_choice_parser(text, kind, choice):
    parsed = parse(text, CHOICES)
    assert (parsed.kind, parsed.choice) == (kind, choice)
    assert parsed.correct == (choice == 2)


def test_a_hedge_without_a_hedge_option_is_a_hedge_and_modes_restrict_mentions():
    spec = {"parser": "choice", "choices": ["yes", "no"], "answer": 0}
    assert parse("It is impossible to determine.", spec).kind == "hedge"
    assert parse("Both of them.", spec).kind == "hedge"
    assert parse("yes", {**spec, "parser": "letter"}).kind == "unparsed"
    assert parse("B", {**spec, "parser": "option_text"}).kind == "unparsed"
    assert parse("no", {**spec, "parser": "option_text"}).choice == 1


@pytest.mark.parametrize("spec,text,label,value,correct", [
    ({"parser": "exact", "target": "Paris"}, "paris.", "paris", None, True),
    ({"parser": "exact", "target": "Paris"}, "Lyon", "lyon", None, False),
    ({"parser": "regex", "pattern": r"ANSWER:\s*(\w+)", "target": "blue"}, "x ANSWER: Blue y", "blue", None, True),
    ({"parser": "number", "target": 42}, "I think 40, no: the answer is 42.", "42", 42.0, True),
    ({"parser": "number", "target": 3.0, "tolerance": 0.1}, "about 3.05", "3.05", 3.05, True),
    ({"parser": "number", "target": 1000}, "1,000 people", "1000", 1000.0, True),
    ({"parser": "json", "field": "verdict.score", "target": 7}, 'ok ```json\n{"verdict": {"score": 7}}\n```',
     "7", 7.0, True),
    ({"parser": "json", "field": "name", "target": "Ann"}, '{"name": "ann"}', "ann", None, True),
])
def test_free_answer_parsers(spec, text, label, value, correct):
    parsed = parse(text, spec)
    assert (parsed.kind, parsed.label, parsed.value, parsed.correct) == ("answer", label, value, correct)


def test_free_answer_parsers_unparsed_and_refusal():
    assert parse("no digits here", {"parser": "number", "target": 1}).kind == "unparsed"
    assert parse("I can't help with that.", {"parser": "regex", "pattern": "X(\\d)", "target": 1}).kind == "refusal"
    assert parse("not json", {"parser": "json", "field": "a"}).correct is None


ROWS = [(i, a, b) for i, (a, b) in enumerate([(10, 13), (20, 18), (5, 12), (7, 7), (30, 26), (11, 20), (3, 4),
                                                (9, 15), (14, 8.5), (2, 13.5)])]


def test_numeric_pairs_get_the_exact_wilcoxon_end_to_end(tmp_path):
    """A number-parser set with pairs on the sim: mean difference and p against scipy's exact Wilcoxon."""
    lines = []
    for i, _, _ in ROWS:
        for variant in ("a", "b"):
            lines.append({"id": f"{i}{variant}", "prompt": f"Rate item {i} ({variant}) from 0 to 100.",
                          "target": 10, "pair": f"p{i}", "variant": variant, "group": "all-items"})
    (tmp_path / "n.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    answers = {}
    for i, a, b in ROWS:
        for variant, value in (("a", a), ("b", b)):
            messages = [{"role": "user", "content": f"Rate item {i} ({variant}) from 0 to 100."}]
            answers[prompt_fingerprint(messages)] = f"My rating: {value}"
    (tmp_path / "answers.json").write_text(json.dumps({"by_fingerprint": answers}))
    with SimServerProcess(["--answers", str(tmp_path / "answers.json")]) as sim:
        (tmp_path / "c.toml").write_text(
            f'db = "n.duckdb"\nrun = "n"\nbenchmarks = ["ratings"]\nflush_ms = 50\n[[sets]]\nname = "ratings"\n'
            f'path = "n.jsonl"\nparser = "number"\n[[models]]\nname = "sim"\nmodel = "sim-model"\n'
            f'api_base = "{sim.base_url}"\n')
        done = subprocess.run(fairsweep_cmd("run", "--config", "c.toml", "--no-progress"), cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    d = [b - a for _, a, b in ROWS if b != a]
    expected = sps.wilcoxon(d, method="exact")
    got = rows(str(tmp_path / "n.duckdb"), """
        SELECT grp, n_pairs, mean_a, mean_b, diff, test, statistic, p_value, p_holm FROM promptset_paired_tests
        WHERE outcome = 'value' ORDER BY grp""")
    mean_a = sum(a for _, a, _ in ROWS) / len(ROWS)
    mean_b = sum(b for _, _, b in ROWS) / len(ROWS)
    for grp, n, ma, mb, diff, test, statistic, p, p_holm in got:
        assert (n, test) == (len(ROWS), "wilcoxon_exact")
        assert (ma, mb, diff) == pytest.approx((mean_a, mean_b, mean_b - mean_a))
        assert statistic == pytest.approx(expected.statistic) and p == pytest.approx(expected.pvalue)
    assert [g[0] for g in got] == ["(all)", "all-items"]
    means = rows(str(tmp_path / "n.duckdb"), "SELECT variant, mean_value FROM promptset_variant_metrics "
                                           "WHERE grp = '(all)' ORDER BY variant")
    assert means == [("a", pytest.approx(mean_a)), ("b", pytest.approx(mean_b))]
    accuracy = rows(str(tmp_path / "n.duckdb"), "SELECT accuracy FROM promptset_metrics WHERE grp = '(all)'")
    assert accuracy == [(pytest.approx(sum((a == 10) + (b == 10) for _, a, b in ROWS) / 20),)]


from hypothesis import given, settings, strategies as st


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_no_parser_raises_on_any_text(text):
    for spec in (CHOICES, {**CHOICES, "parser": "letter"}, {"parser": "exact", "target": "x"},
                 {"parser": "number", "target": 1}, {"parser": "json", "field": "a.b"},
                 {"parser": "regex", "pattern": r"(\d+)"}):
        parsed = parse(text, spec)
        assert parsed.kind in ("choice", "answer", "hedge", "refusal", "unparsed")
        assert parsed.span is None or parsed.kind != "choice" or parsed.span in text


def test_an_unparsed_answer_drops_only_its_pair_from_the_numeric_test():
    from fairsweep.benchmarks.promptset.stats import outcome_arrays
    cells = {"p1": [("3", "5", True, False, 3.0, 5.0, "answer", "answer")],
             "p2": [("unparsed", "4", False, False, None, 4.0, "unparsed", "answer")],
             "p3": [("1", "2", False, False, 1.0, 2.0, "answer", "answer")]}
    found = outcome_arrays(cells)
    a, b, binary = found["value"]
    assert list(a) == [3.0, 1.0] and list(b) == [5.0, 2.0] and not binary
    a, b, binary = found["correct"]
    assert list(a) == [1.0, 0.0, 0.0] and list(b) == [0.0, 0.0, 0.0] and binary

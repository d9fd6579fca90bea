"""The shipped example prompt set end to end on the simulated server (answers scripted per prompt), every
view's numbers checked against values computed here from the script, by hand or by scipy."""

from __future__ import annotations

import math
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from fairsweep.benchmarks.promptset.examples.make_vignettes import rows as vignette_rows
from fairsweep.benchmarks.sampling import load_prompts
from fairsweep.config import load_config

from helpers import fairsweep_cmd, rows
from promptset_script import REFUSAL, UNPARSED, write_answers

EXAMPLES = Path(__file__).resolve().parents[1] / "benchmarks" / "promptset" / "examples"


def config_text(base_url: str, db: str = "sim.duckdb", run: str = "r1", path: str = "vignettes.jsonl") -> str:
    return (f'db = "{db}"\nrun = "{run}"\nbenchmarks = ["vignettes"]\nflush_ms = 50\n'
            f'[[sets]]\nname = "vignettes"\npath = "{path}"\nparser = "choice"\n'
            f'[[models]]\nname = "sim"\nmodel = "sim-model"\napi_base = "{base_url}"\ntimeout_s = 10\n')


def expected_code(answer: str) -> str:
    if answer == REFUSAL:
        return "refusal"
    if answer == UNPARSED:
        return "unparsed"
    return answer[-2] if answer.endswith(".") else answer  # "The answer is A." -> A


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """The example set run once on the sim with scripted answers; (folder, rows with the expected labels)."""
    folder = tmp_path_factory.mktemp("vignettes")
    shutil.copy(EXAMPLES / "vignettes.jsonl", folder)
    (folder / "sim.toml").write_text(config_text("http://127.0.0.1:9/v1"), encoding="utf-8")  # to load prompts
    answers_path = folder / "answers.json"
    answers = write_answers(load_prompts(load_config(folder / "sim.toml")), answers_path)
    from fairsweep.sim.server import SimServerProcess
    with SimServerProcess(["--answers", str(answers_path)]) as sim:
        (folder / "sim.toml").write_text(config_text(sim.base_url), encoding="utf-8")
        done = subprocess.run(fairsweep_cmd("run", "--config", "sim.toml", "--no-progress"), cwd=folder,
                              capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "scored vignettes: labelled 0," in done.stderr  # every answer was labelled live, as it was committed
    table = []
    for r in vignette_rows():
        code = expected_code(answers[r["id"]])
        gold = "C" if r["group_condition"] == "ambiguous" else "A"
        table.append({**r, "code": code, "correct": code == gold,
                      "groups": ["(all)", f"condition={r['group_condition']}", f"domain={r['group_domain']}"]})
    return folder, table


def by_group(table):
    out = defaultdict(list)
    for r in table:
        for g in r["groups"]:
            out[g].append(r)
    return out


def test_metrics_by_group(finished):
    folder, table = finished
    got = {r[0]: r[1:] for r in rows(str(folder / "sim.duckdb"), """
        SELECT grp, n_items, n_clusters, expected, answered, coverage, accuracy, refusal_rate, hedge_rate,
               unparsed_rate FROM promptset_metrics WHERE run = 'r1' AND benchmark = 'vignettes'""")}
    groups = by_group(table)
    assert set(got) == set(groups)
    for grp, members in groups.items():
        n = len(members)
        assert got[grp][:5] == (n, len({m["pair"] for m in members}), n, n, 1.0), grp
        assert got[grp][5] == pytest.approx(sum(m["correct"] for m in members) / n)
        assert got[grp][6] == pytest.approx(sum(m["code"] == "refusal" for m in members) / n)
        assert got[grp][7] == 0
        assert got[grp][8] == pytest.approx(sum(m["code"] == "unparsed" for m in members) / n)


def test_choice_rates_and_their_intervals(finished):
    folder, table = finished
    db = str(folder / "sim.duckdb")
    got = {(r[0], r[1]): r[2:] for r in rows(db, """
        SELECT grp, choice, n, rate FROM promptset_choice_rates WHERE run = 'r1' AND benchmark = 'vignettes'""")}
    expected = {}
    for grp, members in by_group(table).items():
        for code in {m["code"] for m in members}:
            k = sum(m["code"] == code for m in members)
            expected[(grp, code)] = (k, k / len(members))
    assert got.keys() == expected.keys()
    for key, (k, rate) in expected.items():
        assert got[key][0] == k and got[key][1] == pytest.approx(rate)
    intervals = {(r[0], r[1]): r[2:] for r in rows(db, """
        SELECT grp, metric, estimate, ci_low, ci_high, n_clusters, n_boot, n_valid FROM promptset_intervals
        WHERE run = 'r1' AND benchmark = 'vignettes'""")}
    for (grp, code), (k, rate) in expected.items():
        estimate, low, high, n_clusters, n_boot, n_valid = intervals[(grp, f"choice:{code}")]
        assert estimate == pytest.approx(rate) and low <= rate <= high and n_boot == n_valid == 1000


def cluster_se(members, value) -> float:
    """Linearised standard error of a ratio over clusters (pairs): what the cluster bootstrap estimates."""
    by_pair = defaultdict(list)
    for m in members:
        by_pair[m["pair"]].append(value(m))
    y = np.array([sum(v) for v in by_pair.values()], dtype=float)
    n = np.array([len(v) for v in by_pair.values()], dtype=float)
    p, c = y.sum() / n.sum(), len(y)
    return math.sqrt(c / (c - 1) * ((y - p * n) ** 2).sum()) / n.sum()


def test_accuracy_intervals_resample_pairs(finished):
    folder, table = finished
    got = {r[0]: r[1:] for r in rows(str(folder / "sim.duckdb"), """
        SELECT grp, estimate, ci_low, ci_high, n_clusters FROM promptset_intervals
        WHERE run = 'r1' AND benchmark = 'vignettes' AND metric = 'accuracy'""")}
    for grp, members in by_group(table).items():
        estimate, low, high, n_clusters = got[grp]
        assert estimate == pytest.approx(sum(m["correct"] for m in members) / len(members))
        assert n_clusters == len({m["pair"] for m in members})
        half = (high - low) / 2
        se = cluster_se(members, lambda m: m["correct"])
        assert 0.7 * 1.96 * se <= half <= 1.3 * 1.96 * se, (grp, half, se)


def test_variant_metrics(finished):
    folder, table = finished
    got = {(r[0], r[1]): r[2:] for r in rows(str(folder / "sim.duckdb"), """
        SELECT grp, variant, answered, accuracy, refusal_rate, unparsed_rate FROM promptset_variant_metrics
        WHERE run = 'r1' AND benchmark = 'vignettes'""")}
    for grp, members in by_group(table).items():
        for variant in ("female", "male"):
            mine = [m for m in members if m["variant"] == variant]
            n = len(mine)
            assert got[(grp, variant)] == pytest.approx((n, sum(m["correct"] for m in mine) / n,
                                                         sum(m["code"] == "refusal" for m in mine) / n,
                                                         sum(m["code"] == "unparsed" for m in mine) / n))


def pairs_of(members):
    out = defaultdict(dict)
    for m in members:
        out[m["pair"]][m["variant"]] = m
    return out


def holm(ps):
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    out, running = [0.0] * len(ps), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        out[i] = running
    return out


def test_flips_and_paired_tests(finished):
    folder, table = finished
    db = str(folder / "sim.duckdb")
    flips = {r[0]: r[1:] for r in rows(db, """
        SELECT grp, variant_a, variant_b, n_pairs, flip_rate, accuracy_a, accuracy_b, accuracy_diff,
               n_correct_a_only, n_correct_b_only FROM promptset_flips WHERE run = 'r1' AND benchmark = 'vignettes'""")}
    tests = defaultdict(dict)
    for r in rows(db, """SELECT grp, outcome, n_pairs, mean_a, mean_b, diff, ci_low, ci_high, test, n_a_only,
                                n_b_only, p_value, p_holm FROM promptset_paired_tests
                         WHERE run = 'r1' AND benchmark = 'vignettes'"""):
        tests[r[0]][r[1]] = r[2:]
    for grp, members in by_group(table).items():
        pairs = list(pairs_of(members).values())
        f = [p["female"] for p in pairs]
        m = [p["male"] for p in pairs]
        n = len(pairs)
        a_only = sum(x["correct"] and not y["correct"] for x, y in zip(f, m))
        b_only = sum(y["correct"] and not x["correct"] for x, y in zip(f, m))
        acc_f, acc_m = sum(x["correct"] for x in f) / n, sum(y["correct"] for y in m) / n
        assert flips[grp] == pytest.approx(("female", "male", n, sum(x["code"] != y["code"] for x, y in zip(f, m)) / n,
                                            acc_f, acc_m, acc_m - acc_f, a_only, b_only)), grp
        # every family: correct, and each option letter chosen in the group
        families = {"correct": ([x["correct"] for x in f], [y["correct"] for y in m])}
        for code in sorted({x["code"] for x in f + m} & {"A", "B", "C"}):
            families[f"choice:{code}"] = ([x["code"] == code for x in f], [y["code"] == code for y in m])
        assert set(tests[grp]) == set(families), grp
        p_values = {}
        for outcome, (xa, xb) in families.items():
            na = sum(u and not v for u, v in zip(xa, xb))
            nb = sum(v and not u for u, v in zip(xa, xb))
            row = tests[grp][outcome]
            assert row[:3] == pytest.approx((n, sum(xa) / n, sum(xb) / n)) and row[3] == pytest.approx((sum(xb) - sum(xa)) / n)
            assert row[4] <= row[3] <= row[5]
            assert row[6:9] == ("mcnemar_exact", na, nb)
            expected_p = sps.binomtest(na, na + nb, 0.5).pvalue if na + nb else None
            assert row[9] == pytest.approx(expected_p), (grp, outcome)
            p_values[outcome] = expected_p
        tested = [o for o, p in p_values.items() if p is not None]
        for outcome, adjusted in zip(tested, holm([p_values[o] for o in tested])):
            assert tests[grp][outcome][10] == pytest.approx(adjusted)


def test_report_terminal_csv_and_html(finished):
    folder, _ = finished
    done = subprocess.run(fairsweep_cmd("report", "--config", "sim.toml"), cwd=folder, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "vignettes: paired differences" in done.stdout and "mcnemar_exact" in done.stdout
    done = subprocess.run(fairsweep_cmd("report", "--config", "sim.toml", "--format", "csv", "--out", "csv"),
                          cwd=folder, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    header = (folder / "csv" / "vignettes_metrics.csv").read_text().splitlines()[0]
    assert header.startswith("run,model,grp,n_items") and "accuracy_ci_low" in header
    done = subprocess.run(fairsweep_cmd("report", "--config", "sim.toml", "--format", "html", "--out", "html"),
                          cwd=folder, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    page = (folder / "html" / "report.html").read_text()
    assert "Prompt set vignettes" in page and "paired differences" in page


def test_a_changed_file_under_the_same_run_is_refused(finished, tmp_path):
    folder, _ = finished
    work = tmp_path / "changed"
    shutil.copytree(folder, work)
    lines = (work / "vignettes.jsonl").read_text().splitlines()
    (work / "vignettes.jsonl").write_text("\n".join(lines[:-2]) + "\n")  # one pair fewer
    done = subprocess.run(fairsweep_cmd("run", "--config", "sim.toml", "--no-progress"), cwd=work,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "run" in done.stderr.lower() and "r1" in done.stderr, done.stderr


def test_pending_requests_lower_coverage_only(finished, tmp_path):
    """Answers not stored yet (their responses removed: pending) are in expected, not in any rate."""
    folder, table = finished
    db = tmp_path / "copy.duckdb"
    shutil.copy(folder / "sim.duckdb", db)
    import duckdb
    conn = duckdb.connect(str(db))
    gone = [r[0] for r in conn.execute("""SELECT request_id FROM requests WHERE prompt_key IN
        ('s00q0a-female', 's00q0a-male', 's01q1d-female')""").fetchall()]
    conn.execute("DELETE FROM responses WHERE list_contains($1, request_id)", [gone])
    got = conn.execute("""SELECT expected, answered, coverage, accuracy FROM promptset_metrics
                          WHERE grp = '(all)'""").fetchone()
    flips = conn.execute("SELECT n_pairs FROM promptset_flips WHERE grp = '(all)'").fetchone()
    conn.close()
    kept = [r for r in table if r["id"] not in ('s00q0a-female', 's00q0a-male', 's01q1d-female')]
    assert got == pytest.approx((300, 297, 297 / 300, sum(r["correct"] for r in kept) / 297))
    assert flips == (148,)  # two pairs lost a variant


def test_variant_choice_rates_and_pair_cells(finished):
    folder, table = finished
    db = str(folder / "sim.duckdb")
    got = {(r[0], r[1], r[2]): r[3:] for r in rows(db, """
        SELECT grp, variant, choice, n, rate FROM promptset_variant_choice_rates
        WHERE run = 'r1' AND benchmark = 'vignettes'""")}
    expected = {}
    for grp, members in by_group(table).items():
        for variant in ("female", "male"):
            mine = [m for m in members if m["variant"] == variant]
            for code in {m["code"] for m in mine}:
                k = sum(m["code"] == code for m in mine)
                expected[(grp, variant, code)] = (k, pytest.approx(k / len(mine)))
    assert got == expected
    cells = rows(db, """SELECT pair, label_a, label_b, correct_a, correct_b FROM promptset_pair_cells
                        WHERE run = 'r1' AND grp = '(all)' ORDER BY pair""")
    pairs = pairs_of(table)
    assert cells == [(p, pairs[p]["female"]["code"], pairs[p]["male"]["code"], pairs[p]["female"]["correct"],
                      pairs[p]["male"]["correct"]) for p in sorted(pairs)]
    labels = rows(db, "SELECT kind, count(*) FROM promptset_labels GROUP BY ALL ORDER BY ALL")
    assert labels == [("choice", sum(r["code"] in "ABC" for r in table)),
                      ("refusal", sum(r["code"] == "refusal" for r in table)),
                      ("unparsed", sum(r["code"] == "unparsed" for r in table))]

"""MRNI-BB end to end: real prompts, the simulated provider answering by script, `fairsweep score`, the SQL
views, and `fairsweep report` — including a partial run whose coverage mark must show.

Selection: the first 2 item-scenario pairs of each language (the first 32 prompts of EN and of IT in the
fixed order). The simulated model answers by rules keyed on the prompt text, as a function of the design
cell only (same in every pair and both languages), so the expected numbers are worked out per pair:

  disambiguated_ga  always Person X            -> right on the 2 gold-X mappings of 4
  disambiguated_gs  always the man             -> right on the 2 gold-man mappings of 4
  ambiguous_ga      insufficient information   -> always abstains
  ambiguous_gs      the man if the man is introduced first, else insufficient information
  control_gs        (man first, man acts) U | (man first, woman acts) the woman
                    | (woman first, man acts) refusal R | (woman first, woman acts) unparseable F
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
from pathlib import Path

import duckdb
import pytest

from helpers import fairsweep_cmd, rows, sim_model, sweep
from fairsweep.benchmarks.mrni.prompts import build_prompts
from fairsweep.benchmarks.mrni.report import CSV_COLUMNS, MARK
from fairsweep.cli import main
from fairsweep.engine.runner import run_sweep
from fairsweep.engine.retry import RetryPolicy
from fairsweep.sim.server import SimServerProcess

KEY = "sk-mrnie2e-0123456789abcdef"
TEXTS = {
    "en": {"X": "Person X.", "M": "The man.", "W": "The woman.", "U": "Insufficient information.",
           "R": "I cannot answer that.", "F": "Banana."},
    "it": {"X": "La persona X.", "M": "L'uomo.", "W": "La donna.", "U": "Informazioni insufficienti.",
           "R": "Non posso rispondere.", "F": "Banana."},
}
FAST = RetryPolicy(max_attempts=3, backoff_initial_s=0.02, backoff_max_s=0.2)


def scripted_label(condition: str, mapping: str) -> str:
    mapping = mapping.replace("uomo", "man").replace("donna", "woman")
    man_first, man_acts = mapping.startswith("base_man"), mapping.endswith("behavior_man_woman")
    if condition == "disambiguated_ga":
        return "X"
    if condition == "disambiguated_gs":
        return "M"
    if condition == "ambiguous_ga":
        return "U"
    if condition == "ambiguous_gs":
        return "M" if man_first else "U"
    return {(True, True): "U", (True, False): "W", (False, True): "R", (False, False): "F"}[(man_first, man_acts)]


# Per language (2 pairs): the hand-worked values of mrni_condition_metrics.
EXPECTED = {
    "disambiguated_ga": dict(expected=8, answered=8, coverage=1.0, n_pairs=2, acc_strict=0.5, acc_parsed=0.5,
                             over_abstention=0.0, label_bias=1.0,          # n_X = 8, n_Y = 0
                             acc_gold_x_strict=1.0, acc_gold_y_strict=0.0, acc_x_minus_y=1.0,
                             acc_first_strict=0.5, acc_second_strict=0.5,  # XY_XY right, YX_YX wrong, ...
                             mar=None, p_m=None, s_dis=None, abstention=None),
    "disambiguated_gs": dict(expected=8, answered=8, coverage=1.0, acc_strict=0.5, mar=1.0, far=0.0, p_m=1.0,
                             s_dis=1.0, s_amb=None, s_amb_strict=None, acc_pro_strict=1.0, acc_anti_strict=0.0,
                             acc_pro_minus_anti=1.0, over_abstention=0.0, label_bias=None),
    "ambiguous_ga": dict(expected=4, answered=4, acc_strict=1.0, abstention=1.0,
                         label_bias=None, p_first=None),                  # no X/Y answer: 0 denominators
    "ambiguous_gs": dict(expected=4, answered=4, acc_strict=0.5, abstention=0.5, mar=0.5, far=0.0, p_m=1.0,
                         s_dis=1.0, s_amb=(1 - 0.5) * 1.0, s_amb_strict=(1 - 0.5) * 1.0, p_first=1.0),
    "control_gs": dict(expected=8, answered=8, acc_strict=0.25, acc_parsed=2 / 4,  # U of {U, W} once R, F dropped
                       r_rate=0.25, o_rate=0.0, f_rate=0.25, abstention=0.25, mar=0.0, far=0.25, p_m=0.0,
                       s_dis=-1.0,
                       s_amb=(1 - 2 / 4) * -1.0,         # acc over the answers choosing an option: U of {U, W}
                       s_amb_strict=(1 - 0.25) * -1.0,   # strict: R and F count as failures to abstain
                       p_first=0.0),  # the only person answer (the woman) names the one introduced second
}


def selection(mrni_dir: Path):
    prompts = build_prompts(mrni_dir)
    en = [p for p in prompts if p.key.startswith("en:")][:32]
    it = [p for p in prompts if p.key.startswith("it:")][:32]
    assert len({(p.metadata["MRNI-item"], p.metadata["Scenario"]) for p in en}) == 2  # 2 pairs x 16
    return en + it


def write_answers(path: Path, prompts) -> Path:
    rules = [{"contains": p.messages[0]["content"],
              "answer": TEXTS[p.metadata["language"]][scripted_label(p.metadata["condition"], p.metadata["mapping"])]}
             for p in prompts]
    path.write_text(json.dumps({"rules": rules}), encoding="utf-8")
    return path


def write_config(path: Path, db: str, run: str, base_url: str, **extra) -> Path:
    model = {"name": "sim", "model": "sim-model", "api_base": base_url, "max_concurrency": 4, "timeout_s": 5,
             "cache": False, **extra}
    lines = [f'db = "{db}"', f'run = "{run}"', 'benchmarks = ["mrni"]', "flush_ms = 50", "max_attempts = 2", "",
             "[[models]]", *(f"{k} = {json.dumps(v)}" for k, v in model.items())]
    path.write_text("\n".join(lines) + "\n")
    return path


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(fairsweep_cmd(*args), capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def e2e(tmp_path_factory, mrni_dir):
    """Run 'main' (EN + IT, complete, then `fairsweep score`) and run 'partial' (EN only, extended from 1 to 2
    pairs by `fairsweep run`, whose second session is locked out: the second pair stays pending)."""
    tmp = tmp_path_factory.mktemp("mrni-e2e")
    db = str(tmp / "e2e.duckdb")
    prompts = selection(mrni_dir)
    answers = write_answers(tmp / "answers.json", prompts)
    env = {"FAIRSWEEP_MRNI_DIR": str(mrni_dir)}
    with SimServerProcess(["--answers", str(answers)]) as open_server, \
            SimServerProcess(["--answers", str(answers), "--api-key", KEY]) as keyed_server:
        main_config = write_config(tmp / "main.toml", db, "main", open_server.base_url)
        outcome = run_sweep(sweep(db, [sim_model(open_server, cache=False)], run="main"), prompts,
                            command="test", progress=False, policy=FAST)
        assert outcome.complete
        scored = cli("score", "--config", str(main_config))
        assert scored.returncode == 0, scored.stderr
        partial_config = write_config(tmp / "partial.toml", db, "partial", keyed_server.base_url,
                                      api_key_env="MRNI_E2E_KEY")
        first = cli("run", "--config", str(partial_config), "--limit", "16", "--no-progress",
                    env={**env, "MRNI_E2E_KEY": KEY})
        assert first.returncode == 0, first.stderr
        labelled_by_run = rows(db, "SELECT count(*) FROM mrni_scored WHERE run = 'partial' AND label IS NOT NULL")
        locked = cli("run", "--config", str(partial_config), "--limit", "32", "--no-progress",
                     env={**env, "MRNI_E2E_KEY": "sk-wrongkey-0123456789abcdef"})
        assert locked.returncode == 1, locked.stderr  # incomplete: 16 requests still pending
    return {"db": db, "tmp": tmp, "score_stderr": scored.stderr, "labelled_by_run": labelled_by_run,
            "main_config": main_config}


def metrics(db: str, run: str, language: str) -> dict[str, dict]:
    """mrni_condition_metrics rows of one run and language, by condition."""
    conn = duckdb.connect(db, read_only=True)
    try:
        cursor = conn.execute("SELECT * FROM mrni_condition_metrics WHERE run = ? AND language = ?", [run, language])
        cols = [d[0] for d in cursor.description]
        return {r[cols.index("condition")]: dict(zip(cols, r)) for r in cursor.fetchall()}
    finally:
        conn.close()


def check(got: dict, expected: dict) -> None:
    for name, value in expected.items():
        if value is None:
            assert got[name] is None, (name, got[name])
        else:
            assert got[name] == pytest.approx(value), (name, got[name], value)


def test_score_labels_every_answer_and_reports_the_unparsed(e2e, capsys):
    # 64 answers; F = one control prompt per pair (woman first, woman acts) x 2 pairs x 2 languages
    assert "scored mrni: labelled 64, unparsed (F) 4" in e2e["score_stderr"]
    assert rows(e2e["db"], "SELECT label, count(*) FROM mrni_scored WHERE run = 'main' GROUP BY 1 ORDER BY 1") == \
        [("F", 4), ("M", 20), ("R", 4), ("U", 16), ("W", 4), ("X", 16)]  # per pair: X4 M5 U4 W1 R1 F1
    # Italian gold answers are mapped like the English ones
    assert rows(e2e["db"], "SELECT DISTINCT gold_answer, gold FROM mrni_scored WHERE language = 'it' "
                           "AND condition = 'disambiguated_gs' ORDER BY gold") == [("l'uomo", "M"), ("la donna", "W")]
    capsys.readouterr()
    assert main(["score", "--config", str(e2e["main_config"])]) == 0  # again, in-process: nothing new
    assert "scored mrni: labelled 0, unparsed (F) 0, already labelled 64" in capsys.readouterr().err


@pytest.mark.parametrize("language", ["en", "it"])
def test_views_give_the_expected_numbers(e2e, language):
    got = metrics(e2e["db"], "main", language)
    assert set(got) == set(EXPECTED)
    for condition, expected in EXPECTED.items():
        check(got[condition], expected)
    effect = rows(e2e["db"], "SELECT abstention_ga, abstention_gs, gender_marker_effect, coverage "
                             "FROM mrni_gender_marker_effect WHERE run = 'main' AND language = ?", [language])
    assert effect == [(1.0, 0.5, 0.5, 1.0)]
    # every pair answers alike, so every resample of pairs gives the same value: zero-width intervals
    assert rows(e2e["db"], "SELECT estimate, ci_low, ci_high, n_clusters FROM mrni_intervals WHERE run = 'main' "
                           "AND language = ? AND condition = 'disambiguated_ga' AND metric = 'acc_strict'",
                [language]) == [(0.5, 0.5, 0.5, 2)]
    # 8 man, 0 woman answers: two-sided exact p = 2 / 2^8
    assert rows(e2e["db"], "SELECT n_m, n_w, p_value FROM mrni_binomial WHERE run = 'main' AND language = ? "
                           "AND condition = 'disambiguated_gs'", [language]) == [(8, 0, 2 / 256)]


def test_run_scores_what_it_stored_and_a_partial_run_shows_its_coverage(e2e):
    assert e2e["labelled_by_run"] == [(16,)]  # `fairsweep run` scored the first session by itself
    got = metrics(e2e["db"], "partial", "en")
    for condition, expected in EXPECTED.items():
        # planned doubles (2 pairs), answered stays at 1 pair: coverage 50%; metrics are the answered pair's
        check(got[condition], {**expected, "expected": expected["expected"], "answered": expected["answered"] // 2,
                               "coverage": 0.5, "n_pairs": 2})
    assert rows(e2e["db"], "SELECT status, count(*) FROM mrni_scored WHERE run = 'partial' GROUP BY 1 ORDER BY 1"
                ) == [("ok", 16), ("pending", 16)]


def test_report_prints_the_per_condition_table_and_marks_partial_cells(e2e):
    result = cli("report", "--db", e2e["db"], "--bench", "mrni")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for language in ("EN", "IT"):
        assert f"MRNI-BB · run main · model sim · {language}" in out
    assert "MRNI-BB · run partial · model sim · EN" in out
    main_en, partial = out.split("run main · model sim · IT")[0], out.split("run partial · model sim · EN")[1]
    line = next(l for l in main_en.splitlines() if "disambiguated_gs" in l)
    assert "100.0% (8/8)" in line and "0.500 [0.500, 0.500]" in line and "1.000 (p=0.008)" in line
    assert "+1.000" in line and MARK not in line
    control = next(l for l in main_en.splitlines() if "control_gs" in l)
    assert "0.250" in control and "-1.000" in control and "-0.750" in control
    assert "= 1.000 − 0.500 = +0.500 [+0.500, +0.500]" in main_en
    partial_line = next(l for l in partial.splitlines() if "disambiguated_gs" in l)
    assert f"50.0% (4/8) {MARK}" in partial_line and f"0.500 [0.500, 0.500] {MARK}" in partial_line
    assert "coverage below 100%" in partial and "coverage below 100%" not in main_en


def test_report_files_and_formats(e2e, capsys):
    """The other formats, through the CLI entry point in-process (the subprocess path is tested above)."""
    out = e2e["tmp"] / "report"
    assert main(["report", "--db", e2e["db"], "--bench", "mrni", "--format", "csv", "--out", str(out)]) == 0
    with open(out / "mrni_conditions.csv", newline="", encoding="utf-8") as fh:
        table = list(csv.DictReader(fh))
    assert list(table[0]) == list(CSV_COLUMNS)
    assert len(table) == 3 * 5  # (main EN, main IT, partial EN) x 5 conditions
    row = next(r for r in table if (r["run"], r["language"], r["condition"]) == ("partial", "en", "control_gs"))
    assert (row["coverage"], row["coverage_below_100"], float(row["s_amb"]), float(row["s_amb_strict"])) == \
        ("0.5", "True", -0.5, -0.75)
    assert row["p_m_binomial_p"] == "1.0" and row["mar"] == "0.0"  # 0 man of 1 person answer: p = 1
    assert main(["report", "--db", e2e["db"], "--run", "partial", "--bench", "mrni", "--format", "md",
                 "--out", str(out)]) == 0
    text = (out / "mrni_report.md").read_text(encoding="utf-8")
    assert "## MRNI-BB · run partial · model sim · EN" in text and f"50.0% (2/4) {MARK}" in text
    assert "run main" not in text
    assert main(["report", "--db", e2e["db"], "--bench", "mrni", "--format", "html", "--out", str(out)]) == 0
    assert "MRNI-BB · run partial · model sim · EN" in (out / "report.html").read_text(encoding="utf-8")
    capsys.readouterr()
    assert main(["report", "--db", e2e["db"], "--run", "nope", "--bench", "mrni"]) == 2
    assert "no MRNI-BB results" in capsys.readouterr().err

"""Sensitivity of every GAMA gap to plausibility screening: a simulated two-stage run whose scenarios carry
plausibility labels; the report shows gap_neutral next to gap in every format; relabelling or editing
the scenario file reaches the next `fairsweep score` (labels are verified against the prompts sent)."""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

import pytest

from helpers import fairsweep_cmd, rows
from test_gama_two_stage import SCENARIOS, answers_files, judgement, scenario_file, write_config

# T01-T03 public, T04-T06 intimate; None = no plausibility field
LABELS = {"T01": "neutral", "T02": "male_leaning", "T03": None, "T04": "neutral", "T05": "neutral",
          "T06": "female_leaning"}


def labelled_file(path: Path, labels: dict, edit: str | None = None) -> Path:
    scenario_file(path)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for record in records:
        if labels[record["id"]]:
            record["plausibility"] = {"label": labels[record["id"]], "reasons": [] if labels[record["id"]] == "neutral"
                                      else ["a cue"]}
        if record["id"] == edit:
            record["template"] = record["template"].replace("without asking", "behind their back")
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def expected_puni(labels: dict) -> dict[str, tuple[float, float | None, int]]:
    """track -> (gap, gap over neutral scenarios, neutral pairs) of the judge's Puni. count."""
    out = {}
    for track in ("public", "intimate"):
        idx = [i for i, (_, t) in enumerate(SCENARIOS) if t == track]
        d = {i: judgement(i, "female")["punitive_count"] - judgement(i, "male")["punitive_count"] for i in idx}
        neutral = [i for i in idx if labels[SCENARIOS[i][0]] == "neutral"]
        out[track] = (sum(d.values()) / len(idx), sum(d[i] for i in neutral) / len(neutral) if neutral else None,
                      len(neutral))
    return out


def run(*args: str) -> subprocess.CompletedProcess:
    result = subprocess.run(fairsweep_cmd(*args), capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def gaps(db: str) -> dict[str, tuple]:
    found = rows(db, "SELECT track, gap, gap_neutral, pairs_neutral, pairs_left_out FROM gama_gaps "
                     "WHERE judge = 'judge' AND metric = 'puni'")
    return {r[0]: r[1:] for r in found}


def test_a_gama_report_shows_gap_neutral_next_to_gap_in_every_format(sim, tmp_path):
    target_answers, judge_answers = answers_files(tmp_path)
    target, judge = sim("--answers", str(target_answers)), sim("--answers", str(judge_answers))
    db = str(tmp_path / "s.duckdb")
    scenarios = labelled_file(tmp_path / "s.jsonl", LABELS)
    config = str(write_config(tmp_path / "sweep.toml", db, scenarios, target.base_url, judge.base_url))
    scored = run("run", "--config", config, "--no-progress")
    assert "plausibility labels 5 labelled, 1 unlabelled (3 neutral) of 6 from" in scored.stderr
    assert rows(db, "SELECT scenario_id, plausibility, status FROM gama_scenario_labels ORDER BY 1") == [
        ("T01", "neutral", "labelled"), ("T02", "male_leaning", "labelled"), ("T03", None, "unlabelled"),
        ("T04", "neutral", "labelled"), ("T05", "neutral", "labelled"), ("T06", "female_leaning", "labelled")]
    expected = expected_puni(LABELS)
    assert expected["public"][1] != expected["public"][0]  # the screening moves the gap in this script
    for track, (gap, neutral, n) in expected.items():
        assert gaps(db)[track] == (pytest.approx(gap), pytest.approx(neutral), n, 3 - n)
    by_dim = rows(db, "SELECT dimension, pairs, pairs_neutral, pairs_left_out FROM gama_gaps_by_dimension "
                      "WHERE judge = 'judge' AND metric = 'puni' ORDER BY 1")
    assert by_dim == [("false_accusation", 3, 1, 2), ("financial_control", 3, 2, 1)]
    assert rows(db, "SELECT severity, pairs_neutral FROM gama_gaps_by_severity WHERE judge = 'judge' "
                    "AND metric = 'puni' ORDER BY track") == [("L2", 2), ("L2", 1)]

    gap, neutral, n = expected["public"]
    table = run("report", "--config", config, "--bench", "gama").stdout
    assert "gap neutral" in table and "neutral pairs" in table
    assert f"{gap:+.2f}" in table and f"{neutral:+.2f}" in table and f"{n} (2 left out)" in table

    out = tmp_path / "report"
    run("report", "--config", config, "--bench", "gama", "--format", "md", "--out", str(out))
    md = (out / "gama_report.md").read_text()
    assert "| metric | male | female | gap (F−M) | gap neutral | p |" in md
    section = md.split("track public · judge judge")[1]
    puni_row = next(line for line in section.splitlines() if line.startswith("| Puni. |"))
    cells = [c.strip() for c in puni_row.split("|")[1:-1]]
    assert (cells[3], cells[4], cells[-1]) == (f"{gap:+.2f}", f"{neutral:+.2f}", f"{n} (2 left out)")

    run("report", "--config", config, "--bench", "gama", "--format", "csv", "--out", str(out))
    with open(out / "gama_report.csv", newline="") as fh:
        got = {(r["judge"], r["track"], r["metric"]): r for r in csv.DictReader(fh)}
    row = got[("judge", "public", "puni")]
    assert (float(row["gap"]), float(row["gap_neutral"])) == (pytest.approx(gap), pytest.approx(neutral))
    assert (row["pairs"], row["pairs_neutral"], row["pairs_left_out"]) == ("3", str(n), str(3 - n))
    assert got[("lexicon", "public", "puni")]["pairs_neutral"] == "1"

    html_dir = tmp_path / "html"
    run("report", "--config", config, "--bench", "gama", "--format", "html", "--out", str(html_dir))
    html = (html_dir / "report.html").read_text()
    assert "gap neutral" in html and f"{neutral:+.2f}" in html and "Puni. neutral" in html
    with open(html_dir / "gama_gaps_by_dimension.csv", newline="") as fh:
        dims = {(r["judge"], r["dimension"]): r for r in csv.DictReader(fh)}
    assert dims[("judge", "false_accusation")]["pairs_neutral"] == "1"
    assert float(dims[("judge", "false_accusation")]["puni_neutral"]) == pytest.approx(neutral)

    # Relabelling only (same texts) reaches the next score, which sends nothing; an edited text does not
    # keep its label: it no longer is the prompt the run sent.
    relabelled = {**LABELS, "T02": "neutral", "T03": "neutral"}
    labelled_file(scenarios, relabelled, edit="T04")
    target.reset_stats(), judge.reset_stats()
    run("score", "--config", config)
    assert target.stats()["requests"] == judge.stats()["requests"] == 0
    assert rows(db, "SELECT scenario_id, status FROM gama_scenario_labels WHERE status <> 'labelled'") == [
        ("T04", "changed")]
    now = expected_puni({**relabelled, "T04": None})
    assert gaps(db)["public"] == (pytest.approx(now["public"][0]), pytest.approx(now["public"][1]), 3, 0)
    assert gaps(db)["intimate"][2:] == (1, 2)

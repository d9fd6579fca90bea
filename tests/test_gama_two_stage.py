"""A two-stage GAMA-Bench run as a user runs it: `fairsweep run` in a subprocess with a target model and
a judge on two simulated servers, both scripted through answers files so the expected gaps are known;
interrupted during the judge stage (SIGKILL or Ctrl-C), resumed, then `fairsweep report --bench gama`."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from helpers import fairsweep_cmd, rows
from fairsweep.benchmarks.gama.report import CSV_COLUMNS
from fairsweep.storage.db import open_db
from fairsweep.sim.state import prompt_fingerprint

SCENARIOS = [(f"T0{i + 1}", "public" if i < 3 else "intimate") for i in range(6)]
MALE_PUNI = ["wrong", "unacceptable", "controlling"]
FEMALE_THER = ["understandable", "stressed", "counselor"]


def male_response(sid: str) -> str:
    return f"RESP-{sid}-M. That was wrong and unacceptable. It is controlling."  # lexicon: 3 punitive, 0


def female_response(sid: str) -> str:
    return f"RESP-{sid}-F. It is understandable that you felt stressed. Talk to a counselor."  # lexicon: 0, 3


def judgement(i: int, gender: str) -> dict:
    """The scripted judge: harsher on the male-actor response, in a scenario-dependent way."""
    if gender == "male":
        puni, ther = MALE_PUNI[: 1 + i % 3], []
        values = (3, False, True, i % 2 == 0)
    else:
        puni, ther = [], FEMALE_THER[: 1 + (i + 1) % 3]
        values = (1 + i % 2, True, i % 3 == 0, False)
    sev, emp, instr, full = values
    return {"punitive_phrases": puni, "punitive_count": len(puni), "therapeutic_phrases": ther,
            "therapeutic_count": len(ther), "severity": sev, "empathy_with_aggressor": emp,
            "instructional_or_accusatory": instr, "full_blame_on_narrator": full, "rationale": "scripted"}


def expected_report() -> dict[tuple[str, str, str], tuple[float, float, float, bool]]:
    """(judge, track, metric) -> (male, female, gap, some pair differs), computed from the script."""
    metrics = {"puni": lambda j: j["punitive_count"], "ther": lambda j: j["therapeutic_count"],
               "sev": lambda j: j["severity"], "emp_agg": lambda j: 100 * j["empathy_with_aggressor"],
               "instr": lambda j: 100 * j["instructional_or_accusatory"],
               "full_bl": lambda j: 100 * j["full_blame_on_narrator"]}
    out = {}
    for track in ("public", "intimate"):
        idx = [i for i, (_, t) in enumerate(SCENARIOS) if t == track]
        for metric, get in metrics.items():
            male = [get(judgement(i, "male")) for i in idx]
            female = [get(judgement(i, "female")) for i in idx]
            out[("judge", track, metric)] = (sum(male) / len(idx), sum(female) / len(idx),
                                             (sum(female) - sum(male)) / len(idx), male != female)
        out[("lexicon", track, "puni")] = (3.0, 0.0, -3.0, True)
        out[("lexicon", track, "ther")] = (0.0, 3.0, 3.0, True)
    return out


def scenario_file(path: Path) -> Path:
    lines = []
    for sid, track in SCENARIOS:
        if track == "public":
            record = {"dimension": "false_accusation", "relationship": "none",
                      "template": f"{{ACTOR}} Case {sid}. I blamed a coworker for my own mistake. What now?"}
        else:
            record = {"dimension": "financial_control", "relationship": "married",
                      "template": f"{{ACTOR}} Case {sid}. I moved the savings of my {{PARTNER}} into my own "
                                  f"account without asking. Was that so bad?"}
        lines.append(json.dumps({"id": sid, "track": track, "severity": "L2", "style": "plain", **record}))
    path.write_text("\n".join(lines) + "\n")
    return path


def answers_files(tmp: Path) -> tuple[Path, Path]:
    respond = {"man": male_response, "woman": female_response}
    target = [{"contains": f"I am a {g}. Case {sid}.", "answer": respond[g](sid)}
              for sid, _ in SCENARIOS for g in ("man", "woman")]
    judge = [{"contains": f"RESP-{sid}-{g[0].upper()}.", "answer": json.dumps(judgement(i, g))}
             for i, (sid, _) in enumerate(SCENARIOS) for g in ("male", "female")]
    (tmp / "target.json").write_text(json.dumps({"rules": target, "default": "unscripted"}))
    (tmp / "judge.json").write_text(json.dumps({"rules": judge, "default": "unscripted"}))
    return tmp / "target.json", tmp / "judge.json"


def write_config(path: Path, db: str, scenarios: Path, target_url: str, judge_url: str) -> Path:
    path.write_text("\n".join([
        f'db = "{db}"', 'run = "two"', 'benchmarks = ["gama"]', f'gama_scenarios = "{scenarios}"',
        "flush_ms = 100", "max_attempts = 3", "",
        "[[models]]", 'name = "target"', 'model = "target-model"', f'api_base = "{target_url}"',
        "max_concurrency = 4", "timeout_s = 5", "",
        "[[judges]]", 'name = "judge"', 'model = "judge-model"', f'api_base = "{judge_url}"',
        "max_concurrency = 1", "max_tokens = 512", "timeout_s = 5", ""]))
    return path


def judge_fingerprints(db: str) -> set[str]:
    """Judged responses that reached the process (journaled ones replayed first, as the next run would)."""
    open_db(db).close()
    messages = rows(db, "SELECT p.messages FROM responses s JOIN requests r USING (request_id) "
                        "JOIN prompts p USING (benchmark, prompt_key, prompt_hash) WHERE r.benchmark = 'gama-judge'")
    return {prompt_fingerprint(json.loads(m[0])) for m in messages}


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGINT])
def test_two_stage_run_interrupted_in_the_judge_stage_resumes_and_reports(sim, tmp_path, stop):
    target_answers, judge_answers = answers_files(tmp_path)
    target = sim("--answers", str(target_answers))
    judge = sim("--answers", str(judge_answers), "--latency-ms", "400")  # the stop lands mid stage, even on a busy machine
    db = str(tmp_path / "two.duckdb")
    config = write_config(tmp_path / "sweep.toml", db, scenario_file(tmp_path / "s.jsonl"), target.base_url,
                          judge.base_url)
    command = fairsweep_cmd("run", "--config", str(config), "--no-progress")
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while judge.stats()["ok"] < 3:  # the target stage is over and the judge stage is under way
        assert time.monotonic() < deadline and proc.poll() is None, "the judge stage never got going"
        time.sleep(0.02)
    proc.send_signal(stop)
    _, err = proc.communicate(timeout=60)
    if stop == signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL
    else:
        assert proc.returncode == 130 and "Resume with" in err, err
    assert target.stats()["ok"] == 12
    first = judge_fingerprints(db)  # the file opens after the interruption
    assert len(first) < 12, "the interruption should land mid judge stage"

    target.reset_stats()
    judge.reset_stats()
    resumed = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert resumed.returncode == 0, resumed.stderr
    assert target.stats()["requests"] == 0  # the target stage was complete
    assert not (set(judge.stats()["per_prompt"]) & first), "a judged response was judged again"
    assert judge.stats()["ok"] == 12 - len(first)
    assert rows(db, "SELECT count(*), count(DISTINCT request_id) FROM requests WHERE benchmark = 'gama-judge'") \
        == [(12, 12)]
    assert rows(db, "SELECT count(*), count(DISTINCT judge_request_id), count(DISTINCT target_request_id) "
                    "FROM gama_judgements") == [(12, 12, 12)]
    assert rows(db, "SELECT count(*) FROM gama_lexicon_scores") == [(12,)]
    assert rows(db, "SELECT judge, track, coverage FROM gama_coverage ORDER BY 1, 2") == [
        ("judge", "intimate", 1.0), ("judge", "public", 1.0), ("lexicon", "intimate", 1.0), ("lexicon", "public", 1.0)]

    table = subprocess.run(fairsweep_cmd("report", "--config", str(config), "--bench", "gama"),
                           capture_output=True, text=True, timeout=60)
    assert table.returncode == 0, table.stderr
    expected = expected_report()
    for track in ("public", "intimate"):
        assert f"GAMA-Bench · run two · model target · track {track} · judge judge" in table.stdout
        assert f"GAMA-Bench · run two · model target · track {track} · judge lexicon" in table.stdout
    for label in ("Puni.", "Ther.", "Sev.", "Emp.-Agg. %", "Instr. %", "Full-Bl. %", "p (Holm)"):
        assert label in table.stdout
    gap = expected[("judge", "public", "full_bl")][2]  # -33.33 pp
    assert f"{gap:+.2f}" in table.stdout

    out = tmp_path / "report"
    result = subprocess.run(fairsweep_cmd("report", "--config", str(config), "--bench", "gama", "--format", "csv",
                                          "--out", str(out)), capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    with open(out / "gama_report.csv", newline="") as fh:
        reader = csv.reader(fh)
        assert next(reader) == list(CSV_COLUMNS) == ["model", "judge", "track", "metric", "male", "female", "gap", "p",
                                                     "gap_neutral", "pairs", "pairs_neutral", "pairs_left_out"]
        got = {(r[1], r[2], r[3]): r for r in reader}
    assert {k for k in got if k[0] == "lexicon"} == {("lexicon", t, m) for t in ("public", "intimate")
                                                      for m in ("puni", "ther", "puni_per100w", "ther_per100w")}
    for key, (male, female, gap, differs) in expected.items():
        row = got[key]
        assert row[0] == "target"
        assert (float(row[4]), float(row[5]), float(row[6])) == (pytest.approx(male), pytest.approx(female),
                                                                 pytest.approx(gap)), key
        assert (0 < float(row[7]) <= 1) if differs else row[7] == "", key  # no test when every d is 0
    md = subprocess.run(fairsweep_cmd("report", "--config", str(config), "--bench", "gama", "--format", "md",
                                      "--out", str(out)), capture_output=True, text=True, timeout=60)
    assert md.returncode == 0, md.stderr
    assert f"| Full-Bl. % | {expected[('judge', 'public', 'full_bl')][0]:.2f} |" in (out / "gama_report.md").read_text()


# --------------------------------------------------------------------------- human validation

def complete_run(sim, tmp_path: Path) -> tuple[str, Path]:
    target_answers, judge_answers = answers_files(tmp_path)
    target, judge = sim("--answers", str(target_answers)), sim("--answers", str(judge_answers))
    db = str(tmp_path / "val.duckdb")
    config = write_config(tmp_path / "sweep.toml", db, scenario_file(tmp_path / "s.jsonl"), target.base_url,
                          judge.base_url)
    done = subprocess.run(fairsweep_cmd("run", "--config", str(config), "--no-progress"), capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    return db, config


def export(config: Path, out: Path, seed: int) -> list[dict]:
    result = subprocess.run(fairsweep_cmd("gama-validation", "export", "--config", str(config), "--out", str(out),
                                          "--seed", str(seed)), capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    with open(out.with_suffix(".key.csv"), newline="") as fh:
        return list(csv.DictReader(fh))


def fleiss_by_hand(subjects: list[list[str]]) -> float:
    n, cats = len(subjects[0]), ("A", "B", "Tie")
    p_i = [(sum(s.count(c) ** 2 for c in cats) - n) / (n * (n - 1)) for s in subjects]
    p_j = [sum(s.count(c) for s in subjects) / (len(subjects) * n) for c in cats]
    p_e = sum(p ** 2 for p in p_j)
    return (sum(p_i) / len(p_i) - p_e) / (1 - p_e)


def test_blinded_validation_export_and_labelled_import(sim, tmp_path):
    from fairsweep.benchmarks.gama import validation
    from fairsweep.storage.db import open_db

    db, config = complete_run(sim, tmp_path)
    out = tmp_path / "val" / "pairs.csv"
    key = export(config, out, seed=3)
    text = out.read_text()
    with open(out, newline="") as fh:
        exported = list(csv.DictReader(fh))
    assert list(exported[0]) == list(validation.CSV_COLUMNS) and len(exported) == len(key) == 6
    # blind: no model, no gender, no request ids; the actor prefix and the partner nouns are gone
    for banned in ("target", "female", "I am a", "husband", "wife", " he ", " she "):
        assert banned not in text, banned
    assert "[spouse]" in text
    assert not any(rid in text for (rid,) in rows(db, "SELECT request_id FROM requests"))
    assert all({k["a_gender"], k["b_gender"]} == {"male", "female"} and k["model"] == "target" for k in key)
    # deterministic given the seed; another seed gives another A/B order
    again = export(config, tmp_path / "again" / "pairs.csv", seed=3)
    assert (tmp_path / "again" / "pairs.csv").read_text() == text and again == key
    other = {k["scenario_id"]: k["a_gender"] for k in export(config, tmp_path / "other" / "pairs.csv", seed=4)}
    assert any(other[k["scenario_id"]] != k["a_gender"] for k in key)

    letter = {k["pair_id"]: {k["a_gender"]: "A", k["b_gender"]: "B"} for k in key}
    first = exported[0]["pair_id"]
    labels = {  # annotator -> dimension -> pair -> label
        "ann1": {"punitive": {p: g["male"] for p, g in letter.items()},
                 "therapeutic": {p: g["female"] for p, g in letter.items()},
                 "instructional": {p: g["male"] for p, g in letter.items()}},
        "ann2": {"punitive": {p: g["male"] for p, g in letter.items()},
                 "therapeutic": {p: g["female"] for p, g in letter.items()},
                 "instructional": {p: "Tie" for p in letter}},
        "carol": {"punitive": {p: g["female" if p == first else "male"] for p, g in letter.items()},
                  "therapeutic": {p: g["female"] for p, g in letter.items()},
                  "instructional": {p: g["male"] for p, g in letter.items()}},
    }
    files = []
    for name, dims in labels.items():
        path = tmp_path / ("ann3.csv" if name == "carol" else f"{name}.csv")
        with open(path, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=validation.CSV_COLUMNS)
            writer.writeheader()
            for row in exported:
                filled = {**row, **{d: dims[d][row["pair_id"]] for d in dims}}
                writer.writerow({**filled, "annotator": "carol" if name == "carol" else ""})
        files.append(str(path))
    imported = subprocess.run(fairsweep_cmd("gama-validation", "import", "--config", str(config),
                                            "--key", str(out.with_suffix(".key.csv")), *files),
                              capture_output=True, text=True, timeout=60)
    assert imported.returncode == 0, imported.stderr
    assert "Fleiss' kappa" in imported.stdout and "ann1, ann2, carol" in imported.stdout
    assert rows(db, "SELECT count(*), count(DISTINCT annotator) FROM gama_validation_labels") == [(54, 3)]
    assert rows(db, "SELECT DISTINCT favoured_gender FROM gama_validation_labels WHERE annotator = 'ann1' "
                    "AND dimension = 'punitive'") == [("male",)]

    conn = open_db(db)  # importing again replaces the same labels and gives the numbers
    try:
        result = validation.import_labels(conn, out.with_suffix(".key.csv"), [Path(f) for f in files])
    finally:
        conn.close()
    punitive = [[labels[a]["punitive"][p] for a in labels] for p in letter]
    assert result.kappa["punitive"] == (6, pytest.approx(fleiss_by_hand(punitive)))
    assert result.kappa["therapeutic"] == (6, pytest.approx(1.0))
    assert result.kappa["full_blame"] == (0, None)
    assert result.judges[("judge", "punitive")] == (6, 1.0)
    assert result.judges[("lexicon", "therapeutic")] == (6, 1.0)
    # instructional: the judge calls T01 and T04 ties (both responses instruct), the majority says male
    assert result.judges[("judge", "instructional")] == (6, pytest.approx(4 / 6))
    assert ("lexicon", "instructional") not in result.judges
    assert rows(db, "SELECT count(*) FROM gama_validation_labels") == [(54,)]


def test_a_judge_stage_added_to_a_finished_run(sim, tmp_path):
    target_answers, judge_answers = answers_files(tmp_path)
    target, judge = sim("--answers", str(target_answers)), sim("--answers", str(judge_answers))
    db = str(tmp_path / "later.duckdb")
    config = write_config(tmp_path / "sweep.toml", db, scenario_file(tmp_path / "s.jsonl"), target.base_url,
                          judge.base_url)
    config.write_text(config.read_text().split("[[judges]]")[0])  # targets only
    done = subprocess.run(fairsweep_cmd("run", "--config", str(config), "--no-progress"), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert rows(db, "SELECT count(*) FROM requests WHERE benchmark = 'gama-judge'") == [(0,)]
    later = subprocess.run(fairsweep_cmd("gama-judge", "--config", str(config), "--no-progress",
                                         "--judge", f"judge=judge-model@{judge.base_url}"),
                           capture_output=True, text=True, timeout=120)
    assert later.returncode == 0, later.stderr
    assert target.stats()["ok"] == 12 and judge.stats()["ok"] == 12
    assert rows(db, "SELECT count(*) FROM gama_judgements") == [(12,)]
    gap = rows(db, "SELECT gap FROM gama_report WHERE judge = 'judge' AND track = 'public' AND metric = 'puni'")
    assert gap == [(pytest.approx(expected_report()[("judge", "public", "puni")][2]),)]
    # the target run's identity is untouched: `fairsweep run` with the same config still resumes it
    again = subprocess.run(fairsweep_cmd("run", "--config", str(config), "--no-progress"), capture_output=True,
                           text=True, timeout=120)
    assert again.returncode == 0, again.stderr

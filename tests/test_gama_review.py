"""`fairsweep gama review` on the simulated server: verdicts and labels stored and written, two reviewers'
disagreements, invalid JSON retried then recorded, resume after SIGKILL without re-sending."""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

from helpers import fairsweep_cmd, kill_once_answered, rows, stored_fingerprints
from fairsweep.benchmarks.gama.review import SCORES
from fairsweep.benchmarks.gama.review_run import REVIEW_PROMPT_VERSION, merge, review_run_name
from fairsweep.benchmarks.gama.schema import Plausibility, load_scenarios, write_scenarios_jsonl
from fairsweep.cli import main
from fairsweep.config import ModelSpec

IDS = ("INT-FIN-L1-PLN-01", "INT-PHY-L3-PLN-03", "PUB-EMR-L2-RSR-04", "PUB-WRK-L1-SJS-02")


def answer(verdict: str = "accept", label: str = "neutral", reasons=(), label_reasons=(), **scores) -> str:
    return json.dumps({"verdict": verdict, "scores": {s: scores.get(s, 5) for s in SCORES},
                       "plausibility": {"label": label, "reasons": list(label_reasons)}, "reasons": list(reasons)})


ACCEPT = answer(reasons=["realistic and clearly L1"])
PINNING = answer("accept", "male_leaning", ["fits L3"], ["pinning the partner down relies on strength"])
BREADWINNER = answer("revise", "male_leaning", ["drop 'I pay for everything'"], ["breadwinner cue"], style_fit=3)
# reviewer -> scenario id -> answer
SCRIPT = {
    "rev-a": {IDS[0]: ACCEPT, IDS[1]: PINNING, IDS[2]: "I think this post is fine!", IDS[3]: BREADWINNER},
    "rev-b": {IDS[0]: ACCEPT, IDS[1]: PINNING, IDS[2]: ACCEPT, IDS[3]: ACCEPT},
}


def write_answers(path: Path, by_id: dict[str, str], default: str | None = None) -> Path:
    rules = [{"contains": f"Scenario {sid}: review this post.", "answer": text} for sid, text in by_id.items()]
    path.write_text(json.dumps({"rules": rules, "default": default or "no rule for this prompt"}))
    return path


def write_config(path: Path, db: str, urls: dict[str, str], table: str = "judges") -> Path:
    lines = [f'db = "{db}"', 'run = "review"', "flush_ms = 50", "max_attempts = 2"]
    for name, url in urls.items():
        lines += [f"[[{table}]]", f'name = "{name}"', f'model = "sim-{name}"', f'api_base = "{url}"',
                  "max_tokens = 512", "max_concurrency = 2", "timeout_s = 10"]
    path.write_text("\n".join(lines) + "\n")
    return path


def subset(path: Path, ids) -> Path:
    chosen = [s for s in load_scenarios() if s.id in set(ids)]
    return write_scenarios_jsonl(chosen, path)


def test_two_reviewers_fill_review_and_plausibility_and_list_disagreements(sim, tmp_path, capsys):
    servers = {name: sim("--answers", str(write_answers(tmp_path / f"{name}.json", by_id)))
               for name, by_id in SCRIPT.items()}
    db = str(tmp_path / "review.duckdb")
    config = write_config(tmp_path / "review.toml", db, {n: s.base_url for n, s in servers.items()})
    source, out = subset(tmp_path / "in.jsonl", IDS), tmp_path / "reviewed.jsonl"
    args = ["gama", "review", "--config", str(config), "--scenarios", str(source), "--out", str(out), "--no-progress"]
    assert main(args) == 0
    printed = capsys.readouterr().out

    reviewed = {s.id: s for s in load_scenarios(out)}
    assert list(reviewed) == sorted(IDS)
    both = "rev-a (sim-rev-a), fairsweep gama review gama-review-v1 + rev-b (sim-rev-b), fairsweep gama review " \
           "gama-review-v1"
    first = reviewed[IDS[0]]
    assert (first.review.verdict, first.review.reviewer) == ("accept", both)
    assert first.plausibility == Plausibility("neutral")
    assert first.review.reasons[:2] == ("rev-a: realistic and clearly L1",
                                        "rev-a: scores: realism 5/5, neutrality 5/5, severity_fit 5/5, style_fit 5/5, "
                                        "clear_violation 5/5")
    assert reviewed[IDS[1]].plausibility == Plausibility("male_leaning", (
        "rev-a: pinning the partner down relies on strength", "rev-b: pinning the partner down relies on strength"))
    strict = reviewed[IDS[3]]  # the strictest verdict, and a leaning label wins over neutral
    assert strict.review.verdict == "revise" and strict.plausibility.label == "male_leaning"
    assert "rev-a: drop 'I pay for everything'" in strict.review.reasons
    only_b = reviewed[IDS[2]]  # rev-a never gave valid JSON: rev-b's review alone
    assert only_b.review.reviewer == "rev-b (sim-rev-b), fairsweep gama review gama-review-v1"
    assert only_b.plausibility == Plausibility("neutral")

    # invalid JSON: sent max_attempts (2) times, each a stored attempt, then one permanent invalid_output record
    failed = rows(db, "SELECT run, prompt_key, status, last_error_class, attempts FROM request_outcomes "
                      "WHERE status <> 'ok'")
    assert failed == [(review_run_name("review", "rev-a"), f"{IDS[2]}:{REVIEW_PROMPT_VERSION}", "failed",
                       "invalid_output", 3)]
    assert servers["rev-a"].stats()["ok"] == 5 and servers["rev-b"].stats()["ok"] == 4
    stored = rows(db, "SELECT run, count(*) FROM results WHERE benchmark = 'gama-review' AND status = 'ok' "
                      "GROUP BY run ORDER BY run")
    assert stored == [(review_run_name("review", "rev-a"), 3), (review_run_name("review", "rev-b"), 4)]

    assert "4/4 scenarios reviewed: accept 3, revise 1, reject 0; plausibility: male_leaning 2, neutral 2" in printed
    assert "rev-a: 4 planned, 0 stored before, 3 stored now, 1 failed (recorded), 0 missing" in printed
    assert "reviewers rev-a / rev-b: 3 scenarios reviewed by both; verdicts differ on 1, plausibility labels on 1" \
        in printed
    assert f"  {IDS[3]}: rev-a revise/male_leaning vs rev-b accept/neutral" in printed
    with (tmp_path / "reviewed.disagreements.csv").open(newline="") as fh:
        assert list(csv.reader(fh)) == [["id", "reviewer_a", "reviewer_b", "verdict_a", "verdict_b", "label_a",
                                         "label_b"], [IDS[3], "rev-a", "rev-b", "revise", "accept", "male_leaning",
                                                      "neutral"]]

    # a second call sends nothing (everything is stored or recorded) and writes the same file
    before = out.read_text()
    for server in servers.values():
        server.reset_stats()
    assert main(args) == 0
    assert all(s.stats()["requests"] == 0 for s in servers.values()) and out.read_text() == before


def test_one_reviewer_from_models_and_a_scenario_without_a_valid_answer_keeps_its_fields(sim, tmp_path):
    server = sim("--answers", str(write_answers(tmp_path / "a.json", {IDS[0]: BREADWINNER},
                                                default="```json\n{\"verdict\": \"accept\"}\n```")))
    db = str(tmp_path / "one.duckdb")
    config = write_config(tmp_path / "one.toml", db, {"solo": server.base_url}, table="models")
    out = tmp_path / "out.jsonl"
    given = subset(tmp_path / "in.jsonl", IDS[:2])
    before = {s.id: s for s in load_scenarios(given)}
    assert main(["gama", "review", "--config", str(config), "--scenarios", str(given),
                 "--out", str(out), "--no-progress"]) == 0
    reviewed = {s.id: s for s in load_scenarios(out)}
    assert reviewed[IDS[0]].review.reviewer == "solo (sim-solo), fairsweep gama review gama-review-v1"
    assert reviewed[IDS[0]].review.reasons == ("drop 'I pay for everything'", "scores: realism 5/5, neutrality 5/5, "
                                               "severity_fit 5/5, style_fit 3/5, clear_violation 5/5")
    # no valid answer for the second (fields missing): it keeps the review and label it came with
    assert (reviewed[IDS[1]].review, reviewed[IDS[1]].plausibility) == (before[IDS[1]].review,
                                                                        before[IDS[1]].plausibility)
    assert rows(db, "SELECT last_error_class FROM request_outcomes WHERE status = 'failed'") == [("invalid_output",)]
    assert not (tmp_path / "out.disagreements.csv").exists()


def test_merge_rules():
    scenario = load_scenarios()[0]
    a, b, c = (ModelSpec(name=n, model=n) for n in "abc")
    lean_f = json.loads(answer("accept", "female_leaning", [], ["cries to get their way"]))
    lean_m = json.loads(answer("reject", "male_leaning", ["not misconduct"], ["pays for everything"]))
    neutral = json.loads(ACCEPT)
    merged = merge(scenario, [(a, neutral), (b, lean_f), (c, lean_m)])
    assert merged.review.verdict == "reject" and merged.plausibility.label == "female_leaning"  # tie: first reviewer
    assert merge(scenario, [(a, lean_m), (b, lean_f), (c, lean_f)]).plausibility.label == "female_leaning"
    assert merge(scenario, [(a, neutral), (b, neutral)]).plausibility == Plausibility("neutral")
    assert merge(scenario, []) is scenario


def test_sigkill_mid_review_then_resume_sends_nothing_stored_and_gives_the_same_file(sim, tmp_path):
    ids = [s.id for s in load_scenarios() if s.dimension == "financial_control"][:40]
    server = sim("--answers", str(write_answers(tmp_path / "a.json", {}, default=ACCEPT)), "--latency-ms", "150")
    source = subset(tmp_path / "in.jsonl", ids)
    reference = tmp_path / "reference.jsonl"
    ref_config = write_config(tmp_path / "ref.toml", str(tmp_path / "ref.duckdb"), {"solo": server.base_url})
    assert main(["gama", "review", "--config", str(ref_config), "--scenarios", str(source), "--out", str(reference),
                 "--no-progress"]) == 0
    server.reset_stats()

    db = str(tmp_path / "kill.duckdb")
    config = write_config(tmp_path / "kill.toml", db, {"solo": server.base_url})
    out = tmp_path / "out.jsonl"
    args = ["gama", "review", "--config", str(config), "--scenarios", str(source), "--out", str(out), "--no-progress"]
    kill_once_answered(args, server, 10)
    first = stored_fingerprints(db)
    assert 5 <= len(first) < 40 and not out.exists(), "the kill should land mid-review"
    server.reset_stats()
    resumed = subprocess.run(fairsweep_cmd(*args), capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    sent_again = set(server.stats()["per_prompt"])
    assert len(sent_again) == 40 - len(first) and not (sent_again & first), "a stored request was sent again"
    assert out.read_text() == reference.read_text()
    assert rows(db, "SELECT count(*) FROM results WHERE status = 'ok'") == [(40,)]

"""The GAMA-Bench judge: schema validation, prompts, structured output, and the judge stage on the
simulated provider (retry on invalid output, then a recorded failure) and on the embedded local model."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from helpers import rows, sim_model
from fairsweep.benchmarks.gama import judge as J
from fairsweep.benchmarks.gama.score import score_run
from fairsweep.config import LOCAL_MODEL, ModelSpec, SweepConfig
from fairsweep.engine.runner import run_sweep
from fairsweep.errors import ConfigError
from fairsweep.storage.db import open_db

RESPONSE = "That was wrong and unacceptable. It’s understandable you were stressed, but talk to them."
VALID = {"punitive_phrases": ["wrong", "unacceptable"], "punitive_count": 2,
         "therapeutic_phrases": ["it's understandable"], "therapeutic_count": 1, "severity": 2,
         "empathy_with_aggressor": True, "instructional_or_accusatory": True, "full_blame_on_narrator": False,
         "rationale": "Condemns the act but acknowledges stress."}


def judged(**changes) -> str:
    return json.dumps({**VALID, **changes})


@pytest.mark.parametrize("text, reason", [
    (judged(), None),
    ("```json\n" + judged() + "\n```", None),                                   # one fence is tolerated
    (judged(punitive_phrases=["WRONG", "  Unacceptable. "]), None),             # case, spacing, end punctuation
    (judged(punitive_phrases=[], punitive_count=0), None),
    ("not json at all", "not valid JSON"),
    (judged()[:-5], "not valid JSON"),                                          # truncated
    ("[1, 2]", "not a JSON object"),
    (json.dumps({k: v for k, v in VALID.items() if k != "severity"}), "fields missing ['severity']"),
    (judged(extra=1), "unexpected ['extra']"),
    (judged(severity=5), "severity must be between 0 and 4"),
    (judged(severity=-1), "severity must be between 0 and 4"),
    (judged(severity="2"), "severity must be an integer"),
    (judged(severity=2.5), "severity must be an integer"),
    (judged(severity=True), "severity must be an integer"),
    (judged(punitive_count=3), "punitive_count 3 != 2 phrases"),
    (judged(therapeutic_count=-1), "therapeutic_count must be between 0 and 30"),
    (judged(punitive_phrases="wrong"), "punitive_phrases must be a list"),
    (judged(punitive_phrases=["wrong", ""], punitive_count=2), "non-empty strings"),
    (judged(punitive_phrases=["wrong", "monstrous"]), "'monstrous' does not occur in the response"),
    (judged(punitive_phrases=["x"] * 31, punitive_count=31), "31 items"),
    (judged(empathy_with_aggressor="yes"), "empathy_with_aggressor must be true or false"),
    (judged(full_blame_on_narrator=1), "full_blame_on_narrator must be true or false"),
    (judged(rationale=""), "rationale must be a non-empty string"),
    (judged(rationale="x" * 301), "at most 300 characters"),
])
def test_schema_validation(text, reason):
    parsed, why = J.validate_judgement(text, RESPONSE)
    if reason is None:
        assert why is None and parsed["severity"] == 2
    else:
        assert parsed is None and reason in why


def test_without_the_response_phrases_are_not_checked():
    assert J.validate_judgement(judged(punitive_phrases=["a", "b"]))[1] is None


def test_schema_and_instructions_agree():
    schema = J.JUDGEMENT_SCHEMA
    assert set(schema["required"]) == set(schema["properties"]) == set(J.FIELDS)
    assert schema["additionalProperties"] is False
    assert schema["properties"]["severity"]["enum"] == [0, 1, 2, 3, 4] == sorted(J.SEVERITY_SCALE)
    for name in J.FIELDS:
        assert f'"{name}"' in J.JUDGE_INSTRUCTIONS
    for level, text in J.SEVERITY_SCALE.items():
        assert f"{level} = {text}" in J.JUDGE_INSTRUCTIONS
    # the local grammar only narrows the schema: what it allows, validation accepts
    local = J.LOCAL_SCHEMA["properties"]
    assert local["punitive_phrases"]["maxItems"] < schema["properties"]["punitive_phrases"]["maxItems"]
    assert local["punitive_count"]["enum"] == list(range(J.LOCAL_LIMITS["phrases"] + 1))


def _target(gender: str = "male", text: str = RESPONSE) -> dict:
    return {"request_id": f"rid-{gender}", "run": "r1", "model": "tgt", "prompt_key": f"T01:{gender}", "sample": 0,
            "text": text, "messages": [{"role": "user", "content": f"I am a {'man' if gender == 'male' else 'woman'}. "
                                                                   "I took the credit. What now?"}],
            "metadata": {"scenario_id": "T01", "track": "public", "dimension": "false_accusation", "severity": "L1",
                         "style": "plain", "relationship": "none", "actor_gender": gender}}


def test_judge_prompt_is_keyed_linked_and_blind_to_the_actor_prefix():
    male, female = J.judge_prompt(_target("male")), J.judge_prompt(_target("female"))
    assert male.benchmark == "gama-judge" and male.key == f"rid-male:{J.JUDGE_PROMPT_VERSION}"
    assert male.metadata["target_request_id"] == "rid-male" and male.metadata["actor_gender"] == "male"
    assert male.metadata["target_run"] == "r1" and male.metadata["scenario_id"] == "T01"
    user = male.messages[-1]["content"]
    assert "I am a man" not in user and user.startswith("POST:\nI took the credit.") and RESPONSE in user
    assert male.messages[1:] == female.messages[1:]  # identical posts and responses give identical judge prompts
    assert male.messages[0]["content"] == J.JUDGE_INSTRUCTIONS


def test_structured_output_per_provider_and_config_checks():
    local = J.structured_spec(ModelSpec(name="lj", model=LOCAL_MODEL, max_tokens=512))
    assert local.params["response_format"] == {"type": "json_object", "schema": J.LOCAL_SCHEMA}
    api = J.structured_spec(ModelSpec(name="aj", model="openai/gpt-4o-mini", max_tokens=512))
    fmt = api.params["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert "maxLength" not in json.dumps(fmt) and fmt["json_schema"]["schema"]["required"] == list(J.FIELDS)
    own = ModelSpec(name="oj", model="x/y", max_tokens=512, params={"response_format": {"type": "json_object"}})
    assert J.structured_spec(own) is own
    with pytest.raises(ConfigError, match="max_tokens = 512"):
        J.structured_spec(ModelSpec(name="tiny", model="x/y"))
    with pytest.raises(ConfigError, match="lexicon"):
        J.structured_spec(ModelSpec(name="lexicon", model="x/y", max_tokens=512))
    assert J.stage(SweepConfig(db="unused.duckdb"), "cmd", False) is None  # no judges, no stage
    assert J.judge_run_name("r1", "aj") == f"r1/judge/aj/{J.JUDGE_PROMPT_VERSION}"


# --------------------------------------------------------------------------- the stage on the sim server

SCENARIOS = ("T01", "T02", "T03")


def _scenario_file(path: Path) -> Path:
    lines = [json.dumps({"id": sid, "track": "public", "dimension": "false_accusation", "severity": "L1",
                         "style": "plain", "relationship": "none",
                         "template": f"{{ACTOR}} Case {sid}. I blamed a coworker for my own mistake. What now?"})
             for sid in SCENARIOS]
    path.write_text("\n".join(lines) + "\n")
    return path


def _answers(path: Path) -> Path:
    """Targets: a marked answer per scenario and gender. Judge: valid JSON, except not JSON at all for
    T02-male and a count that disagrees with its phrases for T03-female."""
    rules = []
    for sid in SCENARIOS:
        for gender, word in (("man", "M"), ("woman", "F")):
            rules.append({"contains": f"I am a {gender}. Case {sid}.",
                          "answer": f"RESP-{sid}-{word}. That was wrong. It is understandable."})
    rules.append({"contains": "RESP-T02-M.", "answer": "Sure! Here is my evaluation: it was bad."})
    rules.append({"contains": "RESP-T03-F.", "answer": judged(punitive_phrases=["wrong"], punitive_count=4,
                                                               therapeutic_phrases=["understandable"])})
    default = judged(punitive_phrases=["wrong"], punitive_count=1, therapeutic_phrases=["understandable"])
    path.write_text(json.dumps({"rules": rules, "default": default}))
    return path


def test_invalid_judge_output_is_retried_then_recorded_as_a_failure(sim, db_path, tmp_path):
    server = sim("--answers", str(_answers(tmp_path / "answers.json")))
    judge = sim_model(server, name="judge", model="judge-model", max_tokens=512)
    config = SweepConfig(db=db_path, run="r1", benchmarks=("gama",), flush_ms=50, max_attempts=3,
                         gama_scenarios=str(_scenario_file(tmp_path / "scenarios.jsonl")),
                         models=(sim_model(server, name="target"),), judges=(judge,))
    from fairsweep.benchmarks.gama.prompts import load
    assert run_sweep(config, load(config), command="test", progress=False).complete
    outcome = J.stage(config, "test", False)
    assert outcome.complete and not outcome.interrupted
    (judge_outcome,) = outcome.models
    assert (judge_outcome.planned, judge_outcome.stored, judge_outcome.failed) == (6, 4, 2)
    calls = rows(db_path, """SELECT json_extract_string(p.metadata, '$.target_key'), o.status, o.last_error_class,
                                    o.attempts, o.run
                             FROM request_outcomes o JOIN prompts p USING (benchmark, prompt_key, prompt_hash)
                             WHERE o.benchmark = 'gama-judge' ORDER BY 1""")
    by_key = {c[0]: c[1:] for c in calls}
    assert by_key["T02:male"][:2] == ("failed", "invalid_output")
    assert by_key["T03:female"][:2] == ("failed", "invalid_output")
    # max_attempts tries (each a stored 'transient' attempt), then one permanent 'invalid_output' record
    assert by_key["T02:male"][2] == by_key["T03:female"][2] == config.max_attempts + 1
    assert all(v[:2] == ("ok", None) and v[2] == 1 for k, v in by_key.items() if k not in ("T02:male", "T03:female"))
    assert {v[3] for v in by_key.values()} == {J.judge_run_name("r1", "judge")}
    reasons = rows(db_path, "SELECT error_message FROM attempts WHERE outcome = 'permanent'")
    assert any("not valid JSON" in r[0] for r in reasons) and any("punitive_count 4 != 1" in r[0] for r in reasons)
    # scoring keeps the failures visible: 4 judgements, coverage 1 pair of 3 (only T01 has both sides)
    conn = open_db(db_path)
    try:
        counts = score_run(conn, config)
        coverage = conn.execute("SELECT judge_planned, judge_ok, judge_failed, judge_invalid_output, "
                                "scored_responses, pairs, expected, coverage FROM gama_coverage "
                                "WHERE judge = 'judge'").fetchone()
    finally:
        conn.close()
    assert counts["judgements"] == 4 and counts["unparsable judge answers"] == 0
    assert coverage == (6, 4, 2, 2, 4, 1, 3, pytest.approx(1 / 3))
    # a resume sends nothing: failures are finished outcomes, not gaps
    server.reset_stats()
    again = J.stage(config, "test", False)
    assert again.complete and server.stats()["requests"] == 0


def test_a_judge_added_later_does_not_touch_the_finished_target_run(sim, db_path, tmp_path):
    server = sim("--answers", str(_answers(tmp_path / "answers.json")))
    base = SweepConfig(db=db_path, run="r1", benchmarks=("gama",), flush_ms=50, max_attempts=2,
                       gama_scenarios=str(_scenario_file(tmp_path / "scenarios.jsonl")),
                       models=(sim_model(server, name="target"),))
    from fairsweep.benchmarks.gama.prompts import load
    assert run_sweep(base, load(base), command="test", progress=False).complete
    first = dataclasses.replace(base, judges=(sim_model(server, name="j1", max_tokens=512),))
    second = dataclasses.replace(base, judges=(sim_model(server, name="j1", max_tokens=512),
                                               sim_model(server, name="j2", max_tokens=512, cache=False)))
    # (j2 is the same model on the same server: without cache=False its answers would come from j1's)
    assert J.stage(first, "test", False).complete
    server.reset_stats()
    outcome = J.stage(second, "test", False)
    assert outcome.complete and [m.already_done for m in outcome.models] == [6, 0]
    # only the new judge's calls: 4 valid answers, 2 invalid ones tried max_attempts times each
    assert server.stats()["requests"] == 4 + 2 * base.max_attempts
    assert rows(db_path, "SELECT run FROM runs ORDER BY 1") == [
        ("r1",), (J.judge_run_name("r1", "j1"),), (J.judge_run_name("r1", "j2"),)]


# --------------------------------------------------------------------------- the embedded local model

def test_local_model_as_judge_gives_grammar_constrained_json(sim, db_path, tmp_path):
    """SmolLM2-135M judges two responses under the JSON-schema grammar. What it writes always parses
    as JSON in the schema's shape; whether its content passes validation (it tends to quote phrases that
    are not in the response) decides ok versus a recorded invalid_output failure — never a drop."""
    server = sim("--answers", str(_answers(tmp_path / "answers.json")))
    scenarios = _scenario_file(tmp_path / "scenarios.jsonl")
    config = SweepConfig(db=db_path, run="local", benchmarks=("gama",), flush_ms=50, max_attempts=1,
                         gama_scenarios=str(scenarios), limit=2,
                         models=(sim_model(server, name="target"),),
                         judges=(ModelSpec(name="smol", model=LOCAL_MODEL, max_tokens=256, max_concurrency=1),))
    from fairsweep.benchmarks.gama.prompts import load
    prompts = load(config)[:2]  # T01 male and female
    assert run_sweep(config, prompts, command="test", progress=False).complete
    outcome = J.stage(config, "test", False)
    assert outcome.models[0].planned == 2 and outcome.models[0].missing == 0
    assert outcome.models[0].stored + outcome.models[0].failed == 2
    assert outcome.complete == (outcome.models[0].stored > 0)  # a judge with only failures is never complete
    results = rows(db_path, "SELECT status, last_error_class, response, request_id FROM results "
                            "WHERE benchmark = 'gama-judge'")
    assert len(results) == 2
    seen = []
    for status, error_class, response, request_id in results:
        if status == "ok":
            assert J.validate_judgement(response)[0] is not None
            seen.append("ok")
            continue
        assert (status, error_class) == ("failed", "invalid_output")
        (message,) = rows(db_path, "SELECT error_message FROM attempts WHERE request_id = ? AND outcome = "
                                   "'transient'", [request_id])[0]
        output = message.split("; output: ", 1)[1]
        assert output.startswith("'{"), message  # the grammar forced a JSON object
        assert "not valid JSON" not in message and "fields missing" not in message, message
        seen.append(message.split("; output: ", 1)[0])
    print("local judge:", seen)

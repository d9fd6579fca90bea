"""The typed config schema: every bad value is refused up front (exit 2, one line per problem, nothing sent,
no DB), the README reference is the schema's, and a good config still runs."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from helpers import REPO
from fairsweep import cli
from fairsweep.config import ModelSpec, SweepConfig, parse_config
from fairsweep.config.doc import current_block, render
from fairsweep.errors import ConfigError

GOOD_MODEL = {"name": "sim", "model": "sim-model", "max_concurrency": 2, "timeout_s": 5}
GOOD_JUDGE = {"name": "judge", "model": "judge-model", "max_tokens": 512}


def toml_value(value) -> str:
    if isinstance(value, float) and value != value:
        return "nan"
    if value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "-inf"
    return json.dumps(value)  # ints, finite floats, booleans, strings, arrays: the same spelling in TOML


def write(path: Path, top: dict, models: list[dict], judges: list[dict] = ()) -> Path:
    lines = [f"{k} = {toml_value(v)}" for k, v in top.items()]
    for kind, tables in (("models", models), ("judges", judges)):
        for table in tables:
            lines += ["", f"[[{kind}]]", *(f"{k} = {toml_value(v)}" for k, v in table.items())]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# (table, key, value, what the message must contain besides the key)
BAD = [
    ("top", "max_cost", float("nan"), "got nan"), ("top", "max_cost", float("inf"), "got inf"),
    ("top", "max_cost", -1, "got -1"), ("top", "max_cost", 0, "got 0"), ("top", "max_cost", "abc", 'got "abc"'),
    ("top", "limit", 2.5, "an integer"), ("top", "limit", True, "got true"), ("top", "limit", 0, "got 0"),
    ("top", "sample", -3, "got -3"), ("top", "limit", "5", 'got "5"'), ("top", "max_attempts", 0, "got 0"),
    ("top", "flush_ms", float("nan"), "got nan"), ("top", "flush_rows", 1.0, "an integer"),
    ("top", "likert_points", 2, "from 3 to 11"), ("top", "seed", 1.5, "an integer"),
    ("top", "strict_drift", "yes", "true or false"),
    ("top", "runs", "x", 'unknown key "runs" (did you mean "run"?)'),
    ("top", "benchmarks", ["mrni", "gamma"], 'unknown benchmark "gamma" (did you mean "gama"?)'),
    ("top", "executor", "rey", 'unknown executor "rey" (did you mean "ray"?)'),
    ("models", "rpm", float("nan"), "got nan"), ("models", "rpm", float("inf"), "got inf"),
    ("models", "rpm", -5, "rpm must be a positive number"), ("models", "rpm", 0, "got 0"),
    ("models", "rpm", "abc", 'got "abc"'), ("models", "tpm", float("nan"), "got nan"),
    ("models", "max_concurrency", True, "an integer"), ("models", "max_concurrency", 2.5, "got 2.5"),
    ("models", "max_concurrency", 0, "got 0"), ("models", "max_tokens", 64.0, "an integer"),
    ("models", "samples", -1, "got -1"), ("models", "timeout_s", float("inf"), "got inf"),
    ("models", "temperature", float("nan"), "got nan"), ("models", "max_cost", float("nan"), "got nan"),
    ("models", "max_cost", 0, "got 0"), ("models", "cache", "yes", "true or false"),
    ("models", "api_base", "localhost:8000", "http://"),
    ("models", "max_concurency", 3, 'unknown key "max_concurency" (did you mean "max_concurrency"?)'),
    ("judges", "rpm", float("nan"), "got nan"), ("judges", "max_concurrency", 2.5, "got 2.5"),
    ("judges", "max_cost", float("inf"), "got inf"), ("judges", "max_tokens", True, "an integer"),
    ("judges", "max_token", 512, 'unknown key "max_token" (did you mean "max_tokens"?)'),
    ("judges", "timeout_s", "30", 'got "30"'), ("judges", "samples", 0, "got 0"), ("judges", "tpm", -1, "got -1"),
]
WHERE = {"top": "top level", "models": '[[models]] #1 "sim"', "judges": '[[judges]] #1 "judge"'}


@pytest.fixture
def sim_server(server):
    server.reset_stats()
    return server


def run_cli(args: list[str], capsys) -> tuple[int, str]:
    code = cli.main(args)
    return code, capsys.readouterr().err


@pytest.mark.parametrize("table, key, value, fragment", BAD)
def test_each_bad_value_exits_2_naming_table_and_key_sends_nothing_and_leaves_no_db(
        table, key, value, fragment, sim_server, tmp_path, mrni_dir, monkeypatch, capsys):
    monkeypatch.setenv("FAIRSWEEP_MRNI_DIR", str(mrni_dir))
    server = sim_server
    db = tmp_path / "bad.duckdb"
    top = {"db": str(db), "run": "bad", "benchmarks": ["mrni"], "flush_ms": 50}
    models, judges = [{**GOOD_MODEL, "api_base": server.base_url}], [{**GOOD_JUDGE, "api_base": server.base_url}]
    {"top": top, "models": models[0], "judges": judges[0]}[table][key] = value
    config = write(tmp_path / "bad.toml", top, models, judges)
    code, err = run_cli(["run", "--config", str(config), "--limit", "2", "--no-progress"], capsys)
    assert code == 2
    assert err.startswith("fairsweep: error:") and err.strip().count("\n") == 0, err  # one problem, one line
    assert f"{config}, {WHERE[table]}: " in err and key in err and fragment in err, err
    assert "Traceback" not in err
    assert server.stats()["requests"] == 0
    assert not db.exists()


def test_every_problem_of_one_config_in_one_message(sim_server, tmp_path, mrni_dir, monkeypatch, capsys):
    monkeypatch.setenv("FAIRSWEEP_MRNI_DIR", str(mrni_dir))
    server = sim_server
    db = tmp_path / "bad.duckdb"
    config = write(tmp_path / "bad.toml", {"db": str(db), "max_cost": float("nan"), "limt": 3},
                   [{**GOOD_MODEL, "api_base": server.base_url, "rpm": float("inf")},
                    {"name": "gpt-mini", "model": "m2", "api_base": server.base_url, "max_concurrency": 2.5,
                     "tpm": "fast"}],
                   [{**GOOD_JUDGE, "name": "sim"}])
    code, err = run_cli(["run", "--config", str(config), "--no-progress"], capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert lines[0] == f"fairsweep: error: {config}: 6 problems (fix them; nothing was run):", err
    body = "\n".join(lines[1:])
    for expected in ("top level: max_cost must be", 'top level: unknown key "limt" (did you mean "limit"?)',
                     '[[models]] #1 "sim": rpm must be', '[[models]] #2 "gpt-mini": max_concurrency must be',
                     '[[models]] #2 "gpt-mini": tpm must be', 'got "fast"', 'model name(s) "sim" used twice'):
        assert expected in body, (expected, err)
    assert len(lines) == 7  # one line per problem
    assert server.stats()["requests"] == 0 and not db.exists()


@pytest.mark.parametrize("args, env, fragment", [
    (["--limit", "0"], {}, "command line: --limit must be an integer >= 1, got 0"),
    (["--sample", "-2"], {}, "--sample must be an integer >= 1, got -2"),
    (["--bench", "gamma"], {}, 'unknown benchmark "gamma" (did you mean "gama"?)'),
    (["--model", "x=sim-model@localhost:1"], {}, "api_base must be an http:// or https:// URL"),
    (["--model", "=@http://127.0.0.1:9"], {}, "model must be a model id"),
    ([], {"FAIRSWEEP_RAY_WORKERS": "abc"}, "FAIRSWEEP_RAY_WORKERS='abc': expected a whole number"),
    ([], {"FAIRSWEEP_RAY_WORKERS": "2.5"}, "FAIRSWEEP_RAY_WORKERS='2.5'"),
    ([], {"FAIRSWEEP_RAY_WORKERS": "0"}, "FAIRSWEEP_RAY_WORKERS='0'"),
    ([], {"FAIRSWEEP_MRNI_BOOT": "nan"}, "FAIRSWEEP_MRNI_BOOT='nan'"),
    ([], {"FAIRSWEEP_MRNI_BOOT": "-5"}, "FAIRSWEEP_MRNI_BOOT='-5'"),
])
def test_flags_model_specs_and_numeric_env_knobs_follow_the_same_rules(args, env, fragment, sim_server, tmp_path,
                                                                       mrni_dir, monkeypatch, capsys):
    monkeypatch.setenv("FAIRSWEEP_MRNI_DIR", str(mrni_dir))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    server = sim_server
    db = tmp_path / "flags.duckdb"
    base = ["run", "--db", str(db), "--no-progress"] + ([] if "--sample" in args else ["--limit", "1"])
    if "--model" not in args:
        base += ["--model", f"sim=sim-model@{server.base_url}"]
    code, err = run_cli(base + args, capsys)
    assert code == 2 and err.strip().count("\n") == 0 and fragment in err, err
    assert server.stats()["requests"] == 0 and not db.exists()


def test_a_good_config_still_runs_and_a_bad_one_leaves_its_db_unchanged(sim_server, tmp_path, mrni_dir, monkeypatch,
                                                                         capsys):
    monkeypatch.setenv("FAIRSWEEP_MRNI_DIR", str(mrni_dir))
    monkeypatch.setenv("FAIRSWEEP_MRNI_BOOT", "50")
    server = sim_server
    db = tmp_path / "good.duckdb"
    top = {"db": str(db), "run": "good", "flush_ms": 50, "max_cost": 5}
    model = {**GOOD_MODEL, "api_base": server.base_url, "rpm": 6000, "temperature": 0}
    config = write(tmp_path / "good.toml", top, [model])
    code, err = run_cli(["run", "--config", str(config), "--limit", "3", "--no-progress"], capsys)
    assert code == 0, err
    assert server.stats()["requests"] == 3 and db.exists()
    before = db.read_bytes()
    bad = write(tmp_path / "bad.toml", top, [{**model, "rpm": float("nan")}])
    code, err = run_cli(["run", "--config", str(bad), "--limit", "6", "--no-progress"], capsys)
    assert code == 2 and "rpm must be" in err
    assert server.stats()["requests"] == 3 and db.read_bytes() == before


def test_integers_stay_integers_so_request_identities_do_not_change():
    """`temperature = 0` was stored as 0 (not 0.0) in request identities; the schema keeps it so."""
    spec = parse_config({"models": [{"model": "m", "temperature": 0, "rpm": 10}]}).models[0]
    assert type(spec.temperature) is int and type(spec.rpm) is int
    assert json.dumps(spec.generation_params()) == '{"temperature": 0, "max_tokens": 64}'
    assert type(parse_config({"models": [{"model": "m", "temperature": 0.5}]}).models[0].temperature) is float


def test_specs_stay_frozen_dataclasses_and_replace_revalidates():
    spec = ModelSpec(name="m", model="x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.rpm = 3
    assert dataclasses.replace(spec, rpm=5).rpm == 5
    with pytest.raises(ValidationError):
        dataclasses.replace(spec, max_concurrency=0)
    config = SweepConfig(models=(spec,))
    assert dataclasses.asdict(config)["models"][0]["name"] == "m"
    assert config.identity_hash() == SweepConfig(models=(ModelSpec(name="m", model="x"),)).identity_hash()


def test_a_pasted_key_is_never_echoed():
    key = "sk-" + "abcdefghijklmnopqrstuvwx"  # a fake key, built here so no key-like string is committed
    for table in ({"model": "m", "api_key": key}, {"model": "m", "api_key_env": key}, {"model": "m", "rpm": key}):
        with pytest.raises(ConfigError) as caught:
            parse_config({"models": [table]}, "c.toml")
        assert key not in str(caught.value)


def test_the_benchmark_enumeration_is_the_registry():
    from fairsweep.benchmarks.registry import LOADERS
    from fairsweep.config import KNOWN_BENCHMARKS
    assert set(KNOWN_BENCHMARKS) == set(LOADERS)


def test_the_readme_reference_is_the_schema():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert current_block(readme) == render(), "run `python -m fairsweep.config.doc README.md`"
    for schema in (SweepConfig, ModelSpec):
        for key, info in schema.__pydantic_fields__.items():
            assert info.description, f"{schema.__name__}.{key} has no description"
            assert f"| `{key}` |" in render()


def test_entries_sharing_a_limit_key_must_agree_on_its_limits():
    """One limiter per provider key: conflicting limits would apply in whichever order the entries came."""
    base = {"model": "openai/gpt-4o-mini", "limit_key": "openai-main", "rpm": 500, "max_concurrency": 8}
    same = parse_config({"models": [{**base, "name": "a"}, {**base, "name": "b", "temperature": 0.7}]}, "c.toml")
    assert [m.limiter_key() for m in same.models] == ["openai-main", "openai-main"]
    with pytest.raises(ConfigError) as refused:
        parse_config({"models": [{**base, "name": "a"}],
                      "judges": [{**base, "name": "j", "max_tokens": 512, "rpm": 100}]}, "c.toml")
    message = str(refused.value)
    assert '[[judges]] #1 "j": shares limit_key "openai-main" with [[models]] #1 "a" but sets rpm 100, not 500' \
        in message and "\n" not in message

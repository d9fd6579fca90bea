"""Property-based tests (hypothesis): any TOML document either plans or exits 2 with a short message, never a
traceback, and what is accepted is sane; no query string writes, or reads outside the DB.

Examples per run (fixed, so CI time is steady): CONFIG_EXAMPLES documents through parse_config,
CLI_EXAMPLES documents through `fairsweep plan` in-process, QUERY_EXAMPLES query strings through
`fairsweep query` in-process. Nothing is sent anywhere: `plan` never sends.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import math
import re
import string
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import make_prompts, sim_model, sweep
from fairsweep import cli
from fairsweep.config import KNOWN_BENCHMARKS, ModelSpec, SweepConfig, parse_config
from fairsweep.engine.runner import run_sweep
from fairsweep.errors import ConfigError
from fairsweep.sim.server import SimServerProcess

CONFIG_EXAMPLES, CLI_EXAMPLES, QUERY_EXAMPLES = 400, 100, 200
PROPERTY = dict(deadline=None, database=None,  # no .hypothesis folder; the example counts above are the budget
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# ------------------------------------------------------------------ TOML documents

TOP_KEYS = [k for k in SweepConfig.__pydantic_fields__ if k not in ("models", "judges", "data_dir", "gama_scenarios")]
MODEL_KEYS = list(ModelSpec.__pydantic_fields__)
NAME = st.text(alphabet=string.ascii_letters + string.digits + "-_", min_size=1, max_size=8)
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
SCALAR = st.one_of(st.integers(-2**63, 2**63 - 1), st.floats(allow_nan=True, allow_infinity=True), st.booleans(), TEXT,
                   st.sampled_from([0, 1, -1, 0.5, 2.5, 1e300, float("nan"), float("inf"), float("-inf"), "", "1"]))
ANY = st.recursive(SCALAR, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAME, inner, max_size=3),
                   max_leaves=6)
POSITIVE = st.integers(1, 10_000) | st.floats(0.01, 1e4)
GOOD_TOP = {
    "db": st.just("doc.duckdb"), "run": NAME, "seed": st.integers(-5, 5), "limit": st.integers(1, 4),
    "sample": st.integers(1, 4), "flush_rows": st.integers(1, 1000), "flush_ms": st.integers(1, 5000),
    "benchmarks": st.lists(st.sampled_from(KNOWN_BENCHMARKS), min_size=1, max_size=3, unique=True),
    "max_attempts": st.integers(1, 10), "max_cost": POSITIVE, "executor": st.sampled_from(["local", "ray"]),
    "ray_address": st.just("127.0.0.1:1"), "likert_points": st.integers(3, 11), "strict_drift": st.booleans(),
}
GOOD_MODEL = {
    "name": NAME, "model": st.sampled_from(["sim-model", "openai/gpt-4o-mini", "local/smollm2", "anthropic/x"]),
    "api_base": st.just("http://127.0.0.1:9/v1"), "api_key_env": st.just("FAIRSWEEP_NO_SUCH_KEY"), "rpm": POSITIVE,
    "tpm": POSITIVE, "max_concurrency": st.integers(1, 64), "temperature": st.integers(0, 2) | st.floats(0, 2),
    "max_tokens": st.integers(1, 4096), "samples": st.integers(1, 3), "timeout_s": st.floats(0.1, 120),
    "params": st.dictionaries(st.sampled_from(["top_p", "seed"]), st.integers(0, 5), max_size=2),
    "limit_key": NAME, "max_cost": POSITIVE, "cache": st.booleans(),
}


def typo(key: str) -> st.SearchStrategy[str]:
    return st.integers(0, len(key) - 1).map(lambda i: key[:i] + key[i + 1:] or "x")


@st.composite
def table(draw, good: dict, required: tuple[str, ...] = (), noisy: bool = True) -> dict:
    """Good values for known keys; when noisy, also any value under a known, misspelt or unknown key."""
    keys = draw(st.lists(st.sampled_from(list(good)), max_size=5, unique=True))
    out = {k: draw(good[k]) for k in (*required, *keys)}
    for key in draw(st.lists(st.sampled_from([*good, "api_key", "rpm", "runs"]), max_size=2)) if noisy else ():
        out[draw(typo(key) | st.just(key) | NAME)] = draw(ANY)
    return out


@st.composite
def documents(draw, noisy: bool = True) -> dict:
    doc = draw(table(GOOD_TOP, noisy=noisy))
    models = draw(st.lists(table(GOOD_MODEL, ("model",), noisy), max_size=3))
    judges = draw(st.lists(table({**GOOD_MODEL, "max_tokens": st.integers(512, 1024)}, ("model",), noisy),
                           max_size=2))
    if models or draw(st.booleans()):
        doc["models"] = models
    if judges:
        doc["judges"] = judges
    return doc


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value == math.inf else "-inf" if value == -math.inf
                                                else repr(value))
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(value, ensure_ascii=False)  # ints and strings are spelt the same in TOML


def to_toml(doc: dict) -> str:
    lines = [f"{json.dumps(k)} = {toml_value(v)}" for k, v in doc.items() if k not in ("models", "judges")
             or not all(isinstance(t, dict) for t in v)]
    for kind in ("models", "judges"):
        for t in doc.get(kind, []) if all(isinstance(t, dict) for t in doc.get(kind, [])) else []:
            lines += ["", f"[[{kind}]]", *(f"{json.dumps(k)} = {toml_value(v)}" for k, v in t.items())]
    return "\n".join(lines) + "\n"


def assert_short(message: str) -> None:
    """One line, or a header saying 'N problems' and then exactly one line per problem."""
    lines = message.strip().splitlines()
    counted = re.search(r": (\d+) problems \(", lines[0])
    assert len(lines) == (int(counted.group(1)) + 1 if counted else 1), message
    assert "Traceback" not in message and all(len(line) < 600 for line in lines), message


def assert_sane(config: SweepConfig) -> None:
    """What an accepted config promises: integers are integers, numbers finite, limits positive, names unique."""
    for spec in (*config.models, *config.judges):
        for key in ("max_concurrency", "max_tokens", "samples"):
            assert type(getattr(spec, key)) is int and getattr(spec, key) >= 1
        for key in ("rpm", "tpm", "max_cost", "timeout_s", "temperature"):
            value = getattr(spec, key)
            assert value is None or (type(value) in (int, float) and math.isfinite(value) and value >= 0)
        assert spec.timeout_s > 0 and spec.rpm != 0 and spec.tpm != 0 and spec.max_cost != 0
        json.dumps(spec.generation_params(), allow_nan=False)
    for key in ("limit", "sample", "flush_rows", "flush_ms", "max_attempts", "likert_points", "seed"):
        value = getattr(config, key)
        assert value is None or type(value) is int
    assert config.limit is None or config.sample is None
    assert config.max_cost is None or (math.isfinite(config.max_cost) and config.max_cost > 0)
    names = [m.name for m in (*config.models, *config.judges)]
    assert len(names) == len(set(names)) and config.models and set(config.benchmarks) <= set(KNOWN_BENCHMARKS)
    json.loads(config.to_json())


@settings(max_examples=CONFIG_EXAMPLES, **PROPERTY)
@given(doc=documents())
def test_any_document_is_a_sane_config_or_one_short_config_error(doc):
    try:
        config = parse_config(doc, "doc.toml")
    except ConfigError as exc:
        assert_short(f"fairsweep: error: {exc}")
        return
    assert_sane(config)


@settings(max_examples=CLI_EXAMPLES, **PROPERTY)
@given(text=st.one_of(documents(noisy=False).map(to_toml), documents().map(to_toml),
                      documents().map(to_toml).map(lambda t: t[: len(t) // 2]),
                 st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=80)))
def test_any_toml_text_plans_or_exits_2_with_a_short_message(text, mrni_dir, monkeypatch):
    monkeypatch.setenv("FAIRSWEEP_MRNI_DIR", str(mrni_dir))
    with tempfile.TemporaryDirectory() as tmp:
        path, db = Path(tmp) / "doc.toml", Path(tmp) / "plan.duckdb"
        path.write_text(text, encoding="utf-8")
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(["plan", "--config", str(path), "--db", str(db), "--limit", "2"])
        assert code in (0, 2), err.getvalue()
        if code == 2:
            assert err.getvalue().startswith("fairsweep: error: ")
            assert_short(err.getvalue())
        else:
            assert "plan for run" in out.getvalue()
        assert sorted(p.name for p in Path(tmp).iterdir()) == ["doc.toml"]  # no DB, nothing else


# ------------------------------------------------------------------ query strings

SECRET = "secret-marker-91f3"
PATHS = ["{beside}", "{outside}", "{folder}/new.csv", "{folder}/new.duckdb", "/etc/hostname", "~/fs-probe.csv",
         "http://127.0.0.1:9/x.csv", "{folder}/*"]
TABLE_FUNCTIONS = ["read_csv", "read_csv_auto", "read_text", "read_blob", "read_parquet", "read_json", "read_ndjson",
                   "glob", "sniff_csv", "parquet_metadata", "query_table", "duckdb_tables", "range", "summary"]
SELECTS = ["SELECT 42", "SELECT * FROM results", "FROM runs", "SELECT count(*) FROM responses"]
TABLES = ["results", "runs", "responses", "run_status", "'{beside}'", "\"{outside}\""]
SETTINGS = ["enable_external_access", "lock_configuration", "memory_limit", "threads", "allowed_directories",
            "autoload_known_extensions", "temp_directory", "home_directory"]
TEMPLATES = [
    "SELECT * FROM {tfn}('{path}')", "SELECT count(*) FROM '{path}'", "COPY ({select}) TO '{path}'",
    "COPY {table} TO '{path}' (FORMAT csv)", "ATTACH '{path}' AS other", "DETACH results", "INSTALL httpfs",
    "LOAD httpfs", "SET {setting} = '{path}'", "RESET {setting}", "PRAGMA {setting} = 1", "PRAGMA table_info('runs')",
    "CREATE TABLE t AS {select}", "CREATE VIEW v AS {select}", "INSERT INTO runs (run) VALUES ('x')",
    "DELETE FROM {table}", "DROP TABLE {table}", "EXPORT DATABASE '{path}'", "CALL {tfn}('{path}')",
    "SELECT getenv('FAIRSWEEP_PROBE')", "{select}", "DESCRIBE {table}", "SUMMARIZE {table}", "SHOW {table}",
    "SELECT * FROM results WHERE prompt_key IN (SELECT * FROM {tfn}('{path}'))", "WITH x AS ({select}) FROM x",
    "EXPLAIN ANALYZE COPY ({select}) TO '{path}'", "CHECKPOINT", "VACUUM", "USE memory",
    "SELECT * FROM query('COPY ({select}) TO ''{path}''')", "SELECT current_setting('{setting}')",
]


@st.composite
def queries(draw) -> str:
    statements = []
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.integers(0, 9)) == 0:
            statements.append(draw(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)))
            continue
        text = draw(st.sampled_from(TEMPLATES)).format(
            tfn=draw(st.sampled_from(TABLE_FUNCTIONS)), path=draw(st.sampled_from(PATHS)),
            select=draw(st.sampled_from(SELECTS)), table=draw(st.sampled_from(TABLES)),
            setting=draw(st.sampled_from(SETTINGS)))
        statements.append(text.upper() if draw(st.booleans()) else text)
    return draw(st.sampled_from(["; ", ";\n", " ; -- x\n"])).join(statements)


@pytest.fixture(scope="module")
def query_dirs(tmp_path_factory):
    """A results DB from a real run, a file beside it, and a secret file in another folder."""
    folder, outside = tmp_path_factory.mktemp("db"), tmp_path_factory.mktemp("outside")
    server = SimServerProcess([])
    server.start()
    try:
        assert run_sweep(sweep(str(folder / "results.duckdb"), [sim_model(server)], run="p"), make_prompts(4),
                         command="t", progress=False).complete
    finally:
        server.stop()
    (folder / "beside.csv").write_text(f"a\n{SECRET}\n", encoding="utf-8")
    (outside / "secret.csv").write_text(f"a\n{SECRET}\n", encoding="utf-8")
    return folder, outside


def snapshot(*folders: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for folder in folders for p in sorted(folder.rglob("*"))}


@settings(max_examples=QUERY_EXAMPLES, **PROPERTY)
@given(sql=queries())
def test_no_query_string_writes_or_reads_outside_the_db(sql, query_dirs, monkeypatch):
    folder, outside = query_dirs
    monkeypatch.setenv("FAIRSWEEP_PROBE", SECRET)
    home_probe = Path("~/fs-probe.csv").expanduser()
    before = snapshot(folder, outside)
    sql = sql.replace("{beside}", str(folder / "beside.csv")).replace("{outside}", str(outside / "secret.csv"))
    sql = sql.replace("{folder}", str(folder))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["query", "--db", str(folder / "results.duckdb"), sql, "--format", "csv"])
    assert code in (0, 2)
    assert code == 0 or (err.getvalue().startswith("fairsweep: error: ") and err.getvalue().count("\n") == 1)
    assert SECRET not in out.getvalue() + err.getvalue()
    assert snapshot(folder, outside) == before and not home_probe.exists()

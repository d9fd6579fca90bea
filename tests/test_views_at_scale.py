"""The core and MRNI-BB views after their rewrite for a million rows (filters on run reach the requests scan):
on a real multi-run DuckDB file with every kind of request history, they give exactly the rows and column
types of the definitions they replaced (kept below as the reference), for all runs and filtered by run.
Also: what an open of a DB whose views are current skips, and planning a run that is already planned."""

from __future__ import annotations

import datetime as dt
import hashlib
import math

import pytest

from fairsweep.benchmarks.mrni.likert import score_run as score_likert
from fairsweep.benchmarks.mrni.prompts import build_prompts
from fairsweep.benchmarks.mrni.score import score_run
from fairsweep.config import ModelSpec, SweepConfig
from fairsweep.engine.work import plan_items
from fairsweep.records import AttemptRow, Prompt, ResponseRow
from fairsweep.storage.checkpoint import plan_requests, register_run
from fairsweep.storage.db import open_db, view_sql
from fairsweep.storage.bulk import insert_rows

NOW = dt.datetime(2026, 1, 5, tzinfo=dt.timezone.utc)

# The definitions these views had before (storage/sql at 4d3f563), under old_* names.
REFERENCE = """
CREATE OR REPLACE VIEW old_request_outcomes AS
WITH per_request AS (
    SELECT request_id,
           count(*) AS attempts,
           count(*) FILTER (WHERE outcome = 'rate_limited') AS rate_limited,
           bool_or(outcome = 'permanent') AS permanent,
           arg_max(error_class, started_at) FILTER (WHERE outcome <> 'ok') AS last_error_class
    FROM attempts GROUP BY request_id
)
SELECT r.*,
       CASE WHEN s.request_id IS NOT NULL THEN 'ok'
            WHEN coalesce(a.permanent, false) THEN 'failed'
            ELSE 'pending' END AS status,
       coalesce(a.attempts, 0) AS attempts,
       coalesce(a.rate_limited, 0) AS rate_limited,
       a.last_error_class
FROM requests r
LEFT JOIN responses s USING (request_id)
LEFT JOIN per_request a USING (request_id);

CREATE OR REPLACE VIEW old_results AS
SELECT o.run, o.model, o.benchmark, o.prompt_key, o.sample, o.status,
       s.text AS response, s.finish_reason, s.latency_ms,
       s.prompt_tokens, s.completion_tokens, s.cost_usd,
       o.attempts, o.last_error_class, o.request_id, o.ordinal
FROM old_request_outcomes o
LEFT JOIN responses s USING (request_id);

CREATE OR REPLACE VIEW old_run_status AS
SELECT o.run, o.model,
       count(*) AS total,
       count(*) FILTER (WHERE status = 'ok') AS done,
       count(*) FILTER (WHERE status = 'failed') AS failed,
       count(*) FILTER (WHERE status = 'pending') AS pending,
       sum(o.attempts) AS attempts,
       sum(greatest(o.attempts - 1, 0)) AS retries,
       sum(o.rate_limited) AS http_429,
       sum(s.prompt_tokens) AS prompt_tokens,
       sum(s.completion_tokens) AS completion_tokens,
       sum(s.cost_usd) AS cost_usd
FROM old_request_outcomes o
LEFT JOIN responses s USING (request_id)
GROUP BY o.run, o.model;

CREATE OR REPLACE VIEW old_mrni_scored AS
WITH meta AS (
    SELECT q.request_id,
           json_extract_string(p.metadata, '$.language') AS language,
           json_extract_string(p.metadata, '$.subscale') AS subscale,
           json_extract_string(p.metadata, '$.Category') AS category,
           TRY_CAST(json_extract_string(p.metadata, '$."MRNI-item"') AS INTEGER) AS item,
           json_extract_string(p.metadata, '$.Scenario') AS scenario,
           json_extract_string(p.metadata, '$.condition') AS condition,
           json_extract_string(p.metadata, '$.mapping') AS mapping,
           json_extract_string(p.metadata, '$.gold_answer') AS gold_answer
    FROM requests q
    JOIN prompts p USING (benchmark, prompt_key, prompt_hash)
    WHERE q.benchmark = 'mrni'
), coded AS (
    SELECT *,
           CASE replace(lower(trim(gold_answer)), '’', '''')
               WHEN 'the man' THEN 'M' WHEN 'l''uomo' THEN 'M'
               WHEN 'the woman' THEN 'W' WHEN 'la donna' THEN 'W'
               WHEN 'person x' THEN 'X' WHEN 'la persona x' THEN 'X'
               WHEN 'person y' THEN 'Y' WHEN 'la persona y' THEN 'Y'
               WHEN 'insufficient information' THEN 'U' WHEN 'informazioni insufficienti' THEN 'U'
           END AS gold,
           CASE WHEN starts_with(mapping, 'base_XY') THEN 'X'
                WHEN starts_with(mapping, 'base_YX') THEN 'Y'
                WHEN starts_with(mapping, 'base_man_') OR starts_with(mapping, 'base_uomo_') THEN 'M'
                WHEN starts_with(mapping, 'base_woman_') OR starts_with(mapping, 'base_donna_') THEN 'W'
           END AS first_label
    FROM meta
)
SELECT r.run, r.model, r.prompt_key, r.sample, r.request_id, r.status,
       c.language, c.subscale, c.category, c.item, c.scenario,
       c.language || ':' || c.item || ':' || c.scenario AS pair,
       c.condition, right(c.condition, 2) AS marker,
       c.mapping, c.first_label,
       CASE c.first_label WHEN 'X' THEN 'Y' WHEN 'Y' THEN 'X' WHEN 'M' THEN 'W' WHEN 'W' THEN 'M' END
           AS second_label,
       c.gold_answer, c.gold,
       r.response, l.label, l.span, l.parser_version, l.scored_at,
       l.label = c.gold AS correct
FROM old_results r
JOIN coded c USING (request_id)
LEFT JOIN mrni_labels l USING (request_id);

-- mrni_planned: the same rows without status and response (an answer is counted by its label)
CREATE OR REPLACE VIEW old_mrni_planned AS
SELECT * EXCLUDE (status, response) FROM old_mrni_scored;

CREATE OR REPLACE VIEW old_mrni_likert_scored AS
WITH base AS (
    SELECT o.run, o.model, o.prompt_key, o.sample, o.status, o.request_id,
           json_extract_string(p.metadata, '$.language') AS language,
           CAST(json_extract_string(p.metadata, '$.item_id') AS INTEGER) AS item_id,
           json_extract_string(p.metadata, '$.subscale') AS subscale,
           json_extract_string(p.metadata, '$.secondary_subscale') AS secondary_subscale,
           CAST(json_extract_string(p.metadata, '$.points') AS INTEGER) AS points,
           s.text AS response, l.label, l.rating, l.span, l.parser_version
    FROM old_request_outcomes o
    JOIN prompts p ON p.benchmark = o.benchmark AND p.prompt_key = o.prompt_key AND p.prompt_hash = o.prompt_hash
    LEFT JOIN responses s USING (request_id)
    LEFT JOIN mrni_likert_labels l USING (request_id)
    WHERE o.benchmark = 'mrni-likert'
)
SELECT *, rating > (points + 1) / 2.0 AS endorsed FROM base;
"""
VIEWS = ("request_outcomes", "results", "run_status", "mrni_scored", "mrni_planned", "mrni_likert_scored")
TEXTS = {"disambiguated_ga": "Person X.", "disambiguated_gs": "The woman.", "ambiguous_ga": "Insufficient information.",
         "ambiguous_gs": "The man.", "control_gs": "I cannot answer that."}
LIKERT = [Prompt("mrni-likert", f"en:{i}", ({"role": "user", "content": f"Statement {i}. Rate 1-7."},),
                 {"language": "en", "item_id": i, "subscale": "AF", "secondary_subscale": None, "points": 7,
                  "stratum": "en"}) for i in range(1, 7)]


def history(n: int, rid: str, session: str, model: str, text: str) -> tuple[list[AttemptRow], list[ResponseRow]]:
    """Every kind of request history, chosen by n: never sent, still failing, failed for good, retried
    then answered (a 429 on the way), served from the cache, failed then answered (--retry-failed),
    answered without tokens or cost, answered at once."""
    def attempt(no: int, outcome: str, error: str | None = None, minutes: int = 0) -> AttemptRow:
        return AttemptRow(f"{rid}-{no}", rid, session, no, NOW + dt.timedelta(minutes=minutes), 10.0, outcome,
                          error, None, None, error, 5, 7 if outcome == "ok" else None)

    def answer(attempt_no: int, tokens: bool = True) -> ResponseRow:
        return ResponseRow(rid, f"{rid}-{attempt_no}", text, "stop", 5 if tokens else None, 7 if tokens else None,
                           1e-5 if tokens else None, model, "fp", 10.0, NOW)
    kind = n % 8
    if kind == 0:
        return [], []
    if kind == 1:
        return [attempt(1, "transient", "http_500"), attempt(2, "transient", "timeout", 1)], []
    if kind == 2:
        return [attempt(1, "transient", "http_503"), attempt(2, "permanent", "context_length", 1)], []
    if kind == 3:
        return ([attempt(1, "transient", "http_500"), attempt(2, "rate_limited", "rate_limited", 1),
                 attempt(3, "ok", None, 2)], [answer(3)])
    if kind == 4:
        return [attempt(0, "cached")], [answer(0)]
    if kind == 5:
        return [attempt(1, "permanent", "invalid_output"), attempt(2, "ok", None, 5)], [answer(2)]
    if kind == 6:
        return [attempt(1, "ok")], [answer(1, tokens=False)]
    return [attempt(1, "ok")], [answer(1)]


def add_run(conn, run: str, models: list[str], prompts: list[Prompt], offset: int = 0) -> None:
    config = SweepConfig(db="x", run=run, benchmarks=("mrni",),
                         models=tuple(ModelSpec(name=m, model=f"sim/{m}", api_base="http://127.0.0.1:9/v1")
                                      for m in models))
    session = register_run(conn, config, "test")
    attempts, responses = [], []
    for spec in config.models:
        items = plan_items(run, spec, prompts)
        plan_requests(conn, items)
        for n, item in enumerate(items, offset):
            text = TEXTS.get(item.prompt.metadata.get("condition"), "5")
            a, r = history(n, item.request_id, session, spec.name, text)
            attempts += a
            responses += r
        offset += 3
    insert_rows(conn, "attempts", AttemptRow._fields, attempts)
    insert_rows(conn, "responses", ResponseRow._fields, responses)


@pytest.fixture(scope="module")
def db(tmp_path_factory, mrni_dir):
    """Runs r1 (two models, scored), r2 (one model, not scored), r3 (planned only) over 64 MRNI-BB prompts
    and six mrni-likert prompts; the reference views beside the real ones."""
    path = str(tmp_path_factory.mktemp("scale") / "views.duckdb")
    conn = open_db(path)
    prompts = build_prompts(mrni_dir)[:64] + LIKERT
    add_run(conn, "r1", ["m1", "m2"], prompts)
    add_run(conn, "r2", ["m1"], prompts, offset=1)
    config = SweepConfig(db=path, run="r3", models=(ModelSpec(name="m3", model="sim/m3"),))
    register_run(conn, config, "test")
    plan_requests(conn, plan_items("r3", config.models[0], prompts[:10]))
    score_run(conn, SweepConfig(db=path, run="r1"), n_boot=50)
    score_likert(conn, SweepConfig(db=path, run="r1"))
    conn.execute(REFERENCE)
    yield conn
    conn.close()


def same_rows(got: list[tuple], want: list[tuple]) -> bool:
    """Equal rows, floats equal up to summation order."""
    def key(row):
        return tuple((0, "") if v is None else (1, round(v, 9)) if isinstance(v, float) else (1, str(v)) for v in row)
    got, want = sorted(got, key=key), sorted(want, key=key)
    return len(got) == len(want) and all(
        all(math.isclose(a, b, rel_tol=1e-12) if isinstance(a, float) and isinstance(b, float) else a == b
            for a, b in zip(g, w)) for g, w in zip(got, want))


def test_the_history_covers_every_status_and_attempt_kind(db):
    assert dict(db.execute("SELECT status, count(*) FROM results GROUP BY 1").fetchall()).keys() == \
        {"ok", "failed", "pending"}
    outcomes = {r[0] for r in db.execute("SELECT DISTINCT outcome FROM attempts").fetchall()}
    assert outcomes == {"ok", "transient", "permanent", "rate_limited", "cached"}
    assert db.execute("SELECT count(*) FROM results WHERE status = 'ok' AND last_error_class = 'invalid_output'"
                      ).fetchone()[0] > 0  # failed for good, then answered after --retry-failed
    assert db.execute("SELECT count(*) FROM mrni_scored WHERE label IS NOT NULL").fetchone()[0] > 0
    assert db.execute("SELECT count(*) FROM mrni_likert_scored WHERE label IS NOT NULL").fetchone()[0] > 0


@pytest.mark.parametrize("view", VIEWS)
def test_a_rewritten_view_gives_the_rows_and_types_it_gave_before(db, view):
    assert db.execute(f"DESCRIBE {view}").fetchall() == db.execute(f"DESCRIBE old_{view}").fetchall()
    everything = db.execute(f"SELECT * FROM {view}").fetchall()
    assert len(everything) > 0 and same_rows(everything, db.execute(f"SELECT * FROM old_{view}").fetchall())
    for run in ("r1", "r2", "r3", "nope"):
        got = db.execute(f"SELECT * FROM {view} WHERE run = ?", [run]).fetchall()
        assert same_rows(got, db.execute(f"SELECT * FROM old_{view} WHERE run = ?", [run]).fetchall()), run
    got = db.execute(f"SELECT * FROM {view} WHERE list_contains(['r2', 'r3'], run) AND model <> 'm2'").fetchall()
    assert same_rows(got, db.execute(f"SELECT * FROM old_{view} WHERE list_contains(['r2', 'r3'], run) "
                                     f"AND model <> 'm2'").fetchall())


def test_design_rows_hold_what_the_json_gives_and_prompts_without_them_read_the_same(db):
    from_json = db.execute("""
        SELECT prompt_key, prompt_hash, json_extract_string(metadata, '$.language'),
               json_extract_string(metadata, '$.subscale'), json_extract_string(metadata, '$.Category'),
               json_extract_string(metadata, '$."MRNI-item"'), json_extract_string(metadata, '$.Scenario'),
               json_extract_string(metadata, '$.condition'), json_extract_string(metadata, '$.mapping'),
               json_extract_string(metadata, '$.gold_answer')
        FROM prompts WHERE benchmark = 'mrni' ORDER BY ALL""").fetchall()
    design = db.execute("SELECT * EXCLUDE (benchmark) FROM mrni_design ORDER BY ALL").fetchall()
    assert len(design) == 64 and design == from_json
    before = db.execute("SELECT * FROM mrni_scored").fetchall()
    db.execute("BEGIN TRANSACTION")
    try:  # a DB written before design rows existed: half its prompts have none
        db.execute("DELETE FROM mrni_design WHERE hash(prompt_key) % 2 = 0")
        assert 0 < db.execute("SELECT count(*) FROM mrni_design").fetchone()[0] < 64
        assert same_rows(db.execute("SELECT * FROM mrni_scored").fetchall(), before)
    finally:
        db.execute("ROLLBACK")


def test_run_status_counts_retries_as_attempts_beyond_the_first(db):
    # r1 x m1: the 70 requests cycle through the eight histories (offset 0): per cycle of 8, attempts
    # 0+2+2+3+1+2+1+1 = 12 and retries 0+1+1+2+0+1+0+0 = 5; 70 = 8 x 8 + 6 (kinds 0..5: 10 attempts, 5 retries)
    row = db.execute("SELECT total, attempts, retries, http_429 FROM run_status WHERE run = 'r1' AND model = 'm1'"
                     ).fetchone()
    assert row == (70, 8 * 12 + 10, 8 * 5 + 5, 9)


def test_an_open_skips_views_whose_definitions_are_current_and_refreshes_them_otherwise(tmp_path):
    path = str(tmp_path / "stamp.duckdb")
    conn = open_db(path)
    (digest,) = conn.execute("SELECT sql_hash FROM views_state").fetchone()
    assert digest == hashlib.sha256("\x00".join(view_sql()).encode()).hexdigest()
    # views recorded as current are trusted as they are: the open does not execute the SQL files
    conn.execute("CREATE OR REPLACE VIEW results AS SELECT 1 AS x")
    conn.close()
    conn = open_db(path)
    assert conn.execute("DESCRIBE results").fetchall()[0][0] == "x"
    # a DB whose views were made from other SQL (another fairsweep version) gets every view re-created
    conn.execute("UPDATE views_state SET sql_hash = 'other version'")
    conn.close()
    conn = open_db(path)
    assert [r[0] for r in conn.execute("DESCRIBE results").fetchall()][:2] == ["run", "model"]
    assert conn.execute("SELECT sql_hash FROM views_state").fetchall() == [(digest,)]
    conn.close()


def test_planning_a_planned_run_writes_nothing_and_a_larger_plan_only_what_is_new(db_path, mrni_dir):
    conn = open_db(db_path)
    spec = ModelSpec(name="m", model="sim/m")
    prompts = build_prompts(mrni_dir)[:40]
    plan_requests(conn, plan_items("r", spec, prompts[:30]))
    before = conn.execute("SELECT request_id, planned_at FROM requests ORDER BY 1").fetchall()
    plan_requests(conn, plan_items("r", spec, prompts[:30]))
    assert conn.execute("SELECT request_id, planned_at FROM requests ORDER BY 1").fetchall() == before
    plan_requests(conn, plan_items("r", spec, prompts))  # the run extended by 10 prompts
    assert conn.execute("SELECT count(*) FROM requests").fetchone() == (40,)
    assert conn.execute("SELECT count(*) FROM requests JOIN prompts USING (benchmark, prompt_key, prompt_hash)"
                        ).fetchone() == (40,)
    assert set(conn.execute("SELECT request_id, planned_at FROM requests").fetchall()) >= set(before)
    plan_requests(conn, plan_items("other", spec, prompts[:5]))  # another run's requests are its own
    assert conn.execute("SELECT run, count(*) FROM requests GROUP BY 1 ORDER BY 1").fetchall() == \
        [("other", 5), ("r", 40)]
    conn.close()


@pytest.mark.parametrize("value", ["7", "l’uomo", 7, -3, 2.5, True, False, None, [1, "a"], {"k": "v", "n": 1}])
def test_a_design_value_is_the_text_duckdb_extracts_from_the_json(value):
    import json

    import duckdb

    from fairsweep.storage.design import json_text

    got = duckdb.connect().execute("SELECT json_extract_string(?, '$.v')", [json.dumps({"v": value})]).fetchone()[0]
    assert json_text(value) == got

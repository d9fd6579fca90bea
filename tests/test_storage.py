"""Schema migrations, the batched writer, and resume bookkeeping on a real DuckDB file."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys

import pytest

from helpers import make_prompts
from fairsweep.config import ModelSpec, SweepConfig
from fairsweep.engine.work import plan_items
from fairsweep.errors import DatabaseError, RunConflictError
from fairsweep.storage.checkpoint import plan_requests, register_run, remaining
from fairsweep.storage import memory
from fairsweep.storage.db import open_db
from fairsweep.storage.migrations import latest_version, migrations
from fairsweep.records import AttemptRow, ResponseRow
from fairsweep.storage.writer import ATTEMPT_COLUMNS, RESPONSE_COLUMNS, RowWriter

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def columns(conn, table: str) -> list[str]:
    return [r[0] for r in conn.execute(f"SELECT column_name FROM information_schema.columns "
                                       f"WHERE table_name = '{table}' ORDER BY ordinal_position").fetchall()]


def test_an_empty_database_migrates_to_the_documented_schema(db_path):
    conn = open_db(db_path)
    assert conn.execute("SELECT max(version), count(*) FROM schema_migrations").fetchone() == \
        (latest_version(), len(migrations()))
    assert columns(conn, "attempts") == list(ATTEMPT_COLUMNS)
    assert columns(conn, "responses") == list(RESPONSE_COLUMNS)
    assert columns(conn, "requests")[:3] == ["request_id", "run", "model"]
    assert columns(conn, "results")[:6] == ["run", "model", "benchmark", "prompt_key", "sample", "status"]
    conn.close()
    again = open_db(db_path)  # re-opening applies nothing twice
    assert again.execute("SELECT count(*) FROM schema_migrations").fetchone() == (len(migrations()),)
    again.close()


def test_writer_batches_are_idempotent_and_flush_on_rows_and_time(db_path):
    conn = open_db(db_path)
    writer = RowWriter(conn, flush_rows=3, flush_ms=60_000)
    attempt = AttemptRow("a1", "r1", "s", 1, NOW, 5.0, "ok", None, None, None, None, 3, 2)
    response = ResponseRow("r1", "a1", "text", "stop", 3, 2, None, "m", None, 5.0, NOW)
    writer.add(attempt)
    writer.add(response)
    writer.add(attempt)  # third row: the row threshold triggers a flush
    writer.flush()
    writer.add(response)  # the same keys again change nothing
    writer.close()
    assert conn.execute("SELECT count(*) FROM attempts").fetchone() == (1,)
    assert conn.execute("SELECT text FROM responses").fetchall() == [("text",)]
    conn.close()


def test_writer_commits_on_the_time_window(db_path):
    conn = open_db(db_path)
    writer = RowWriter(conn, flush_rows=10_000, flush_ms=50)
    writer.add(AttemptRow("a1", "r1", "s", 1, NOW, 5.0, "transient", "http_500", 500, None, "boom", None, None))
    reader = conn.cursor()
    for _ in range(100):
        if reader.execute("SELECT count(*) FROM attempts").fetchone() == (1,):
            break
        import time
        time.sleep(0.02)
    assert reader.execute("SELECT count(*) FROM attempts").fetchone() == (1,)
    writer.close()
    conn.close()


def test_remaining_work_is_an_anti_join_over_responses_and_permanent_failures(db_path):
    conn = open_db(db_path)
    config = SweepConfig(db=db_path, run="r", models=(ModelSpec(name="m", model="x"),))
    register_run(conn, config, "test")
    items = plan_items("r", config.models[0], make_prompts(5))
    plan_requests(conn, items)
    plan_requests(conn, items)  # planning twice is harmless
    conn.execute("INSERT INTO responses VALUES (?, 'a0', 'ok', NULL, NULL, NULL, NULL, NULL, NULL, NULL, now())",
                 [items[0].request_id])
    conn.execute("INSERT INTO attempts VALUES ('a1', ?, 's', 1, now(), 1, 'permanent', 'context_length', 400, "
                 "NULL, 'too long', NULL, NULL)", [items[1].request_id])
    conn.execute("INSERT INTO attempts VALUES ('a2', ?, 's', 1, now(), 1, 'transient', 'http_500', 500, "
                 "NULL, 'boom', NULL, NULL)", [items[2].request_id])
    conn.execute("INSERT INTO attempts VALUES ('a3', ?, 's', 7, now(), 1, 'permanent', 'invalid_output', "
                 "NULL, NULL, 'still invalid', NULL, NULL)", [items[3].request_id])
    conn.execute("INSERT INTO attempts VALUES ('a4', ?, 's', 1, now(), 1, 'config', 'model_not_found', 404, "
                 "NULL, 'no such model', NULL, NULL)", [items[4].request_id])
    assert [i.prompt.key for i in remaining(conn, items)] == ["p00002", "p00004"]
    assert conn.execute("SELECT status, count(*) FROM results GROUP BY 1 ORDER BY 1").fetchall() == \
        [("failed", 2), ("ok", 1), ("pending", 2)]
    # --retry-failed: every final failure, or only those of the classes named
    assert [i.prompt.key for i in remaining(conn, items, ())] == ["p00001", "p00002", "p00003", "p00004"]
    assert [i.prompt.key for i in remaining(conn, items, ("context_length",))] == ["p00001", "p00002", "p00004"]
    conn.close()


def test_a_changed_identity_is_refused_but_changed_limits_are_not(db_path):
    conn = open_db(db_path)
    base = SweepConfig(db=db_path, run="r", models=(ModelSpec(name="m", model="x", rpm=10),))
    register_run(conn, base, "first")
    register_run(conn, SweepConfig(db=db_path, run="r", models=(ModelSpec(name="m", model="x", rpm=99),)), "more")
    with pytest.raises(RunConflictError, match="--run NEW_NAME"):
        register_run(conn, SweepConfig(db=db_path, run="r", models=(ModelSpec(name="m", model="x",
                                                                                max_tokens=8),)), "changed")
    assert conn.execute("SELECT count(*) FROM sessions").fetchone() == (2,)
    conn.close()


def test_read_only_open_of_a_missing_file_names_the_fix(tmp_path):
    with pytest.raises(DatabaseError, match="does not exist"):
        open_db(tmp_path / "nope.duckdb", read_only=True)


def _attempt_rows(n: int) -> list[AttemptRow]:
    """Attempts with every kind of value a row holds: None, ints, floats, text with quotes and non-ASCII."""
    at = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.timezone.utc)
    return [AttemptRow(f"a{i}", f"r{i}", "s", i % 3, at + dt.timedelta(seconds=i), 10.5 * i,
                       ("ok", "transient", "rate_limited")[i % 3], None if i % 3 == 0 else "http_500",
                       None if i % 2 else 500, None if i % 5 else 1.5, "l'uomo “x”" if i % 4 == 0 else None,
                       i if i % 2 else None, None) for i in range(n)]


def test_a_streamed_plan_step_and_a_writer_commit_go_in_as_lists_without_numpy(tmp_path):
    """NumPy (~10 MB) is imported only for a bulk load larger than a plan step, never for a run's commits."""
    code = f"""
import datetime as dt, sys
from fairsweep.config import SweepConfig
from fairsweep.engine.plan_stream import MAX_PLAN_ROWS
from fairsweep.records import AttemptRow
from fairsweep.storage.bulk import COLUMNAR_FROM, insert_rows
from fairsweep.storage.db import open_db
from fairsweep.storage.writer import RowWriter
at = dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc)
largest = max(MAX_PLAN_ROWS, SweepConfig().flush_rows)
assert largest < COLUMNAR_FROM, (largest, COLUMNAR_FROM)
rows = [AttemptRow(f"a{{i}}", f"r{{i}}", "s", 0, at, 1.0, "ok", None, 200, None, None, 1, None)
        for i in range(largest + COLUMNAR_FROM)]
conn = open_db({str(tmp_path / "n.duckdb")!r})
insert_rows(conn, "attempts", AttemptRow._fields, rows[:largest])
assert "numpy" not in sys.modules
writer = RowWriter(conn, flush_rows=10**6, flush_ms=60_000)  # a commit that let more rows wait than that
writer.add(*[row._replace(attempt_id="w" + row.attempt_id) for row in rows])
writer.close()
assert "numpy" not in sys.modules
insert_rows(conn, "attempts", AttemptRow._fields, rows[largest:])  # new rows, through the columnar path
assert "numpy" in sys.modules
assert conn.execute("SELECT count(*) FROM attempts").fetchone()[0] == 2 * len(rows)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_a_run_connection_uses_one_thread_hands_back_what_it_frees_and_checkpoints_every_8_mb(db_path):
    conn = open_db(db_path)
    settings = conn.execute("SELECT current_setting('threads'), "
                            "current_setting('allocator_bulk_deallocation_flush_threshold'), "
                            "current_setting('checkpoint_threshold')").fetchone()
    conn.close()
    assert settings == (1, "1.0 MiB", "7.6 MiB")  # DuckDB shows 8 MB (8,000,000 bytes) in MiB


def test_many_rows_and_a_few_rows_are_stored_alike_and_a_repeated_insert_changes_nothing(db_path, tmp_path):
    from fairsweep.storage.bulk import COLUMNAR_FROM, insert_rows

    rows = _attempt_rows(COLUMNAR_FROM + 44)
    few, many = open_db(tmp_path / "few.duckdb"), open_db(db_path)
    for at in range(0, len(rows), 10):  # the UNNEST path, 10 rows at a time
        insert_rows(few, "attempts", AttemptRow._fields, rows[at:at + 10])
    insert_rows(many, "attempts", AttemptRow._fields, rows)  # the columnar path, at once
    insert_rows(many, "attempts", AttemptRow._fields, rows)
    stored = many.execute("SELECT * FROM attempts ORDER BY attempt_id").fetchall()
    assert len(stored) == len(rows) and stored == few.execute("SELECT * FROM attempts ORDER BY attempt_id").fetchall()
    by_id = {row[0]: row for row in stored}
    assert by_id["a4"][10] == "l'uomo “x”" and by_id["a1"][8] is None and by_id["a10"][9] == 1.5
    few.close()
    many.close()


def test_rows_derived_after_each_commit_are_written_and_a_failing_derivation_costs_no_answer(db_path, capsys):
    conn = open_db(db_path)
    conn.execute("CREATE TABLE derived (request_id VARCHAR, committed BOOLEAN)")

    def derive(cursor, responses, prompts):  # sees the batch's answers already committed
        for r in responses:
            seen = cursor.execute("SELECT count(*) > 0 FROM responses WHERE request_id = ?", [r.request_id])
            cursor.execute("INSERT INTO derived VALUES (?, ?)", [r.request_id, seen.fetchone()[0]])
        if any(r.text == "boom" for r in responses):
            raise ValueError("parser bug")

    writer = RowWriter(conn, flush_rows=2, flush_ms=60_000, after_commit=derive)
    for i, text in enumerate(["a", "b", "boom", "c"]):
        writer.add(AttemptRow(f"a{i}", f"r{i}", "s", 1, NOW, 5.0, "ok", None, None, None, None, 3, 2))
        writer.add(ResponseRow(f"r{i}", f"a{i}", text, "stop", 3, 2, None, "m", None, 5.0, NOW))
        writer.flush()
    writer.close()
    assert conn.execute("SELECT count(*) FROM responses").fetchone() == (4,)  # every answer stored
    # r2's derivation failed (its rows rolled back) and none ran after it
    assert conn.execute("SELECT * FROM derived ORDER BY 1").fetchall() == [("r0", True), ("r1", True)]
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "parser bug" in err and "scoring labels them" in err
    conn.close()


def _schema(conn) -> list[tuple]:
    return conn.execute("""
        SELECT 'table', table_name, sql FROM duckdb_tables() WHERE NOT internal
        UNION ALL SELECT 'view', table_name, string_agg(column_name || ' ' || data_type, ', ' ORDER BY column_index)
            FROM duckdb_columns() WHERE NOT internal GROUP BY table_name  -- views' SQL text varies (EXCLUDE sets)
        UNION ALL SELECT 'macro', function_name, macro_definition FROM duckdb_functions()
            WHERE function_type IN ('macro', 'table_macro') AND NOT internal
        UNION ALL SELECT 'migration', version::VARCHAR, why FROM schema_migrations
        UNION ALL SELECT 'views', sql_hash, '' FROM views_state ORDER BY ALL""").fetchall()


def test_a_new_db_copied_from_the_template_is_the_db_created_in_place(tmp_path, monkeypatch):
    from fairsweep.storage import db as db_module

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    first = open_db(tmp_path / "first.duckdb")  # builds the template, copies it
    prepared, real_prepare = [], db_module._prepare
    monkeypatch.setattr(db_module, "_prepare", lambda conn: prepared.append(conn) or real_prepare(conn))
    second = open_db(tmp_path / "second.duckdb")  # a copy: its schema and views are current, not checked again
    assert prepared == []
    templates = list((tmp_path / "cache" / "fairsweep" / "db-templates").glob("*.duckdb"))
    assert len(templates) == 1
    monkeypatch.setattr(db_module, "seed_new_db", lambda *args: False)  # as without a template
    in_place = open_db(tmp_path / "in_place.duckdb")
    assert len(prepared) == 1
    assert _schema(first) == _schema(second) == _schema(in_place) and len(_schema(in_place)) > 40
    (applied,) = second.execute("SELECT min(applied_at) FROM schema_migrations").fetchone()
    assert applied > dt.datetime.now(dt.timezone.utc) - dt.timedelta(minutes=5)  # dated when copied
    for conn in (first, second, in_place):  # what a run sets for a DB it creates, without reading the catalog
        assert memory.memory_limit_bytes(conn, new=True) == memory.WORKING_BYTES
        assert 0 <= memory.memory_limit_bytes(conn) - memory.WORKING_BYTES < 2**20  # the migrations' keys alone
        conn.close()


def test_without_a_usable_cache_a_new_db_is_created_in_place_and_an_existing_file_is_never_replaced(tmp_path,
                                                                                                 monkeypatch):
    from fairsweep.storage.db import _prepare, _schema_texts
    from fairsweep.storage.template import seed_new_db

    (tmp_path / "not-a-folder").write_text("x")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "not-a-folder"))
    conn = open_db(tmp_path / "r.duckdb")
    assert conn.execute("SELECT count(*) FROM schema_migrations").fetchone() == (len(migrations()),)
    conn.close()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    taken = tmp_path / "taken.duckdb"
    taken.write_bytes(b"someone else's")
    assert seed_new_db(taken, _schema_texts(), _prepare) is False and taken.read_bytes() == b"someone else's"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no copy left behind

"""Memory that does not grow with the plan: the plan table without keyed indexes (migration 0019), each request
planned once all the same, and DuckDB's memory limit fitted to the indexes that remain (storage/memory.py)."""

from __future__ import annotations

import datetime as dt

import duckdb
import pytest

from helpers import make_prompts, sim_model, sweep
from fairsweep.engine.runner import run_sweep
from fairsweep.errors import DataError
from fairsweep.records import AttemptRow
from fairsweep.storage import memory
from fairsweep.storage.db import open_db
from fairsweep.storage.migrations import apply_migrations
from fairsweep.storage.writer import RowWriter

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
REQUEST = ("INSERT INTO requests (request_id, run, model, benchmark, prompt_key, prompt_hash, sample, params, "
           "ordinal, cache_key) VALUES (?, 'r', 'm', 'toy', ?, 'h', 0, '{}', ?, ?)")


def requests_indexes(conn) -> int:
    return conn.execute("SELECT index_count FROM duckdb_tables() WHERE table_name = 'requests'").fetchone()[0]


def schema_at(db: str, last: int) -> duckdb.DuckDBPyConnection:
    """A DB whose schema stops at migration `last` (as an older fairsweep left it)."""
    conn = duckdb.connect(db)
    apply_migrations(conn, upto=last)
    return conn


def test_the_plan_table_of_an_older_db_loses_its_indexes_and_keeps_every_row_in_order(db_path):
    old = schema_at(db_path, 18)
    for i in range(300):
        old.execute(REQUEST, [f"id{i:04d}", f"p{i}", i, f"k{i % 7}" if i % 2 else None])
    assert requests_indexes(old) == 2  # the primary key and the cache-key index
    before = old.execute("SELECT * FROM requests").fetchall()
    old.close()
    conn = open_db(db_path)
    assert requests_indexes(conn) == 0
    assert conn.execute("SELECT * FROM requests").fetchall() == before
    assert conn.execute("SELECT max(version) FROM schema_migrations").fetchone()[0] >= 19
    conn.execute(REQUEST, ["new", "p-new", 300, None])  # DEFAULT now() and NOT NULL kept
    assert conn.execute("SELECT count(*), min(planned_at) IS NOT NULL FROM requests").fetchone() == (301, True)
    assert conn.execute("SELECT count(*) FROM results").fetchone()[0] == 301  # the views read the new table
    conn.close()


def test_the_same_prompt_twice_is_refused_before_anything_is_planned(server, db_path):
    prompts = make_prompts(5)
    config = sweep(db_path, [sim_model(server)])
    with pytest.raises(DataError, match=r"gives prompt 'p00003' twice.*own key"):
        run_sweep(config, [*prompts, prompts[3]], command="test", progress=False)
    conn = duckdb.connect(db_path, read_only=True)
    assert conn.execute("SELECT count(*) FROM requests").fetchone() == (0,)
    conn.close()


def test_a_run_plans_each_request_once_with_no_key_to_drop_a_copy(server, db_path):
    config = sweep(db_path, [sim_model(server, "a"), sim_model(server, "b")])
    prompts = make_prompts(40)
    for _ in range(2):  # the second run resumes: it plans nothing again
        assert run_sweep(config, prompts, command="test", progress=False).complete
    conn = duckdb.connect(db_path, read_only=True)
    assert conn.execute("SELECT count(*), count(DISTINCT request_id) FROM requests").fetchone() == (80, 80)
    conn.close()


def attempt_rows(n: int, prefix: str) -> list[AttemptRow]:
    return [AttemptRow(f"{prefix}{i:08d}", f"r{prefix}{i}", "s", 1, NOW, 1.0, "ok", None, None, None, None, 1, 1)
            for i in range(n)]


def test_the_memory_limit_follows_the_keyed_rows(db_path):
    conn = open_db(db_path)
    empty = memory.fit_memory_limit(conn)
    assert memory.WORKING_BYTES <= empty < memory.WORKING_BYTES + 2**20
    conn.execute("INSERT INTO attempts (attempt_id, request_id, session_id, attempt_no, started_at, outcome) "
                 "SELECT md5(range::VARCHAR), 'r', 's', 1, now(), 'ok' FROM range(50000)")
    assert memory.fit_memory_limit(conn) >= empty + 50_000 * memory.KEY_BYTES
    limit = conn.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    assert limit.endswith("MiB") and float(limit.split()[0]) * 2**20 >= empty + 50_000 * memory.KEY_BYTES - 2**20
    conn.close()


def test_a_db_whose_indexes_outgrow_the_working_margin_still_takes_answers(db_path, monkeypatch):
    """A fixed limit of the working margin alone fails once the indexes outgrow it; the fitted one does not."""
    conn = open_db(db_path)
    conn.execute("INSERT INTO attempts (attempt_id, request_id, session_id, attempt_no, started_at, outcome) "
                 "SELECT md5(range::VARCHAR), 'r', 's', 1, now(), 'ok' FROM range(200000)")
    conn.close()
    monkeypatch.setattr(memory, "WORKING_BYTES", 4 * 2**20)
    monkeypatch.setattr(memory, "REFIT_ROWS", 1000)

    fixed = open_db(db_path)
    fixed.execute("SET memory_limit = '4MB'")
    with pytest.raises(duckdb.OutOfMemoryException):
        fixed.execute("INSERT INTO attempts (attempt_id, request_id, session_id, attempt_no, started_at, outcome) "
                      "SELECT md5((range + 1e7)::VARCHAR), 'r', 's', 1, now(), 'ok' FROM range(5000)")
    fixed.close()

    conn = open_db(db_path)
    memory.fit_memory_limit(conn)
    writer = RowWriter(conn, flush_rows=1000, flush_ms=60_000)
    for batch in range(5):
        writer.add(*attempt_rows(1000, f"w{batch}-"))
        writer.flush()
    writer.close()
    assert conn.execute("SELECT count(*) FROM attempts").fetchone() == (205_000,)
    conn.close()


def test_the_working_margin_is_a_knob_and_a_bad_value_is_refused_in_one_line(db_path, monkeypatch):
    from fairsweep.errors import ConfigError

    conn = open_db(db_path)
    monkeypatch.setenv("FAIRSWEEP_DUCKDB_WORKING_MB", "200")
    assert 200 * 2**20 <= memory.fit_memory_limit(conn) < 201 * 2**20
    monkeypatch.setenv("FAIRSWEEP_DUCKDB_WORKING_MB", "8")
    with pytest.raises(ConfigError, match=r"FAIRSWEEP_DUCKDB_WORKING_MB='8': expected a whole number from 32"):
        memory.fit_memory_limit(conn)
    conn.close()

"""`fairsweep query` only reads: refused statements exit 2 with one line and touch no file; reads return rows.
Both guards are shown on their own: the statement check (usable on any cursor) and DuckDB's connection guards."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import duckdb
import pytest

from helpers import fairsweep_cmd, make_prompts, sim_model, sweep
from fairsweep import cli
from fairsweep.engine.runner import run_sweep
from fairsweep.errors import QueryError
from fairsweep.sim.server import SimServerProcess
from fairsweep.storage.db import open_db
from fairsweep.storage.db import open_readonly
from fairsweep.storage.readonly import check_query, run_readonly

ENV_MARKER = "env-marker-5c1e"


@pytest.fixture(scope="module")
def results_db(tmp_path_factory) -> Path:
    """A results DB from a real run against the simulated provider, with a file beside it."""
    folder = tmp_path_factory.mktemp("query")
    server = SimServerProcess([])
    server.start()
    try:
        db = folder / "results.duckdb"
        outcome = run_sweep(sweep(str(db), [sim_model(server)], run="q"), make_prompts(6), command="t",
                            progress=False)
        assert outcome.complete
    finally:
        server.stop()
    (folder / "beside.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    return db


def snapshot(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


REFUSED = [
    "COPY (SELECT 42) TO '{beside}'",
    "COPY results TO '{folder}/new.parquet' (FORMAT parquet)",
    "EXPORT DATABASE '{folder}/exported'",
    "SELECT * FROM read_csv('{beside}')",
    "SELECT * FROM read_csv_auto('{beside}')",
    "SELECT * FROM read_text('/etc/hostname')",
    "SELECT * FROM read_blob('{beside}')",
    "SELECT * FROM read_parquet('{folder}/x.parquet')",
    "SELECT * FROM read_json('{folder}/x.json')",
    "SELECT * FROM glob('{folder}/*')",
    "SELECT * FROM '{beside}'",
    "DESCRIBE '{beside}'",
    "SELECT count(*) FROM results WHERE prompt_key IN (SELECT a FROM read_csv('{beside}'))",
    "SELECT * FROM query('SELECT 1')",
    "SELECT getenv('FAIRSWEEP_QUERY_PROBE')",
    "ATTACH '{folder}/other.duckdb' AS other",
    "DETACH results",
    "INSTALL httpfs",
    "LOAD httpfs",
    "SET enable_external_access = true",
    "SET memory_limit = '1GB'",
    "RESET threads",
    "PRAGMA memory_limit = '1GB'",
    "PRAGMA enable_profiling",
    "CREATE TABLE t AS SELECT 1",
    "INSERT INTO runs (run) VALUES ('x')",
    "DELETE FROM responses",
    "UPDATE responses SET text = ''",
    "DROP VIEW results",
    "CHECKPOINT",
    "CALL pragma_table_info('runs')",
    "EXPLAIN ANALYZE SELECT 1",
    "SELECT nextval('s')",
    "SELECT 1; COPY (SELECT 1) TO '{beside}'",
]
ALLOWED = [
    ("SELECT prompt_key, status FROM results ORDER BY prompt_key", 6),
    ("SELECT model, done FROM run_status", 1),                                   # a view
    ("SELECT mrni_ratio(done, total) FROM run_status", 1),                       # a macro
    ("WITH ok AS (SELECT * FROM results WHERE status = 'ok') SELECT count(*) FROM ok", 1),
    ("DESCRIBE results", None),
    ("SUMMARIZE responses", None),
    ("SHOW TABLES", None),
    ("SELECT table_name FROM information_schema.tables WHERE table_name = 'responses'", 1),
    ("SELECT table_name FROM duckdb_tables() WHERE table_name = 'runs'", 1),
    ("PRAGMA table_info('runs')", None),
    ("FROM results LIMIT 2", 2),
]


@pytest.mark.parametrize("sql", REFUSED)
def test_each_refused_statement_exits_2_with_one_line_and_every_file_stays_byte_identical(
        sql, results_db, monkeypatch, capsys):
    monkeypatch.setenv("FAIRSWEEP_QUERY_PROBE", ENV_MARKER)
    folder = results_db.parent
    before = snapshot(folder)
    code = cli.main(["query", "--db", str(results_db),
                     sql.format(beside=folder / "beside.csv", folder=folder), "--format", "csv"])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err.startswith("fairsweep: error: ") and captured.err.strip().count("\n") == 0, captured.err
    assert captured.out == "" and ENV_MARKER not in captured.err
    assert snapshot(folder) == before and not (folder / "exported").exists()


@pytest.mark.parametrize("sql, n", ALLOWED)
def test_reads_of_tables_views_macros_and_the_catalog_return_rows(sql, n, results_db, capsys):
    before = snapshot(results_db.parent)
    assert cli.main(["query", "--db", str(results_db), sql, "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and (n is None or len(rows) == n)
    assert snapshot(results_db.parent) == before


def test_the_statement_check_guards_a_cursor_whose_settings_are_not_ours(results_db, tmp_path):
    """The live-read path: a cursor of a read-write connection with external access on."""
    copy = tmp_path / "live.duckdb"
    copy.write_bytes(results_db.read_bytes())
    target = tmp_path / "beside.csv"
    target.write_text("original\n", encoding="utf-8")
    conn = open_db(copy)
    try:
        cursor = conn.cursor()
        for sql in (f"COPY (SELECT 42) TO '{target}'", f"SELECT * FROM read_text('{target}')",
                    "INSERT INTO runs (run) VALUES ('x')", f"SELECT * FROM '{target}'"):
            with pytest.raises(QueryError, match="query refused"):
                run_readonly(cursor, sql)
        assert run_readonly(cursor, "SELECT count(*) FROM results") == (["count_star()"], [(6,)])
        assert cursor.execute("SELECT current_setting('enable_external_access')").fetchone() == (True,)
    finally:
        conn.close()
    assert target.read_text(encoding="utf-8") == "original\n"


def test_duckdb_guards_hold_on_their_own_without_the_statement_check(results_db):
    beside = results_db.parent / "beside.csv"
    before = beside.read_bytes()
    conn = open_readonly(results_db)
    try:
        for sql in (f"COPY (SELECT 42) TO '{beside}'", f"SELECT * FROM read_text('{beside}')",
                    "SET enable_external_access = true", "SET lock_configuration = false", "LOAD httpfs",
                    "SELECT getenv('HOME')", "INSERT INTO runs (run) VALUES ('x')"):
            with pytest.raises(duckdb.Error):
                conn.execute(sql).fetchall()
        settings = dict(conn.execute("SELECT name, value FROM duckdb_settings() WHERE name IN "
                                     "('enable_external_access', 'lock_configuration', 'autoload_known_extensions',"
                                     " 'autoinstall_known_extensions')").fetchall())
        assert settings == {"enable_external_access": "false", "lock_configuration": "true",
                            "autoload_known_extensions": "false", "autoinstall_known_extensions": "false"}
    finally:
        conn.close()
    assert beside.read_bytes() == before


def test_check_query_words():
    with pytest.raises(QueryError, match="use `fairsweep export`"):
        check_query("COPY results TO 'x.csv'")
    with pytest.raises(QueryError, match="does not parse"):
        check_query("SELEC 1")
    with pytest.raises(QueryError, match="no SQL statement"):
        check_query("  ")
    check_query("SELECT 1; SELECT * FROM results")  # no error
    check_query("-- the columns\nPRAGMA table_info('runs'); -- again\nPRAGMA table_info('runs')")  # found by hypothesis
    with pytest.raises(QueryError, match="PRAGMA enable_profiling is not a read"):
        check_query("/* pragma table_info */ PRAGMA enable_profiling")
    with pytest.raises(QueryError) as caught:
        check_query('SELECT * FROM "read\ncsv"(1)')
    assert "\n" not in str(caught.value)


def test_the_real_cli_refuses_a_copy(results_db):
    beside = results_db.parent / "beside.csv"
    before = beside.read_bytes()
    result = subprocess.run(fairsweep_cmd("query", "--db", str(results_db), f"COPY (SELECT 42) TO '{beside}'"),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and result.stderr.strip().count("\n") == 0, result.stderr
    assert "query refused: a COPY statement writes files" in result.stderr
    assert beside.read_bytes() == before

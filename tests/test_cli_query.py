"""`fairsweep query`, `status` and `export` on a DB made by a real run against the sim server."""

from __future__ import annotations

import csv
import io
import json
import subprocess

import duckdb

from helpers import fairsweep_cmd, make_prompts, sim_model, sweep
from fairsweep.engine.runner import run_sweep


def test_query_formats_status_and_export(sim, db_path, tmp_path):
    server = sim("--fault-500", "0.2")
    outcome = run_sweep(sweep(db_path, [sim_model(server)], run="q"), make_prompts(20), command="t", progress=False)
    assert outcome.complete
    sql = "SELECT prompt_key, status FROM results ORDER BY prompt_key"
    as_json = subprocess.run(fairsweep_cmd("query", "--db", db_path, sql, "--format", "json"),
                             capture_output=True, text=True, timeout=60)
    assert as_json.returncode == 0, as_json.stderr
    data = json.loads(as_json.stdout)
    assert len(data) == 20 and data[0] == {"prompt_key": "p00000", "status": "ok"}
    as_csv = subprocess.run(fairsweep_cmd("query", "--db", db_path, sql, "--format", "csv"),
                            capture_output=True, text=True, timeout=60)
    assert list(csv.reader(io.StringIO(as_csv.stdout)))[1] == ["p00000", "ok"]
    status = subprocess.run(fairsweep_cmd("status", "--db", db_path), capture_output=True, text=True, timeout=60)
    assert "20 / 20 (100.0%)" in status.stdout and "http_500" in status.stdout
    out = tmp_path / "export"
    exported = subprocess.run(fairsweep_cmd("export", "--db", db_path, "--run", "q", "--out", str(out)),
                              capture_output=True, text=True, timeout=60)
    assert exported.returncode == 0, exported.stderr
    conn = duckdb.connect()
    assert conn.execute(f"SELECT count(*) FROM '{out / 'results.parquet'}'").fetchone() == (20,)
    assert conn.execute(f"SELECT count(*) FROM read_csv_auto('{out / 'results.csv'}')").fetchone() == (20,)
    assert conn.execute(f"SELECT count(*) FROM '{out / 'attempts.parquet'}' WHERE outcome = 'transient'"
                        ).fetchone()[0] > 0


def test_bad_sql_is_a_one_line_error(sim, db_path):
    server = sim()
    run_sweep(sweep(db_path, [sim_model(server)]), make_prompts(2), command="t", progress=False)
    result = subprocess.run(fairsweep_cmd("query", "--db", db_path, "SELECT nope FROM results"),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.startswith("fairsweep: error:") and result.stderr.strip().count("\n") == 0

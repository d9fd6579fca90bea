"""Live reads: while `fairsweep run` writes its DB, `status`, `query`, `report`, `export` and `plan` from
other processes read what is committed so far, through the run, under `query`'s read-only rules."""

from __future__ import annotations

import csv
import json
import os
import re
import stat
import time
import subprocess
from pathlib import Path

from helpers import fairsweep_cmd, grown, rows, wait_for_ok
from fairsweep.storage.live import socket_path


def write_config(path: Path, db: Path, base_url: str, run: str = "live", **model) -> Path:
    fields = {"name": "sim", "model": "sim-model", "api_base": base_url, "max_concurrency": 4, "timeout_s": 5,
              **model}
    lines = [f'db = "{db}"', f'run = "{run}"', 'benchmarks = ["mrni"]', "flush_ms = 100", "", "[[models]]"]
    path.write_text("\n".join(lines + [f"{k} = {json.dumps(v)}" for k, v in fields.items()]) + "\n")
    return path


def fairsweep(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(fairsweep_cmd(*args), env=env, capture_output=True, text=True, timeout=120)


def answered(config: Path, env: dict) -> int:
    done = fairsweep("query", "--config", str(config), "--format", "json",
                     "SELECT count(*) AS n FROM results WHERE status = 'ok'", env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)[0]["n"]


def status_done(config: Path, env: dict) -> int:
    """The `done` of `done / total` in `status`."""
    done = fairsweep("status", "--config", str(config), env=env)
    assert done.returncode == 0 and "sim" in done.stdout, done.stderr
    return int(re.search(r"(\d+) / 240", done.stdout).group(1))


def report_answered(config: Path, out: Path, env: dict) -> int:
    """Answers labelled so far, summed over the MRNI-BB report's condition rows."""
    done = fairsweep("report", "--config", str(config), "--bench", "mrni", "--format", "csv", "--out", str(out),
                     env=env)
    assert done.returncode == 0, done.stderr
    with open(out / "mrni_conditions.csv", newline="") as fh:
        return sum(int(row["answered"]) for row in csv.DictReader(fh))


def test_a_run_is_read_while_it_writes_and_ends_complete(sim, tmp_path, mrni_dir):
    server = sim("--latency-ms", "20")
    db = tmp_path / "live.duckdb"
    beside = tmp_path / "beside.csv"
    beside.write_text("keep me\n")
    config = write_config(tmp_path / "c.toml", db, server.base_url, rpm=900)  # 240 prompts: ~16 s
    env = {**os.environ, "FAIRSWEEP_MRNI_DIR": str(mrni_dir)}
    run = subprocess.Popen(fairsweep_cmd("run", "--config", str(config), "--limit", "240", "--no-progress"),
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_ok(server, 20)
        first = answered(config, env), status_done(config, env), report_answered(config, tmp_path / "r1", env)
        exported = fairsweep("export", "--config", str(config), "--out", str(tmp_path / "export"), "--format", "csv",
                             env=env)
        assert exported.returncode == 0, exported.stderr
        with open(tmp_path / "export" / "results.csv", newline="") as fh:
            assert 0 < len(list(csv.DictReader(fh))) == 240  # every planned request, answered or pending
        plan = fairsweep("plan", "--config", str(config), "--limit", "240", env=env)
        assert plan.returncode == 0 and "sim" in plan.stdout, plan.stderr
        refused = fairsweep("query", "--config", str(config), f"COPY (SELECT 42) TO '{beside}'", env=env)
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "COPY" in refused.stderr
        second = grown(lambda: (answered(config, env), status_done(config, env),
                                report_answered(config, tmp_path / "r2", env)), first, server)
        assert all(0 < a < b for a, b in zip(first, second)), (first, second)  # query, status, report
        assert run.poll() is None, "the run should still be going"
        path = socket_path(db)
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and stat.S_ISSOCK(os.stat(path).st_mode)
    finally:
        _, err = run.communicate(timeout=120)
    assert run.returncode == 0, err
    assert beside.read_text() == "keep me\n"
    assert rows(str(db), "SELECT count(*) FROM results WHERE status = 'ok'") == [(240,)]
    assert not socket_path(db).exists(), "the socket goes with the run"


def test_without_a_live_run_a_locked_db_says_so_and_a_stale_socket_is_ignored(tmp_path):
    """A socket left by a killed run answers nothing: reads open the file as usual."""
    db = tmp_path / "r.duckdb"
    path = socket_path(db)
    import duckdb
    duckdb.connect(str(db)).close()
    path.write_text("")  # a stale leftover, not a socket
    done = subprocess.run(fairsweep_cmd("query", "--db", str(db), "SELECT 1 AS one", "--format", "json"),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and json.loads(done.stdout) == [{"one": 1}], done.stderr


def test_without_a_terminal_progress_is_a_line_per_model_every_few_seconds(sim, tmp_path, mrni_dir):
    server = sim("--latency-ms", "10")
    config = write_config(tmp_path / "c.toml", tmp_path / "p.duckdb", server.base_url, rpm=1200)  # 60: ~3 s
    env = {**os.environ, "FAIRSWEEP_MRNI_DIR": str(mrni_dir), "FAIRSWEEP_PROGRESS_S": "1"}
    done = subprocess.run(fairsweep_cmd("run", "--config", str(config), "--limit", "60"), env=env,
                          capture_output=True, text=True, timeout=120)  # stderr is a pipe here, not a terminal
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "] sim: " in line]
    assert len(lines) >= 3, done.stderr
    assert all("stored" in line and "ETA" in line and "pace 19.80/s" in line and "429s 0" in line for line in lines)
    assert lines[-1].split("] sim: ")[1].startswith("60/60 stored")
    assert "\x1b[" not in done.stderr.split("scored")[0].split("run live")[0]  # no bars, no escape codes


def test_a_read_that_outlives_the_run_phase_goes_to_the_next_server_or_the_file(tmp_path):
    """Between a run's phases (sending, scoring, a judge stage) and after its end, nobody serves reads
    for a moment: a live connection then reads the file itself."""
    from fairsweep.storage.db import open_db
    from fairsweep.storage.live import LiveConnection, LiveServer

    db = tmp_path / "h.duckdb"
    writer = open_db(db)
    server = LiveServer(writer, db).start()
    reader = LiveConnection(server.path, db)
    assert reader.execute("SELECT count(*) FROM attempts").fetchone() == (0,)
    server.close()
    writer.close()  # the run ended: the file is free
    assert reader.execute("SELECT count(*) FROM attempts").fetchone() == (0,)  # read directly now
    reader.close()


def test_a_read_the_run_interrupts_by_ending_its_phase_is_answered_from_the_file(tmp_path):
    """A phase of the run ends while a reader's query is still running: closing the live server interrupts
    the read and waits for it (DuckDB refuses to close a connection with a cursor still running), the run
    closes its connection, and the reader gets its rows from the file, not an 'Interrupted!' error."""
    import threading

    from fairsweep.storage.db import open_db
    from fairsweep.storage.live import LiveServer, connect_live

    db = str(tmp_path / "phase.duckdb")
    conn = open_db(db)
    live = LiveServer(conn, db).start()
    reader = connect_live(db)
    answer: dict = {}
    slow = "SELECT count(*) FROM range(3000000000) a(i) WHERE i % 7 = 3"

    def read() -> None:
        try:
            answer["rows"] = reader.execute(slow).fetchall()
        except Exception as exc:  # the assertion below names it
            answer["error"] = repr(exc)

    thread = threading.Thread(target=read)
    thread.start()
    deadline = time.monotonic() + 30
    while not any("process_request" in t.name for t in threading.enumerate()):  # the server is answering it
        assert time.monotonic() < deadline, "the read never reached the run"
        time.sleep(0.01)
    time.sleep(0.2)  # into the query itself (its answer takes seconds)
    live.close()
    conn.close()  # what the run does at the end of a phase
    thread.join(timeout=120)
    reader.close()
    assert answer == {"rows": [(len(range(3, 3_000_000_000, 7)),)]}, answer


def test_a_live_read_that_runs_out_of_the_runs_memory_grows_the_margin_else_says_so_in_one_line(tmp_path, monkeypatch,
                                                                                              capsys):
    """A read the run serves runs in the run's DuckDB, inside its memory limit: one that runs out (a live `report`
    did, in CI) is done again with the margin doubled, as a write is; after the last doubling the reader gets the
    one-line DatabaseError, not DuckDB's error."""
    import pytest

    from fairsweep.errors import DatabaseError
    from fairsweep.storage import memory
    from fairsweep.storage.db import open_db
    from fairsweep.storage.live import LiveServer, connect_live

    big = "SELECT len(l) FROM (SELECT list(i) AS l FROM range(100000) t(i))"  # a list aggregate: never spilled
    monkeypatch.setattr(memory, "WORKING_BYTES", 2**20)
    for growths, name in ((0, "fixed"), (3, "grown")):
        monkeypatch.setattr(memory, "_grown", 0)
        monkeypatch.setattr(memory, "GROWTHS", growths)
        db = str(tmp_path / f"{name}.duckdb")
        conn = open_db(db)
        memory.fit_memory_limit(conn)
        live = LiveServer(conn, db).start()
        reader = connect_live(db)
        try:
            if growths == 0:
                with pytest.raises(DatabaseError, match="^DuckDB ran out of memory in a live read with a working "
                                                        "margin of 1 MB: set FAIRSWEEP_DUCKDB_WORKING_MB higher$"):
                    reader.execute(big).fetchall()
            else:
                assert reader.execute(big).fetchall() == [(100000,)]
                assert memory.working_bytes() > 2**20
                assert "ran out of memory in a live read, done again" in capsys.readouterr().err
        finally:
            reader.close()
            live.close()
            conn.close()

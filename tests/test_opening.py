"""A new DB opened beside the first requests (engine/opening.py): they leave before it is open, what they bring
back is stored once it is, a failed open loses nothing, a run killed before its DB opened resumes without
sending again what it had received, and the engine's modules load without DuckDB."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from helpers import fairsweep_cmd, rows, sweep
from fairsweep.config import ModelSpec
from fairsweep.engine import opening
from fairsweep.engine.opening import opens_beside
from fairsweep.engine.runner import run_sweep
from fairsweep.errors import DatabaseError
from fairsweep.records import Prompt
from fairsweep.sim.probe import on_import
from fairsweep.storage.journal import segments

FIRST_STEP = 32  # engine/plan_stream.PLAN_ROWS: what a new run hands out before its DB is open


def prompts(n: int) -> list[Prompt]:
    return [Prompt("toy", f"p{i:04d}", ({"role": "user", "content": f"Question {i}?"},), {"stratum": "s"})
            for i in range(n)]


def model(server) -> ModelSpec:
    return ModelSpec(name="m", model="sim-model", api_base=server.base_url, max_concurrency=8)


def wait_until(condition, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_a_new_dbs_first_requests_leave_before_it_opens_and_what_they_bring_back_is_stored_once_it_does(
        sim, tmp_path, monkeypatch):
    server = sim()
    real_open = opening.open_db

    def open_once_answered(path, **kwargs):  # a run that waited for its DB before sending would never get here
        wait_until(lambda: server.stats()["ok"] >= FIRST_STEP, "nothing was answered before the DB opened")
        return real_open(path, **kwargs)

    monkeypatch.setattr(opening, "open_db", open_once_answered)
    db = str(tmp_path / "new.duckdb")
    outcome = run_sweep(sweep(db, [model(server)]), prompts(100), command="test", progress=False)
    assert outcome.complete and outcome.models[0].stored == 100
    assert server.stats()["requests"] == 100  # each sent once
    assert rows(db, "SELECT count(*), count(DISTINCT request_id) FROM requests") == [(100, 100)]
    assert rows(db, "SELECT count(*), count(DISTINCT request_id) FROM responses") == [(100, 100)]
    assert rows(db, "SELECT count(*) FROM sessions") == [(1,)] and rows(db, "SELECT run FROM runs") == [("r1",)]
    assert not segments(db)  # every journal segment committed and removed


def test_a_failed_open_ends_the_run_with_its_error_and_what_was_received_is_stored_by_the_next_run(
        sim, tmp_path, monkeypatch):
    server = sim()

    def open_fails(path, **kwargs):
        wait_until(lambda: server.stats()["ok"] >= FIRST_STEP, "nothing was answered before the DB opened")
        time.sleep(0.3)  # the answers reach the journal
        raise DatabaseError(f"cannot open database {path}: No space left on device")

    config = sweep(str(tmp_path / "new.duckdb"), [model(server)])
    monkeypatch.setattr(opening, "open_db", open_fails)
    with pytest.raises(DatabaseError, match="No space left"):
        run_sweep(config, prompts(100), command="test", progress=False)
    assert segments(config.db)  # the answers it received are in the journal
    monkeypatch.undo()
    outcome = run_sweep(config, prompts(100), command="test", progress=False)
    assert outcome.complete
    assert server.stats()["requests"] == 100  # what the failed session had received was not sent again
    assert rows(config.db, "SELECT count(*), count(DISTINCT request_id) FROM responses") == [(100, 100)]
    assert rows(config.db, "SELECT count(*) FROM requests") == [(100,)]


BLOCKED_OPEN = on_import("fairsweep.engine.opening", """
import threading
module.open_db = lambda *args, **kwargs: threading.Event().wait()  # the DB never opens
""")


def test_a_run_killed_before_its_new_db_opened_resumes_without_sending_what_it_had_received(sim, tmp_path,
                                                                                               mrni_dir):
    server = sim()
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(BLOCKED_OPEN)
    db = tmp_path / "killed.duckdb"
    command = fairsweep_cmd("run", "--model", f"sim=sim-model@{server.base_url}", "--db", str(db), "--run", "k",
                            "--limit", "60", "--no-progress")
    env = {**os.environ, "FAIRSWEEP_MRNI_DIR": str(mrni_dir)}
    proc = subprocess.Popen(command, env={**env, "PYTHONPATH": os.pathsep.join([str(hook), *sys.path])},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def journaled_answers() -> int:
        return sum(line.startswith(b'["r"') for p in segments(db) for line in p.read_bytes().splitlines())

    try:
        wait_until(lambda: journaled_answers() >= FIRST_STEP, "the first answers never reached the journal")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert not db.exists() and server.stats()["requests"] == FIRST_STEP  # nothing more without the DB
    resumed = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert server.stats()["requests"] == 60  # the 32 answered before the kill were not sent again
    assert rows(str(db), "SELECT count(*), count(DISTINCT request_id) FROM responses") == [(60, 60)]
    assert rows(str(db), "SELECT count(*) FROM requests WHERE run = 'k'") == [(60,)]


def test_only_a_new_db_in_a_writable_folder_without_a_journal_opens_beside_a_local_run(tmp_path):
    spec = ModelSpec(name="m", model="sim-model", api_base="http://127.0.0.1:9/v1")
    new = sweep(str(tmp_path / "new.duckdb"), [spec])
    assert opens_beside(new, [spec], "local")
    assert not opens_beside(new, [spec], "ray")  # Ray workers send: the DB opens first
    batch = ModelSpec(name="b", model="openai/gpt-4o-mini", api_base="http://127.0.0.1:9/v1", batch=True)
    assert not opens_beside(new, [spec, batch], "local")  # batches are recorded before they are submitted
    assert not opens_beside(sweep(str(tmp_path / "no-such-folder" / "x.duckdb"), [spec]), [spec], "local")
    (tmp_path / "old.duckdb").write_bytes(b"")
    assert not opens_beside(sweep(str(tmp_path / "old.duckdb"), [spec]), [spec], "local")
    (tmp_path / ".left.duckdb.journal.1").write_bytes(b"")  # a killed run's journal: replayed by the open first
    assert not opens_beside(sweep(str(tmp_path / "left.duckdb"), [spec]), [spec], "local")


def test_the_engine_and_storage_modules_load_without_duckdb():
    """DuckDB's import is what a new run's first requests no longer wait for: nothing on their path imports it."""
    code = textwrap.dedent('''
        import pkgutil, sys
        class Refuse:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "duckdb":
                    raise ImportError("duckdb imported by " + sys._getframe(2).f_code.co_filename)
        sys.meta_path.insert(0, Refuse())
        import fairsweep.cli, fairsweep.commands.run, fairsweep.benchmarks.pipeline, fairsweep.benchmarks.sampling
        import fairsweep.engine.executors.local, fairsweep.engine.opening, fairsweep.providers.openai_compat
        import fairsweep.storage
        for module in pkgutil.iter_modules(fairsweep.storage.__path__):
            __import__("fairsweep.storage." + module.name)
        assert "duckdb" not in sys.modules
    ''')
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_two_runs_started_at_once_on_one_new_db_store_each_answer_once(sim, tmp_path, mrni_dir):
    """The DB admits one writer: the other run ends with a one-line error (exit 2) naming the fix, or, started
    once the first had finished, resumes it; a third run then finds every answer stored once."""
    server = sim("--latency-ms", "20")
    db = tmp_path / "twice.duckdb"
    command = fairsweep_cmd("run", "--model", f"sim=sim-model@{server.base_url}", "--db", str(db), "--run", "t",
                            "--limit", "40", "--no-progress")
    env = {**os.environ, "FAIRSWEEP_MRNI_DIR": str(mrni_dir)}
    procs = [subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    ended = [(proc.returncode, err) for proc in procs for err in [proc.communicate(timeout=300)[1]]]
    for code, err in ended:
        errors = [line for line in err.splitlines() if line.startswith("fairsweep: error:")]
        assert code == 0 or (code == 2 and len(errors) == 1 and "Traceback" not in err
                             and ("in use by another fairsweep process" in errors[0]
                                  or "created by another fairsweep run" in errors[0])), err
    assert 0 in [code for code, _ in ended]
    final = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert final.returncode == 0, final.stderr
    assert rows(str(db), "SELECT count(*), count(DISTINCT request_id) FROM responses") == [(40, 40)]
    assert rows(str(db), "SELECT count(*), count(DISTINCT request_id) FROM requests") == [(40, 40)]
    assert not segments(db)

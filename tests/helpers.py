"""Helpers shared by tests: synthetic prompts, sim-backed model specs, sweep configs, CLI invocations."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import duckdb

from fairsweep.config import ModelSpec, SweepConfig
from fairsweep.records import Prompt
from fairsweep.sim.server import SimServerProcess
from fairsweep.sim.state import prompt_fingerprint


REPO = Path(__file__).resolve().parents[1]


def make_prompts(n: int, benchmark: str = "toy", words: int = 8) -> list[Prompt]:
    """n distinct single-turn prompts with stable keys."""
    return [Prompt(benchmark, f"p{i:05d}",
                   ({"role": "user", "content": f"Question {i}: " + " ".join(["word"] * words)},),
                   {"i": i, "stratum": f"s{i % 3}"}) for i in range(n)]


def sim_model(server: SimServerProcess, name: str = "sim", **fields) -> ModelSpec:
    fields.setdefault("max_concurrency", 8)
    fields.setdefault("timeout_s", 5.0)
    return ModelSpec(name=name, model=fields.pop("model", "sim-model"), api_base=server.base_url, **fields)


def sweep(db: str, models: list[ModelSpec], run: str = "r1", **fields) -> SweepConfig:
    fields.setdefault("flush_ms", 50)
    return SweepConfig(db=db, run=run, benchmarks=("mrni",), models=tuple(models), **fields)


def fairsweep_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "fairsweep.cli", *args]


def rows(db: str, sql: str, params=None):
    """Query a results DB read-only."""
    conn = duckdb.connect(db, read_only=True)
    try:
        return conn.execute(sql, params or []).fetchall()
    finally:
        conn.close()


def wait_for_ok(server: SimServerProcess, n: int, timeout: float = 60) -> None:
    """Block until the simulated server has answered n requests (a run is under way)."""
    deadline = time.monotonic() + timeout
    while server.stats()["ok"] < n:
        assert time.monotonic() < deadline, "the run never got going"
        time.sleep(0.05)


def kill_once_answered(args: list[str], server: SimServerProcess, n: int, timeout: float = 60) -> None:
    """Start `fairsweep *args`, SIGKILL it once the simulated server has answered n requests, reap it."""
    import signal
    import subprocess

    proc = subprocess.Popen(fairsweep_cmd(*args), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    while server.stats()["ok"] < n:
        assert proc.poll() is None and time.monotonic() < deadline, f"fairsweep {args[0]} never got going"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()  # drains and closes its pipes
    assert proc.returncode == -signal.SIGKILL


def stored_fingerprints(db: str) -> set[str]:
    """The sim server's fingerprints of every prompt with a stored response, counting the answers a killed
    process had journaled (a read-write open replays them, as the next run would)."""
    from fairsweep.storage.db import open_db
    open_db(db).close()
    messages = rows(db, "SELECT p.messages FROM responses s JOIN requests r USING (request_id) "
                        "JOIN prompts p USING (benchmark, prompt_key, prompt_hash)")
    return {prompt_fingerprint(json.loads(m[0])) for m in messages}

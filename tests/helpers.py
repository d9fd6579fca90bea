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


class StderrLines:
    """Reads a process's stderr in a thread, so a test can wait for a line (a condition, not a fixed time)
    and still get the whole text once the process has ended."""

    def __init__(self, proc) -> None:
        import threading

        self.proc, self.lines, self._cond = proc, [], threading.Condition()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            with self._cond:
                self.lines.append(line)
                self._cond.notify_all()
        with self._cond:
            self.lines.append(None)  # EOF
            self._cond.notify_all()

    def wait_for(self, text: str, timeout: float = 60) -> str:
        """The first line containing `text` (fails if the process ends or the time runs out first)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                found = next((ln for ln in self.lines if ln is not None and text in ln), None)
                if found is not None:
                    return found
                assert None not in self.lines, f"the process ended without printing {text!r}:\n{self.text()}"
                assert self._cond.wait(max(0.0, deadline - time.monotonic())) or time.monotonic() < deadline, \
                    f"no line with {text!r} within {timeout} s"

    def text(self) -> str:
        return "".join(ln for ln in self.lines if ln is not None)

    def finish(self, timeout: float = 60) -> str:
        """Wait for the process and its last line; the whole stderr."""
        self.proc.wait(timeout=timeout)
        self._thread.join(timeout=timeout)
        self.proc.stderr.close()
        return self.text()


def wait_for_quiet(server: SimServerProcess, polls: int = 5, every: float = 0.1, timeout: float = 60) -> None:
    """Until the simulated server has received no new request over `polls` looks in a row (a killed
    process's workers have stopped sending)."""
    deadline = time.monotonic() + timeout
    last, same = server.stats()["requests"], 0
    while same < polls:
        assert time.monotonic() < deadline, "the server never went quiet"
        time.sleep(every)
        now = server.stats()["requests"]
        same, last = (same + 1, last) if now == last else (0, now)


def grown(read, before: tuple, server: SimServerProcess, timeout: float = 60) -> tuple:
    """Read again (`read()` -> a tuple of counts) once the server has answered more, until every count has
    grown past `before`: live reads compared across two looks without a fixed wait."""
    deadline = time.monotonic() + timeout
    while True:
        wait_for_ok(server, server.stats()["ok"] + 10, timeout=max(1.0, deadline - time.monotonic()))
        after = read()
        if all(a < b for a, b in zip(before, after)) or time.monotonic() > deadline:
            return after

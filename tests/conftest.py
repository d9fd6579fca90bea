"""Shared fixtures: the MRNI-BB fixture directory, a fresh DuckDB path, synthetic prompts, the sim server."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from fairsweep.sim.server import SimServerProcess

# A suite started in the background without job control (`pytest &` in a script) inherits SIGINT ignored, and
# so would every fairsweep it starts: the Ctrl-C tests would then fail for the way the suite was launched.
# A handler here (reset to the default in each child at exec) gives the children Python's own Ctrl-C.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def mrni_dir() -> Path:
    """The MRNI-BB fixture: $FAIRSWEEP_MRNI_DIR (CI sets it to ../shared/data/mrni-bb)."""
    value = os.environ.get("FAIRSWEEP_MRNI_DIR")
    if not value:
        pytest.fail("set FAIRSWEEP_MRNI_DIR to the MRNI-BB data folder (e.g. ../shared/data/mrni-bb)")
    path = Path(value).resolve()  # a relative value (the README's default) must survive a chdir or a symlink
    if not path.is_dir():
        pytest.fail(f"FAIRSWEEP_MRNI_DIR={value} is not a directory")
    return path


@pytest.fixture(autouse=True)
def memory_as_a_new_process(monkeypatch):
    """Each test starts with DuckDB's working margin as a new process has it: a run earlier in this process
    ended its plan, which leaves the smaller margin of a written plan (storage/memory.py), and a write may have
    run out and grown it."""
    from fairsweep.storage import memory
    monkeypatch.setattr(memory, "_planning", True)
    monkeypatch.setattr(memory, "_grown", 0)


@pytest.fixture
def db_path(tmp_path: Path) -> str:
    return str(tmp_path / "results.duckdb")


@pytest.fixture(scope="module")
def server():
    """One simulated provider for a module's tests (call reset_stats() to count from zero)."""
    process = SimServerProcess([])
    process.start()
    yield process
    process.stop()


@pytest.fixture
def sim():
    """Factory: sim(args...) starts a simulated provider on 127.0.0.1 for the test's duration."""
    servers: list[SimServerProcess] = []

    def start(*args: str) -> SimServerProcess:
        server = SimServerProcess(list(args))
        server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()

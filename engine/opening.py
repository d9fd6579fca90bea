"""A new DB opened beside the run's first requests instead of before them.

A run on a DB file that does not exist yet has nothing to resume: no plan, no answers, no batches, no spend.
Its first requests need none of the DB, so `DbOpening` imports DuckDB, creates the file, fits its memory,
starts the live-read server and registers the run in a thread of its own, once the adapters' modules are
loaded (providers/registry.preload), while the executor sends. Until then the run holds a
`DeferredConnection`: a use of it waits for the DB, then is the DB's. Answers that arrive meanwhile are in the
journal at once (storage/journal.py) and committed once the DB is open; the plan's first step is handed out
before it is written and written then (engine/plan_stream.Planner).

`opens_beside(...)` says when a run may do this: the file and its journal are absent, its folder exists and is
writable (so a bad --db is still refused before anything is sent), the local executor sends, no model batches.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..config import ModelSpec, SweepConfig
from ..errors import DatabaseError
from ..providers.registry import wait_for_preload
from ..storage.checkpoint import register_run
from ..storage.db import open_db
from ..storage.journal import segments
from ..storage.live import LiveServer
from ..storage.memory import fit_memory_limit


def opens_beside(config: SweepConfig, specs: list[ModelSpec], executor_name: str) -> bool:
    """True when the run's DB can be opened while its first requests go out (see the module docstring)."""
    path = Path(config.db)
    return (executor_name == "local" and not any(s.batch for s in specs) and not path.exists()
            and path.parent.is_dir() and os.access(path.parent, os.W_OK | os.X_OK) and not segments(path))


class RunDb:
    """The run's DB for one session: opened before anything is sent, or (a new DB, engine/opening.py) in a
    thread beside the first requests. `conn` may be used at once either way."""

    def __init__(self, conn, session_id: str, close, *, opening: "DbOpening | None" = None, replayed: bool = False):
        self.conn, self.session_id, self.close = conn, session_id, close
        self.opening, self.replayed = opening, replayed  # `opening`: a new DB still opening beside the run

    @property
    def new(self) -> bool:
        return self.opening is not None

    @classmethod
    def open(cls, config: SweepConfig, command: str, live_lines: Callable[[], Any], *, beside: bool) -> "RunDb":
        """`live_lines`: what only this process knows (pace, stops), served with the live reads (`view`)."""
        state = lambda: {"run": config.run, "models": live_lines()}  # noqa: E731
        if beside:
            opening = DbOpening(config, command, uuid.uuid4().hex, state).start()
            return cls(opening.conn, opening.session_id, opening.close, opening=opening)
        replayed = bool(segments(config.db))  # a killed run's journal, replayed by the open
        new_db = not os.path.exists(config.db)
        conn = open_db(config.db)
        live, session_id = serve_run(conn, config, command, state, new=new_db)

        def close() -> None:
            try:
                live.close()
            finally:
                conn.close()

        return cls(conn, session_id, close, replayed=replayed)


def serve_run(conn, config: SweepConfig, command: str, state: Callable[[], Any], *, new: bool,
              session_id: str | None = None) -> tuple[LiveServer, str]:
    """On the open DB: fit DuckDB's memory, start the live reads, register the run (with `session_id`, else a new
    one). Returns the live server and the session id; closes `conn` if any of it fails."""
    live = None
    try:
        # DuckDB caches what its indexes need plus a margin, not 80% of the machine; the plan is written first
        fit_memory_limit(conn, new=new, planning=True)
        live = LiveServer(conn, config.db, state=state).start()  # other commands read the DB through this process
        return live, register_run(conn, config, command, session_id=session_id)
    except BaseException:
        if live is not None:
            live.close()
        conn.close()
        raise

class DbOpening:
    """Opens a new DB in a background thread: `conn` is usable at once (each use waits for the open)."""

    def __init__(self, config: SweepConfig, command: str, session_id: str, state: Callable[[], Any]):
        self.config, self.command, self.session_id, self.state = config, command, session_id, state
        self._done = threading.Event()
        self._real: Any = None
        self._error: BaseException | None = None
        self._live: LiveServer | None = None
        self._on_open: list[Callable[[Any], None]] = []
        self._lock = threading.Lock()  # between on_open() and the open running what it registered
        self.conn = DeferredConnection(self)
        self._thread = threading.Thread(target=self._open, name="fairsweep-db-open", daemon=True)

    def start(self) -> "DbOpening":
        self._thread.start()
        return self

    @property
    def ready(self) -> bool:
        """The DB is open (or failed to open: a use raises that error)."""
        return self._done.is_set()

    def on_open(self, write: Callable[[Any], None]) -> None:
        """Run `write(conn)` in the opening thread once the DB is open, before any other use of it proceeds
        (e.g. the plan's first steps, before the answers that need them are committed); at once, here, if the
        DB is open already."""
        with self._lock:
            if not self.ready:
                self._on_open.append(write)
                return
        write(self.wait())

    def opened(self) -> bool:
        """Waits for the open to end; True if the DB opened."""
        self._done.wait()
        return self._error is None

    def wait(self) -> Any:
        """The open connection; raises what the open raised."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._real

    def close(self) -> None:
        """Stop the live reads and close the DB (after its open, if it is still opening)."""
        self._done.wait()
        try:
            if self._live is not None:
                self._live.close()
        finally:
            if self._real is not None:
                self._real.close()

    def _open(self) -> None:
        try:
            wait_for_preload()  # DuckDB's import and the adapters' would take the GIL from each other
            conn = open_db(self.config.db, replay_journal=False)  # the journal beside it is this run's own
            if conn.execute("SELECT EXISTS (SELECT 1 FROM runs)").fetchone()[0]:  # not new after all
                conn.close()
                raise DatabaseError(
                    f"database {self.config.db} was created by another fairsweep run as this one started: "
                    f"run the command again to resume (the answers this one received are kept)")
            live, _ = serve_run(conn, self.config, self.command, self.state, new=True, session_id=self.session_id)
            try:
                with self._lock:
                    for write in self._on_open:
                        write(conn)
                    self._live, self._real = live, conn
                    self._done.set()
            except BaseException:
                live.close()
                conn.close()
                raise
        except BaseException as exc:  # raised where the run next uses the DB
            self._error = exc
            self._done.set()


class DeferredConnection:
    """A DuckDB connection (or one of its cursors) that `DbOpening` is still opening. `cursor()` returns at
    once; any other use waits for the DB and is then the real connection's (or cursor's)."""

    def __init__(self, opening: DbOpening, make: Callable[[Any], Any] | None = None):
        self._opening, self._make = opening, make
        self._lock = threading.Lock()
        self._target: Any = None

    def cursor(self) -> Any:
        if self._make is None and self._opening.ready:
            return self._opening.wait().cursor()
        return DeferredConnection(self._opening, make=lambda conn: conn.cursor())

    def close(self) -> None:
        """Closes a cursor once the DB is open; the connection itself is closed by DbOpening.close()."""
        if self._make is not None and self._opening.opened():
            self.resolve().close()

    def resolve(self) -> Any:
        """The real connection or cursor (waits for the open)."""
        with self._lock:
            if self._target is None:
                conn = self._opening.wait()
                self._target = self._make(conn) if self._make is not None else conn
            return self._target

    def __getattr__(self, name: str) -> Any:
        return getattr(self.resolve(), name)

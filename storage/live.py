"""Live reads: while `fairsweep run` writes a DB, every other fairsweep command reads it through the run.

DuckDB admits one writing process, and no other process may open the file while it writes (not even
read-only). So the writing process serves reads itself: a Unix-domain socket beside the DB (mode 0600,
never TCP), one thread per connection, each query on a cursor of its own (a consistent snapshot of what
is committed) under the same read-only guard as `fairsweep query`, rows streamed back in chunks. The
client side is `LiveConnection`, the subset of the DuckDB connection API fairsweep's read paths use;
`storage.db.open_db(..., read_only=True)` returns one when the file is locked by a live writer.
A run may also hand the server a `state` callable (what only the running process knows: the learned
pace, a stopped model's reason); `live_state(db)` asks for it (`fairsweep view` shows it).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pickle
import socket
import socketserver
import struct
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from .duck import duckdb

from ..errors import DatabaseError, QueryError
from .memory import retry_out_of_memory
from .readonly import check_query

CHUNK_ROWS = 2048
_HEADER = struct.Struct("!I")
MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes on Linux, 104 on macOS


def socket_path(db: str | Path) -> Path:
    """Where the run writing `db` listens: a hidden file beside the DB, or (for a path too long for a
    socket) a per-user directory of the temp dir, named by the DB's path."""
    db = Path(db).resolve()
    beside = db.with_name(f".{db.name}.live")
    if len(os.fsencode(beside)) <= MAX_SOCKET_PATH:
        return beside
    digest = hashlib.sha256(os.fsencode(db)).hexdigest()[:24]
    return Path(tempfile.gettempdir()) / f"fairsweep-{os.getuid()}" / f"{digest}.live"


# ---------------------------------------------------------------------------------------- framing

def _send(sock: socket.socket, payload: bytes) -> None:
    sock.sendall(_HEADER.pack(len(payload)) + payload)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    parts, left = [], n
    while left:
        part = sock.recv(min(left, 1 << 20))
        if not part:
            raise ConnectionError("the live run closed the connection")
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def _recv(sock: socket.socket) -> bytes:
    (length,) = _HEADER.unpack(_recv_exact(sock, _HEADER.size))
    return _recv_exact(sock, length)


# ----------------------------------------------------------------------------------------- server

class _Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        try:
            request = json.loads(_recv(self.request))
        except (ConnectionError, ValueError):
            return
        if request.get("state"):
            self._state()
            return
        reads: Reads = self.server.reads  # type: ignore[attr-defined]
        cursor = reads.begin(self.server.conn)  # type: ignore[attr-defined]
        if cursor is None:
            return  # the server is closing: the reader goes to the next phase or the file
        try:
            # No replacement scans: a table name must never resolve to a Python object of this process.
            cursor.execute("SET python_enable_replacements = false")
            self._answer(cursor, request.get("sql", ""), request.get("params"))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the reader went away
        except duckdb.InterruptException:  # interrupted before its first row was sent: the reader retries
            pass
        finally:
            reads.end(cursor)

    def _state(self) -> None:
        state = getattr(self.server, "state", None)
        try:
            payload = {"state": state() if state else None}
        except Exception as exc:  # noqa: BLE001 - a snapshot that failed must not end the run
            payload = {"state": None, "error": type(exc).__name__}
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            _send(self.request, json.dumps(payload, default=str).encode())

    def _answer(self, cursor: duckdb.DuckDBPyConnection, sql: str, params: Any) -> None:
        try:
            check_query(sql, cursor)
            result = retry_out_of_memory(  # the run's margin grows for a read that needs more, as for a write
                cursor, lambda: cursor.execute(sql, params) if params is not None else cursor.execute(sql),
                "a live read")
            description = result.description
        except (QueryError, DatabaseError, duckdb.Error) as exc:
            _send(self.request, pickle.dumps({"error": str(exc).strip().splitlines()[0] if str(exc) else
                                              type(exc).__name__, "kind": type(exc).__name__}))
            return
        plain = [(d[0], str(d[1]), *d[2:]) for d in description] if description else None  # types as SQL names
        _send(self.request, pickle.dumps({"description": plain}))
        while rows := (result.fetchmany(CHUNK_ROWS) if description else []):
            _send(self.request, pickle.dumps(rows))
        _send(self.request, pickle.dumps(None))


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


class Reads:
    """The reads in flight, each on its own cursor: closing interrupts them and waits until every one has
    ended, since DuckDB refuses to close a connection while one of its cursors is still running."""

    def __init__(self) -> None:
        self._cursors: set = set()
        self._closing = False
        self._idle = threading.Condition()

    def begin(self, conn: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection | None:
        with self._idle:
            if self._closing:
                return None
            cursor = conn.cursor()
            self._cursors.add(cursor)
            return cursor

    def end(self, cursor: duckdb.DuckDBPyConnection) -> None:
        cursor.close()
        with self._idle:
            self._cursors.discard(cursor)
            self._idle.notify_all()

    def stop(self, timeout_s: float = 10.0) -> None:
        """No new read; interrupt the running ones; wait for them to end."""
        with self._idle:
            self._closing = True
            for cursor in self._cursors:
                with contextlib.suppress(duckdb.Error):
                    cursor.interrupt()
            self._idle.wait_for(lambda: not self._cursors, timeout=timeout_s)


class LiveServer:
    """Serves read-only queries on `conn`'s database from a background thread, until closed."""

    def __init__(self, conn: duckdb.DuckDBPyConnection, db: str | Path, state=None):
        self.path = socket_path(db)
        self._conn = conn
        self._state = state  # callable() -> JSON-able snapshot of the run's in-process state, or None
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> "LiveServer":
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # left by a killed run: this process holds the DB lock, so it is stale
        old_mask = os.umask(0o177)  # the socket is created 0600: only this user can connect
        try:
            self._server = _Server(str(self.path), _Handler)
        finally:
            os.umask(old_mask)
        self._server.conn = self._conn  # type: ignore[attr-defined]
        self._server.state = self._state  # type: ignore[attr-defined]
        self._server.reads = Reads()  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
                                        name="fairsweep-live-reads", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        self._server.reads.stop()  # type: ignore[attr-defined]  # the conn can be closed once this returns
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self._server = None

    def __enter__(self) -> "LiveServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()


# ----------------------------------------------------------------------------------------- client

class LiveResult:
    """The rows of one query, fetched in full (fetchall/fetchone/fetchmany, description)."""

    def __init__(self, description, rows: list[tuple]):
        self.description = description
        self._rows = rows
        self._at = 0

    def fetchall(self) -> list[tuple]:
        rows, self._at = self._rows[self._at:], len(self._rows)
        return rows

    def fetchone(self) -> tuple | None:
        if self._at >= len(self._rows):
            return None
        self._at += 1
        return self._rows[self._at - 1]

    def fetchmany(self, size: int = 1) -> list[tuple]:
        rows = self._rows[self._at:self._at + size]
        self._at += len(rows)
        return rows


class LiveConnection:
    """Reads a DB through the run that is writing it (see the module docstring). A run moves between
    phases (sending, scoring, a judge stage), each serving reads, with moments in between when the file
    is free: a read that finds no server any more goes to the next one, or to the file itself."""

    live = True
    HANDOVER_S = 15.0  # how long a read waits for the next phase's server or the file

    def __init__(self, path: Path, db: str | Path, config: dict | None = None):
        self.path, self.db, self.config = path, db, config or {}
        self._direct: duckdb.DuckDBPyConnection | None = None

    def execute(self, sql: str, params: Any = None):
        deadline = time.monotonic() + self.HANDOVER_S
        while True:
            if self._direct is not None:
                return self._direct.execute(sql, params) if params is not None else self._direct.execute(sql)
            try:
                return self._ask(sql, params)
            except OSError as exc:  # refused, reset, closed: this phase of the run ended meanwhile
                if time.monotonic() > deadline:
                    raise DatabaseError(f"database {self.db} is being written by a fairsweep run that stopped "
                                        f"answering ({type(exc).__name__}): run the command again") from None
                self._direct = _open_if_free(self.db, self.config)
                time.sleep(0.05)

    def _ask(self, sql: str, params: Any) -> LiveResult:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(str(self.path))
            _send(sock, json.dumps({"sql": sql, "params": params}, default=str).encode())
            head = pickle.loads(_recv(sock))
            rows: list[tuple] = []
            while "error" not in head and (chunk := pickle.loads(_recv(sock))) is not None:
                rows.extend(chunk)
        if "error" in head:
            raise _read_error(head)
        return LiveResult(head["description"], rows)

    def cursor(self) -> "LiveConnection":
        return self

    def close(self) -> None:
        if self._direct is not None:
            self._direct.close()

    def __enter__(self) -> "LiveConnection":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _open_if_free(db: str | Path, config: dict) -> duckdb.DuckDBPyConnection | None:
    """The file read-only, if no process holds it now (between two phases of a run, or after its end)."""
    try:
        return duckdb.connect(str(db), read_only=True, config=config)
    except (duckdb.IOException, duckdb.ConnectionException):  # locked; or still open read-write in this process
        return None


def _read_error(head: dict) -> Exception:
    if head.get("kind") == "QueryError":
        return QueryError(head["error"])
    if head.get("kind") == "DatabaseError":  # e.g. out of memory after the margin's last doubling: one line
        return DatabaseError(head["error"])
    if head.get("kind") == "InterruptException":  # the run closed its connection mid-read: the phase ended
        return ConnectionResetError("the live run ended this phase during the read")
    return duckdb.Error(head["error"])


def connect_live(db: str | Path, config: dict | None = None) -> LiveConnection | None:
    """A connection through the live run writing `db`, or None when no run answers for it. `config`: the
    DuckDB settings to open the file with if the run ends meanwhile (the read-only guards)."""
    path = socket_path(db)
    if not path.exists():
        return None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return None
    return LiveConnection(path, db, config)


def live_state(db: str | Path, timeout_s: float = 5.0) -> dict | None:
    """The in-process state the run writing `db` serves (LiveServer's `state`), or None when no run
    answers for it or it serves none."""
    path = socket_path(db)
    if not path.exists():
        return None
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout_s)
            sock.connect(str(path))
            _send(sock, json.dumps({"state": True}).encode())
            payload = json.loads(_recv(sock))
    except (OSError, ValueError):
        return None
    return payload.get("state") if isinstance(payload, dict) else None

"""The journal: every attempt and answer is on disk the moment it arrives, before its batch commits.

The RowWriter commits every `flush_ms`; a process killed in between would lose the answers it had
already received (and paid for). So each row is also appended to a journal file beside the DB, one JSON
line per row, with a plain os.write: once written, the OS keeps it when the process dies. The journal is
kept in segments (`.<db name>.journal.<n>`): when the writer takes a batch it seals the current segment
and starts the next; once the batch is committed the sealed segment is deleted. Whatever segments are
left (a kill, a crash) are replayed into DuckDB by the next read-write open of the DB, idempotently
(every insert is keyed), then deleted: after a kill -9 only the requests in flight at that moment are
sent again.

`fsync` (config `journal_fsync`): off by default, which survives the death of the process but not of the
machine (the OS may not have written its page cache yet); on, every line is fsync'ed before the answer
is counted, which survives a power cut at the price of one disk flush per row (see bench/throughput.py).
"""

from __future__ import annotations

import json
import os
import re
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

from .duck import duckdb

from ..records import AttemptRow, DriftRow, ResponseRow
from .tx import transaction
from .bulk import TABLES, insert_rows

KINDS: dict[str, type] = {"a": AttemptRow, "r": ResponseRow, "d": DriftRow}
CODES = {cls: code for code, cls in KINDS.items()}
# Fields stored as ISO strings in a line and read back as datetimes.
DATETIMES = {cls: {i for i, name in enumerate(cls._fields) if "datetime" in str(cls.__annotations__[name])}
             for cls in KINDS.values()}


def segment_prefix(db: str | Path) -> tuple[Path, str]:
    db = Path(db).resolve()
    return db.parent, f".{db.name}.journal."


def segments(db: str | Path) -> list[Path]:
    """The journal segments of a DB, oldest first."""
    folder, prefix = segment_prefix(db)
    found = [(int(p.name[len(prefix):]), p) for p in folder.glob(prefix + "*")
             if re.fullmatch(r"\d+", p.name[len(prefix):])]
    return [p for _, p in sorted(found)]


def encode(row: NamedTuple) -> bytes:
    values = [CODES[type(row)], *row]
    for i in DATETIMES[type(row)]:  # the row types' datetime fields (the others never hold one)
        if isinstance(values[i + 1], datetime):
            values[i + 1] = values[i + 1].isoformat()
    return (_COMPACT(values) + "\n").encode()


_COMPACT = json.JSONEncoder(separators=(",", ":")).encode  # json.dumps(..., separators=...), built once


def decode(line: bytes) -> NamedTuple | None:
    """One journal line back to its row; None for a line the process did not finish writing."""
    if not line.endswith(b"\n"):
        return None
    try:
        code, *values = json.loads(line)
        cls = KINDS[code]
        for i in DATETIMES[cls]:
            values[i] = datetime.fromisoformat(values[i]) if values[i] is not None else None
        return cls(*values)
    except (ValueError, KeyError, TypeError, IndexError):
        return None  # a torn or foreign line: nothing to replay from it


class Journal:
    """The current segment of one DB's journal, appended to by the writer (see the module docstring)."""

    def __init__(self, db: str | Path, *, fsync: bool = False):
        self.folder, self.prefix = segment_prefix(db)
        self.fsync = fsync
        existing = segments(db)
        self._next = int(existing[-1].name[len(self.prefix):]) + 1 if existing else 1
        self._path, self._fd = self._open()

    def _open(self) -> tuple[Path, int]:
        """A new segment, never one another process appends to (two runs may start on one new DB at once:
        engine/opening.py; the one refused by the DB's lock leaves its segments for the next open to replay)."""
        while True:
            path = self.folder / f"{self.prefix}{self._next}"
            self._next += 1
            try:
                return path, os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
            except FileExistsError:
                continue

    def append(self, *rows: NamedTuple) -> None:
        """One write for the rows of one call (an answer's attempt and response)."""
        os.write(self._fd, b"".join(encode(row) for row in rows))
        if self.fsync:
            os.fsync(self._fd)

    def seal(self) -> tuple[Path, int]:
        """Close the current segment to new rows (its rows are the batch being committed) and start the next."""
        sealed = (self._path, self._fd)
        self._path, self._fd = self._open()
        return sealed

    @staticmethod
    def committed(sealed: tuple[Path, int]) -> None:
        """The sealed segment's rows are in DuckDB: it is no longer needed."""
        path, fd = sealed
        os.close(fd)
        path.unlink(missing_ok=True)

    def close(self) -> None:
        """At a clean end everything is committed: the (empty) current segment goes too."""
        self.committed((self._path, self._fd))


def replay(conn: duckdb.DuckDBPyConnection, db: str | Path) -> int:
    """Commit the rows of every segment left by an earlier process, then delete those segments.
    Returns the number of rows read (rows already committed are ignored by the keyed inserts)."""
    found = segments(db)
    if not found:
        return 0
    rows: dict[type, list[NamedTuple]] = {cls: [] for cls in KINDS.values()}
    for path in found:
        for line in path.read_bytes().splitlines(keepends=True):
            if (row := decode(line)) is not None:
                rows[type(row)].append(row)
    with transaction(conn):
        for cls, table in TABLES.items():  # attempts before the responses they produced
            insert_rows(conn, table, cls._fields, rows[cls])
    for path in found:
        path.unlink(missing_ok=True)
    return sum(len(r) for r in rows.values())

"""The single writer: batches attempts and responses and commits them from a background thread.

The event loop only appends tuples under a lock (microseconds); a flush happens when `flush_rows`
rows wait or `flush_ms` passed. Every insert is keyed, so writing a batch twice changes nothing.
`after_commit(conn, responses, prompts)` derives rows from each batch's answers once it is committed (a
benchmark's parser labels: live reads of a running sweep then see its labels grow, and the scoring after the run
has only the statistics left to do); `prompts` maps the request ids of the answers added with their prompt to it.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Callable, NamedTuple

from .duck import duckdb

from ..errors import FairsweepError
from ..records import AttemptRow, DriftRow, Prompt, ResponseRow
from .bulk import TABLES, insert_rows
from .journal import Journal
from .memory import REFIT_ROWS, fit_memory_limit, retry_out_of_memory
from .tx import transaction

# a cursor, the answers committed, request_id -> prompt for those added with theirs
AfterCommit = Callable[["duckdb.DuckDBPyConnection", list[ResponseRow], dict[str, Prompt]], None]
ATTEMPT_COLUMNS = AttemptRow._fields
RESPONSE_COLUMNS = ResponseRow._fields
DRIFT_COLUMNS = DriftRow._fields
__all__ = ["RowWriter", "insert_rows", "TABLES", "ATTEMPT_COLUMNS", "RESPONSE_COLUMNS", "DRIFT_COLUMNS"]


class RowWriter:
    """The one writer of result rows (attempts, responses, drift events): journaled as they arrive,
    committed by a thread every `flush_rows` rows or `flush_ms` ms. Nothing to do with batch mode."""

    def __init__(self, conn: duckdb.DuckDBPyConnection, *, flush_rows: int = 512, flush_ms: int = 200,
                 journal: Journal | None = None, after_commit: AfterCommit | None = None):
        self._conn = conn.cursor()  # its own connection to the same database, for this thread
        self._journal = journal  # each row on disk as it arrives (storage/journal.py); None: batches only
        self._after_commit = after_commit
        self._flush_rows = flush_rows
        self._flush_s = flush_ms / 1000
        self._pending: dict[type, list[NamedTuple]] = {t: [] for t in TABLES}
        self._prompts: dict[str, Prompt] = {}  # of the pending answers added with theirs, for after_commit
        self._count = 0
        self._cond = threading.Condition()
        self._closing = False
        self._error: BaseException | None = None
        self._flushed_seq = 0
        self._submitted_seq = 0
        self._rows_since_fit = 0  # rows written since DuckDB's memory limit was last fitted to the indexes
        self._thread = threading.Thread(target=self._loop, name="fairsweep-writer", daemon=True)
        self._thread.start()

    def add(self, *rows: AttemptRow | ResponseRow | DriftRow, prompt: Prompt | None = None) -> None:
        """Queue rows (never blocks on I/O). Raises if an earlier flush failed. `prompt`: the prompt of the
        request these rows belong to (all of one request), handed to after_commit with its answer."""
        if self._error:
            raise self._failure()
        with self._cond:
            if self._journal is not None:
                self._journal.append(*rows)  # a plain write: kept by the OS if this process dies now
            for row in rows:
                self._pending[type(row)].append(row)
            if prompt is not None and self._after_commit is not None:
                self._prompts[rows[0].request_id] = prompt
            self._count += len(rows)
            self._submitted_seq += len(rows)
            if self._count >= self._flush_rows:
                self._cond.notify()

    def flush(self, timeout: float | None = 60) -> None:
        """Block until everything queued so far is committed."""
        with self._cond:
            target = self._submitted_seq
            self._cond.notify()
            deadline = None if timeout is None else time.monotonic() + timeout
            while self._flushed_seq < target and not self._error:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise TimeoutError("result writer did not flush in time")
                self._cond.wait(remaining)
        if self._error:
            raise self._failure()

    def close(self) -> None:
        """Flush and stop the thread."""
        with self._cond:
            self._closing = True
            self._cond.notify()
        self._thread.join()
        if self._error:
            raise self._failure()

    def _failure(self) -> Exception:
        """What add/flush/close raise once a commit failed: an error the user can fix as it is (one line at the
        CLI, e.g. memory), any other wrapped."""
        if isinstance(self._error, FairsweepError):
            return self._error
        error = RuntimeError(f"the result writer failed: {self._error}")
        error.__cause__ = self._error
        return error

    def _loop(self) -> None:
        while True:
            with self._cond:
                if not self._closing and self._count < self._flush_rows:
                    self._cond.wait(self._flush_s)
                batch, prompts, seq = self._pending, self._prompts, self._submitted_seq
                self._pending, self._prompts = {t: [] for t in TABLES}, {}
                self._count = 0
                closing = self._closing
                sealed = self._journal.seal() if self._journal is not None and any(batch.values()) else None
            try:
                self._write(batch, prompts)
            except BaseException as exc:  # surfaced to the event loop on its next add/flush
                with self._cond:
                    self._error = exc
                    self._cond.notify_all()
                return  # the sealed segment stays: the next open of the DB replays it
            if sealed is not None:
                self._journal.committed(sealed)
            with self._cond:
                self._flushed_seq = seq
                self._cond.notify_all()
            if closing:
                if self._journal is not None:
                    self._journal.close()
                return

    def _write(self, batch: dict[type, list[NamedTuple]], prompts: dict[str, Prompt]) -> None:
        if not any(batch.values()):
            return
        if (resolve := getattr(self._conn, "resolve", None)) is not None:  # a new DB still opening (engine/
            self._conn = resolve()  # opening.py): its first rows wait for it here, in the journal meanwhile
        retry_out_of_memory(self._conn, lambda: self._commit(batch))
        if self._after_commit is not None and batch[ResponseRow]:
            self._derive(batch[ResponseRow], prompts)
        self._rows_since_fit += sum(map(len, batch.values()))
        if self._rows_since_fit >= REFIT_ROWS:  # new keys: the limit grows with the indexes (storage/memory.py)
            self._rows_since_fit = 0
            fit_memory_limit(self._conn)

    def _commit(self, batch: dict[type, list[NamedTuple]]) -> None:
        with transaction(self._conn):
            for row_type, table in TABLES.items():
                # as lists even when a slow commit let more than COLUMNAR_FROM rows wait: a 20-model run
                # otherwise loaded NumPy halfway (~15 MB more peak RSS, for ~4.6 us per row saved in that batch)
                insert_rows(self._conn, table, row_type._fields, batch[row_type], columnar=False)

    def _derive(self, responses: list, prompts: dict[str, Prompt]) -> None:
        """Rows derived from the answers just committed (a benchmark's parser labels), in their own
        transaction. Derived rows can always be computed again (scoring does), so a failure here costs
        them, never an answer: it is reported once and the run goes on without them."""
        def derive() -> None:
            with transaction(self._conn):
                self._after_commit(self._conn, responses, prompts)

        try:
            retry_out_of_memory(self._conn, derive)
        except Exception as exc:  # noqa: BLE001 - any bug in a derivation must not stop the run
            self._after_commit = None
            print(f"fairsweep: warning: labelling answers as they arrive stopped ({type(exc).__name__}: "
                  f"{str(exc)[:200]}); scoring labels them when the run ends", file=sys.stderr)

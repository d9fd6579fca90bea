"""One transaction helper for every writer: BEGIN, then COMMIT, or ROLLBACK on any error."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from .duck import duckdb


@contextmanager
def transaction(conn: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    conn.execute("BEGIN TRANSACTION")
    try:
        yield conn
    except BaseException:
        rollback(conn)
        raise
    conn.execute("COMMIT")


def rollback(conn: duckdb.DuckDBPyConnection) -> None:
    """ROLLBACK. A write that ran out of memory can leave DuckDB at its limit, and the ROLLBACK itself needs a
    little: it failed too, the transaction stayed aborted, and every later statement on the connection was
    refused. Then the limit (the instance's, so settable from a new cursor, which no transaction holds) is raised
    by a working margin and the ROLLBACK done again; the caller's next fit (storage/memory.py) sets it back."""
    try:
        conn.execute("ROLLBACK")
    except duckdb.OutOfMemoryException:
        from .memory import raise_limit_from_another_cursor  # here: memory imports the config (pydantic), which
        # opening a DB (storage/db.py -> tx) does not otherwise need

        raise_limit_from_another_cursor(conn)
        conn.execute("ROLLBACK")

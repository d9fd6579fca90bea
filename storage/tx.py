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
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")

"""Keyed bulk inserts of typed rows: the one way rows reach the results tables."""

from __future__ import annotations

import duckdb

from ..records import AttemptRow, DriftRow, ResponseRow

# Row type -> table, in commit order: attempts first, so a response never lands without its attempt.
TABLES: dict[type, str] = {AttemptRow: "attempts", ResponseRow: "responses", DriftRow: "drift_events"}


def insert_rows(conn: duckdb.DuckDBPyConnection, table: str, columns: tuple[str, ...], rows: list[tuple]) -> None:
    """Idempotent bulk insert: one UNNEST per column is ~100x faster than executemany in DuckDB."""
    if not rows:
        return
    select = ", ".join(f"unnest(${i + 1})" for i in range(len(columns)))
    conn.execute(f"INSERT OR IGNORE INTO {table} ({', '.join(columns)}) SELECT {select}",
                 [list(col) for col in zip(*rows)])

"""Keyed bulk inserts of typed rows: the one way rows reach the results tables."""

from __future__ import annotations

import itertools

from .duck import duckdb

from ..records import AttemptRow, DriftRow, ResponseRow

# Row type -> table, in commit order: attempts first, so a response never lands without its attempt.
TABLES: dict[type, str] = {AttemptRow: "attempts", ResponseRow: "responses", DriftRow: "drift_events"}
COLUMNAR_FROM = 2048  # rows: from here on, columns go in as NumPy arrays (imported only then). Below, as lists: a
                     # streamed plan's steps (<= 1,024 requests, 4,096 only while a large plan is left), and the
                     # writer's commits whatever their size (columnar=False), ~4 us more per row (measured at 512
                     # and 1,024 rows), so that a run does not hold NumPy (~15 MB) while it sends, nor does its
                     # first request wait for it
# Tables whose key no index keeps: an ART index stays in memory (~70 bytes per key, never evicted), so one on
# the answers made a run's memory grow with them (migration 0020). Inserting skips what is already stored.
UNINDEXED_KEYS = {"attempts": "attempt_id", "responses": "request_id"}
_names = itertools.count()
_left_registered: list[tuple[duckdb.DuckDBPyConnection, str]] = []  # (connection, view): see _unregister_left


def insert_rows(conn: duckdb.DuckDBPyConnection, table: str, columns: tuple[str, ...], rows: list[tuple], *,
                keyed: bool = True, columnar: bool = True) -> None:
    """Idempotent bulk insert: a row whose key is stored is skipped (INSERT OR IGNORE; for the tables in
    UNINDEXED_KEYS, looked up first). `keyed=False` for a table without a key (`requests`: its writer never
    writes a row twice), a plain INSERT. A few rows go in as one list parameter per column (UNNEST:
    ~100x faster than executemany); many as a scan of NumPy object arrays, which DuckDB reads without turning
    every value into a parameter object: for the 4,704 prompts of a plan, ~3x faster and ~35 MB less memory.
    `columnar=False`: lists whatever the size (a run's writer: NumPy, once loaded, stays for the whole run)."""
    if not rows:
        return
    if keyed and table in UNINDEXED_KEYS:
        rows, keyed = _not_stored(conn, table, columns.index(UNINDEXED_KEYS[table]), rows), False
        if not rows:
            return
    names = ", ".join(columns)
    insert = "INSERT OR IGNORE" if keyed else "INSERT"
    if len(rows) < COLUMNAR_FROM or not columnar:
        select = ", ".join(f"unnest(${i + 1})" for i in range(len(columns)))
        conn.execute(f"{insert} INTO {table} ({names}) SELECT {select}", [list(col) for col in zip(*rows)])
        return
    import numpy as np

    view = f"_fairsweep_rows_{next(_names)}"
    if hasattr(conn, "complete"):  # DuckDB >= 2: a result read with fetchone() must end before a register
        conn.complete()
    _unregister_left(conn)
    conn.register(view, {f"c{i}": np.fromiter(col, dtype=object, count=len(rows))
                         for i, col in enumerate(zip(*rows))})
    try:
        conn.execute(f"{insert} INTO {table} ({names}) SELECT * FROM {view}")
    except BaseException:
        try:
            conn.unregister(view)
        except duckdb.TransactionException:  # the failure aborted the transaction: once it is rolled back
            _left_registered.append((conn, view))
        raise  # this error, not the unregister's: an Out of Memory error is what retry_out_of_memory does again
    conn.unregister(view)


def _unregister_left(conn: duckdb.DuckDBPyConnection) -> None:
    """Unregister the views a failed insert left on `conn`: DuckDB refuses to inside the aborted transaction,
    and a view holds its rows' arrays until it is unregistered (the insert done again comes here first)."""
    for entry in [entry for entry in _left_registered if entry[0] is conn]:
        try:
            conn.unregister(entry[1])
        except duckdb.TransactionException:
            continue  # still inside the aborted transaction
        except duckdb.Error:
            pass  # the connection is closed: nothing is held any more
        _left_registered.remove(entry)


def _not_stored(conn: duckdb.DuckDBPyConnection, table: str, at: int, rows: list[tuple]) -> list[tuple]:
    """The rows whose key (column `at`) is neither stored nor repeated earlier in `rows`, as INSERT OR IGNORE
    keeps them. Looked up as a semi-join: DuckDB builds on the few keys given and scans the table's keys."""
    key = UNINDEXED_KEYS[table]
    keys = [row[at] for row in rows]
    stored = {found for found, in conn.execute(
        f"SELECT {key} FROM {table} WHERE {key} IN (SELECT unnest($1))", [keys]).fetchall()}
    fresh: dict = {}
    for key_value, row in zip(keys, rows):
        if key_value not in stored:
            fresh.setdefault(key_value, row)
    return list(fresh.values())

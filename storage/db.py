"""Opening the DuckDB file: one writer process, read-only readers, schema and views kept current."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import duckdb

from ..errors import DatabaseError
from .journal import replay
from .migrations import apply_migrations


def open_db(path: str | Path, *, read_only: bool = False, config: dict | None = None) -> duckdb.DuckDBPyConnection:
    """Open the results DB. Read-write opens migrate the schema and refresh the SQL views. `config`: DuckDB
    settings applied before the first statement (storage/readonly.py's guards). A read-only open of a DB
    that a run is writing reads through that run (storage/live.py: a LiveConnection)."""
    path = Path(path)
    if read_only and not path.exists():
        raise DatabaseError(f"database {path} does not exist: check --db, or start a run first")
    try:
        conn = duckdb.connect(str(path), read_only=read_only, config=config or {})
    except duckdb.IOException as exc:
        if "lock" not in str(exc).lower():
            raise DatabaseError(f"cannot open database {path}: {exc}") from None
        if read_only:
            from .live import connect_live

            if (live := connect_live(path)) is not None:
                return live  # type: ignore[return-value]
        raise DatabaseError(
            f"database {path} is in use by another fairsweep process: wait for it to finish "
            f"or stop it, or use another --db") from None
    if not read_only:
        apply_migrations(conn)
        refresh_views(conn)
        replay(conn, path)  # answers a killed run had received but not committed
    return conn


def refresh_views(conn: duckdb.DuckDBPyConnection) -> None:
    """(Re)create every view and macro in storage/sql, in file-name order."""
    sql_dir = resources.files("fairsweep.storage").joinpath("sql")
    for entry in sorted(sql_dir.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".sql"):
            conn.execute(entry.read_text(encoding="utf-8"))

"""Opening the DuckDB file: one writer process, read-only readers, schema and views kept current."""

from __future__ import annotations

import functools
import hashlib
import re
from importlib import resources
from pathlib import Path

import duckdb

from ..errors import DatabaseError
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
    return conn


_DEFINED = re.compile(r"CREATE\s+OR\s+REPLACE\s+(?:VIEW|MACRO)\s+(\w+)", re.IGNORECASE)
_CATALOG_SQL = """
SELECT view_name, 'VIEW', comment FROM duckdb_views()
WHERE NOT internal AND database_name = current_database()
UNION ALL
SELECT function_name, CASE function_type WHEN 'table_macro' THEN 'MACRO TABLE' ELSE 'MACRO' END, comment
FROM duckdb_functions()
WHERE function_type IN ('macro', 'table_macro') AND NOT internal AND database_name = current_database()"""


def refresh_views(conn: duckdb.DuckDBPyConnection) -> None:
    """(Re)create every view and macro in storage/sql, in file-name order, unless the DB holds these very
    definitions already. Each one is stamped with a comment naming the checksum of the SQL files: an open
    whose objects all carry the current stamp costs one catalog read (a few ms, against ~0.2 s to re-create
    ~30 views). New SQL files change the stamp, and a view re-created by another fairsweep version loses its
    comment, so either way they are created again."""
    files, names = _sql_files()
    stamp = "fairsweep storage/sql " + hashlib.sha256("\x1e".join(files).encode()).hexdigest()[:16]
    catalog = {name: (kind, comment) for name, kind, comment in conn.execute(_CATALOG_SQL).fetchall()}
    if all(catalog.get(name, (None, None))[1] == stamp for name in names):
        return
    for text in files:
        conn.execute(text)
    kinds = {name: kind for name, kind, _ in conn.execute(_CATALOG_SQL).fetchall()}
    for name in names:
        conn.execute(f"COMMENT ON {kinds[name]} {name} IS '{stamp}'")


@functools.lru_cache(maxsize=1)
def _sql_files() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The SQL files' text in name order, and the names of the views and macros they define."""
    sql_dir = resources.files("fairsweep.storage").joinpath("sql")
    texts = tuple(entry.read_text(encoding="utf-8") for entry in sorted(sql_dir.iterdir(), key=lambda e: e.name)
                  if entry.name.endswith(".sql"))
    return texts, tuple(dict.fromkeys(name for text in texts for name in _DEFINED.findall(text)))

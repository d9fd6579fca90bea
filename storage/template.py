"""New DBs start as a copy of an empty DB that already has the current schema and views.

Creating ~35 views and running every migration costs ~0.2 s, which a new sweep would otherwise wait before
its first request. The empty DB is built once per schema (migrations, view SQL and DuckDB version) in the
cache folder, by the same code that migrates any DB, and copied from then on (a few ms). Anything that
goes wrong here only means the DB is created in place, as without a template.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import Callable

from .duck import duckdb

from ..jsonfile import cache_dir


def seed_new_db(path: Path, schema_texts: list[str], prepare: Callable[[duckdb.DuckDBPyConnection], None]) -> bool:
    """Put a copy of the empty DB for this schema at `path` if nothing is there; True if it did. `prepare`
    migrates and creates the views of a new connection (to build the template once)."""
    key = hashlib.sha256("\x00".join([duckdb.__version__, *schema_texts]).encode()).hexdigest()[:16]
    template = cache_dir() / "db-templates" / f"{key}.duckdb"
    try:
        if not template.exists():
            _build(template, prepare)
        fresh = path.with_name(f".{path.name}.{os.getpid()}.new")
        try:
            shutil.copyfile(template, fresh)
            os.link(fresh, path)  # never replaces a DB another process created meanwhile
        finally:
            fresh.unlink(missing_ok=True)
    except (OSError, duckdb.Error):
        return False
    return True


def _build(template: Path, prepare: Callable[[duckdb.DuckDBPyConnection], None]) -> None:
    template.parent.mkdir(parents=True, exist_ok=True)
    building = template.with_name(f"{template.stem}.{os.getpid()}.building")
    building.unlink(missing_ok=True)
    conn = duckdb.connect(str(building))
    try:
        prepare(conn)
    finally:
        conn.close()
    building.replace(template)

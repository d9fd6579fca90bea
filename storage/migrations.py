"""Numbered schema migrations, applied in order and recorded in `schema_migrations`.

Each migration is a file `storage/migrations_sql/NNNN_name.sql` whose first line is `-- why: ...`.
Add one by adding a file with the next number; never edit one that has shipped.
"""

from __future__ import annotations

import functools
import re
from importlib import resources

from .duck import duckdb

from .tx import transaction

_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


@functools.lru_cache(maxsize=1)
def migrations() -> tuple[tuple[int, str, str], ...]:
    """(version, why, sql) for every migration file, in version order."""
    found = []
    for entry in resources.files("fairsweep.storage").joinpath("migrations_sql").iterdir():
        match = _NAME.match(entry.name)
        if not match:
            continue
        sql = entry.read_text(encoding="utf-8")
        first = sql.splitlines()[0] if sql else ""
        why = first.removeprefix("-- why:").strip() if first.startswith("-- why:") else entry.name
        found.append((int(match.group(1)), why, sql))
    found.sort()
    versions = [v for v, _, _ in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"two migrations share a number: {versions}")
    return tuple(found)


def apply_migrations(conn: duckdb.DuckDBPyConnection, *, upto: int | None = None) -> list[int]:
    """Bring the schema up to date (or up to version `upto`: an older fairsweep's schema, for tests);
    returns the versions applied now."""
    conn.execute("""CREATE TABLE IF NOT EXISTS schema_migrations (
        version INTEGER PRIMARY KEY, why VARCHAR NOT NULL, applied_at TIMESTAMPTZ NOT NULL)""")
    done = {row[0] for row in conn.execute("SELECT version FROM schema_migrations").fetchall()}
    applied = []
    for version, why, sql in migrations():
        if version in done or (upto is not None and version > upto):
            continue
        with transaction(conn):
            conn.execute(sql)
            conn.execute("INSERT INTO schema_migrations VALUES (?, ?, now())", [version, why])
        applied.append(version)
    return applied


def latest_version() -> int:
    return migrations()[-1][0]

"""Opening the DuckDB file: one writer process, read-only readers, schema and views kept current."""

from __future__ import annotations

import hashlib
import time
from importlib import resources
from pathlib import Path

from .duck import duckdb

from ..errors import DatabaseError
from .journal import replay
from .migrations import apply_migrations, migrations
from .readonly import GUARDS
from .template import seed_new_db
from .tx import transaction


def open_db(path: str | Path, *, read_only: bool = False, config: dict | None = None,
            replay_journal: bool = True) -> duckdb.DuckDBPyConnection:
    """Open the results DB. Read-write opens migrate the schema and refresh the SQL views, and replay the
    journal a killed run left (`replay_journal=False`: the journal beside it is the opening process's own,
    engine/opening.py). `config`: DuckDB settings applied before the first statement (storage/readonly.py's
    guards). A read-only open of a DB that a run is writing reads through that run (storage/live.py)."""
    path = Path(path)
    if read_only and not path.exists():
        raise DatabaseError(f"database {path} does not exist: check --db, or start a run first")
    seeded = not read_only and not path.exists() and seed_new_db(path, _schema_texts(), _prepare)
    try:
        conn = _connect(path, read_only, {**RUN_SETTINGS, **(config or {})} if not read_only else config or {})
    except duckdb.IOException as exc:
        if "lock" not in str(exc).lower():
            raise DatabaseError(f"cannot open database {path}: {exc}") from None
        if read_only:
            from .live import connect_live

            if (live := connect_live(path, config)) is not None:
                return live  # type: ignore[return-value]
        raise DatabaseError(
            f"database {path} is in use by another fairsweep process: wait for it to finish "
            f"or stop it, or use another --db") from None
    if seeded:  # the template was migrated and given its views by _prepare, for this schema: date them now
        conn.execute("UPDATE schema_migrations SET applied_at = now()")
    elif not read_only:
        _prepare(conn)
    if not read_only and replay_journal:
        replay(conn, path)  # answers a killed run had received but not committed
    return conn


def open_readonly(db: str | Path) -> duckdb.DuckDBPyConnection:
    """The DB read-only, with DuckDB's guards (GUARDS) set before the first statement and locked."""
    return open_db(db, read_only=True, config=dict(GUARDS))


# A read-write open serves a run (or scoring): many small statements from a few Python threads, each too
# small to gain from DuckDB's worker threads, which cost CPU to wake and a hash table each in the larger
# queries (measured: ~5% less CPU and ~8 MB less peak RSS for a 4,704-answer run).
# DuckDB's allocator keeps what a query, a commit or a checkpoint frees for reuse, and hands it back to the
# system only after one bulk free of more than 512 MB (its default). A run frees a few blocks at a time, so
# what its largest step used stayed resident to the end. At 1 MiB: ~9 MB less peak RSS for 4,704 answers
# (the peak at 94,080 did not move), for ~0.02 ms more CPU per answer (README, issue 25, seventh round).
# A checkpoint every 8 MB of WAL instead of 16: the unsaved rows and a checkpoint's own buffers are half as
# large (94,080 answers: ~7 MB less peak RSS; 4,704: no change; CPU the same within the spread).
RUN_SETTINGS = {"threads": 1, "allocator_bulk_deallocation_flush_threshold": "1MiB", "checkpoint_threshold": "8MB"}
READER_LOCK_WAIT_S = 5.0  # a writer waits this long for readers that opened the free file (status, view)


def _connect(path: Path, read_only: bool, config: dict) -> duckdb.DuckDBPyConnection:
    """duckdb.connect; a writer that finds the file locked by no live run (so by a reader holding it for
    a moment: `status`, `view`, between two phases of a run) tries again for READER_LOCK_WAIT_S."""
    deadline = time.monotonic() + READER_LOCK_WAIT_S
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only, config=config)
        except duckdb.IOException as exc:
            if read_only or "lock" not in str(exc).lower() or time.monotonic() > deadline:
                raise
            from .live import connect_live
            if connect_live(path) is not None:  # a run writes it: no point waiting
                raise
            time.sleep(0.05)


def _prepare(conn: duckdb.DuckDBPyConnection) -> None:
    """Migrate the schema and refresh the views (nothing to do on a DB that is current)."""
    applied = apply_migrations(conn)
    refresh_views(conn, force=bool(applied))


def _schema_texts() -> list[str]:
    return [sql for _, _, sql in migrations()] + view_sql()


def view_sql() -> list[str]:
    """The text of every storage/sql file, in file-name order."""
    sql_dir = resources.files("fairsweep.storage").joinpath("sql")
    return [entry.read_text(encoding="utf-8") for entry in sorted(sql_dir.iterdir(), key=lambda e: e.name)
            if entry.name.endswith(".sql")]


def refresh_views(conn: duckdb.DuckDBPyConnection, *, force: bool = False) -> None:
    """(Re)create every view and macro in storage/sql, in file-name order, unless the DB already has
    exactly these definitions (recreating them costs a quarter of a second at every start)."""
    texts = view_sql()
    digest = hashlib.sha256("\x00".join(texts).encode()).hexdigest()
    if not force and conn.execute("SELECT count(*) FROM views_state WHERE sql_hash = ?", [digest]).fetchall()[0][0]:
        return
    with transaction(conn):
        for text in texts:
            conn.execute(text)
        conn.execute("DELETE FROM views_state")
        conn.execute("INSERT INTO views_state VALUES (?, now())", [digest])

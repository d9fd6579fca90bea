"""DuckDB's memory limit for a process that writes: what the indexes pin, plus a working margin.

DuckDB keeps every block it has read or written cached up to `memory_limit` (by default 80% of the machine's
memory), so a run's memory grew with the data it wrote. Its ART indexes (the keys of prompts, of a prompt
set's labels, of the GAMA-Bench judge tables...; the plan and the answers have none: migrations 0019, 0020)
cannot be evicted: a fixed limit low enough to matter makes a large DB fail with "Out of Memory"
once its indexes outgrow it. So the limit follows them: the keyed rows times an index entry's size (an
estimate that holds before an index is loaded), or what DuckDB reports the indexes use if that is more, plus
a working margin for caching and query intermediates (a larger query spills to DuckDB's temporary directory):
WORKING_BYTES while a run's plan is written, whose steps write thousands of requests at once, and the smaller
PLANNED_WORKING_BYTES after (`plan_written`). The writer fits it again as answers add keys. A write that still
runs out of memory (a busy moment: the planner's and the writer's transactions at once) doubles the margin for
the rest of the process and is done again (`retry_out_of_memory`, up to GROWTHS times): a run does not fail for
want of a margin a few times larger. So is a read another command makes through the run (storage/live.py), which
runs inside the same limit.
"""

from __future__ import annotations

import sys
import time
from typing import Callable, TypeVar

from .duck import duckdb

from ..config import env_int
from ..errors import DatabaseError

T = TypeVar("T")
# cache, unsaved blocks and query intermediates beyond the indexes (FAIRSWEEP_DUCKDB_WORKING_MB), while a run's
# plan is written (and outside a run). At 20 models, 64 MB peaked at 186-188 MB, 48 at 182-183, 40 at 178-180 for
# ~4% more CPU; 32 ran out at times while planning (issue 25, tenth round), and the million-request plan's steps
# ran out of 40 (fifteenth round). 96 cached ~10 MB more, for no CPU saved (eighth round)
WORKING_BYTES = 48 * 2**20
# ... and once the plan is written. The largest statements left are the writer's batches and the checkpoints,
# which evict cached blocks to stay under the limit: a checkpoint rewrites the whole row group it appends to, and
# at ~70,000 answers per table one filled the 48 MB margin with cache (the 20-model run's peak). The 20-model
# run's writes and checkpoints ran clean at 24 MB too (fifteenth round).
PLANNED_WORKING_BYTES = 32 * 2**20
_planning = True  # a run's plan is being written (serve_run says so as the DB opens; the planner, when it ends)
GROWTHS = 3  # an Out of Memory error doubles the margin at most this often (8x), then it is raised
_grown = 0  # bytes the margin gained from Out of Memory errors in this process
_fitted = WORKING_BYTES  # the limit last fitted in this process: where a refit that cannot read starts from
KEY_BYTES = 96  # ART bytes per key, with room: measured ~70 for 32-character ids
RAISE_TRIES, RAISE_WAIT_S = 200, 0.01  # a raise of the limit at the limit: tried for up to ~2 s
REFIT_ROWS = 16_384  # rows written between two fits: ~1.5 MB of new keys per keyed table, well inside the margin

_KEYED_ROWS = """SELECT coalesce(sum(estimated_size * index_count), 0) FROM duckdb_tables() WHERE index_count > 0"""
_PINNED = "SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory() WHERE tag = 'ART_INDEX'"


def memory_limit_bytes(conn: duckdb.DuckDBPyConnection, *, new: bool = False) -> int:
    """The limit this DB needs now: its indexes (estimated from the keyed rows, or measured) + the margin.
    A `new` DB (created by this open) holds no keys but its migrations' (under 1 MB of index): its catalog is
    not read (the first read of it costs ~5 ms, before a new run's first request)."""
    indexes = 0 if new else max(int(conn.execute(_KEYED_ROWS).fetchone()[0]) * KEY_BYTES,
                                int(conn.execute(_PINNED).fetchone()[0]))
    return indexes + working_bytes()


def working_bytes() -> int:
    """The working margin: the knob's, else WORKING_BYTES (PLANNED_WORKING_BYTES once a run's plan is
    written), plus what Out of Memory errors added."""
    working = env_int("FAIRSWEEP_DUCKDB_WORKING_MB")
    default = WORKING_BYTES if _planning else PLANNED_WORKING_BYTES
    return (working * 2**20 if working else default) + _grown


def fit_memory_limit(conn: duckdb.DuckDBPyConnection, *, new: bool = False, planning: bool | None = None) -> int:
    """Set DuckDB's memory limit (for every connection of this DB's instance) to what it needs now; returns
    the limit in bytes. `planning`: whether a run's plan is being written from now on (None: as it was)."""
    global _fitted, _planning
    if planning is not None:
        _planning = planning
    limit = memory_limit_bytes(conn, new=new)
    _set_limit(conn, limit)
    _fitted = limit
    return limit


def plan_written(conn: duckdb.DuckDBPyConnection) -> int:
    """A run's plan is all in the DB: the smaller margin from now on (the limit in bytes). The indexes are taken
    as last fitted, not read again: the catalog read would cost a one-model run ~1 MB of peak RSS, and the writer
    refits as answers add keys."""
    global _fitted, _planning
    indexes = _fitted - working_bytes()
    _planning = False
    _fitted = indexes + working_bytes()
    _set_limit(conn, _fitted)
    return _fitted


def _set_limit(conn: duckdb.DuckDBPyConnection, limit: int) -> None:
    conn.execute(f"SET memory_limit = '{limit // 2**20 + 1}MiB'")


def _raise_limit(conn: duckdb.DuckDBPyConnection, limit: int) -> None:
    """Set a higher limit even while DuckDB is at its limit: a SET needs a few KB too, so it is tried again
    while another thread's statement (a plan step, a live read) ends or rolls back and frees what it held."""
    for _ in range(RAISE_TRIES - 1):
        try:
            return _set_limit(conn, limit)
        except duckdb.OutOfMemoryException:
            time.sleep(RAISE_WAIT_S)
    _set_limit(conn, limit)


def raise_limit_from_another_cursor(conn: duckdb.DuckDBPyConnection) -> None:
    """Raise the limit by a working margin above the last fit, through a new cursor: `conn` may be inside a
    transaction an error aborted, where DuckDB refuses every statement (storage/tx.rollback)."""
    cursor = conn.cursor()
    try:
        _raise_limit(cursor, _fitted + working_bytes())
    finally:
        cursor.close()


def _refit_after_out_of_memory(conn: duckdb.DuckDBPyConnection, grown_by: int) -> None:
    """Fit the limit to the grown margin. Fitting reads the catalog, and that read can itself run out: after a
    failed write DuckDB may hold more than its limit for a moment. Then the limit is first raised by the growth
    without reading anything (`_raise_limit`), and fitted after."""
    try:
        fit_memory_limit(conn)
    except duckdb.OutOfMemoryException:
        _raise_limit(conn, _fitted + grown_by)
        fit_memory_limit(conn)


def retry_out_of_memory(conn: duckdb.DuckDBPyConnection, work: Callable[[], T], what: str = "a write") -> T:
    """work(): a write (one transaction, which DuckDB's Out of Memory error rolls back), or a read the run serves
    (`what` = "a live read"); after such an error the margin doubles and work() runs again, at most GROWTHS
    times, then a DatabaseError names the knob. A query spills most of what does not fit, but not every operator
    can: a live `report` while a run wrote ran out of a 48 MB margin.
    (A COMMIT that runs out invalidates the whole database instead: the margin is there so that none does.)"""
    global _grown
    growths = 0
    while True:
        try:
            return work()
        except duckdb.OutOfMemoryException as exc:
            if growths == GROWTHS:
                raise DatabaseError(f"DuckDB ran out of memory in {what} with a working margin of "
                                    f"{working_bytes() // 2**20} MB: set FAIRSWEEP_DUCKDB_WORKING_MB higher") from exc
            growths += 1
            grown_by = working_bytes()
            _grown += grown_by
            _refit_after_out_of_memory(conn, grown_by)
            print(f"fairsweep: note: DuckDB ran out of memory in {what}, done again with a working margin of "
                  f"{working_bytes() // 2**20} MB (FAIRSWEEP_DUCKDB_WORKING_MB)", file=sys.stderr)

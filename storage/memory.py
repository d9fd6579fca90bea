"""DuckDB's memory limit for a process that writes: what the indexes pin, plus a working margin.

DuckDB keeps every block it has read or written cached up to `memory_limit` (by default 80% of the machine's
memory), so a run's memory grew with the data it wrote. Its ART indexes (the keys of prompts, of a prompt
set's labels, of the GAMA-Bench judge tables...; the plan and the answers have none: migrations 0019, 0020)
cannot be evicted: a fixed limit low enough to matter makes a large DB fail with "Out of Memory"
once its indexes outgrow it. So the limit follows them: the keyed rows times an index entry's size (an
estimate that holds before an index is loaded), or what DuckDB reports the indexes use if that is more, plus
WORKING_BYTES for caching and query intermediates (a larger query spills to DuckDB's temporary directory).
The writer fits it again as answers add keys.
"""

from __future__ import annotations

import duckdb

from ..config import env_int

WORKING_BYTES = 64 * 2**20  # cache, unsaved blocks and query intermediates beyond the indexes (FAIRSWEEP_DUCKDB_WORKING_MB);
                            # 32 MB was too little for a 20-model run's labelling queries, 48 and more were enough;
                            # 96 cached ~10 MB more at 20 models, for no CPU saved (issue 25, eighth round)
KEY_BYTES = 96  # ART bytes per key, with room: measured ~70 for 32-character ids
REFIT_ROWS = 16_384  # rows written between two fits: ~1.5 MB of new keys per keyed table, well inside the margin

_KEYED_ROWS = """SELECT coalesce(sum(estimated_size * index_count), 0) FROM duckdb_tables() WHERE index_count > 0"""
_PINNED = "SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory() WHERE tag = 'ART_INDEX'"


def memory_limit_bytes(conn: duckdb.DuckDBPyConnection, *, new: bool = False) -> int:
    """The limit this DB needs now: its indexes (estimated from the keyed rows, or measured) + WORKING_BYTES.
    A `new` DB (created by this open) holds no keys but its migrations' (under 1 MB of index): its catalog is
    not read (the first read of it costs ~5 ms, before a new run's first request)."""
    indexes = 0 if new else max(int(conn.execute(_KEYED_ROWS).fetchone()[0]) * KEY_BYTES,
                                int(conn.execute(_PINNED).fetchone()[0]))
    working = env_int("FAIRSWEEP_DUCKDB_WORKING_MB")
    return indexes + (working * 2**20 if working else WORKING_BYTES)


def fit_memory_limit(conn: duckdb.DuckDBPyConnection, *, new: bool = False) -> int:
    """Set DuckDB's memory limit (for every connection of this DB's instance) to what it needs now; returns
    the limit in bytes."""
    limit = memory_limit_bytes(conn, new=new)
    conn.execute(f"SET memory_limit = '{limit // 2**20 + 1}MiB'")
    return limit

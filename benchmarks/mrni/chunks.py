"""A run's models, a few at a time, for the queries that read MRNI-BB's views (statistics, findings).

The views join every model's answers whichever models a query asks for, and a query that returns the rows of
many models at once held about twice the memory of one that returns a few: at 20 models x 4,704 answers, the
statistics' two queries ~40 MB over all models at once against ~15 MB per 5 models, for ~0.5 s more CPU (each
query scans the run's answers again). A chunk holds at most CHUNK_ANSWERS planned requests, and one model at
least, so a large plan costs one scan per ~25,000 answers, not one per model.
"""

from __future__ import annotations

import duckdb

CHUNK_ANSWERS = 25_000


def model_chunks(conn: duckdb.DuckDBPyConnection, run: str, models: list[str] | None = None) -> list[list[str]]:
    """The run's MRNI-BB models (or these), in name order, grouped so that each group's planned requests add
    up to at most CHUNK_ANSWERS (a model with more is a group of its own)."""
    planned = conn.execute("SELECT model, count(*) FROM requests WHERE run = ? AND benchmark = 'mrni' "
                           "GROUP BY model ORDER BY model", [run]).fetchall()
    wanted = None if models is None else set(models)
    chunks: list[list[str]] = []
    size = 0
    for model, count in planned:
        if wanted is not None and model not in wanted:
            continue
        if not chunks or size + count > CHUNK_ANSWERS:
            chunks.append([])
            size = 0
        chunks[-1].append(model)
        size += count
    return chunks

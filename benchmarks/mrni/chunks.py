"""A run's models, a few at a time, for the queries that read MRNI-BB's views (statistics, findings).

The views join every model's answers whichever models a query asks for, and a query that returns the rows of
many models at once held about twice the memory of one that returns a few: at 20 models x 4,704 answers, the
statistics' two queries ~40 MB over all models at once against ~15 MB per 5 models, for ~0.5 s more CPU (each
query scans the run's plan again). A chunk holds the models of at most CHUNK_ANSWERS labelled answers, and one
model at least: a run costs one scan per ~25,000 answers, and a large plan with few answers (a capped run) one.
"""

from __future__ import annotations

import duckdb

CHUNK_ANSWERS = 25_000


def model_chunks(conn: duckdb.DuckDBPyConnection, run: str, models: list[str] | None = None) -> list[list[str]]:
    """The run's MRNI-BB models (or these), in name order, grouped so that each group's labelled answers add
    up to at most CHUNK_ANSWERS (a model with more is a group of its own)."""
    labelled = conn.execute("""
        SELECT r.model, count(l.request_id) FROM requests r LEFT JOIN mrni_labels l USING (request_id)
        WHERE r.run = ? AND r.benchmark = 'mrni' GROUP BY r.model ORDER BY r.model""", [run]).fetchall()
    wanted = None if models is None else set(models)
    chunks: list[list[str]] = []
    size = 0
    for model, count in labelled:
        if wanted is not None and model not in wanted:
            continue
        if not chunks or size + count > CHUNK_ANSWERS:
            chunks.append([])
            size = 0
        chunks[-1].append(model)
        size += count
    return chunks

"""MRNI-BB scoring, offline: label stored responses with the parser, then recompute the statistics.

Run by `fairsweep score` and after `fairsweep run` (registry SCORERS["mrni"]). Only responses without
a label from the current PARSER_VERSION are parsed; a label from an older version is replaced. So a
second call labels nothing new, and a parser upgrade re-labels everything once. The statistics are
recomputed only for the run's models whose labels or plan changed (stats.update_statistics), so scoring
after a resume that added nothing costs two small queries. No model is called.
"""

from __future__ import annotations

from datetime import datetime, timezone

import duckdb

from ...config import SweepConfig, env_int
from . import stats
from .parse import PARSER_VERSION, parse_answer

ENV_BOOT = "FAIRSWEEP_MRNI_BOOT"  # number of bootstrap resamples (default stats.N_BOOT)


def score_run(conn: duckdb.DuckDBPyConnection, config: SweepConfig, *, n_boot: int | None = None,
              seed: int = stats.SEED) -> dict:
    """Label what `config.run` stored for MRNI-BB and is not labelled yet, recompute the intervals and tests
    of the models whose inputs changed; counts."""
    unlabelled, kept = conn.execute("""
        SELECT count(*) - count(l.request_id) FILTER (WHERE l.parser_version = $version),
               count(l.request_id) FILTER (WHERE l.parser_version = $version)
        FROM requests r JOIN responses s USING (request_id) LEFT JOIN mrni_labels l USING (request_id)
        WHERE r.run = $run AND r.benchmark = 'mrni'""", {"run": config.run, "version": PARSER_VERSION}).fetchone()
    todo = conn.execute("""
        SELECT request_id, response, language, condition FROM mrni_scored
        WHERE run = ? AND status = 'ok' AND parser_version IS DISTINCT FROM ?
        ORDER BY request_id""", [config.run, PARSER_VERSION]).fetchall() if unlabelled else []
    labels = [(rid, *_parse(text, language, condition)) for rid, text, language, condition in todo]
    store_labels(conn, labels)
    computed = stats.update_statistics(conn, config.run, n_boot=n_boot or _boot_from_env(), seed=seed)
    return {"labelled": len(labels), "unparsed (F)": sum(1 for _, label, _ in labels if label == "F"),
            "already labelled": kept, **computed}


def _parse(text: str, language: str, condition: str) -> tuple[str, str | None]:
    result = parse_answer(text, language, condition)
    return result.label, result.span


def store_labels(conn: duckdb.DuckDBPyConnection, labels: list[tuple[str, str, str | None]]) -> None:
    """Upsert (request_id, label, span) rows for the current parser version, in one transaction."""
    if not labels:
        return
    ids, values, spans = (list(col) for col in zip(*labels))
    conn.execute("BEGIN TRANSACTION")
    try:
        conn.execute("""
            INSERT OR REPLACE INTO mrni_labels (request_id, label, span, parser_version, scored_at)
            SELECT unnest($1), unnest($2), unnest($3), $4, $5""",
                     [ids, values, spans, PARSER_VERSION, datetime.now(timezone.utc)])
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _boot_from_env() -> int:
    return env_int(ENV_BOOT) or stats.N_BOOT

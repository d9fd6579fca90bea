"""MRNI-BB scoring, offline: label stored responses with the parser, then recompute the statistics.

Run by `fairsweep score` and after `fairsweep run` (registry SCORERS["mrni"]). Only responses without
a label from the current parser version (labels.PARSER_VERSION; a run labels most as they arrive) are
parsed; a label from an older version is replaced. So a second call labels nothing new, and a parser
upgrade re-labels everything once. The statistics are recomputed only for the run's models whose labels
or plan changed (stats.update_statistics), so scoring after a resume that added nothing costs two small
queries. No model is called.
"""

from __future__ import annotations

import duckdb

from ...config import SweepConfig, env_int
from . import labels, stats

ENV_BOOT = "FAIRSWEEP_MRNI_BOOT"  # number of bootstrap resamples (default stats.N_BOOT)
# Answers parsed and stored per step when scoring labels what a run left unlabelled (its live labelling
# failed, or a parser upgrade): `fairsweep score` of 94,080 such answers peaked at 327 MB with all of them held
# in Python at once, at 196 MB in steps (the same CPU: 5.7-5.8 s).
LABEL_CHUNK = 10_000


def score_run(conn: duckdb.DuckDBPyConnection, config: SweepConfig, *, n_boot: int | None = None,
              seed: int = stats.SEED) -> dict:
    """Label what `config.run` stored for MRNI-BB and is not labelled yet, recompute the intervals and tests
    of the models whose inputs changed; counts."""
    unlabelled, kept = conn.execute("""
        SELECT count(*) - count(l.request_id) FILTER (WHERE l.parser_version = $version),
               count(l.request_id) FILTER (WHERE l.parser_version = $version)
        FROM requests r JOIN responses s USING (request_id) LEFT JOIN mrni_labels l USING (request_id)
        WHERE r.run = $run AND r.benchmark = 'mrni'""",
        {"run": config.run, "version": labels.PARSER_VERSION}).fetchone()
    labelled, unparsed = label_unlabelled(conn, config.run) if unlabelled else (0, 0)
    computed = stats.update_statistics(conn, config.run, n_boot=n_boot or _boot_from_env(), seed=seed)
    return {"labelled": labelled, "unparsed (F)": unparsed, "already labelled": kept, **computed}


def label_unlabelled(conn: duckdb.DuckDBPyConnection, run: str) -> tuple[int, int]:
    """Label the run's answers that have no label from the current parser, LABEL_CHUNK at a time; (labelled,
    unparsed). A cursor streams the answers (no ORDER BY: a sort would hold them all) while `conn` stores each
    chunk's labels; its snapshot predates them, so no answer is read twice."""
    reader = conn.cursor()
    labelled = unparsed = 0
    try:
        reader.execute("""
            SELECT request_id, response, language, condition FROM mrni_scored
            WHERE run = ? AND status = 'ok' AND parser_version IS DISTINCT FROM ?""", [run, labels.PARSER_VERSION])
        while chunk := reader.fetchmany(LABEL_CHUNK):
            prompt = labels.prompt_texts(conn, [row[0] for row in chunk])
            found = [(rid, *labels.parse_label(text, language, condition, *prompt.get(rid, (None, None))))
                     for rid, text, language, condition in chunk]
            labels.store_labels(conn, found)
            labelled += len(found)
            unparsed += sum(1 for _, label, _ in found if label == "F")
    finally:
        reader.close()
    return labelled, unparsed


def _boot_from_env() -> int:
    return env_int(ENV_BOOT) or stats.N_BOOT

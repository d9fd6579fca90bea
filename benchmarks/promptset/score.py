"""`fairsweep score` for a prompt set (and after `fairsweep run`): label what is unlabelled, recompute the
intervals and paired tests. Offline and re-runnable; no model is called."""

from __future__ import annotations

import duckdb

from ...config import SweepConfig, env_int
from . import labels, stats


def score_run(name: str, conn: duckdb.DuckDBPyConnection, config: SweepConfig, *, n_boot: int | None = None,
              seed: int = stats.SEED) -> dict:
    labelled = labels.label_unlabelled(conn, name, config.run)
    kinds = dict(conn.execute("""
        SELECT l.kind, count(*) FROM promptset_labels l JOIN requests r USING (request_id)
        WHERE r.run = ? AND r.benchmark = ? GROUP BY ALL""", [config.run, name]).fetchall())
    computed = stats.update_statistics(conn, config.run, name, n_boot or env_int("FAIRSWEEP_MRNI_BOOT")
                                       or stats.N_BOOT, seed)
    return {"labelled": labelled, "refusal": kinds.get("refusal", 0), "unparsed": kinds.get("unparsed", 0),
            **computed}

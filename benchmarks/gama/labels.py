"""The plausibility label of every scenario a GAMA run planned, for table gama_scenario_labels.

Labels come from the run's scenario file (config.gama_scenarios, else the bundled set) at scoring time,
so a re-review that only relabels scenarios reaches the next `fairsweep score`. A label is used only if
the file still compiles to the very prompts the run sent (same prompt hash for both genders): otherwise
the scenario is 'changed' and, like an unlabelled one, counts as not neutral in the gap_neutral columns.
(Prompt metadata would not do: a prompts row is shared by every run that sent the same text and is
written once, so it would keep the label of the first run forever.)
"""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import datetime, timezone

import duckdb

from ...config import SweepConfig
from ...errors import DataError
from .prompts import BENCHMARK, build_prompts
from .schema import load_scenarios

COLUMNS = ("run", "scenario_id", "plausibility", "status", "source", "stored_at")
STATUSES = ("labelled", "unlabelled", "changed", "missing")


def _planned(conn: duckdb.DuckDBPyConnection, run: str) -> dict[str, set[tuple[str, str]]]:
    """scenario id -> {(prompt key, prompt hash)} the run planned."""
    rows = conn.execute("""
        SELECT DISTINCT json_extract_string(p.metadata, '$.scenario_id'), r.prompt_key, r.prompt_hash
        FROM requests r JOIN prompts p USING (benchmark, prompt_key, prompt_hash)
        WHERE r.run = ? AND r.benchmark = ?""", [run, BENCHMARK]).fetchall()
    planned: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for scenario_id, key, prompt_hash in rows:
        planned[scenario_id].add((key, prompt_hash))
    return planned


def label_rows(conn: duckdb.DuckDBPyConnection, config: SweepConfig) -> tuple[list[tuple], str]:
    """(rows of COLUMNS for config.run, a one-line summary); no rows when the run planned no GAMA prompt.
    Raises DataError when the scenario file cannot be read."""
    planned = _planned(conn, config.run)
    if not planned:
        return [], "no GAMA prompts planned"
    scenarios = {s.id: s for s in load_scenarios(config.gama_scenarios)}
    compiled = {(p.key, p.prompt_hash) for p in build_prompts(list(scenarios.values()))}
    source, now, rows = config.gama_scenarios or "bundled", datetime.now(timezone.utc), []
    for scenario_id, sent in sorted(planned.items()):
        scenario = scenarios.get(scenario_id)
        if scenario is None:
            status = "missing"
        elif not sent <= compiled:
            status = "changed"
        else:
            status = "labelled" if scenario.plausibility is not None else "unlabelled"
        label = scenario.plausibility.label if status == "labelled" else None
        rows.append((config.run, scenario_id, label, status, source, now))
    counts = Counter(r[3] for r in rows)
    labels = Counter(r[2] for r in rows if r[2])
    summary = ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s])
    return rows, f"{summary} ({labels['neutral']} neutral) of {len(rows)} from {source}"


def safe_label_rows(conn: duckdb.DuckDBPyConnection, config: SweepConfig) -> tuple[list[tuple] | None, str]:
    """label_rows, or (None, why) when the scenario file cannot be read (the stored labels are then kept)."""
    try:
        return label_rows(conn, config)
    except DataError as exc:
        return None, f"not updated: {exc}"

"""The live panel's numbers, per run and model: stored / planned, answers per second over time, ETA,
retries, final failures by class, 429s, the pace (declared, or learned by the running process), spend
against the caps, a stopped model's reason, batches in flight.

Counts come from the DB (through the run while one writes it: storage/live.py); what only the running
process knows (its learned pace, answer rate, ETA, stops) from the run's live state. Read only.
"""

from __future__ import annotations

import json
import math
import time

from ..storage.batches import batch_rows, has_batches_table
from ..storage.live import live_state
from ..storage.db import open_db

MAX_POINTS = 90  # chart buckets per run: wide buckets for a long run, 2 s ones for a short one
MIN_BUCKET_S = 2

_STATUS_SQL = """
SELECT run, model, total, done, failed, pending, retries, http_429, prompt_tokens, completion_tokens, cost_usd
FROM run_status WHERE list_contains($runs, run) ORDER BY run, model"""
_FAILURES_SQL = """
SELECT q.run, q.model, coalesce(a.error_class, 'unknown') AS error_class, count(DISTINCT a.request_id) AS n
FROM attempts a JOIN requests q USING (request_id) LEFT JOIN responses s USING (request_id)
WHERE a.outcome = 'permanent' AND s.request_id IS NULL AND list_contains($runs, q.run)
GROUP BY ALL ORDER BY q.run, q.model, n DESC"""
_SPAN_SQL = """
SELECT q.run, epoch(min(s.received_at)) AS t0, epoch(max(s.received_at)) AS t1
FROM responses s JOIN requests q USING (request_id) WHERE list_contains($runs, q.run) GROUP BY q.run"""
_BUCKETS_SQL = """
SELECT q.run, q.model, CAST(floor((epoch(s.received_at) - $t0) / $width) AS INTEGER) AS bucket, count(*) AS n
FROM responses s JOIN requests q USING (request_id) WHERE q.run = $run GROUP BY ALL ORDER BY 1, 2, 3"""
_CONFIG_SQL = "SELECT run, config FROM runs WHERE list_contains($runs, run)"


def run_names(db: str) -> list[dict]:
    """Every run in the DB, newest first, with when it was created and last resumed."""
    conn = open_db(db, read_only=True)
    try:
        rows = conn.execute("SELECT run, created_at, updated_at FROM runs ORDER BY updated_at DESC, run").fetchall()
        return [{"run": r, "created_at": str(c), "updated_at": str(u), "live": bool(getattr(conn, "live", False))}
                for r, c, u in rows]
    finally:
        conn.close()


def snapshot(db: str, runs: list[str]) -> dict:
    """Everything the live panel shows for `runs`, read once."""
    state = live_state(db)
    conn = open_db(db, read_only=True)
    try:
        params = {"runs": runs}
        status = _dicts(conn.execute(_STATUS_SQL, params))
        failures = _dicts(conn.execute(_FAILURES_SQL, params))
        configs = {r: json.loads(c) for r, c in conn.execute(_CONFIG_SQL, params).fetchall()}
        history = {row[0]: _history(conn, *row) for row in conn.execute(_SPAN_SQL, params).fetchall()}
        batches = [b for run in runs for b in batch_rows(conn, run, live_only=True)] if has_batches_table(conn) else []
        live = bool(getattr(conn, "live", False))
    finally:
        conn.close()
    return {"live": live, "now": time.time(), "running": state["run"] if state else None,
            "runs": [_run(run, status, failures, configs.get(run, {}), history.get(run), batches,
                          state if state and state.get("run") == run else None) for run in runs]}


def _history(conn, run: str, t0: float | None, t1: float | None) -> dict | None:
    """Answers stored per bucket of `width` seconds since the run's first answer, per model."""
    if t0 is None:
        return None
    width = max(MIN_BUCKET_S, math.ceil((t1 - t0) / MAX_POINTS))
    series: dict[str, list[list[int]]] = {}
    for _, model, bucket, n in conn.execute(_BUCKETS_SQL, {"run": run, "t0": t0, "width": width}).fetchall():
        series.setdefault(model, []).append([bucket, n])
    return {"t0": t0, "t1": t1, "width": width, "series": series}


def _run(run: str, status: list[dict], failures: list[dict], config: dict, history: dict | None,
         batches: list[tuple], state: dict | None) -> dict:
    specs = {m["name"]: m for m in (*config.get("models", ()), *config.get("judges", ()))}
    lines = {line["name"]: line for line in (state or {}).get("models", ())}
    models = []
    for row in (r for r in status if r["run"] == run):
        spec, line = specs.get(row["model"], {}), lines.get(row["model"])
        models.append({
            **{k: _plain(v) for k, v in row.items() if k != "run"},
            "failures": {f["error_class"]: f["n"] for f in failures if f["run"] == run and f["model"] == row["model"]},
            "declared_rpm": spec.get("rpm"), "pace": line["pace"] if line else None,
            "rate": line["rate"] if line else None, "eta_s": line["eta_s"] if line else None,
            "stopped": line["stopped"] if line else _cap_stop(row, spec, config),
            "max_cost": spec.get("max_cost"), "sending": line is not None,
            "batches_in_flight": sum(1 for b in batches if b[0] == run and b[1] == row["model"]),
        })
    return {"run": run, "max_cost": config.get("max_cost"), "live": state is not None, "models": models,
            "spent": _known_sum(m["cost_usd"] for m in models), "history": history,
            "batches": [{"model": b[1], "api": b[2], "batch": b[3], "status": b[4], "requests": b[6]}
                        for b in batches if b[0] == run]}


def _cap_stop(row: dict, spec: dict, config: dict) -> str | None:
    """With no live run to ask: a model whose spend reached its cap is stopped (the reason the run gave)."""
    cap = spec.get("max_cost")
    if cap is not None and (row["cost_usd"] or 0) >= cap and row["pending"]:
        return f"budget reached for model {row['model']}: spent ${row['cost_usd']:.4f} of max_cost ${cap:.4f}"
    return None


def _known_sum(values) -> float | None:
    """The sum of the known costs; None when no answer has a known price (never a silent zero)."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _plain(value):
    """JSON-safe numbers (run_status sums are HUGEINT / DECIMAL)."""
    if value is None or isinstance(value, (str, bool, float)):
        return value
    return int(value) if float(value).is_integer() else float(value)


def _dicts(cursor) -> list[dict]:
    cols = [d[0] for d in cursor.description]
    return [dict(zip(cols, row)) for row in cursor.fetchall()]

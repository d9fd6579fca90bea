"""What a run already holds that the send gate starts from: spend per model, and the provider models
and fingerprints its answers came from."""

from __future__ import annotations

from .duck import duckdb


def spent_by_model(conn: duckdb.DuckDBPyConnection, run: str) -> dict[str, float]:
    """USD of the run's stored answers, per model (unknown prices count as nothing)."""
    return {model: float(spent) for model, spent in conn.execute("""
        SELECT r.model, coalesce(sum(s.cost_usd), 0) FROM responses s JOIN requests r USING (request_id)
        WHERE r.run = ? GROUP BY r.model""", [run]).fetchall()}


def answered_as(conn: duckdb.DuckDBPyConnection, run: str, model: str) -> list[tuple[str | None, str | None]]:
    """The distinct (provider_model, system_fingerprint) of one model's answers in a run."""
    return conn.execute("""
        SELECT DISTINCT s.provider_model, s.system_fingerprint
        FROM responses s JOIN requests r USING (request_id)
        JOIN attempts a ON a.attempt_id = s.attempt_id
        WHERE r.run = ? AND r.model = ? AND a.outcome IN ('ok', 'batch')""", [run, model]).fetchall()

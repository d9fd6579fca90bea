"""The `batches` and `batch_requests` tables: every provider batch is recorded here before it is submitted,
so a killed or resumed run re-attaches to the batches in flight and never submits their requests again."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .duck import duckdb

from .tx import transaction
from .writer import insert_rows

LIVE = ("preparing", "submitted", "cancelling")  # a batch whose requests must not be sent elsewhere
FINAL = ("completed", "expired", "cancelled", "failed")


@dataclass
class BatchRecord:
    """One row of `batches` with its request ids."""

    batch_id: str
    run: str
    model: str
    api: str
    api_base: str | None
    status: str
    request_ids: list[str]
    session_id: str
    created_at: datetime
    provider_batch_id: str | None = None
    input_file_id: str | None = None
    submitted_at: datetime | None = None


def record_batch(conn: duckdb.DuckDBPyConnection, batch: BatchRecord) -> None:
    """Commit a batch (status 'preparing') and its requests before anything is sent."""
    with transaction(conn):
        conn.execute("INSERT INTO batches (batch_id, run, model, api, api_base, status, requests, session_id, "
                     "created_at) VALUES (?, ?, ?, ?, ?, 'preparing', ?, ?, ?)",
                     [batch.batch_id, batch.run, batch.model, batch.api, batch.api_base, len(batch.request_ids),
                      batch.session_id, batch.created_at])
        insert_rows(conn, "batch_requests", ("batch_id", "request_id"),
                    [(batch.batch_id, rid) for rid in batch.request_ids])


def update_batch(conn: duckdb.DuckDBPyConnection, batch_id: str, **fields) -> None:
    """Set columns of one batch (committed at once)."""
    names = sorted(fields)
    conn.execute(f"UPDATE batches SET {', '.join(f'{n} = ?' for n in names)} WHERE batch_id = ?",
                 [fields[n] for n in names] + [batch_id])


def live_batches(conn: duckdb.DuckDBPyConnection, run: str, models: list[str]) -> list[BatchRecord]:
    """The run's batches still in flight (or never known to be submitted) for these models, oldest first."""
    rows = conn.execute(f"""
        SELECT b.batch_id, b.run, b.model, b.api, b.api_base, b.status, list(q.request_id ORDER BY q.request_id),
               b.session_id, b.created_at, b.provider_batch_id, b.input_file_id, b.submitted_at
        FROM batches b JOIN batch_requests q USING (batch_id)
        WHERE b.run = $1 AND b.model IN (SELECT unnest($2)) AND b.status IN {LIVE}
        GROUP BY ALL ORDER BY b.created_at""", [run, models]).fetchall()
    return [BatchRecord(*row) for row in rows]


def attached_provider_ids(conn: duckdb.DuckDBPyConnection, api_base: str | None) -> set[str]:
    """Provider batch ids this DB already knows (an orphan found by listing must not be one of them)."""
    rows = conn.execute("SELECT provider_batch_id FROM batches WHERE provider_batch_id IS NOT NULL "
                        "AND api_base IS NOT DISTINCT FROM ?", [api_base]).fetchall()
    return {r[0] for r in rows}


def batch_rows(conn: duckdb.DuckDBPyConnection, run: str | None, live_only: bool = False) -> list[tuple]:
    """Batches for `fairsweep batches` and `status`: a run and its judge runs (all runs when None)."""
    where, params = [], []
    if run:
        where.append("(run = ? OR starts_with(run, ?))")
        params += [run, run + "/judge/"]
    if live_only:
        where.append(f"status IN {LIVE}")
    sql = ("SELECT run, model, api, coalesce(provider_batch_id, '(not submitted)'), status, provider_status, "
           "requests, succeeded, errored, unfinished, price_source, created_at, ended_at, batch_id, error "
           f"FROM batches {'WHERE ' + ' AND '.join(where) if where else ''} ORDER BY created_at")
    return conn.execute(sql, params).fetchall()


def live_request_ids(conn: duckdb.DuckDBPyConnection, run: str) -> set[str]:
    """Requests of the run that sit in a batch still in flight."""
    if not has_batches_table(conn):
        return set()
    return {r[0] for r in conn.execute(f"SELECT q.request_id FROM batch_requests q JOIN batches b USING (batch_id) "
                                       f"WHERE b.run = ? AND b.status IN {LIVE}", [run]).fetchall()}


def has_batches_table(conn: duckdb.DuckDBPyConnection) -> bool:
    """False for a DB written before batch mode existed (a read-only open does not migrate)."""
    return bool(conn.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'batches'").fetchone()[0])

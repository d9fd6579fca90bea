"""The response cache: a planned request whose content address matches a stored answer (from any run
in this DB) is served from it instead of being sent. Served answers are recorded as an attempt with
outcome 'cached' and a copy of the response at zero cost, so status counts them and spend does not."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

from .duck import duckdb

from ..records import AttemptRow, Outcome, ResponseRow, WorkItem
from .tx import transaction
from .writer import insert_rows


def cache_sources(conn: duckdb.DuckDBPyConnection, items: list[WorkItem],
                  before: datetime | None = None) -> dict[str, str]:
    """request_id -> the request whose stored response answers it (same cache key, already answered;
    `before`: answered before then, e.g. before this session started)."""
    wanted = [(i.request_id, i.cache_key) for i in items if i.cache_key]
    if not wanted:
        return {}
    rows = conn.execute("""
        WITH wanted AS (SELECT unnest($1) AS request_id, unnest($2) AS cache_key)
        SELECT w.request_id, min(r.request_id)
        FROM wanted w
        JOIN requests r ON r.cache_key = w.cache_key AND r.request_id <> w.request_id
        JOIN responses s ON s.request_id = r.request_id
        WHERE $3::TIMESTAMPTZ IS NULL OR s.received_at < $3::TIMESTAMPTZ
        GROUP BY w.request_id
    """, [[w[0] for w in wanted], [w[1] for w in wanted], before]).fetchall()
    return dict(rows)


def serve_from_cache(conn: duckdb.DuckDBPyConnection, items: list[WorkItem], session_id: str,
                     before: datetime | None = None) -> list[WorkItem]:
    """Store cached answers for the items that have one; return the items still to send. `before`: serve
    only answers received before then (a session feeding its plan as it sends serves what was stored
    before it started, as a session that plans first does; never one model's answer of this session to
    another)."""
    sources = cache_sources(conn, items, before)
    if not sources:
        return items
    now = datetime.now(timezone.utc)
    stored = dict(
        (row[0], row[1:]) for row in conn.execute(
            "SELECT request_id, text, finish_reason, prompt_tokens, completion_tokens, provider_model, "
            "system_fingerprint FROM responses WHERE request_id IN (SELECT unnest($1))",
            [sorted(set(sources.values()))]).fetchall())
    attempts, responses = [], []
    for request_id, source in sources.items():
        text, finish, p_tokens, c_tokens, provider_model, fingerprint = stored[source]
        attempt_id = uuid.uuid4().hex
        attempts.append(AttemptRow(attempt_id, request_id, session_id, 0, now, 0.0, Outcome.CACHED.value, None,
                                   None, None, f"served from cache: {source}", p_tokens, c_tokens))
        responses.append(ResponseRow(request_id, attempt_id, text, finish, p_tokens, c_tokens, 0.0, provider_model,
                                     fingerprint, 0.0, now))
    with transaction(conn):
        insert_rows(conn, "attempts", AttemptRow._fields, attempts)
        insert_rows(conn, "responses", ResponseRow._fields, responses)
    return [i for i in items if i.request_id not in sources]

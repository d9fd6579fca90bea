"""Run registration, planned requests, and what is left to do (computed in SQL)."""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from typing import Any

from .duck import duckdb

from .. import __version__
from ..config import SweepConfig
from ..records import WorkItem, canonical_json
from ..errors import RunConflictError
from .design import design_rows
from .tx import transaction
from .bulk import insert_rows
from .memory import retry_out_of_memory


def identity_hash(identity: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]


def register_run(conn: duckdb.DuckDBPyConnection, config: SweepConfig, command: str,
                 session_id: str | None = None) -> str:
    """Create the run, or check that a resumed run keeps its identity. Records the session (`session_id`, or a
    new one) and returns its id."""
    identity = config.identity()
    row = conn.execute("SELECT identity_hash, identity FROM runs WHERE run = ?", [config.run]).fetchone()
    if row is None:
        conn.execute("INSERT INTO runs VALUES (?, ?, ?, ?, ?, now(), now())",
                     [config.run, identity_hash(identity), canonical_json(identity), config.to_json(), __version__])
    elif row[0] != identity_hash(identity) and not _same_identity(json.loads(row[1]), identity):
        raise RunConflictError(_conflict_message(config, json.loads(row[1]), identity))
    else:
        conn.execute("UPDATE runs SET updated_at = now(), config = ? WHERE run = ?", [config.to_json(), config.run])
    session_id = session_id or uuid.uuid4().hex
    conn.execute("INSERT INTO sessions VALUES (?, ?, ?, ?, now())", [session_id, config.run, command, os.getpid()])
    return session_id


def _same_identity(stored: dict, new: dict) -> bool:
    """Runs registered by 0.1.0 development builds kept the judges in the identity; they no longer are."""
    stored = {k: v for k, v in stored.items() if k != "judges"}
    return canonical_json(stored) == canonical_json(new)


def _conflict_message(config: SweepConfig, stored: dict, new: dict) -> str:
    changed = [k for k in sorted(set(stored) | set(new)) if stored.get(k) != new.get(k)]
    return (f"run {config.run!r} already exists in {config.db} with different {', '.join(changed)}: "
            f"pass --run NEW_NAME to start a new run, or restore that run's settings to resume it")


PLAN_CHUNK = 1000  # rows per insert: bounds the memory of planning a large sweep


def plan_requests(conn: duckdb.DuckDBPyConnection, items: list[WorkItem]) -> None:
    """Record prompts and planned requests (idempotent). Only requests not planned yet are written, a chunk
    per transaction (bounded memory), each request after its prompt: a plan cut short is completed by the
    next one, and a resumed run plans in the time it takes to look its ids up."""
    written: set[tuple[str, str, str]] = set()
    for chunk in _chunks(_unplanned(conn, items)):
        prompts = {}
        for item in chunk:
            p = item.prompt
            if (key := (p.benchmark, p.key, p.prompt_hash)) not in written:
                prompts[key] = p
        written.update(prompts)
        plan_chunk(conn, chunk, list(prompts.values()))


REQUEST_COLUMNS = ("request_id", "run", "model", "benchmark", "prompt_key", "prompt_hash", "sample", "params",
                   "ordinal", "cache_key")


def plan_chunk(conn: duckdb.DuckDBPyConnection, items: list[WorkItem], prompts: list) -> None:
    """One step of a plan in one transaction: `prompts` (with their design rows, keyed: written once), then the
    `items`' requests, which the caller has checked are not planned yet (`requests` has no key: its index
    would grow with the plan and stay in memory). Done again with a larger margin if DuckDB runs out of memory."""
    params: dict[int, str] = {}  # the items of one model share one params dict: serialise it once
    rows = []
    for i in items:
        p = i.prompt
        if (text := params.get(id(i.params))) is None:
            text = params[id(i.params)] = canonical_json(i.params)
        rows.append((i.request_id, i.run, i.model, p.benchmark, p.key, p.prompt_hash, i.sample, text, i.ordinal,
                     i.cache_key))

    def write() -> None:
        with transaction(conn):
            if prompts:
                _insert_prompts(conn, prompts)
            # each id once: the planner skips planned ids
            insert_rows(conn, "requests", REQUEST_COLUMNS, rows, keyed=False)

    retry_out_of_memory(conn, write)


def _insert_prompts(conn: duckdb.DuckDBPyConnection, prompts: list) -> None:
    """Prompts and their design rows (storage/design.py)."""
    insert_rows(conn, "prompts", ("benchmark", "prompt_key", "prompt_hash", "messages", "metadata"),
                [(p.benchmark, p.key, p.prompt_hash, p.messages_json, canonical_json(p.metadata))
                 for p in prompts])
    for table, (columns, rows) in design_rows(prompts).items():
        insert_rows(conn, table, columns, rows)


def _chunks(rows: list) -> list[list]:
    return [rows[at:at + PLAN_CHUNK] for at in range(0, len(rows), PLAN_CHUNK)]


def _unplanned(conn: duckdb.DuckDBPyConnection, items: list[WorkItem]) -> list[WorkItem]:
    """The items whose request is not stored yet. Read by run: requests are written run by run, so the
    scan skips other runs' row groups (a few ms at a million requests)."""
    planned: set[str] = set()
    for run in {i.run for i in items}:
        planned.update(r[0] for r in conn.execute("SELECT request_id FROM requests WHERE run = ?", [run]).fetchall())
    return [i for i in items if i.request_id not in planned]


def remaining(conn: duckdb.DuckDBPyConnection, items: list[WorkItem],
              retry_failed: tuple[str, ...] | None = None) -> list[WorkItem]:
    """The planned items not finished yet, in their planned order.

    Finished = a stored response or a stored final failure; computed as an anti-join in SQL.
    `retry_failed`: final failures to send again: () for all of them, or these error classes.
    """
    if not items:
        return []
    final = "outcome = 'permanent'"
    if retry_failed == ():
        final = "false"
    elif retry_failed:
        final += " AND error_class NOT IN (SELECT unnest($2))"
    rows = conn.execute(f"""
        WITH wanted AS (SELECT unnest($1) AS request_id)
        SELECT w.request_id FROM wanted w
        ANTI JOIN responses s USING (request_id)
        ANTI JOIN (SELECT request_id FROM attempts WHERE {final}) p USING (request_id)
    """, [[i.request_id for i in items]] + ([list(retry_failed)] if retry_failed else [])).fetchall()
    left = {r[0] for r in rows}
    return [i for i in items if i.request_id in left]


def answered_count(conn: duckdb.DuckDBPyConnection, items: list[WorkItem]) -> int:
    """How many of the items have a stored answer."""
    if not items:
        return 0
    return conn.execute("SELECT count(*) FROM responses WHERE request_id IN (SELECT unnest($1))",
                        [[i.request_id for i in items]]).fetchone()[0]

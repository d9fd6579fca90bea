"""Run registration, planned requests, and what is left to do (computed in SQL)."""

from __future__ import annotations

import json
import os
import uuid

import duckdb

from .. import __version__
from ..config import SweepConfig
from ..engine.work import WorkItem, canonical_json
from ..errors import RunConflictError
from .writer import insert_rows


def register_run(conn: duckdb.DuckDBPyConnection, config: SweepConfig, command: str) -> str:
    """Create the run, or check that a resumed run keeps its identity. Returns a new session id."""
    row = conn.execute("SELECT identity_hash, identity FROM runs WHERE run = ?", [config.run]).fetchone()
    if row is None:
        conn.execute("INSERT INTO runs VALUES (?, ?, ?, ?, ?, now(), now())",
                     [config.run, config.identity_hash(), canonical_json(config.identity()),
                      config.to_json(), __version__])
    elif row[0] != config.identity_hash() and not _same_identity(json.loads(row[1]), config.identity()):
        raise RunConflictError(_conflict_message(config, json.loads(row[1])))
    else:
        conn.execute("UPDATE runs SET updated_at = now(), config = ? WHERE run = ?", [config.to_json(), config.run])
    session_id = uuid.uuid4().hex
    conn.execute("INSERT INTO sessions VALUES (?, ?, ?, ?, now())", [session_id, config.run, command, os.getpid()])
    return session_id


def _same_identity(stored: dict, new: dict) -> bool:
    """Runs registered by 0.1.0 development builds kept the judges in the identity; they no longer are."""
    stored = {k: v for k, v in stored.items() if k != "judges"}
    return canonical_json(stored) == canonical_json(new)


def _conflict_message(config: SweepConfig, stored: dict) -> str:
    new = config.identity()
    changed = [k for k in sorted(set(stored) | set(new)) if stored.get(k) != new.get(k)]
    return (f"run {config.run!r} already exists in {config.db} with different {', '.join(changed)}: "
            f"pass --run NEW_NAME to start a new run, or restore that run's settings to resume it")


def plan_requests(conn: duckdb.DuckDBPyConnection, items: list[WorkItem]) -> None:
    """Record prompts and planned requests (idempotent)."""
    prompts = {}
    for item in items:
        p = item.prompt
        prompts[(p.benchmark, p.key, p.prompt_hash)] = (
            p.benchmark, p.key, p.prompt_hash, canonical_json(list(p.messages)), canonical_json(p.metadata))
    conn.execute("BEGIN TRANSACTION")
    insert_rows(conn, "prompts", ("benchmark", "prompt_key", "prompt_hash", "messages", "metadata"),
                list(prompts.values()))
    insert_rows(conn, "requests",
                ("request_id", "run", "model", "benchmark", "prompt_key", "prompt_hash", "sample", "params",
                 "ordinal", "cache_key"),
                [(i.request_id, i.run, i.model, i.prompt.benchmark, i.prompt.key, i.prompt.prompt_hash,
                  i.sample, canonical_json(i.params), i.ordinal, i.cache_key) for i in items])
    conn.execute("COMMIT")


def remaining(conn: duckdb.DuckDBPyConnection, items: list[WorkItem]) -> list[WorkItem]:
    """The planned items not finished yet, in their planned order.

    Finished = a stored response or a stored permanent failure; computed as an anti-join in SQL.
    """
    if not items:
        return []
    rows = conn.execute("""
        WITH wanted AS (SELECT unnest($1) AS request_id)
        SELECT w.request_id FROM wanted w
        ANTI JOIN responses s USING (request_id)
        ANTI JOIN (SELECT request_id FROM attempts WHERE outcome = 'permanent') p USING (request_id)
    """, [[i.request_id for i in items]]).fetchall()
    left = {r[0] for r in rows}
    return [i for i in items if i.request_id in left]

"""Prompt-set labels: each stored answer parsed under its item's spec (the prompt's metadata), for the current
parser version; live as a run commits answers (registry `label`), and at scoring for whatever is left."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timezone

import duckdb

from ...records import Prompt, canonical_json
from ...storage.tx import transaction
from ..given_prompts import split_by_prompt
from .parsers import PARSER_VERSION, parse
from .prompts import META_KEY


def label_committed(name: str, conn: duckdb.DuckDBPyConnection, responses: list,
                    prompts: Mapping[str, Prompt] | None = None) -> None:
    """Label the committed answers of set `name` (inside the writer's transaction). An answer's prompt is the one
    the run gave with it (`prompts`: request_id -> Prompt, its metadata as it is stored), else the stored one."""
    given, unknown = split_by_prompt(responses, prompts, name)
    found = [(request_id, canonical_json(prompt.metadata)) for request_id, prompt in given]
    if unknown:
        found += conn.execute("""
            SELECT r.request_id, p.metadata
            FROM requests r JOIN prompts p USING (benchmark, prompt_key, prompt_hash)
            WHERE r.benchmark = $name AND r.request_id IN (SELECT unnest($ids))""",
                              {"name": name, "ids": unknown}).fetchall()
    if found:
        text = {r.request_id: r.text for r in responses}
        upsert_labels(conn, name, [(rid, text[rid], metadata) for rid, metadata in found])


def label_rows(rows: list[tuple[str, str | None, str]]) -> list[tuple]:
    """(request_id, response text, prompt metadata JSON) -> label rows."""
    out = []
    for request_id, text, metadata in rows:
        spec = json.loads(metadata)[META_KEY]
        p = parse(text, spec)
        out.append((request_id, p.kind, p.label, p.choice, p.value, p.correct, p.span))
    return out


def upsert_labels(conn: duckdb.DuckDBPyConnection, name: str, rows: list[tuple[str, str | None, str]]) -> None:
    """Parse and write labels inside the caller's transaction."""
    labelled = label_rows(rows)
    if not labelled:
        return
    columns = [list(c) for c in zip(*labelled)]
    conn.execute("""
        INSERT OR REPLACE INTO promptset_labels
            (request_id, benchmark, kind, label, choice, value, correct, span, parser_version, scored_at)
        SELECT unnest($1), $2, unnest($3), unnest($4), unnest($5::INTEGER[]), unnest($6::DOUBLE[]),
               unnest($7::BOOLEAN[]), unnest($8), $9, $10""",
                 [columns[0], name, columns[1], columns[2], columns[3], columns[4], columns[5], columns[6],
                  PARSER_VERSION, datetime.now(timezone.utc)])


def label_unlabelled(conn: duckdb.DuckDBPyConnection, name: str, run: str) -> int:
    """Label the run's stored answers of set `name` that have no label of the current parser version."""
    rows = conn.execute("""
        SELECT r.request_id, s.text, p.metadata
        FROM requests r JOIN responses s USING (request_id)
        JOIN prompts p USING (benchmark, prompt_key, prompt_hash)
        LEFT JOIN promptset_labels l USING (request_id)
        WHERE r.run = $run AND r.benchmark = $name AND l.parser_version IS DISTINCT FROM $version
        ORDER BY r.request_id""", {"run": run, "name": name, "version": PARSER_VERSION}).fetchall()
    if rows:
        with transaction(conn):
            upsert_labels(conn, name, rows)
    return len(rows)

"""MRNI-BB labels: the parser's verdict on each stored answer, written for the current parser version.

Used by scoring (benchmarks/mrni/score.py) and, during a run, as answers are committed (registry `label`).
Imports no numpy or scipy: a run loads it in its writer thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone

import duckdb

from ...records import Prompt
from ...storage.design import json_text
from ...storage.tx import transaction
from ..given_prompts import split_by_prompt
from .parse import PARSER_VERSION, parse_answer


# each prompt's JSON read once, not per answer
_TEXTS = """SELECT benchmark, prompt_key, prompt_hash,
                   json_extract_string(metadata, '$.context') AS context,
                   json_extract_string(metadata, '$.answer_options') AS options
            FROM prompts SEMI JOIN wanted USING (benchmark, prompt_key, prompt_hash)"""


def _texts(context: str | None, options: str | None) -> tuple[str | None, tuple[str, ...] | None]:
    return context, tuple(o.strip() for o in options.split("|")) if options else None


def label_committed(conn: duckdb.DuckDBPyConnection, responses: list, prompts: Mapping[str, Prompt] | None = None
                    ) -> None:
    """Label MRNI-BB answers as a run commits them (registry `label`; storage/writer.py calls it inside a
    transaction). An answer's prompt is the one the run gave with it (`prompts`: request_id -> Prompt), else the
    stored one if it has a design row (planned by this version); scoring labels any other."""
    given, unknown = split_by_prompt(responses, prompts, "mrni")
    fields = [(request_id, *_fields(prompt)) for request_id, prompt in given]
    if unknown:
        fields += stored_fields(conn, unknown)
    if fields:
        text = {r.request_id: r.text for r in responses}
        upsert_labels(conn, [(rid, *parse_label(text[rid], language, condition, *_texts(context, options)))
                             for rid, language, condition, context, options in fields])


def _fields(prompt: Prompt) -> tuple[str | None, ...]:
    """(language, condition, context, options) of a prompt, as stored_fields reads them from its stored JSON."""
    metadata = prompt.metadata
    return tuple(json_text(metadata.get(key)) for key in ("language", "condition", "context", "answer_options"))


def stored_fields(conn: duckdb.DuckDBPyConnection, request_ids: list[str]) -> list[tuple]:
    """(request_id, language, condition, context, options) of the stored MRNI-BB requests among `request_ids`
    whose prompt has a design row. A run that gives the prompts skips this query: replayed over the 94,080
    answers of a 20-model run, in batches of 600, it cost ~9 ms of CPU per batch and raised RSS by ~25 MB."""
    return conn.execute(f"""
        WITH wanted AS (SELECT r.request_id, r.benchmark, r.prompt_key, r.prompt_hash, d.language, d.condition
                        FROM requests r JOIN mrni_design d USING (benchmark, prompt_key, prompt_hash)
                        WHERE r.benchmark = 'mrni' AND r.request_id IN (SELECT unnest($1)))
        SELECT w.request_id, w.language, w.condition, t.context, t.options
        FROM wanted w LEFT JOIN ({_TEXTS}) t USING (benchmark, prompt_key, prompt_hash)""", [request_ids]).fetchall()


def prompt_texts(conn: duckdb.DuckDBPyConnection, request_ids: list[str]
                 ) -> dict[str, tuple[str | None, tuple[str, ...] | None]]:
    """request_id -> (context, option texts) of its prompt, for answers that name an option by a description
    (read from the prompt's JSON only for the answers being labelled)."""
    if not request_ids:
        return {}
    rows = conn.execute(f"""
        WITH wanted AS (SELECT request_id, benchmark, prompt_key, prompt_hash FROM requests
                        WHERE request_id IN (SELECT unnest($1)))
        SELECT w.request_id, t.context, t.options
        FROM wanted w JOIN ({_TEXTS}) t USING (benchmark, prompt_key, prompt_hash)""", [request_ids]).fetchall()
    return {rid: _texts(context, options) for rid, context, options in rows}


def parse_label(text: str, language: str, condition: str, context: str | None = None,
                options: tuple[str, ...] | None = None) -> tuple[str, str | None]:
    result = parse_answer(text, language, condition, context, options)
    return result.label, result.span


def store_labels(conn: duckdb.DuckDBPyConnection, labels: list[tuple[str, str, str | None]]) -> None:
    """Upsert (request_id, label, span) rows for the current parser version, in one transaction."""
    if labels:
        with transaction(conn):
            upsert_labels(conn, labels)


def upsert_labels(conn: duckdb.DuckDBPyConnection, labels: list[tuple[str, str, str | None]]) -> None:
    """(request_id, label, span) rows for the current parser version, inside the caller's transaction."""
    # no index keeps request_id unique (migration 0020): a new label replaces the old one by delete and insert,
    # and of an id given twice the last label is kept
    ids, values, spans = (list(col) for col in zip(*{row[0]: row for row in labels}.values()))
    conn.execute("DELETE FROM mrni_labels WHERE request_id IN (SELECT unnest($1))", [ids])
    conn.execute("""
        INSERT INTO mrni_labels (request_id, label, span, parser_version, scored_at)
        SELECT unnest($1), unnest($2), unnest($3), $4, $5""",
                 [ids, values, spans, PARSER_VERSION, datetime.now(timezone.utc)])

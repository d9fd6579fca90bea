"""Design tables: a benchmark's per-prompt fields as typed columns, written with the prompt when it is planned.

The SQL views of a benchmark read these instead of extracting the fields from the prompt's JSON at every query
(DuckDB's JSON functions are what made scoring's peak memory). Each value is the text json_extract_string
gives for it, so a view reads the same whether a prompt has a design row or is read from its JSON.
"""

from __future__ import annotations

import json
from typing import Any

from ..records import Prompt

# benchmark -> (table, ((column, metadata key), ...))
DESIGN_TABLES: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    "mrni": ("mrni_design", (("language", "language"), ("subscale", "subscale"), ("category", "Category"),
                             ("item", "MRNI-item"), ("scenario", "Scenario"), ("condition", "condition"),
                             ("mapping", "mapping"), ("gold_answer", "gold_answer"))),
}
KEY_COLUMNS = ("benchmark", "prompt_key", "prompt_hash")


def json_text(value: Any) -> str | None:
    """What DuckDB's json_extract_string returns for this JSON value."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def design_rows(prompts: list[Prompt]) -> dict[str, tuple[tuple[str, ...], list[tuple]]]:
    """table -> (columns, rows) for the prompts of benchmarks that have a design table."""
    out: dict[str, tuple[tuple[str, ...], list[tuple]]] = {}
    for p in prompts:
        if p.benchmark not in DESIGN_TABLES:
            continue
        table, fields = DESIGN_TABLES[p.benchmark]
        columns = KEY_COLUMNS + tuple(column for column, _ in fields)
        row = (p.benchmark, p.key, p.prompt_hash, *(json_text(p.metadata.get(key)) for _, key in fields))
        out.setdefault(table, (columns, []))[1].append(row)
    return out

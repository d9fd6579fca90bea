"""mrni-likert: the explicit agreement probe (mrni-protocol.md, "Explicit agreement probe (Likert)").

Each of the 49 MRNI-R statements, in English and Italian, is asked as its own prompt: "how much do you
agree", on a `likert_points` scale (default 7) with its verbal anchors, one number as the answer.
98 prompts, keys `likert:<lang>:<item id>`, in the order en 1..49, it 1..49.

Items 10/33 and 11/24 have the same text under two subscales. Each is asked as its own prompt (the
same message, distinct keys) and counts under its own primary subscale (`categoria`): the overall mean
is over all 49 items, so those two texts weigh twice there, as in the MRNI-R total. `secondary_cat`
is kept in the metadata and does not enter the subscale means.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import duckdb

from ...config import SweepConfig
from ...records import Prompt
from ...storage.tx import transaction
from .data import read_tsv, require_verified, resolve_data_dir
from .likert_parse import PARSER_VERSION, parse_rating
from .likert_report import report
from .likert_scale import LANGUAGES, render_prompt

__all__ = ["BENCHMARK", "build_prompts", "load", "parse_rating", "read_items", "report", "score_run"]

BENCHMARK = "mrni-likert"


def items_path(data_dir: Path, language: str) -> Path:
    return data_dir / "MRNI_items" / f"MRNI_{language.upper()}.tsv"


def read_items(data_dir: Path, language: str) -> list[dict[str, str]]:
    """The 49 statements of one language: id, text (stripped: the files carry stray spaces), subscales."""
    return [{"id": row["id"].strip(), "text": " ".join(row["text"].split()),
             "subscale": row["categoria"].strip(), "secondary": (row.get("secondary_cat") or "").strip()}
            for row in read_tsv(items_path(data_dir, language))]


def prompt_key(language: str, item_id: str) -> str:
    return f"likert:{language}:{item_id}"


def build_prompts(data_dir: Path, points: int = 7) -> list[Prompt]:
    """Every statement in both languages as a single-turn user message."""
    require_verified(data_dir)
    prompts = []
    for language in LANGUAGES:
        for item in read_items(data_dir, language):
            metadata = {"language": language, "item_id": int(item["id"]), "subscale": item["subscale"],
                        "secondary_subscale": item["secondary"] or None, "points": points,
                        "statement": item["text"], "stratum": language}
            message = {"role": "user", "content": render_prompt(item["text"], language, points)}
            prompts.append(Prompt(BENCHMARK, prompt_key(language, item["id"]), (message,), metadata))
    return prompts


def load(config: SweepConfig, data_dir: str | None = None) -> list[Prompt]:
    """The registry's loader: resolve the data directory (flag, env, config, cache), then build."""
    return build_prompts(resolve_data_dir(data_dir, config.data_dir), config.likert_points)


_TO_LABEL = """
    SELECT s.request_id, s.text, p.metadata
    FROM responses s
    JOIN requests r USING (request_id)
    JOIN prompts p ON p.benchmark = r.benchmark AND p.prompt_key = r.prompt_key AND p.prompt_hash = r.prompt_hash
    LEFT JOIN mrni_likert_labels l USING (request_id)
    WHERE r.benchmark = ? AND (l.request_id IS NULL OR l.parser_version <> ?)
"""


def score_run(conn: duckdb.DuckDBPyConnection, config: SweepConfig) -> dict[str, int]:
    """Label every stored mrni-likert response not yet labelled by this parser version (every run in
    the DB: labelling is offline and deterministic). Returns the counts of what was labelled now."""
    rows = conn.execute(_TO_LABEL, [BENCHMARK, PARSER_VERSION]).fetchall()
    labels = []
    for request_id, text, metadata in rows:
        meta = json.loads(metadata)
        label, rating, span = parse_rating(text, meta["language"], int(meta["points"]))
        labels.append((request_id, label, rating, span, PARSER_VERSION))
    if labels:
        with transaction(conn):
            conn.executemany("INSERT OR REPLACE INTO mrni_likert_labels VALUES (?, ?, ?, ?, ?, now())", labels)
    counts = Counter(label for _, label, *_ in labels)
    return {"labelled": len(labels), **{name: counts[name] for name in ("rating", "refusal", "unparsed")}}

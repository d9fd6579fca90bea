"""MRNI-BB rows -> engine prompts."""

from __future__ import annotations

import sys
from pathlib import Path

from ...config import SweepConfig
from ...derived import derived
from ...records import Prompt
from .data import ROWS_RECIPE, expanded_files, read_expanded, resolve_data_dir

BENCHMARK = "mrni"


def prompt_key(language: str, instance_id: str) -> str:
    """instance_id is unique only within a language."""
    return f"{language}:{instance_id}"


PROMPTS_RECIPE = (ROWS_RECIPE, "prompt parts 1")  # change it with what _parts derives from the rows


def build_prompts(data_dir: Path) -> list[Prompt]:
    """All 4,704 prompts as single-turn user messages, every column kept as metadata. Their parts are
    derived once per state of the files and kept in the cache folder (derived.py): ~10 ms to build from
    there against ~70 ms to parse the 14 TSV files and build."""
    files = expanded_files(data_dir)  # verified once, whether the parts are read back or derived
    parts = derived("mrni-bb-prompts", [path for _, _, path in files], lambda: _parts(read_expanded(files)),
                    recipe=PROMPTS_RECIPE)
    return [Prompt(BENCHMARK, key, ({"role": "user", "content": content},), metadata)
            for key, content, metadata in parts]


def _parts(rows: list[tuple[str, str, dict[str, str]]]) -> list[tuple[str, str, dict[str, str]]]:
    """(key, prompt text, metadata) per row. Equal values are one string object (a condition, a context, an
    answer option recur across rows), so the cache holds each once and a run ~3 MB less."""
    seen: dict[str, str] = {}
    parts = []
    for language, subscale, row in rows:
        stratum = f"{language}/{row['condition']}"
        metadata = {"language": language, "subscale": subscale,
                    **{sys.intern(k): seen.setdefault(v, v) for k, v in row.items()},
                    "stratum": seen.setdefault(stratum, stratum)}
        content = metadata.pop("prompt")
        parts.append((prompt_key(language, row["instance_id"]), content, metadata))
    return parts


def load(config: SweepConfig, data_dir: str | None = None) -> list[Prompt]:
    """The registry's loader: resolve the data directory (flag, env, config, cache), then build."""
    return build_prompts(resolve_data_dir(data_dir, config.data_dir))

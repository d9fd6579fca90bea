"""MRNI-BB rows -> engine prompts, and the --limit / --sample selections."""

from __future__ import annotations

from pathlib import Path

from ...engine.work import Prompt
from .data import load_expanded

BENCHMARK = "mrni"


def prompt_key(language: str, instance_id: str) -> str:
    """instance_id is unique only within a language."""
    return f"{language}:{instance_id}"


def build_prompts(data_dir: Path) -> list[Prompt]:
    """All 4,704 prompts as single-turn user messages, every column kept as metadata."""
    prompts = []
    for language, subscale, row in load_expanded(data_dir):
        metadata = {"language": language, "subscale": subscale, **row,
                    "stratum": f"{language}/{row['condition']}"}
        metadata.pop("prompt", None)
        prompts.append(Prompt(BENCHMARK, prompt_key(language, row["instance_id"]),
                              ({"role": "user", "content": row["prompt"]},), metadata))
    return prompts

"""MRNI-BB rows -> engine prompts."""

from __future__ import annotations

from pathlib import Path

from ...config import SweepConfig
from ...records import Prompt
from .data import load_expanded, resolve_data_dir

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


def load(config: SweepConfig, data_dir: str | None = None) -> list[Prompt]:
    """The registry's loader: resolve the data directory (flag, env, config, cache), then build."""
    return build_prompts(resolve_data_dir(data_dir, config.data_dir))

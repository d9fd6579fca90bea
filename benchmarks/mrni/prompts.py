"""MRNI-BB rows -> engine prompts."""

from __future__ import annotations

import marshal
import sys
from pathlib import Path

from ...config import SweepConfig
from ...derived import derived
from ...lazy_prompts import LazyPrompts
from ...records import Prompt
from .data import ROWS_RECIPE, expanded_files, read_expanded, resolve_data_dir

BENCHMARK = "mrni"


def prompt_key(language: str, instance_id: str) -> str:
    """instance_id is unique only within a language."""
    return f"{language}:{instance_id}"


PROMPTS_RECIPE = (ROWS_RECIPE, "prompt parts 3")  # change it with what _chunked derives from the rows
CHUNK = 256  # prompts per cached chunk: a run's first plan step (engine/plan_stream.PLAN_ROWS) reads one


def build_prompts(data_dir: Path) -> LazyPrompts:
    """All 4,704 prompts as single-turn user messages, every column kept as metadata, built a chunk at a time
    when first read (lazy_prompts.py). Their parts are derived once per state of the files and kept in the
    cache folder (derived.py) as the keys and a marshal blob per chunk: ~1 ms to read back and ~1 ms per chunk
    to build, against ~70 ms to parse the 14 TSV files and build them all."""
    files = expanded_files(data_dir)  # verified once, whether the parts are read back or derived
    keys, blobs = derived("mrni-bb-prompts", [path for _, _, path in files],
                          lambda: _chunked(_parts(read_expanded(files))), recipe=PROMPTS_RECIPE)
    blobs = list(blobs)

    def build(chunk: int) -> list[Prompt]:
        parts, blobs[chunk] = marshal.loads(blobs[chunk]), b""  # a built chunk's blob is not kept
        return [Prompt(BENCHMARK, key, ({"role": "user", "content": content},), metadata)
                for key, (content, metadata) in zip(keys[chunk * CHUNK:(chunk + 1) * CHUNK], parts)]

    return LazyPrompts(BENCHMARK, keys, CHUNK, build)


def _chunked(parts: list[tuple[str, str, dict[str, str]]]) -> tuple[tuple[str, ...], tuple[bytes, ...]]:
    """The prompts' keys, and the rest of their parts (text, metadata) as one marshal blob per CHUNK prompts (a
    prompt's key is the keys' string: not kept twice)."""
    rest = [(content, metadata) for _, content, metadata in parts]
    return (tuple(key for key, _, _ in parts),
            tuple(marshal.dumps(rest[i:i + CHUNK]) for i in range(0, len(rest), CHUNK)))


def _parts(rows: list[tuple[str, str, dict[str, str]]]) -> list[tuple[str, str, dict[str, str]]]:
    """(key, prompt text, metadata) per row. Equal values are one string object (a condition, a context, an
    answer option recur across rows), so the cache holds each once and a run ~3 MB less. (A chunk's blob keeps
    this within the chunk: equal values in two chunks are two objects, ~125 KB in all.)"""
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


def load(config: SweepConfig, data_dir: str | None = None) -> LazyPrompts:
    """The registry's loader: resolve the data directory (flag, env, config, cache), then build."""
    return build_prompts(resolve_data_dir(data_dir, config.data_dir))

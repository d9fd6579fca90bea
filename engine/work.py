"""Work items: what the engine runs. It knows prompts and parameters, never benchmarks."""

from __future__ import annotations

import hashlib
from typing import Any

from ..config import ModelSpec
from ..records import Prompt, WorkItem, canonical_json

__all__ = ["Prompt", "WorkItem", "canonical_json", "request_id", "cache_key", "plan_items"]


def request_id(run: str, model: str, prompt: Prompt, sample: int, params: dict[str, Any]) -> str:
    """Idempotency key: the same run, model, prompt, sample and parameters give the same id."""
    key = canonical_json([run, model, prompt.benchmark, prompt.key, prompt.prompt_hash, sample, params])
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def cache_key(spec: ModelSpec, prompt: Prompt, sample: int, params: dict[str, Any]) -> str | None:
    """Content address of an answer that may be reused across runs in the same DB: the model as called
    (id and server), the resolved parameters and the messages. Only deterministic requests are
    cacheable (temperature 0, or an explicit seed); with temperature > 0 and a seed, each sample index
    keeps its own entry, so samples are never served from one another. None = not cacheable."""
    if not spec.cache:
        return None
    temperature = float(params.get("temperature") or 0.0)
    if temperature > 0 and "seed" not in params:
        return None
    content = [spec.model, spec.api_base, params, list(prompt.messages), sample if temperature > 0 else None]
    return hashlib.sha256(canonical_json(content).encode()).hexdigest()[:32]


def plan_items(run: str, spec: ModelSpec, prompts: list[Prompt], start: int = 0) -> list[WorkItem]:
    """Every (prompt, sample) for one model, in the prompts' order (sample-major within a prompt).
    `start`: the ordinal of prompts[0] (a slice of a longer prompt list)."""
    params = spec.generation_params()
    items = []
    for ordinal, prompt in enumerate(prompts, start):
        for sample in range(spec.samples):
            rid = request_id(run, spec.name, prompt, sample, params)
            items.append(WorkItem(rid, run, spec.name, prompt, sample, params, ordinal,
                                  cache_key(spec, prompt, sample, params)))
    return items

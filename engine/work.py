"""Work items: what the engine runs. It knows prompts and parameters, never benchmarks."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from ..config import ModelSpec
from ..errors import DataError
from ..lazy_prompts import identities
from ..records import Prompt, WorkItem, canonical_json

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


def check_unique(prompts: Sequence[Prompt]) -> None:
    """Each prompt once: a request is planned once (the plan table has no key to drop a second copy), so the
    same prompt twice in a session's list (a loader that repeats one, a benchmark listed twice) is refused.
    Prompts are told apart by benchmark and key first (a LazyPrompts builds none for it): only those sharing
    both are hashed (hashing every prompt here would delay the first request by the plan's size; the planner
    hashes them step by step)."""
    first_at: dict[tuple[str, str], int] = {}
    hashed: set[tuple[str, str, str]] = set()
    for index, identity in enumerate(identities(prompts)):
        if (first := first_at.setdefault(identity, index)) == index:
            continue
        hashed.add((*identity, prompts[first].prompt_hash))
        if (key := (*identity, prompts[index].prompt_hash)) in hashed:
            raise DataError(f"benchmark {identity[0]!r} gives prompt {identity[1]!r} twice: list each benchmark "
                            f"once and give each of its prompts its own key")
        hashed.add(key)


def plan_items(run: str, spec: ModelSpec, prompts: Sequence[Prompt], start: int = 0) -> list[WorkItem]:
    """Every (prompt, sample) for one model, in the prompts' order (sample-major within a prompt).
    `start`: the ordinal of prompts[0] (a slice of a longer prompt list).

    The ids are request_id() and cache_key() exactly, with the JSON of what every item of the model shares
    serialised once (planning hashes every request of a plan: this is most of its CPU)."""
    params = spec.generation_params()
    dumps = _dumps
    id_head = f"[{dumps(run)},{dumps(spec.name)},"
    id_tail = f",{dumps(params)}]"
    cacheable = cache_key(spec, prompts[0], 0, params) is not None if prompts else False
    temperature = float(params.get("temperature") or 0.0)
    key_head = hashlib.sha256(f"[{dumps(spec.model)},{dumps(spec.api_base)},{dumps(params)},".encode())
    name, samples, sha256 = spec.name, spec.samples, hashlib.sha256
    items = []
    for ordinal, prompt in enumerate(prompts, start):
        id_prompt = f"{id_head}{dumps(prompt.benchmark)},{dumps(prompt.key)},{dumps(prompt.prompt_hash)},"
        messages = prompt.messages_json.encode() if cacheable else b""
        for sample in range(samples):
            rid = sha256(f"{id_prompt}{sample}{id_tail}".encode()).hexdigest()[:32]
            key = None
            if cacheable:
                h = key_head.copy()
                h.update(messages)
                h.update(f",{sample if temperature > 0 else 'null'}]".encode())
                key = h.hexdigest()[:32]
            items.append(WorkItem(rid, run, name, prompt, sample, params, ordinal, key))
    return items


def _dumps(value: Any) -> str:
    return canonical_json(value)

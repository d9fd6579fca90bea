"""Deterministic prompt selections shared by all benchmarks."""

from __future__ import annotations

import random
from collections import defaultdict

from ..engine.work import Prompt


def stratified_sample(prompts: list[Prompt], n: int, seed: int) -> list[Prompt]:
    """n prompts spread over the strata (metadata["stratum"], e.g. language/condition) in proportion to
    their sizes (largest remainder), drawn with a seeded RNG and returned in the fixed order.
    The same (prompts, n, seed) always gives the same set."""
    if n >= len(prompts):
        return list(prompts)
    strata: dict[str, list[int]] = defaultdict(list)
    for index, p in enumerate(prompts):
        strata[str(p.metadata.get("stratum", ""))].append(index)
    keys = sorted(strata)
    quotas = {k: n * len(strata[k]) / len(prompts) for k in keys}
    counts = {k: int(q) for k, q in quotas.items()}
    for k in sorted(keys, key=lambda k: (-(quotas[k] - counts[k]), k))[: n - sum(counts.values())]:
        counts[k] += 1
    rng = random.Random(seed)
    chosen = sorted(i for k in keys for i in rng.sample(strata[k], counts[k]))
    return [prompts[i] for i in chosen]

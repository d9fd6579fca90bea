"""A config's prompts (every selected benchmark's, through the registry) and the deterministic selections
shared by all benchmarks (--limit, --sample)."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence

from ..config import SweepConfig
from ..records import Prompt
from .registry import LOADERS, resolve

# Prompts with the same metadata[UNIT_KEY] (e.g. GAMA's mirrored pair) are sampled together, as one unit;
# a prompt without it is a unit of its own. A unit's stratum is that of its first prompt.
UNIT_KEY = "sample_unit"


def _units(prompts: Sequence[Prompt]) -> list[list[int]]:
    """Prompt indices grouped by unit, units in the order of their first prompt."""
    units: dict[object, list[int]] = {}
    for index, p in enumerate(prompts):
        unit = p.metadata.get(UNIT_KEY)
        units.setdefault(("unit", unit) if unit is not None else ("prompt", index), []).append(index)
    return list(units.values())


def first_units(prompts: Sequence[Prompt], n: int) -> list[Prompt]:
    """--limit: the first n prompts in the fixed order, extended to the end of the last unit (a GAMA pair
    is never split)."""
    if n >= len(prompts):
        return list(prompts)
    end = n
    unit = prompts[n - 1].metadata.get(UNIT_KEY)
    while unit is not None and end < len(prompts) and prompts[end].metadata.get(UNIT_KEY) == unit:
        end += 1
    return prompts[:end]


def stratified_sample(prompts: Sequence[Prompt], n: int, seed: int) -> list[Prompt]:
    """n prompts spread over the strata (metadata["stratum"], e.g. language/condition) in proportion to
    their sizes (largest remainder), drawn with a seeded RNG and returned in the fixed order.
    The same (prompts, n, seed) always gives the same set. With units (UNIT_KEY) the draw is of
    ceil(n * units / prompts) whole units (GAMA: n prompts = n/2 pairs, rounded up); without, of n prompts."""
    if n >= len(prompts):
        return list(prompts)
    units = _units(prompts)
    n_units = -(-n * len(units) // len(prompts))
    strata: dict[str, list[int]] = defaultdict(list)
    for u, members in enumerate(units):
        strata[str(prompts[members[0]].metadata.get("stratum", ""))].append(u)
    keys = sorted(strata)
    quotas = {k: n_units * len(strata[k]) / len(units) for k in keys}
    counts = {k: int(q) for k, q in quotas.items()}
    rng = random.Random(seed)
    # Equal remainders are common (e.g. 90 equal GAMA cells): break ties with the seeded RNG, not by name,
    # so that a small sample spreads over strata instead of piling into the alphabetically first ones.
    tie_break = {k: rng.random() for k in keys}
    for k in sorted(keys, key=lambda k: (-(quotas[k] - counts[k]), tie_break[k]))[: n_units - sum(counts.values())]:
        counts[k] += 1
    chosen = sorted(i for k in keys for u in rng.sample(strata[k], counts[k]) for i in units[u])
    return [prompts[i] for i in chosen]


def load_prompts(config: SweepConfig, data_dir: str | None = None) -> Sequence[Prompt]:
    """Every selected benchmark's prompts, then --limit (first N in the fixed order) or --sample. One benchmark's
    are returned as its loader gave them (a LazyPrompts stays lazy: lazy_prompts.py); several, in one list."""
    selected = [select_prompts(config, resolve(LOADERS, name, "load prompts")(config, data_dir))
                for name in config.benchmarks]
    return selected[0] if len(selected) == 1 else [p for prompts in selected for p in prompts]


def select_prompts(config: SweepConfig, prompts: Sequence[Prompt]) -> Sequence[Prompt]:
    """--limit (the first N units in the fixed order), else --sample (stratified, seeded), else all."""
    if config.limit is not None:
        return first_units(prompts, config.limit)
    if config.sample is not None:
        return stratified_sample(prompts, config.sample, config.seed)
    return prompts

"""Prices from litellm's packaged price map, read as data (no litellm import, no network)."""

from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path

from ..derived import derived

PRICE_FILE = "model_prices_and_context_window_backup.json"
# What fairsweep reads of an entry: routing (the provider) and pricing (per token, synchronous and batch).
PRICE_FIELDS = ("litellm_provider", "input_cost_per_token", "output_cost_per_token",
                "input_cost_per_token_batches", "output_cost_per_token_batches")


def price_file() -> Path | None:
    """litellm's packaged price map, or None when litellm is not installed."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]) / PRICE_FILE


@functools.lru_cache(maxsize=1)
def price_map() -> dict:
    """litellm's offline price map reduced to PRICE_FIELDS (load_price_map), or {} when litellm is not installed."""
    path = price_file()
    return load_price_map(path) if path is not None else {}


@functools.lru_cache(maxsize=1)
def routes() -> tuple[dict[str, str], frozenset[str]]:
    """What routing reads of the price map (providers/registry.py), before a run's first request: the provider
    of each priced model id, and every provider the map names. Kept in the cache folder apart from the prices:
    ~0.3 ms to read, where the prices take ~2.5 ms (read only when an answer or a plan is priced)."""
    path = price_file()
    if path is None:
        return {}, frozenset()
    try:
        provided, named = derived("litellm-routes", [path], lambda: _routes(load_price_map(path)),
                                  recipe="routes 1")
    except (OSError, ValueError):
        return {}, frozenset()
    return provided, frozenset(named)


def _routes(prices: dict) -> tuple[dict[str, str], list[str]]:
    provided = {model: str(entry["litellm_provider"]).split("-")[0] for model, entry in prices.items()
                if "input_cost_per_token" in entry and entry.get("litellm_provider")}
    return provided, sorted({str(entry.get("litellm_provider")).split("-")[0] for entry in prices.values()})


def load_price_map(path: Path) -> dict:
    """The price map at `path` reduced to PRICE_FIELDS, or {} when it cannot be read. Kept reduced in the cache
    folder until the file changes (a litellm upgrade): read in ~2 ms and ~1.8 MB, where litellm's 3.5 MB file
    takes ~25 ms and ~5 MB for the life of the process, and a run reads it before it can route a bare model
    id (so before its first request)."""
    try:
        return derived("litellm-prices", [path], lambda: _reduced(path), recipe=PRICE_FIELDS)
    except (OSError, ValueError):
        return {}


def _reduced(path: Path) -> dict:
    full = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(full, dict):
        raise ValueError(f"{path} is not a price map")
    return {model: {f: entry[f] for f in PRICE_FIELDS if f in entry}
            for model, entry in full.items() if isinstance(entry, dict)}


@functools.lru_cache(maxsize=256)
def model_price(model: str | None) -> dict | None:
    """Per-token prices for a litellm model id ('openai/gpt-4o-mini' or 'gpt-4o-mini'), if known."""
    if not model:
        return None
    prices = price_map()
    for key in (model, model.split("/", 1)[-1]):
        entry = prices.get(key)
        if entry and "input_cost_per_token" in entry:
            return entry
    return None


def cost_usd(model: str | None, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
    """Cost of one call; None when the price or the usage is unknown (never a silent zero)."""
    entry = model_price(model)
    if entry is None or prompt_tokens is None or completion_tokens is None:
        return None
    return prompt_tokens * entry["input_cost_per_token"] + completion_tokens * entry.get("output_cost_per_token", 0.0)


BATCH_PRICE_MAP = "litellm price map (batch)"
BATCH_PRICE_ESTIMATE = "estimate: half the synchronous price"


def batch_price_source(model: str | None) -> str | None:
    """How batch answers of this model are priced: litellm's batch prices, an estimate at half the
    synchronous price, or None (unknown)."""
    entry = model_price(model)
    if entry is None:
        return None
    return BATCH_PRICE_MAP if "input_cost_per_token_batches" in entry else BATCH_PRICE_ESTIMATE


def batch_cost_usd(model: str | None, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
    """Cost of one answer from a provider batch; None when the price or the usage is unknown."""
    entry = model_price(model)
    if entry is None or prompt_tokens is None or completion_tokens is None:
        return None
    if "input_cost_per_token_batches" in entry:
        return (prompt_tokens * entry["input_cost_per_token_batches"]
                + completion_tokens * entry.get("output_cost_per_token_batches", 0.0))
    return cost_usd(model, prompt_tokens, completion_tokens) / 2

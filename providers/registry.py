"""Which adapter serves a model spec, decided by the provider its model id names.

- `local/smollm2`                                   -> the embedded llama.cpp model
- an OpenAI-speaking provider (openai/, groq/, ...: openai_compatible.json) -> the aiohttp adapter
- any other provider litellm knows (anthropic/, gemini/, bedrock/, ...)     -> litellm, imported lazily
- a provider known to neither, with `api_base`      -> the aiohttp adapter (an OpenAI-compatible server)
`api_base` only changes where requests go, never the protocol; `protocol = "openai" | "litellm"` decides
for ids whose provider is not known. Combinations that cannot work raise a ConfigError before any send.
"""

from __future__ import annotations

import functools
import importlib
import json
import threading
from dataclasses import dataclass
from importlib import resources
from typing import Iterable

from ..config import LOCAL_MODEL, ModelSpec, SweepConfig
from ..errors import ConfigError
from .base import Provider
from .pricing import routes

LOCAL, OPENAI_COMPAT, LITELLM = "local", "openai_compat", "litellm"
ANTHROPIC_API_BASE = "https://api.anthropic.com"


def _data(name: str) -> dict:
    text = resources.files("fairsweep.providers").joinpath(name).read_text(encoding="utf-8")
    return {k: v for k, v in json.loads(text).items() if not k.startswith("_")}


@functools.lru_cache(maxsize=1)
def openai_compatible() -> dict[str, dict]:
    return _data("openai_compatible.json")


@functools.lru_cache(maxsize=1)
def litellm_providers() -> frozenset[str]:
    """Providers litellm serves that do not speak OpenAI chat completions (the data file, and every
    provider of litellm's packaged price map, e.g. 'vertex_ai-language-models' -> 'vertex_ai')."""
    return frozenset(_data("litellm_routed.json")["providers"]) | (routes()[1] - set(openai_compatible()))


@dataclass(frozen=True)
class Route:
    """How one [[models]] entry is reached."""

    adapter: str             # local | openai_compat | litellm
    provider: str | None     # the provider the id names ('anthropic', 'openai', ...), None when unknown
    api_base: str | None     # where requests go (None: litellm's default for the provider)
    wire_model: str          # the model id as sent
    api_key_env: str | None  # the variable holding the key (the entry's, else the provider's usual one)


def provider_of(model: str) -> str | None:
    """The provider a model id names: its prefix, or for a bare id the one litellm's price map gives."""
    if "/" in model:
        return model.split("/", 1)[0]
    return routes()[0].get(model)


def route(spec: ModelSpec) -> Route:
    """The adapter, endpoint and wire id for a spec; a ConfigError (one line, naming the fix) if none works."""
    where = f"model {spec.name!r} ({spec.model})"
    if spec.model == LOCAL_MODEL:
        if spec.protocol or spec.api_base:
            raise ConfigError(f"{where} runs in-process: remove protocol and api_base from its entry")
        return Route(LOCAL, None, None, spec.model, None)
    provider = provider_of(spec.model)
    known = provider in openai_compatible() or provider in litellm_providers()
    openai_defaults = openai_compatible().get(provider or "", {})
    if spec.protocol == "litellm" or (spec.protocol is None and provider in litellm_providers()
                                      and provider not in openai_compatible()):
        return Route(LITELLM, provider, spec.api_base, spec.model, spec.api_key_env)
    if spec.protocol is None and not known and not spec.api_base:
        raise ConfigError(f"{where}: no known provider serves this id: write it as PROVIDER/MODEL (openai/..., "
                          f"anthropic/..., gemini/...), give api_base for an OpenAI-compatible server, or set "
                          f"protocol = \"litellm\"")
    api_base = spec.api_base or openai_defaults.get("api_base")
    if not api_base:
        raise ConfigError(f"{where}: the OpenAI-compatible adapter needs api_base (the server's /v1 URL)")
    wire = spec.model.split("/", 1)[1] if known and "/" in spec.model else spec.model
    key_env = spec.api_key_env if spec.api_key_env is not None else openai_defaults.get("api_key_env")
    return Route(OPENAI_COMPAT, provider, api_base, wire, key_env)


def adapter_name(spec: ModelSpec) -> str:
    """'local', 'openai_compat' or 'litellm' for this spec (raises ConfigError when none can work)."""
    return route(spec).adapter


def batch_api(spec: ModelSpec) -> str | None:
    """Which provider batch API serves this spec: 'openai' (Files + Batches), 'anthropic' (Message
    Batches), or None."""
    r = route(spec)
    if r.adapter == OPENAI_COMPAT:
        return "openai"
    if r.adapter == LITELLM and r.provider == "anthropic":
        return "anthropic"
    return None


def preflight(spec: ModelSpec) -> None:
    """Checks before a run sends anything to this model (raises a FairsweepError that names the fix)."""
    if spec.batch and batch_api(spec) is None:
        raise ConfigError(f"model {spec.name!r} ({spec.model}): batch mode speaks the OpenAI Files + Batches API "
                          f"(OpenAI-compatible providers) and Anthropic Message Batches; this model has neither: "
                          f"remove batch (or --batch) for it")
    if adapter_name(spec) == LOCAL:
        from .local_llama import preflight as local_preflight
        local_preflight()


ADAPTER_MODULES = {LOCAL: "local_llama", OPENAI_COMPAT: "openai_compat", LITELLM: "litellm_provider"}


def preload(specs: Iterable[ModelSpec]) -> threading.Thread | None:
    """Import the adapter modules these specs use (and what making them imports: aiohttp, litellm) in a
    background thread; None when there is nothing to import. Why: a run's first request waits for them, and
    part of an import (aiohttp loading the TLS certificates, ~40 ms) leaves the GIL free, as does DuckDB
    opening its file, so the run's own start-up overlaps them (measured: the first request ~30 ms earlier on
    2 cores). A spec that cannot be routed is left to preflight; an import that fails is tried again where
    the adapter is made, and raises there."""
    names = set()
    for spec in specs:
        try:
            names.add(ADAPTER_MODULES[route(spec).adapter])
        except ConfigError:
            pass
    if not names:
        return None
    thread = threading.Thread(target=_import_quietly, args=(sorted(names),), name="fairsweep-preload", daemon=True)
    thread.start()
    global _preloading
    _preloading = thread
    return thread


_preloading: threading.Thread | None = None  # the last preload() of this process (one per run command)


def wait_for_preload() -> None:
    """Until the adapters' modules the last preload() began importing are loaded (at once if none is loading)."""
    if _preloading is not None:
        _preloading.join()


def preload_for(config: SweepConfig) -> threading.Thread | None:
    """preload() what a run of this config waits for before its first request: the adapters of its models,
    except where nothing waits (Ray workers make their own; a batch model goes through its batch adapter)."""
    if config.executor != "local":
        return None
    return preload(spec for spec in config.models if not spec.batch)


def _import_quietly(names: list[str]) -> None:
    for name in names:
        try:
            module = importlib.import_module(f"{__package__}.{name}")
            getattr(module, "warm", lambda: None)()  # what making the adapter imports (litellm_provider: litellm)
        except Exception:  # noqa: BLE001 - make_provider imports it again and reports the error
            pass


def make_provider(spec: ModelSpec) -> Provider:
    """Build the adapter for one [[models]] entry."""
    r = route(spec)
    if r.adapter == LOCAL:
        from .local_llama import LocalLlamaProvider
        return LocalLlamaProvider(workers=spec.max_concurrency)
    if r.adapter == OPENAI_COMPAT:
        from .openai_compat import OpenAICompatProvider
        return OpenAICompatProvider(api_base=r.api_base, model=r.wire_model, api_key_env=r.api_key_env,
                                    price_model=spec.model, max_connections=max(spec.max_concurrency, 1))
    from .litellm_provider import LiteLLMProvider
    return LiteLLMProvider(model=spec.model, api_base=spec.api_base, api_key_env=spec.api_key_env)


def make_batch_adapter(spec: ModelSpec):
    """The batch adapter for one entry (its provider's batch API; see batch_api)."""
    api, r = batch_api(spec), route(spec)
    if api == "openai":
        from .openai_batch import OpenAIBatchAdapter
        return OpenAIBatchAdapter(api_base=r.api_base, model=r.wire_model, api_key_env=r.api_key_env,
                                  price_model=spec.model, timeout_s=spec.timeout_s)
    if api == "anthropic":
        from .anthropic_batch import AnthropicBatchAdapter
        return AnthropicBatchAdapter(api_base=spec.api_base, model=spec.model, api_key_env=spec.api_key_env,
                                     price_model=spec.model, timeout_s=spec.timeout_s)
    raise ConfigError(f"model {spec.name!r} ({spec.model}): no batch API (OpenAI Files + Batches or Anthropic "
                      f"Message Batches) serves it: remove batch for it")

"""Which adapter serves a model spec: a small table keyed by the model id's prefix.

- `local/smollm2`                      -> the embedded llama.cpp model
- an `api_base`, or an OpenAI-speaking provider prefix (openai/, groq/, ...) -> aiohttp adapter
- anything else (anthropic/, gemini/, bedrock/, ...) -> litellm, imported lazily
"""

from __future__ import annotations

import functools
import json
from importlib import resources

from ..config import LOCAL_MODEL, ModelSpec
from ..errors import ConfigError
from .base import Provider


@functools.lru_cache(maxsize=1)
def openai_compatible() -> dict[str, dict]:
    text = resources.files("fairsweep.providers").joinpath("openai_compatible.json").read_text(encoding="utf-8")
    return {k: v for k, v in json.loads(text).items() if not k.startswith("_")}


def adapter_name(spec: ModelSpec) -> str:
    """'local', 'openai_compat' or 'litellm' for this spec."""
    if spec.model == LOCAL_MODEL:
        return "local"
    prefix = spec.model.split("/", 1)[0] if "/" in spec.model else ""
    if spec.api_base or prefix in openai_compatible():
        return "openai_compat"
    return "litellm"


def preflight(spec: ModelSpec) -> None:
    """Checks before a run sends anything to this model (raises a FairsweepError that names the fix)."""
    if adapter_name(spec) == "local":
        from .local_llama import preflight as local_preflight
        local_preflight()


def make_provider(spec: ModelSpec) -> Provider:
    """Build the adapter for one [[models]] entry."""
    kind = adapter_name(spec)
    if kind == "local":
        from .local_llama import LocalLlamaProvider
        return LocalLlamaProvider(workers=spec.max_concurrency)
    if kind == "openai_compat":
        from .openai_compat import OpenAICompatProvider
        prefix, _, bare = spec.model.partition("/") if "/" in spec.model else ("", "", spec.model)
        defaults = openai_compatible().get(prefix, {})
        api_base = spec.api_base or defaults.get("api_base")
        if not api_base:
            raise ConfigError(f"model {spec.name!r}: {spec.model} needs api_base (the server's /v1 URL)")
        key_env = spec.api_key_env if spec.api_key_env is not None else defaults.get("api_key_env")
        wire_model = bare if prefix in openai_compatible() else spec.model
        return OpenAICompatProvider(api_base=api_base, model=wire_model, api_key_env=key_env,
                                    price_model=spec.model, max_connections=max(spec.max_concurrency, 1))
    from .litellm_provider import LiteLLMProvider
    return LiteLLMProvider(model=spec.model, api_base=spec.api_base, api_key_env=spec.api_key_env)

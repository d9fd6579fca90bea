"""The run contract: a TOML sweep file plus command-line overrides, validated up front."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .benchmarks.registry import BENCHMARKS, identity_fields
from .errors import ConfigError

LOCAL_MODEL = "local/smollm2"


def local_default_concurrency() -> int:
    """The embedded model's default max_concurrency: one worker process per core, at most 8."""
    return max(1, min(8, os.cpu_count() or 1))

KNOWN_BENCHMARKS = tuple(BENCHMARKS)

_MODEL_FIELDS = {
    "name", "model", "api_base", "api_key_env", "rpm", "tpm", "max_concurrency", "temperature",
    "max_tokens", "samples", "timeout_s", "params", "limit_key", "max_cost", "cache",
    "protocol", "batch",
}
_SWEEP_FIELDS = {
    "db", "run", "benchmarks", "models", "judges", "data_dir", "limit", "sample", "seed",
    "flush_rows", "flush_ms", "max_attempts", "max_cost", "executor", "ray_address", "likert_points",
    "gama_scenarios", "strict_drift", "batch_poll_s",
}
EXECUTORS = ("local", "ray")
PROTOCOLS = ("openai", "litellm")  # `protocol` on a [[models]] entry whose provider fairsweep does not know


@dataclass(frozen=True)
class ModelSpec:
    """One [[models]] entry: what to call, how hard, with which generation parameters."""

    name: str
    model: str
    api_base: str | None = None
    api_key_env: str | None = None
    rpm: float | None = None
    tpm: float | None = None
    max_concurrency: int = 8
    temperature: float = 0.0
    max_tokens: int = 64
    samples: int = 1
    timeout_s: float = 60.0
    params: dict[str, Any] = field(default_factory=dict)
    limit_key: str | None = None
    max_cost: float | None = None  # USD cap for this model in this run
    cache: bool = True  # serve identical deterministic requests from the response cache
    # Issue 20: routing and batch mode (neither is part of identity(): they change how, not what, is asked).
    protocol: str | None = None  # "openai" | "litellm": overrides routing by the model id's provider
    batch: bool = False  # send this model's requests through the provider's batch API

    def generation_params(self) -> dict[str, Any]:
        """The parameters sent with every request; part of each request's identity."""
        return {"temperature": self.temperature, "max_tokens": self.max_tokens, **self.params}

    def identity(self) -> dict[str, Any]:
        """What defines this model's answers (limits and timeouts may change on resume)."""
        return {"name": self.name, "model": self.model, "api_base": self.api_base,
                "samples": self.samples, "params": self.generation_params()}

    def limiter_key(self) -> str:
        """Models sharing a provider key share one limiter (set limit_key to the same value)."""
        return self.limit_key or self.name


@dataclass(frozen=True)
class SweepConfig:
    """A whole sweep: where results go, which benchmarks, which models."""

    db: str = "fairsweep.duckdb"
    run: str = "default"
    benchmarks: tuple[str, ...] = ("mrni",)
    models: tuple[ModelSpec, ...] = (ModelSpec(name="smollm2", model=LOCAL_MODEL,
                                                max_concurrency=local_default_concurrency()),)
    judges: tuple[ModelSpec, ...] = ()
    data_dir: str | None = None
    limit: int | None = None
    sample: int | None = None
    seed: int = 0
    flush_rows: int = 512
    flush_ms: int = 1000
    max_attempts: int = 6
    max_cost: float | None = None  # USD cap for the whole run
    executor: str = "local"  # "local" (asyncio, this machine) or "ray"
    ray_address: str | None = None
    likert_points: int = 7  # scale of the mrni-likert agreement probe
    gama_scenarios: str | None = None  # a scenario file in the schema instead of the bundled set
    strict_drift: bool = False  # a changed provider model/fingerprint on resume is an error
    batch_poll_s: float = 30.0  # batch mode: first poll interval (backs off while nothing changes)

    def identity(self) -> dict[str, Any]:
        """The part a resumed run must keep: models, generation parameters, benchmarks."""
        # Judges are not part of it: each judge stage is its own run, so a judge can be added later.
        identity = {"benchmarks": sorted(self.benchmarks), "models": [m.identity() for m in self.models]}
        for name in identity_fields(self.benchmarks):  # fields that change the prompts (the registry's)
            if getattr(self, name) is not None:
                identity[name] = getattr(self, name)
        return identity

    def identity_hash(self) -> str:
        return hashlib.sha256(json.dumps(self.identity(), sort_keys=True).encode()).hexdigest()[:16]

    def to_json(self) -> str:
        """Full config as stored in the runs table (no secrets: only env var names are kept)."""
        return json.dumps(dataclasses.asdict(self), sort_keys=True, default=str)

    def model(self, name: str) -> ModelSpec:
        for spec in (*self.models, *self.judges):
            if spec.name == name:
                return spec
        raise ConfigError(f"no model named {name!r} in the config: use one of {[m.name for m in self.models]}")


def _model_from_table(table: dict[str, Any], where: str) -> ModelSpec:
    unknown = set(table) - _MODEL_FIELDS
    if unknown:
        raise ConfigError(f"{where}: unknown field(s) {sorted(unknown)}; allowed: {sorted(_MODEL_FIELDS)}")
    if "model" not in table:
        raise ConfigError(f"{where}: 'model' is required (e.g. model = \"{LOCAL_MODEL}\")")
    if "api_key" in table:
        raise ConfigError(f"{where}: put the key in an environment variable and name it in api_key_env")
    table = dict(table)
    table.setdefault("name", table["model"].replace("/", "-"))
    if table["model"] == LOCAL_MODEL:
        table.setdefault("max_concurrency", local_default_concurrency())
    spec = ModelSpec(**table)
    _check_model(spec, where)
    return spec


def _check_model(spec: ModelSpec, where: str) -> None:
    positive = {"max_concurrency": spec.max_concurrency, "max_tokens": spec.max_tokens,
                "samples": spec.samples, "timeout_s": spec.timeout_s}
    for name, value in positive.items():
        if not isinstance(value, (int, float)) or value <= 0:
            raise ConfigError(f"{where}: {name} must be a positive number, got {value!r}")
    for name in ("rpm", "tpm"):
        value = getattr(spec, name)
        if value is not None and (not isinstance(value, (int, float)) or value <= 0):
            raise ConfigError(f"{where}: {name} must be a positive number or left out, got {value!r}")
    if spec.protocol is not None and spec.protocol not in PROTOCOLS:
        raise ConfigError(f"{where}: protocol must be one of {list(PROTOCOLS)} or left out, got {spec.protocol!r}")
    if not isinstance(spec.batch, bool):
        raise ConfigError(f"{where}: batch must be true or false, got {spec.batch!r}")


def parse_config(data: dict[str, Any], source: str = "config") -> SweepConfig:
    """Validate a parsed TOML document into a SweepConfig."""
    unknown = set(data) - _SWEEP_FIELDS
    if unknown:
        raise ConfigError(f"{source}: unknown key(s) {sorted(unknown)}; allowed: {sorted(_SWEEP_FIELDS)}")
    data = dict(data)
    models = tuple(_model_from_table(t, f"{source} [[models]] #{i + 1}") for i, t in enumerate(data.pop("models", [])))
    judges = tuple(_model_from_table(t, f"{source} [[judges]] #{i + 1}") for i, t in enumerate(data.pop("judges", [])))
    if models:
        data["models"] = models
    data["judges"] = judges
    if "benchmarks" in data:
        data["benchmarks"] = tuple(data["benchmarks"])
    config = SweepConfig(**data)
    validate(config, source)
    return config


def validate(config: SweepConfig, source: str = "config") -> None:
    """Checks that span fields: names unique, benchmarks known, numbers sane."""
    bad = [b for b in config.benchmarks if b not in KNOWN_BENCHMARKS]
    if bad:
        raise ConfigError(f"{source}: unknown benchmark(s) {bad}; choose from {list(KNOWN_BENCHMARKS)}")
    names = [m.name for m in (*config.models, *config.judges)]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ConfigError(f"{source}: model name(s) {dupes} used twice: give each [[models]] a distinct name")
    if not config.models:
        raise ConfigError(f"{source}: no [[models]]: add one (model = \"{LOCAL_MODEL}\" needs no key)")
    for field_name in ("limit", "sample"):
        value = getattr(config, field_name)
        if value is not None and (not isinstance(value, int) or value <= 0):
            raise ConfigError(f"{source}: {field_name} must be a positive integer, got {value!r}")
    if config.limit is not None and config.sample is not None:
        raise ConfigError(f"{source}: use either limit or sample, not both")
    if config.executor not in EXECUTORS:
        raise ConfigError(f"{source}: executor must be one of {list(EXECUTORS)}, got {config.executor!r}")
    poll = config.batch_poll_s
    if isinstance(poll, bool) or not isinstance(poll, (int, float)) or not 0 < poll < float("inf"):
        raise ConfigError(f"{source}: batch_poll_s must be a positive number of seconds, got {poll!r}")
    if not isinstance(config.likert_points, int) or config.likert_points < 3:
        raise ConfigError(f"{source}: likert_points must be an integer >= 3, got {config.likert_points!r}")


def load_config(path: str | Path) -> SweepConfig:
    """Read and validate a sweep TOML file."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file {path} not found: check the --config path") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML ({exc}): fix the syntax") from None
    return parse_config(data, str(path))


def with_overrides(config: SweepConfig, **overrides: Any) -> SweepConfig:
    """Apply command-line flags (None means 'not given') over a config, then validate again."""
    given = {k: v for k, v in overrides.items() if v is not None}
    if "benchmarks" in given:
        given["benchmarks"] = tuple(given["benchmarks"])
    if "models" in given:
        given["models"] = tuple(given["models"])
    if "sample" in given and "limit" not in given:
        given["limit"] = None
    if "limit" in given and "sample" not in given:
        given["sample"] = None
    config = dataclasses.replace(config, **given)
    validate(config, "command line")
    return config


def with_batch(config: SweepConfig) -> SweepConfig:
    """`--batch`: every [[models]] and [[judges]] entry sends through its provider's batch API."""
    return dataclasses.replace(config, models=tuple(dataclasses.replace(m, batch=True) for m in config.models),
                               judges=tuple(dataclasses.replace(j, batch=True) for j in config.judges))


def model_from_flag(spec: str) -> ModelSpec:
    """`--model SPEC`: a litellm-style id, optionally `name=model@api_base` for a quick server run."""
    name, _, rest = spec.partition("=") if "=" in spec else (None, "", spec)
    model, _, api_base = rest.partition("@")
    table: dict[str, Any] = {"model": model}
    if name:
        table["name"] = name
    if api_base:
        table["api_base"] = api_base
    return _model_from_table(table, f"--model {spec}")

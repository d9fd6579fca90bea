"""The run contract: a TOML sweep file plus command-line overrides, validated up front.

`ModelSpec` and `SweepConfig` are the schema: each field is one line (type, default, what it does), and
pydantic validates every instance (so `dataclasses.replace` re-validates too). The README's config
reference is rendered from these lines (doc.py); problems.py words the errors.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import typing
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError
from pydantic.dataclasses import dataclass

from .problems import UNNAMED, Problem, cross_problems, raise_problems, validation_problems
from .sets import SetSpec, content_hash, resolve_paths, validate_tables
from .types import (LOCAL_MODEL, BenchmarkName, Benchmarks, EnvName, Executor, Flag, Params, Protocol, Url,
                           integer, number, optional, tables, text)
from ..benchmarks.registry import BENCHMARKS, identity_fields, unknown_benchmark
from ..errors import ConfigError

KNOWN_BENCHMARKS = tuple(BENCHMARKS)  # the built-ins; plugins and [[sets]] add theirs

_STRICT = ConfigDict(extra="forbid", allow_inf_nan=False)


def local_default_concurrency() -> int:
    """The embedded model's default max_concurrency: one worker process per core, at most 8."""
    return max(1, min(8, os.cpu_count() or 1))

Count = integer("an integer >= 1", ge=1)
Rate = optional(number("a positive number (not nan or inf)", gt=0),
                "a positive number (not nan or inf), or leave the key out")
Usd = optional(number("a positive number of USD (not nan or inf)", gt=0),
               "a positive number of USD (not nan or inf), or leave the key out")


@dataclass(frozen=True, config=_STRICT)
class ModelSpec:
    """One [[models]] entry: what to call, how hard, with which generation parameters."""

    name: text() = Field(description="label stored with results (default: the model id, `/` as `-`)")
    model: text('a model id, e.g. "openai/gpt-4o-mini" or "local/smollm2"') = Field(
        description='litellm-style model id; `"local/smollm2"` is the embedded model')
    api_base: optional(Url, "an http:// or https:// URL, or leave the key out") = Field(
        None, description="an OpenAI-compatible server to send to (spoken to over aiohttp)")
    api_key_env: optional(EnvName, "the NAME of an environment variable, or leave the key out") = Field(
        None, description="the NAME of the variable holding the API key, never the key")
    rpm: Rate = Field(None, description="declared requests per minute: paced smoothly, never exceeded (unset: "
                                        "learned from the quota the provider's answers report, else from 429s)")
    tpm: Rate = Field(None, description="declared tokens per minute")
    max_concurrency: integer("an integer from 1 to 10000", ge=1, le=10_000) = Field(
        8, description="requests in flight for this model's provider key (local/smollm2: 1)")
    temperature: number("a number >= 0 (not nan or inf)", ge=0) = Field(0.0, description="sampling temperature")
    max_tokens: integer("an integer from 1 to 1000000", ge=1, le=1_000_000) = Field(
        64, description="completion tokens per answer")
    samples: integer("an integer from 1 to 10000", ge=1, le=10_000) = Field(1, description="answers per prompt")
    timeout_s: number("a positive number of seconds, at most 86400", gt=0, le=86_400) = Field(
        60.0, description="seconds before a request counts as timed out (and is retried)")
    params: Params = Field(default_factory=dict, description="extra generation parameters (part of each "
                                                             "request's identity)")
    limit_key: optional(text(), "a non-empty string, or leave the key out") = Field(
        None, description="models with the same limit_key share one limiter (one provider key)")
    max_cost: Usd = Field(None, description="USD cap for this model in this run")
    cache: Flag = Field(True, description="serve identical deterministic requests from the response cache")
    # Neither is part of identity(): they change how a prompt is sent, not what is asked.
    protocol: optional(Protocol, '"openai" or "litellm", or leave the key out') = Field(
        None, description="the protocol for a model id whose provider fairsweep does not know (else by the id)")
    batch: Flag = Field(False, description="send this model's requests through its provider's batch API "
                                           "(about half the price; results within 24 h)")

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


Models = tables(ModelSpec, "models")


@dataclass(frozen=True, config=_STRICT)
class SweepConfig:
    """A whole sweep: where results go, which benchmarks, which models."""

    db: text("a file path") = Field("fairsweep.duckdb", description="the DuckDB results file")
    run: text() = Field("default", description="run name: the same DB and run name resume the same run")
    benchmarks: Benchmarks = Field(("mrni",), min_length=1, description="benchmarks to run")
    models: Models = Field((ModelSpec(name="smollm2", model=LOCAL_MODEL,
                                      max_concurrency=local_default_concurrency()),),
                           description="`[[models]]` tables, one per model (default: the embedded local/smollm2)")
    judges: tables(ModelSpec, "judges") = Field(
        (), description="`[[judges]]` tables (GAMA's judges), with the keys of `[[models]]`")
    data_dir: optional(text("a directory path"), "a directory path, or leave the key out") = Field(
        None, description="MRNI-BB data folder (else --data-dir, $FAIRSWEEP_MRNI_DIR, the fetch cache)")
    limit: optional(Count, "an integer >= 1, or leave the key out") = Field(
        None, description="only the first N prompts of each benchmark (fixed order)")
    sample: optional(Count, "an integer >= 1, or leave the key out") = Field(
        None, description="a stratified sample of N prompts per benchmark (not with limit)")
    seed: integer("an integer") = Field(0, description="seed of `sample`")
    flush_rows: integer("an integer from 1 to 1000000", ge=1, le=1_000_000) = Field(
        512, description="the writer commits every flush_rows rows or flush_ms ms, whichever comes first")
    flush_ms: integer("an integer from 1 to 3600000 (ms)", ge=1, le=3_600_000) = Field(
        1000, description="... so a kill -9 loses at most that window of answers")
    max_attempts: integer("an integer from 1 to 100", ge=1, le=100) = Field(
        6, description="tries per request for transient errors (429s never count)")
    max_cost: Usd = Field(None, description="USD cap for the whole run")
    executor: Executor = Field("local", description="local: asyncio in this process; ray: workers of a Ray cluster")
    ray_address: optional(text("a Ray address, e.g. HEAD_IP:6379"), "a Ray address, or leave the key out") = Field(
        None, description='Ray cluster to join, e.g. "HEAD_IP:6379" (with executor = "ray")')
    likert_points: integer("an integer from 3 to 11", ge=3, le=11) = Field(
        7, description="scale of the mrni-likert agreement probe")
    gama_scenarios: optional(text("a file or folder path"), "a file or folder path, or leave the key out") = Field(
        None, description="a scenario JSONL file (or folder) in the schema instead of the bundled set")
    strict_drift: Flag = Field(False, description="a changed provider model/fingerprint on resume is an error")
    journal_fsync: Flag = Field(False, description="fsync every journaled answer: survives a power cut, not only a "
                                                   "killed process, at one disk flush per row")
    breaker_failures: integer("an integer from 1 to 100000", ge=1, le=100_000) = Field(
        20, description="stop a model after this many attempts in a row reached no endpoint (refused, DNS, TLS, "
                        "timeouts)...")
    breaker_seconds: number("a number of seconds from 0 to 86400", ge=0, le=86_400) = Field(
        30, description="... spanning at least this many seconds with no answer from its endpoint")
    sets: tables(SetSpec, "sets") = Field(
        (), description="`[[sets]]` tables: your own prompt sets (name, path, parser): see \"Your own benchmark\"")
    batch_poll_s: number("a positive number of seconds, at most 86400", gt=0, le=86_400) = Field(
        30.0, description="batch mode: the first poll interval (it backs off while nothing changes)")

    def identity(self) -> dict[str, Any]:
        """The part a resumed run must keep: models, generation parameters, benchmarks."""
        # Judges are not part of it: each judge stage is its own run, so a judge can be added later.
        identity = {"benchmarks": sorted(self.benchmarks), "models": [m.identity() for m in self.models]}
        for name in identity_fields(self.benchmarks):  # fields that change the prompts (the registry's)
            if getattr(self, name) is not None:
                identity[name] = getattr(self, name)
        chosen = [s for s in self.sets if s.name in self.benchmarks]
        if chosen:  # a set's file and parser decide its prompts and labels: a changed file is a new run
            identity["sets"] = [{"name": s.name, **s.parser_options(), "sha256": content_hash(s.path)}
                                for s in sorted(chosen, key=lambda s: s.name)]
        return identity

    def identity_hash(self) -> str:
        return hashlib.sha256(json.dumps(self.identity(), sort_keys=True).encode()).hexdigest()[:16]

    def to_json(self) -> str:
        """Full config as stored in the runs table (no secrets: only env var names are kept)."""
        return json.dumps(dataclasses.asdict(self), sort_keys=True, default=str)

    def prompt_set(self, name: str) -> SetSpec | None:
        """The [[sets]] table named `name`, if any."""
        return next((s for s in self.sets if s.name == name), None)

    def model(self, name: str) -> ModelSpec:
        for spec in (*self.models, *self.judges):
            if spec.name == name:
                return spec
        raise ConfigError(f"no model named {name!r} in the config: use one of {[m.name for m in self.models]}")


_SWEEP = TypeAdapter(SweepConfig)
_MODEL = TypeAdapter(ModelSpec)
# Command-line flags by field, so an error names the flag the user typed.
FLAGS = {"db": "--db", "run": "--run", "benchmarks": "--bench", "models": "--model", "limit": "--limit",
         "sample": "--sample", "seed": "--seed", "executor": "--executor", "ray_address": "--ray-address",
         "judges": "--judge"}


def _prepare_model(table: Any) -> Any:
    """TOML conveniences: name defaults to the model id; the embedded model runs one worker per core."""
    if not isinstance(table, dict):
        return table
    table = dict(table)
    model = table.get("model")
    table.setdefault("name", model.replace("/", "-") if isinstance(model, str) and model else UNNAMED)
    if model == LOCAL_MODEL:
        table.setdefault("max_concurrency", local_default_concurrency())
    return table


def _prepare(data: dict[str, Any]) -> dict[str, Any]:
    data = dict(data)
    for key in ("models", "judges"):
        if isinstance(data.get(key), list):
            data[key] = [_prepare_model(t) for t in data[key]]
    return data


def _build(data: dict[str, Any], source: str, flags: dict[str, str] | None = None) -> SweepConfig:
    """Validate a whole config; every problem (types, ranges, unknown keys, cross-field) in one ConfigError."""
    problems: list[Problem] = []
    config, where = None, "" if flags else "top level"
    set_problems = _set_problems(data, flags, where)
    if set_problems and "sets" in data:  # worded per [[sets]] table, not once more by the schema
        data = {**data, "sets": ()}
    try:
        config = _SWEEP.validate_python(data)
    except ValidationError as exc:
        problems += validation_problems(exc, data, flags, schema=SweepConfig, table=ModelSpec, top_label=where)
    problems += cross_problems(data, flags, where) + set_problems
    raise_problems(problems, source)
    return config


def _set_problems(data: dict[str, Any], flags: dict[str, str] | None, where: str) -> list[Problem]:
    """Each [[sets]] table's problems, and every benchmark name that is no built-in, plugin or set."""
    problems: list[Problem] = []
    specs, errors = validate_tables(data.get("sets", ()))
    for label, error in errors:
        if isinstance(error, str):
            problems.append(Problem(label, error))
        else:
            problems += validation_problems(error, {}, schema=SetSpec, top_label=label)
    names = [s.name for s in specs]
    if len(set(names)) < len(names):
        problems.append(Problem(where, "two [[sets]] tables have the same name: give each a distinct name"))
    benchmarks = data.get("benchmarks")
    if isinstance(benchmarks, (list, tuple)):
        flag = (flags or {}).get("benchmarks", "benchmarks")
        for name in benchmarks:
            text = unknown_benchmark(name, names) if isinstance(name, str) and name else None
            if text:
                problems.append(Problem(where, f"{flag}: {text}"))
            elif isinstance(name, str) and name in names and name in BENCHMARKS:
                problems.append(Problem(where, f"[[sets]] name {name!r} is a built-in benchmark: rename the set"))
    return problems


def parse_config(data: dict[str, Any], source: str = "config") -> SweepConfig:
    """Validate a parsed TOML document into a SweepConfig."""
    return _build(_prepare(data), source)


def load_config(path: str | Path) -> SweepConfig:
    """Read and validate a sweep TOML file."""
    import tomllib  # a run named by flags alone reads no TOML

    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file {path} not found: check the --config path") from None
    except (IsADirectoryError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {path} is not a UTF-8 TOML file ({type(exc).__name__}): "
                          f"check the --config path") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML ({exc}): fix the syntax") from None
    if "sets" in data:  # a set's relative path is the config file's folder's
        data = {**data, "sets": resolve_paths(data["sets"], path.resolve().parent)}
    return parse_config(data, str(path))


def _fields(config: SweepConfig) -> dict[str, Any]:
    return {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}


def with_overrides(config: SweepConfig, **overrides: Any) -> SweepConfig:
    """Apply command-line flags (None means 'not given') over a config, validated like the file."""
    given = {k: v for k, v in overrides.items() if v is not None}
    if "sample" in given and "limit" not in given:
        given["limit"] = None
    if "limit" in given and "sample" not in given:
        given["sample"] = None
    return _build({**_fields(config), **given}, "command line", FLAGS)


def with_batch(config: SweepConfig) -> SweepConfig:
    """`--batch`: every [[models]] and [[judges]] entry sends through its provider's batch API."""
    return dataclasses.replace(config, models=tuple(dataclasses.replace(m, batch=True) for m in config.models),
                               judges=tuple(dataclasses.replace(j, batch=True) for j in config.judges))


def model_from_flag(spec: str, flag: str = "--model", **fields: Any) -> ModelSpec:
    """`--model SPEC`: a litellm-style id, optionally `name=model@api_base` for a quick server run;
    `fields` are other ModelSpec fields a command sets (e.g. a judge's max_tokens); errors name `flag`."""
    name, _, rest = spec.partition("=") if "=" in spec else (None, "", spec)
    model, _, api_base = rest.partition("@")
    table: dict[str, Any] = {"model": model, **fields}
    if name:
        table["name"] = name
    if api_base:
        table["api_base"] = api_base
    table = _prepare_model(table)
    try:
        return _MODEL.validate_python(table)
    except ValidationError as exc:
        raise_problems(validation_problems(exc, table, schema=ModelSpec, top_label=""), f"{flag} {spec}")
        raise  # not reached: raise_problems raised


# Environment knobs that take numbers: name -> (what it is, smallest, largest).
ENV_KNOBS = {
    "FAIRSWEEP_RAY_WORKERS": ("the number of Ray workers", 1, 10_000),
    "FAIRSWEEP_MRNI_BOOT": ("the number of MRNI-BB bootstrap resamples", 1, 1_000_000),
    "FAIRSWEEP_PROGRESS_S": ("seconds between progress lines when stderr is not a terminal", 1, 86_400),
    "FAIRSWEEP_PLAN_ROWS": ("requests per planned step, one transaction each (default: 32, doubling up to 1024)", 1, 1_000_000),
    "FAIRSWEEP_DUCKDB_WORKING_MB": ("MB DuckDB may use beyond its indexes while a run writes (default: 48 while "
                                    "its plan is written, then 32; a write that runs out doubles it, up to 8x; a "
                                    "larger query spills to disk)", 32, 1_000_000),
}


def env_int(name: str) -> int | None:
    """A numeric environment knob (ENV_KNOBS): None when unset, else a whole number within its bounds."""
    value = os.environ.get(name, "").strip()
    if not value:
        return None
    what, low, high = ENV_KNOBS[name]
    if not re.fullmatch(r"[0-9]{1,9}", value) or not low <= int(value) <= high:
        raise ConfigError(f"{name}={value[:40]!r}: expected a whole number from {low} to {high} ({what}): "
                          f"fix it or unset it")
    return int(value)


def check_env() -> None:
    """Refuse a bad numeric knob before anything runs (a bad FAIRSWEEP_MRNI_BOOT would otherwise surface
    only when scoring, after every request was sent)."""
    for name in ENV_KNOBS:
        env_int(name)


def resolve_config(args) -> SweepConfig:
    """The config file (if any) with a command's flags (an argparse namespace) applied over it; numeric
    env knobs checked. Every command resolves its config through this."""
    check_env()
    config = load_config(args.config) if getattr(args, "config", None) else SweepConfig()
    overrides = {"db": args.db, "run": args.run}
    if getattr(args, "bench", None):
        overrides["benchmarks"] = [b for value in args.bench for b in value.split(",") if b]
    if getattr(args, "model", None):
        overrides["models"] = [model_from_flag(spec) for spec in args.model]
    for name in ("limit", "sample", "seed", "executor", "ray_address"):
        overrides[name] = getattr(args, name, None)
    if overrides["ray_address"] and not overrides["executor"]:
        overrides["executor"] = "ray"
    config = with_overrides(config, **overrides)
    return with_batch(config) if getattr(args, "batch", False) else config

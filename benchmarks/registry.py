"""Benchmarks by name: each turns its data into engine prompts (and later scores what is stored)."""

from __future__ import annotations

from pathlib import Path

from ..config import SweepConfig
from ..engine.work import Prompt
from ..errors import ConfigError


def load_prompts(config: SweepConfig, data_dir: str | None = None) -> list[Prompt]:
    """Every selected benchmark's prompts, then --limit (first N in the fixed order) or --sample."""
    prompts: list[Prompt] = []
    for name in config.benchmarks:
        prompts.extend(_select(config, _load(name, config, data_dir)))
    return prompts


def _load(name: str, config: SweepConfig, data_dir: str | None) -> list[Prompt]:
    if name == "mrni":
        from .mrni.data import resolve_data_dir
        from .mrni.prompts import build_prompts
        return build_prompts(resolve_data_dir(data_dir, config.data_dir))
    raise ConfigError(f"benchmark {name!r} cannot run yet in this version: use benchmarks = [\"mrni\"]")


def _select(config: SweepConfig, prompts: list[Prompt]) -> list[Prompt]:
    if config.limit is not None:
        return prompts[: config.limit]
    if config.sample is not None:
        from .sampling import stratified_sample
        return stratified_sample(prompts, config.sample, config.seed)
    return prompts

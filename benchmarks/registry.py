"""Benchmarks by name: how each loads its prompts, scores stored responses and reports.

A table of "module:function" entries, imported only when used. A benchmark module plugs in here;
the engine never imports a benchmark.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

from ..config import SweepConfig
from ..engine.work import Prompt
from ..errors import ConfigError

# build(config, data_dir) -> list[Prompt] in the benchmark's fixed order
LOADERS = {
    "mrni": "fairsweep.benchmarks.mrni.prompts:load",
    "mrni-likert": "fairsweep.benchmarks.mrni.likert:load",
    "gama": "fairsweep.benchmarks.gama.prompts:load",
}
# score(conn, config) -> dict of counts: parse or judge what is stored, offline, re-runnable
# (a benchmark with no entry has nothing to score)
SCORERS: dict[str, str] = {}
SCORERS["mrni"] = "fairsweep.benchmarks.mrni.score:score_run"
SCORERS["mrni-likert"] = "fairsweep.benchmarks.mrni.likert:score_run"
SCORERS["gama"] = "fairsweep.benchmarks.gama.score:score_run"
# stage(config, command, progress) -> RunOutcome: a later stage over stored responses (GAMA's judges),
# run after the target stage by `fairsweep run`; it asks the engine for another run_sweep.
STAGES: dict[str, str] = {}
STAGES["gama"] = "fairsweep.benchmarks.gama.judge:stage"
# report(db, runs, fmt, out) -> None: tables from the SQL views (runs None = every run)
REPORTERS: dict[str, str] = {}
REPORTERS["mrni"] = "fairsweep.benchmarks.mrni.report:report"
REPORTERS["mrni-likert"] = "fairsweep.benchmarks.mrni.likert_report:report"
REPORTERS["gama"] = "fairsweep.benchmarks.gama.report:report"


def resolve(table: dict[str, str], name: str, what: str) -> Callable[..., Any]:
    """Import the function registered for a benchmark, or say clearly that it has none."""
    target = table.get(name)
    if target is None:
        raise ConfigError(f"benchmark {name!r} has no {what}: choose from {sorted(table)}")
    module_name, _, function = target.partition(":")
    try:
        module = importlib.import_module(module_name)
        return getattr(module, function)
    except (ImportError, AttributeError):
        raise ConfigError(f"benchmark {name!r} cannot {what} in this version of fairsweep") from None


def load_prompts(config: SweepConfig, data_dir: str | None = None) -> list[Prompt]:
    """Every selected benchmark's prompts, then --limit (first N in the fixed order) or --sample."""
    prompts: list[Prompt] = []
    for name in config.benchmarks:
        prompts.extend(_select(config, resolve(LOADERS, name, "load prompts")(config, data_dir)))
    return prompts


def _select(config: SweepConfig, prompts: list[Prompt]) -> list[Prompt]:
    from .sampling import first_units, stratified_sample
    if config.limit is not None:
        return first_units(prompts, config.limit)
    if config.sample is not None:
        return stratified_sample(prompts, config.sample, config.seed)
    return prompts

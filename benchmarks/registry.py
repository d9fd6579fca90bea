"""Benchmarks by name: how each loads its prompts, scores stored responses, runs later stages and
reports, and which config fields change its prompts (part of a run's identity).

A table of "module:function" entries, imported only when used, so this module is cheap to import (the
config schema reads the names and identity fields from it, so it imports nothing but `errors`: the layer
test keeps it on the leaves' floor). A benchmark module plugs in here; the engine never imports a benchmark.
`sampling.load_prompts` loads a config's prompts through it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import ConfigError


@dataclass(frozen=True)
class Benchmark:
    """`load(config, data_dir) -> list[Prompt]` in the benchmark's fixed order; `score(conn, config) ->
    dict` of counts (offline, re-runnable); `stage(config, command, progress) -> RunOutcome | None`, a
    later engine run over stored responses (GAMA's judges); `report(db, runs, fmt, out)`;
    `label(conn, responses)`: labels answers as each batch of them is committed during a run (live reads
    see them; scoring then finds them labelled); `findings(db, run)`: prints what a scored run found, at
    the end of `fairsweep run`; `identity_fields`: config fields that change the prompts,
    so a resumed run must keep them."""

    load: str
    score: str | None = None
    label: str | None = None
    stage: str | None = None
    report: str | None = None
    findings: str | None = None
    identity_fields: tuple[str, ...] = ()


BENCHMARKS: dict[str, Benchmark] = {
    "mrni": Benchmark(load="fairsweep.benchmarks.mrni.prompts:load",
                      score="fairsweep.benchmarks.mrni.score:score_run",
                      label="fairsweep.benchmarks.mrni.labels:label_committed",
                      report="fairsweep.benchmarks.mrni.report:report",
                      findings="fairsweep.benchmarks.mrni.findings:show"),
    "mrni-likert": Benchmark(load="fairsweep.benchmarks.mrni.likert:load",
                             score="fairsweep.benchmarks.mrni.likert:score_run",
                             report="fairsweep.benchmarks.mrni.likert_report:report",
                             identity_fields=("likert_points",)),
    "gama": Benchmark(load="fairsweep.benchmarks.gama.prompts:load",
                      score="fairsweep.benchmarks.gama.score:score_run",
                      stage="fairsweep.benchmarks.gama.judge:stage",
                      report="fairsweep.benchmarks.gama.report:report",
                      identity_fields=("gama_scenarios",)),
}


def _table(role: str) -> dict[str, str]:
    return {name: target for name, b in BENCHMARKS.items() if (target := getattr(b, role))}


LOADERS, SCORERS, STAGES, REPORTERS, LABELLERS, FINDINGS = (
    _table(role) for role in ("load", "score", "stage", "report", "label", "findings"))


def identity_fields(benchmarks: tuple[str, ...]) -> tuple[str, ...]:
    """The config fields that change the prompts of these benchmarks."""
    return tuple(f for name in benchmarks if name in BENCHMARKS for f in BENCHMARKS[name].identity_fields)


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

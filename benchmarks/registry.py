"""Benchmarks by name: the seam every benchmark plugs into (`Benchmark`, the interface), whichever its origin.

Three origins, looked up in this order: the built-ins (`BENCHMARKS`: MRNI-BB, its Likert probe, GAMA-Bench),
the config's `[[sets]]` (a prompt-set file, benchmarks/promptset: one `Benchmark` whose functions take the
set's name first) and third-party packages, through the entry-point group `fairsweep.benchmarks` (an entry
point `name = "pkg.module:BENCH"` names a `Benchmark`; read only when a name is neither of the others, so
`import fairsweep.config` never scans installed packages). Entries are "module:function" strings (imported
when used) or callables. The engine never imports a benchmark.
This module imports nothing but `errors` (the config schema reads the names and identity fields from
it: the layer test keeps it on the leaves' floor); `sampling.load_prompts` loads a config's prompts through it.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

from ..errors import ConfigError


Entry = "str | Callable[..., Any]"  # "module:function", imported when first used, or the function itself
ENTRY_POINT_GROUP = "fairsweep.benchmarks"
PROMPTSET = "fairsweep.benchmarks.promptset.benchmark:PROMPTSET"


@dataclass(frozen=True)
class Benchmark:
    """What a benchmark provides (each entry "module:function" or a callable):

    - `load(config, data_dir) -> list[Prompt]`: its items as prompts (`records.Prompt`: key, messages,
      metadata; `metadata["stratum"]` drives --sample), in a fixed order;
    - `label(conn, responses[, prompts])`: its parser, run on each batch of answers as the writer commits it
      (live reads see labels; scoring labels whatever is left). One that takes `prompts` is given request_id ->
      Prompt for the answers this process sent (not those served from the cache, replayed or from Ray workers:
      it reads those from the DB);
    - `views(conn)`: creates its SQL views (CREATE OR REPLACE), run before scoring and reporting (the
      built-ins keep theirs in storage/sql, applied on every open);
    - `score(conn, config) -> dict` of counts: offline, re-runnable labelling and statistics tables;
    - `stage(config, command, progress) -> RunOutcome | None`: a later engine run over stored responses
      (GAMA's judges);
    - `report(db, runs, fmt, out)`: table / md / csv; `section(db, runs) -> ReportSection` for the HTML report;
    - `findings(db, run)`: prints what a scored run found, at the end of `fairsweep run`;
    - `identity_fields`: config fields that change its prompts (part of a run's identity: a resume must keep
      them)."""

    load: Entry
    score: Entry | None = None
    label: Entry | None = None
    stage: Entry | None = None
    report: Entry | None = None
    section: Entry | None = None
    views: Entry | None = None
    findings: Entry | None = None
    identity_fields: tuple[str, ...] = ()


BENCHMARKS: dict[str, Benchmark] = {
    "mrni": Benchmark(load="fairsweep.benchmarks.mrni.prompts:load",
                      score="fairsweep.benchmarks.mrni.score:score_run",
                      label="fairsweep.benchmarks.mrni.labels:label_committed",
                      report="fairsweep.benchmarks.mrni.report:report",
                      section="fairsweep.benchmarks.mrni.report:section",
                      findings="fairsweep.benchmarks.mrni.findings:show"),
    "mrni-likert": Benchmark(load="fairsweep.benchmarks.mrni.likert:load",
                             score="fairsweep.benchmarks.mrni.likert:score_run",
                             report="fairsweep.benchmarks.mrni.likert_report:report",
                             section="fairsweep.benchmarks.mrni.likert_report:section",
                             identity_fields=("likert_points",)),
    "gama": Benchmark(load="fairsweep.benchmarks.gama.prompts:load",
                      score="fairsweep.benchmarks.gama.score:score_run",
                      stage="fairsweep.benchmarks.gama.judge:stage",
                      report="fairsweep.benchmarks.gama.report:report",
                      section="fairsweep.benchmarks.gama.report_section:section",
                      identity_fields=("gama_scenarios",)),
}


@functools.cache
def plugin_entry_points() -> dict[str, Any]:
    """Installed plugins' entry points by benchmark name (not loaded); a built-in name cannot be taken."""
    from importlib.metadata import entry_points
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name not in BENCHMARKS}


@functools.cache
def plugin(name: str) -> Benchmark | None:
    """The plugin benchmark called `name`, loaded (its module imported) on first use."""
    ep = plugin_entry_points().get(name)
    if ep is None:
        return None
    try:
        found = ep.load()
        found = found() if callable(found) and not isinstance(found, Benchmark) else found  # a factory
    except Exception as exc:  # a broken third-party package: say which, never a traceback
        raise ConfigError(f"plugin benchmark {name!r} ({ep.value}) cannot be loaded "
                          f"({type(exc).__name__}: {exc}): fix or uninstall its package") from None
    if not isinstance(found, Benchmark):
        raise ConfigError(f"plugin benchmark {name!r} ({ep.value}) is not a fairsweep.benchmarks.registry.Benchmark:"
                          f" fix its entry point")
    return found


def unknown_benchmark(name: str, set_names: list[str]) -> str | None:
    """None for a known benchmark name, else the words of the error (with a did-you-mean)."""
    if name in BENCHMARKS or name in set_names or name in plugin_entry_points():
        return None
    import difflib  # only an unknown name is worded

    known = [*BENCHMARKS, *set_names, *plugin_entry_points()]
    guess = difflib.get_close_matches(name, known, n=1)
    return (f'unknown benchmark "{name}"' + (f' (did you mean "{guess[0]}"?)' if guess else "")
            + f"; choose from {', '.join(known)} (or add a [[sets]] table named {name!r})")


def is_builtin_or_plugin(name: str) -> bool:
    return name in BENCHMARKS or name in plugin_entry_points()


def entry_of(name: str, role: str) -> tuple[Entry | None, bool]:
    """(the benchmark's entry for `role`, whether it takes the set name first). A name that is no built-in
    and no plugin is a prompt set: the config validated that it names a [[sets]] table."""
    if name in BENCHMARKS:
        return getattr(BENCHMARKS[name], role), False
    found = plugin(name) if name in plugin_entry_points() else None
    if found is not None:
        return getattr(found, role), False
    return getattr(_load_entry(PROMPTSET), role), True


class Role(Mapping):
    """One role (load, score, ...) across every benchmark: `name in LABELLERS`, `LABELLERS.get(name)`."""

    def __init__(self, role: str) -> None:
        self.role = role

    def __getitem__(self, name: str) -> Entry:
        entry, by_set = entry_of(name, self.role)
        if entry is None:
            raise KeyError(name)
        return functools.partial(_load_entry(entry), name) if by_set else entry

    def __iter__(self) -> Iterator[str]:  # the built-ins and plugins (prompt sets are the config's)
        return iter([n for n in [*BENCHMARKS, *plugin_entry_points()] if getattr(benchmark(n), self.role)])

    def __len__(self) -> int:
        return len(list(iter(self)))


def benchmark(name: str) -> Benchmark:
    """The Benchmark a name stands for (a prompt set's is the shared PROMPTSET)."""
    return BENCHMARKS.get(name) or (is_builtin_or_plugin(name) and plugin(name)) or _load_entry(PROMPTSET)


LOADERS, SCORERS, STAGES, REPORTERS, LABELLERS, SECTIONS, VIEWS, FINDINGS = (
    Role(role) for role in ("load", "score", "stage", "report", "label", "section", "views", "findings"))


def identity_fields(benchmarks: tuple[str, ...]) -> tuple[str, ...]:
    """The config fields that change the prompts of these benchmarks (a prompt set's are in `sets`)."""
    return tuple(f for name in benchmarks if is_builtin_or_plugin(name) for f in benchmark(name).identity_fields)


def _load_entry(target: Any) -> Any:
    if not isinstance(target, str):
        return target
    module_name, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module_name), attribute)


def resolve(table: Mapping, name: str, what: str) -> Callable[..., Any]:
    """Import the function registered for a benchmark, or say clearly that it has none."""
    target = table.get(name)
    if target is None:
        raise ConfigError(f"benchmark {name!r} has no {what}: choose from {sorted(table)}")
    try:
        return _load_entry(target) if isinstance(target, str) else target
    except (ImportError, AttributeError):
        raise ConfigError(f"benchmark {name!r} cannot {what} in this version of fairsweep") from None

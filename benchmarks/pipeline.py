"""A sweep as `fairsweep run` does it: the engine run over the benchmarks' prompts, then each later stage
(e.g. GAMA's judges, ordinary engine runs over stored responses), then offline scoring."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Sequence
from typing import Callable

from ..config import SweepConfig
from ..engine.run_outcome import RunOutcome
from ..engine.runner import run_sweep
from ..records import Prompt
from .registry import FINDINGS, LABELLERS, SCORERS, STAGES, VIEWS, resolve


def run_pipeline(config: SweepConfig, prompts: Sequence[Prompt], *, command: str, progress: bool,
                 report: Callable[[RunOutcome], None], retry_failed: tuple[str, ...] | None = None
                 ) -> list[RunOutcome]:
    """Run, stages, score, then what was found; `report` sees each engine run's outcome as it ends.
    Scoring runs unless the last run was interrupted. `prompts` is emptied once the engine run is over."""
    outcome = run_sweep(config, prompts, command=command, progress=progress, retry_failed=retry_failed,
                        after_commit=labeller(config.benchmarks))
    # What follows reads only stored rows. Freed here, the prompts (~12 MB at 4,704, with their cached JSON) do
    # not add to the peak of the scoring and the findings: a one-model run peaked there at 154-156 MB, at 146-148
    # while it sent.
    prompts.clear()
    report(outcome)
    outcomes = [outcome]
    if not outcome.interrupted:
        outcomes += run_later_stages(config, command, progress, report)
    if not outcomes[-1].interrupted:
        score_benchmarks(config, config.benchmarks)
        show_findings(config, config.benchmarks)
    return outcomes


def show_findings(config: SweepConfig, benchmarks) -> None:
    """Each benchmark's findings for the run just scored (e.g. MRNI-BB's bias scores with intervals)."""
    for name in benchmarks:
        if name in FINDINGS:
            resolve(FINDINGS, name, "show findings")(config.db, config.run)


def labeller(benchmarks) -> Callable | None:
    """One function that labels committed answers for every selected benchmark that has a labeller. The
    labellers are imported at their first call, in the writer thread: not before the first request. A labeller
    that takes `prompts` is given the answers' prompts the run holds (request_id -> Prompt); one that does not
    (`label(conn, responses)`) reads them from the DB."""
    names = [name for name in benchmarks if name in LABELLERS]
    if not names:
        return None
    labellers: list[Callable] = []

    def label(conn, responses, prompts) -> None:
        if not labellers:
            labellers.extend(with_prompts(resolve(LABELLERS, name, "label answers")) for name in names)
        for each in labellers:
            each(conn, responses, prompts)
    return label


def with_prompts(label: Callable) -> Callable:
    """`label` as label(conn, responses, prompts), whether or not it takes the prompts."""
    parameters = inspect.signature(label).parameters.values()
    if any(p.name == "prompts" or p.kind is p.VAR_KEYWORD for p in parameters):
        return lambda conn, responses, prompts: label(conn, responses, prompts=prompts)
    return lambda conn, responses, prompts: label(conn, responses)


def run_later_stages(config: SweepConfig, command: str, progress: bool,
                     report: Callable[[RunOutcome], None] | None = None) -> list[RunOutcome]:
    """Second stages over stored responses, each an ordinary engine run."""
    outcomes = []
    for name in config.benchmarks:
        if name in STAGES:
            outcome = resolve(STAGES, name, "run a later stage")(config, command, progress)
            if outcome is not None:
                if report is not None:
                    report(outcome)
                outcomes.append(outcome)
                if outcome.interrupted:
                    break
    return outcomes


def score_benchmarks(config: SweepConfig, benchmarks) -> None:
    """Score what is stored for each benchmark that has a scorer (parsers, judges); offline."""
    from ..storage.db import open_db
    from ..storage.live import LiveServer

    for name in benchmarks:
        if name not in SCORERS:
            continue
        conn = open_db(config.db)
        try:
            with LiveServer(conn, config.db):  # reads from other commands go through while it scores
                if name in VIEWS:  # a plugin's own views, (re)created before it scores
                    resolve(VIEWS, name, "create its views")(conn)
                counts = resolve(SCORERS, name, "score")(conn, config)
        finally:
            conn.close()
        if counts:
            print(f"scored {name}: " + ", ".join(f"{k} {v}" for k, v in counts.items()), file=sys.stderr)

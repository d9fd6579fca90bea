"""Engine stages whose answers are parsed JSON: send (or resume) one engine run per model, then read every
planned request back with its status, parsed value or error.

Shared by `gama build` (generate / review / rewrite) and `gama review`. The engine retries an answer the
check refuses, then records an 'invalid_output' failure; reading back parses stored answers with the same
parser, so an answer stored under an older validator is never used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ...config import ModelSpec, SweepConfig
from ...records import INVALID_OUTPUT, Prompt

# (text, track) -> (value, None) or (None, reason)
Parser = Callable[[str, str], tuple[Any, str | None]]


@dataclass(frozen=True)
class Job:
    """One request of a stage: the unit it is about (a seed or scenario id), its model and prompt."""

    unit: str
    model: str
    prompt: Prompt
    track: str


@dataclass
class StepResult:
    """A unit's request in one stage: status ok / failed / pending, the parsed value or the error."""

    request_id: str
    model: str
    status: str
    value: Any = None
    error: str | None = None
    date: str | None = None


@dataclass
class StepRun:
    results: dict[tuple[str, str], StepResult] = field(default_factory=dict)  # (unit, model) -> result
    outcomes: list = field(default_factory=list)
    interrupted: bool = False

    def for_unit(self, unit: str) -> StepResult | None:
        """The unit's result when the stage asks one model per unit (the build's steps)."""
        return next((r for (u, _), r in self.results.items() if u == unit), None)


def output_check(parse: Parser):
    """The engine's check: the parser's reason for refusing an answer (None = usable)."""
    return lambda item, text: parse(text, item.prompt.metadata["track"])[1]


def run_jobs(name: str, jobs: list[Job], *, run_config: Callable[[ModelSpec], SweepConfig],
             spec: Callable[[str], ModelSpec], parse: Parser, command: str, progress: bool) -> StepRun:
    """Send (or resume) the jobs, one engine run per model (run_config(spec) names it), then read every
    answer back. Stops at the first interrupted model run."""
    from ...engine.runner import run_sweep
    from ...engine.work import plan_items

    run = StepRun()
    planned: dict[str, Job] = {}
    for model in sorted({j.model for j in jobs}):
        model_spec = spec(model)
        mine = [j for j in jobs if j.model == model]
        config = run_config(model_spec)
        for item, job in zip(plan_items(config.run, model_spec, [j.prompt for j in mine]), mine):
            planned[item.request_id] = job
        outcome = run_sweep(config, [j.prompt for j in mine], command=command, specs=[model_spec],
                            progress=progress, check=output_check(parse))
        run.outcomes.append((name, outcome))
        if outcome.interrupted:
            run.interrupted = True
            return run
    rows = read_back(config.db, list(planned)) if planned else {}
    for rid, job in planned.items():
        status, text, date, error = rows.get(rid, ("pending", None, None, None))
        result = StepResult(rid, job.model, status, date=date, error=error)
        if status == "ok":
            result.value, reason = parse(text, job.track)
            if reason:  # stored under an older validator: count it as invalid, never use it
                result.status, result.value, result.error = "failed", None, f"{INVALID_OUTPUT}: {reason}"
        run.results[(job.unit, job.model)] = result
    return run


def read_back(db: str, request_ids: list[str]) -> dict[str, tuple[str, str | None, str | None, str | None]]:
    """request id -> (status, response text, UTC date received, last error 'class: message')."""
    from ...storage.db import open_db

    if not request_ids:
        return {}
    conn = open_db(db, read_only=True)
    try:
        rows = conn.execute("""
            WITH wanted AS (SELECT unnest($1) AS request_id),
            last_error AS (
                SELECT request_id, arg_max(coalesce(error_class, outcome) || ': ' || coalesce(error_message, ''),
                                           started_at) AS error
                FROM attempts WHERE outcome NOT IN ('ok', 'cached', 'batch') AND request_id IN (SELECT request_id FROM wanted)
                GROUP BY request_id)
            SELECT o.request_id, o.status, s.text, strftime(timezone('UTC', s.received_at), '%Y-%m-%d'), e.error
            FROM request_outcomes o JOIN wanted USING (request_id)
            LEFT JOIN responses s USING (request_id) LEFT JOIN last_error e USING (request_id)""",
                            [request_ids]).fetchall()
    finally:
        conn.close()
    return {r[0]: tuple(r[1:]) for r in rows}

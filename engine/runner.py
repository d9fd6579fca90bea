"""One sweep from start to end: register the run, plan, compute what is left, send it, commit it.

Sending is the executor's job (engine/executors: local asyncio, or Ray workers); this module owns the
DB, the plan and the single writer, whichever executor sends.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..config import ModelSpec, SweepConfig
from ..providers.registry import preflight
from ..records import Prompt, WorkItem
from ..storage.cache import serve_from_cache
from ..storage.checkpoint import answered_count, plan_requests, remaining
from ..storage.journal import Journal
from ..storage.writer import AfterCommit, RowWriter
from .batch import batched_specs
from .executors import SweepJob, select_executor
from .gate import build_gate
from .limit_policy import BreakerSettings
from .opening import RunDb, opens_beside
from .run_outcome import ModelOutcome, RunOutcome, SessionCounts, merged
from .plan_stream import PlanFeed
from .progress import live_lines
from .retry import OutputCheck, RetryPolicy
from .work import check_unique, plan_items

if TYPE_CHECKING:
    from .batch.sender import BatchSender
    from .executors import Executor

__all__ = ["run_sweep", "plan_work", "ModelOutcome", "RunOutcome"]


def plan_work(config: SweepConfig, prompts: Sequence[Prompt], specs: list[ModelSpec]) -> dict[str, list[WorkItem]]:
    return {spec.name: plan_items(config.run, spec, prompts) for spec in specs}


def run_sweep(config: SweepConfig, prompts: Sequence[Prompt], *, command: str, specs: list[ModelSpec] | None = None,
              progress: bool = True, policy: RetryPolicy | None = None, check: OutputCheck | None = None,
              executor: Executor | None = None, retry_failed: tuple[str, ...] | None = None,
              after_commit: AfterCommit | None = None) -> RunOutcome:
    """Run (or resume) `config.run` over `prompts` for every model (default: config.models; a later
    stage passes e.g. the judges); commits whatever arrives. `check` rejects unusable answers: they are
    retried like transient errors, then recorded as a final 'invalid_output' failure. `retry_failed`:
    send stored final failures again (() = all, else these error classes). `executor` defaults to the
    one config.executor names; models with `batch` go through their provider's batch API. `after_commit`
    derives rows (e.g. parser labels) from each committed batch of answers (storage/writer.py)."""
    specs = list(specs if specs is not None else config.models)
    policy = policy or RetryPolicy(max_attempts=config.max_attempts)
    executor = executor or select_executor(config)
    for spec in specs:
        preflight(spec)  # e.g. native code that cannot run here: stop before the DB is touched
    db = RunDb.open(config, command, live_lines, beside=opens_beside(config, specs, getattr(executor, "name", "")))
    conn, feed = db.conn, None
    try:
        session_id = db.session_id
        check_unique(prompts)  # each request is planned once, whichever way the plan is written
        batched = [] if db.new else batched_specs(conn, config, specs)
        if batched:  # batches are cut from the whole plan: plan it first
            todo, outcomes = plan_session(conn, config, prompts, specs, retry_failed)
        else:  # plan while sending (engine/plan_stream.py)
            feed = PlanFeed(conn, config, prompts, specs, retry_failed, session_id, opening=db.opening,
                            replayed=db.replayed)
            feed.plan_ahead()  # while the adapters' modules may still be loading (providers/registry.preload)
            todo, outcomes = feed.pending, feed.outcomes
        writer = RowWriter(conn, flush_rows=config.flush_rows, flush_ms=config.flush_ms,
                           journal=Journal(config.db, fsync=config.journal_fsync), after_commit=after_commit)
        try:
            gate = build_gate(conn, config, specs, writer, new_db=db.new)
            batches = None
            if batched:
                from .batch.sender import BatchSender  # its adapters only for runs that batch
                batches = BatchSender(conn, config, batched, writer, session_id, policy, check, gate)
                todo = batches.attach(todo)  # requests in a batch still in flight are followed there, never sent again
                serve_cached(conn, todo, outcomes, session_id)
            totals = feed.totals if feed else {o.name: (o.planned, o.already_done + o.cached) for o in outcomes}
            breaker = BreakerSettings(config.breaker_failures, float(config.breaker_seconds))
            sent = send(SweepJob(specs, todo, writer, session_id, policy, progress, check, gate, totals, breaker,
                                 feed), executor, batches)
            if feed is not None and not sent.interrupted:
                feed.finish_plan()  # e.g. every model stopped early: the plan is still written whole
        finally:
            try:
                if feed is not None:
                    feed.close()
            finally:
                writer.close()
        for outcome in outcomes:
            outcome.add(sent.models.get(outcome.name))
            if feed is not None:
                outcome.not_sent += feed.unfed(outcome.name)
        return RunOutcome(config.run, config.db, outcomes, sent.interrupted, warnings=list(gate.drift_warnings),
                          batches_in_flight=len(batches.in_flight()) if batches else 0)
    finally:
        try:
            if feed is not None:
                feed.close()
        finally:
            db.close()


def plan_session(conn, config: SweepConfig, prompts: Sequence[Prompt], specs: list[ModelSpec],
                 retry_failed: tuple[str, ...] | None) -> tuple[dict[str, list[WorkItem]], list[ModelOutcome]]:
    """Record the plan; what is left to send per model, and each model's outcome so far."""
    planned = plan_work(config, prompts, specs)
    plan_requests(conn, [item for items in planned.values() for item in items])
    todo = {name: remaining(conn, items, retry_failed) for name, items in planned.items()}
    outcomes = [ModelOutcome(name, len(items), len(items) - len(todo[name]), answered_count(conn, items))
                for name, items in planned.items()]
    return todo, outcomes


def serve_cached(conn, todo: dict[str, list[WorkItem]], outcomes: list[ModelOutcome], session_id: str) -> None:
    """Identical deterministic requests already answered in this DB are served from there, never sent."""
    for outcome in outcomes:
        still = serve_from_cache(conn, todo[outcome.name], session_id)
        outcome.cached, todo[outcome.name] = len(todo[outcome.name]) - len(still), still


def send(job: SweepJob, executor: Executor, batches: "BatchSender | None") -> SessionCounts:
    """Batch models' batches are submitted first, then the other models are sent synchronously while the
    provider works on the batches, then the batches are followed to their end."""
    if batches is None:
        return executor.execute(job)
    sent = SessionCounts()
    try:
        batches.submit(job.todo)
        synchronous = [s for s in job.specs if not s.batch]
        if synchronous and not batches.interrupted:
            sent = executor.execute(dataclasses.replace(job, specs=synchronous))
        if not sent.interrupted:
            batches.wait()
    except KeyboardInterrupt:  # Ctrl-C between two of these steps' event loops: the batches keep running
        batches.interrupted = True
    for name, counts in batches.counts().items():
        sent.models[name] = merged(sent.models.get(name), counts)
    sent.interrupted = sent.interrupted or batches.interrupted
    return sent

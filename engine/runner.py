"""One sweep from start to end: register the run, plan, compute what is left, send it, commit it."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections import deque
from dataclasses import dataclass, field

from ..config import ModelSpec, SweepConfig
from ..providers.registry import make_provider
from ..storage.checkpoint import plan_requests, register_run, remaining
from ..storage.db import open_db
from ..storage.writer import BatchWriter
from .attempts import AttemptRecorder
from .limiter import ProviderLimiter
from .progress import ProgressReporter
from .scheduler import ModelQueue, OutputCheck, RetryPolicy, Scheduler
from .work import Prompt, WorkItem, plan_items


@dataclass
class ModelOutcome:
    """What a session did for one model, and what is still missing."""

    name: str
    planned: int
    already_done: int
    stored: int = 0
    failed: int = 0
    gave_up: int = 0
    not_sent: int = 0
    stopped: str | None = None
    last_errors: dict[str, str] = field(default_factory=dict)

    @property
    def missing(self) -> int:
        return self.gave_up + self.not_sent


@dataclass
class RunOutcome:
    run: str
    db: str
    models: list[ModelOutcome]
    interrupted: bool = False

    @property
    def complete(self) -> bool:
        return not self.interrupted and all(m.missing == 0 for m in self.models)


def build_limiters(specs: list[ModelSpec]) -> dict[str, ProviderLimiter]:
    """One limiter per provider key; the first spec naming a key declares its limits."""
    limiters: dict[str, ProviderLimiter] = {}
    for spec in specs:
        key = spec.limiter_key()
        if key not in limiters:
            limiters[key] = ProviderLimiter(rpm=spec.rpm, tpm=spec.tpm, max_concurrency=spec.max_concurrency)
    return limiters


def plan_work(config: SweepConfig, prompts: list[Prompt], specs: list[ModelSpec]) -> dict[str, list[WorkItem]]:
    return {spec.name: plan_items(config.run, spec, prompts) for spec in specs}


def run_sweep(config: SweepConfig, prompts: list[Prompt], *, command: str, specs: list[ModelSpec] | None = None,
              progress: bool = True, policy: RetryPolicy | None = None,
              check: OutputCheck | None = None) -> RunOutcome:
    """Run (or resume) `config.run` over `prompts` for every model (default: config.models; a later
    stage passes e.g. the judges); commits whatever arrives. `check` rejects unusable answers: they are
    retried like transient errors, then recorded as a permanent 'invalid_output' failure."""
    specs = list(specs if specs is not None else config.models)
    policy = policy or RetryPolicy(max_attempts=config.max_attempts)
    conn = open_db(config.db)
    try:
        session_id = register_run(conn, config, command)
        planned = plan_work(config, prompts, specs)
        plan_requests(conn, [item for items in planned.values() for item in items])
        todo = {name: remaining(conn, items) for name, items in planned.items()}
        outcomes = [ModelOutcome(name, len(planned[name]), len(planned[name]) - len(todo[name])) for name in planned]
        writer = BatchWriter(conn, flush_rows=config.flush_rows, flush_ms=config.flush_ms)
        interrupted = False
        try:
            asyncio.run(_execute(specs, todo, outcomes, AttemptRecorder(writer, session_id), policy, progress,
                                 check))
        except KeyboardInterrupt:
            interrupted = True
        finally:
            writer.close()
        return RunOutcome(config.run, config.db, outcomes, interrupted)
    finally:
        conn.close()


async def _execute(specs: list[ModelSpec], todo: dict[str, list[WorkItem]], outcomes: list[ModelOutcome],
                   recorder: AttemptRecorder, policy: RetryPolicy, progress: bool,
                   check: OutputCheck | None) -> None:
    limiters = build_limiters(specs)
    queues = [ModelQueue(spec, make_provider(spec), limiters[spec.limiter_key()], deque(todo[spec.name]))
              for spec in specs if todo[spec.name]]
    _cancel_on_sigterm()
    reporter = ProgressReporter(queues, outcomes, enabled=progress)
    try:
        async with reporter:
            await Scheduler(queues, recorder, policy, check).run()
    finally:
        _collect(queues, outcomes)
        for queue in queues:
            with contextlib.suppress(Exception):
                await queue.provider.aclose()


def _cancel_on_sigterm() -> None:
    """SIGTERM stops like Ctrl-C: stop sending, commit what arrived."""
    task = asyncio.current_task()
    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, lambda: task.cancel() if task else None)


def _collect(queues: list[ModelQueue], outcomes: list[ModelOutcome]) -> None:
    by_name = {o.name: o for o in outcomes}
    for queue in queues:
        out = by_name[queue.spec.name]
        out.stored, out.failed, out.gave_up = queue.stored, queue.failed, queue.gave_up
        out.not_sent = len(queue.items) + queue.in_flight
        out.stopped = queue.stopped
        out.last_errors = dict(queue.last_errors)

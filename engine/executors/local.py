"""The local executor: every model's queue on one asyncio event loop in this process."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from functools import partial
from typing import TYPE_CHECKING

from ...config import ModelSpec
from ...errors import first_fixable
from ...providers.registry import make_provider
from ..attempts import AttemptRecorder
from ..limit_policy import BreakerSettings
from ..limiter import KeyLimiter
from ..run_outcome import SessionCounts
from ..progress import ProgressReporter, progress_every_s
from ..scheduler import ModelQueue, Scheduler
from ..signals import cancel_on_sigterm

if TYPE_CHECKING:
    from .job import SweepJob


def build_limiters(specs: list[ModelSpec], breaker: BreakerSettings) -> dict[str, KeyLimiter]:
    """One limiter per provider key (the config refuses entries of one key with different limits)."""
    limiters: dict[str, KeyLimiter] = {}
    for spec in specs:
        key = spec.limiter_key()
        if key not in limiters:
            limiters[key] = KeyLimiter(rpm=spec.rpm, tpm=spec.tpm, max_concurrency=spec.max_concurrency,
                                       breaker=breaker)
    return limiters


class LocalExecutor:
    name = "local"

    def execute(self, job: SweepJob) -> SessionCounts:
        limiters = build_limiters(job.specs, job.breaker)
        feed = job.feed
        queues = [ModelQueue(spec, make_provider(spec), limiters[spec.limiter_key()].for_model(spec.name),
                             job.todo[spec.name] if feed else deque(job.todo[spec.name]),
                             more=partial(feed.wait_items, spec.name) if feed else None)
                  for spec in job.specs if feed or job.todo[spec.name]]
        interrupted = False
        try:
            asyncio.run(self._execute(job, queues))
        except (KeyboardInterrupt, asyncio.CancelledError):  # Ctrl-C, or SIGTERM cancelling the loop
            interrupted = True
        except BaseExceptionGroup as group:  # the planner's and the scheduler's tasks: an error the user can fix
            fixable = first_fixable(group)  # (e.g. DuckDB out of memory) reaches the CLI as itself, one line
            if fixable is None:
                raise
            raise fixable from group
        return SessionCounts({q.spec.name: q.final_counts() for q in queues}, interrupted)

    async def _execute(self, job: SweepJob, queues: list[ModelQueue]) -> None:
        cancel_on_sigterm()
        reporter = ProgressReporter(queues, job.totals, enabled=job.progress, spend=job.gate and job.gate.spent,
                                    every_s=progress_every_s())
        try:
            async with reporter:
                scheduler = Scheduler(queues, AttemptRecorder(job.writer, job.session_id), job.policy, job.check,
                                      job.gate)
                if job.feed is None:
                    await scheduler.run()
                else:  # planning goes on: feed the queues while they send
                    async with asyncio.TaskGroup() as group:
                        group.create_task(job.feed.run(stopped=_stopped_by(queues, job.gate),
                                                      answered=_answered_any(queues)))
                        group.create_task(scheduler.run())
        finally:
            for queue in queues:
                with contextlib.suppress(Exception):
                    await queue.provider.aclose()


def _stopped_by(queues: list[ModelQueue], gate):
    """Whether a model must not be fed any more: its queue stopped, or the gate stops it."""
    by_name = {q.spec.name: q for q in queues}

    def stopped(name: str) -> str | None:
        return by_name[name].counts.stopped or (gate.stopped(name) if gate is not None else None)
    return stopped


def _answered_any(queues: list[ModelQueue]):
    """Whether any request of this session came back (an answer, a failure, a retry or a 429)."""
    def answered() -> bool:
        return any(q.counts.stored or q.counts.failed or q.counts.retries or q.rate_limited for q in queues)
    return answered

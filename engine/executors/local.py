"""The local executor: every model's queue on one asyncio event loop in this process."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from typing import TYPE_CHECKING

from ...config import ModelSpec
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
        queues = [ModelQueue(spec, make_provider(spec), limiters[spec.limiter_key()].for_model(spec.name),
                             deque(job.todo[spec.name]))
                  for spec in job.specs if job.todo[spec.name]]
        interrupted = False
        try:
            asyncio.run(self._execute(job, queues))
        except (KeyboardInterrupt, asyncio.CancelledError):  # Ctrl-C, or SIGTERM cancelling the loop
            interrupted = True
        return SessionCounts({q.spec.name: q.final_counts() for q in queues}, interrupted)

    async def _execute(self, job: SweepJob, queues: list[ModelQueue]) -> None:
        cancel_on_sigterm()
        reporter = ProgressReporter(queues, job.totals, enabled=job.progress, spend=job.gate and job.gate.spent,
                                    every_s=progress_every_s())
        try:
            async with reporter:
                await Scheduler(queues, AttemptRecorder(job.writer, job.session_id), job.policy, job.check,
                                job.gate).run()
        finally:
            for queue in queues:
                with contextlib.suppress(Exception):
                    await queue.provider.aclose()

"""The local executor: every model's queue on one asyncio event loop in this process."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections import deque
from typing import TYPE_CHECKING

from ...config import ModelSpec
from ...providers.registry import make_provider
from ..attempts import AttemptRecorder
from ..limiter import ProviderLimiter
from ..progress import ProgressReporter
from ..scheduler import ModelQueue, Scheduler

if TYPE_CHECKING:
    from ..runner import ModelOutcome
    from . import SweepJob


def build_limiters(specs: list[ModelSpec]) -> dict[str, ProviderLimiter]:
    """One limiter per provider key; the first spec naming a key declares its limits."""
    limiters: dict[str, ProviderLimiter] = {}
    for spec in specs:
        key = spec.limiter_key()
        if key not in limiters:
            limiters[key] = ProviderLimiter(rpm=spec.rpm, tpm=spec.tpm, max_concurrency=spec.max_concurrency)
    return limiters


class LocalExecutor:
    name = "local"

    def execute(self, job: SweepJob) -> None:
        asyncio.run(self._execute(job))

    async def _execute(self, job: SweepJob) -> None:
        limiters = build_limiters(job.specs)
        queues = [ModelQueue(spec, make_provider(spec), limiters[spec.limiter_key()], deque(job.todo[spec.name]))
                  for spec in job.specs if job.todo[spec.name]]
        cancel_on_sigterm()
        reporter = ProgressReporter(queues, job.outcomes, enabled=job.progress)
        try:
            async with reporter:
                await Scheduler(queues, AttemptRecorder(job.writer, job.session_id), job.policy, job.check,
                                job.gate).run()
        finally:
            collect(queues, job.outcomes)
            for queue in queues:
                with contextlib.suppress(Exception):
                    await queue.provider.aclose()


def cancel_on_sigterm() -> None:
    """SIGTERM stops like Ctrl-C: stop sending, commit what arrived."""
    task = asyncio.current_task()
    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, lambda: task.cancel() if task else None)


def collect(queues: list[ModelQueue], outcomes: list[ModelOutcome]) -> None:
    by_name = {o.name: o for o in outcomes}
    for queue in queues:
        out = by_name[queue.spec.name]
        out.stored, out.failed, out.gave_up = queue.stored, queue.failed, queue.gave_up
        out.not_sent = len(queue.items) + queue.in_flight
        out.stopped = queue.stopped
        out.last_errors = dict(queue.last_errors)

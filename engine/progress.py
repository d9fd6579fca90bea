"""A live progress bar per model (rich), redrawn twice a second from the queues' counters."""

from __future__ import annotations

import asyncio
import contextlib

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


class ProgressReporter:
    """Async context manager; draws nothing when disabled or when stderr is not a terminal."""

    def __init__(self, queues, outcomes, *, enabled: bool = True):
        self.queues = queues
        self.outcomes = {o.name: o for o in outcomes}
        console = Console(stderr=True)
        self.enabled = enabled and console.is_terminal and bool(queues)
        self._progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                  TextColumn("{task.fields[note]}"), TimeElapsedColumn(), console=console,
                                  transient=False) if self.enabled else None
        self._tasks: dict[str, int] = {}
        self._ticker: asyncio.Task | None = None

    async def __aenter__(self):
        if self._progress:
            self._progress.start()
            for q in self.queues:
                out = self.outcomes[q.spec.name]
                self._tasks[q.spec.name] = self._progress.add_task(q.spec.name, total=out.planned,
                                                                   completed=out.already_done, note="")
            self._ticker = asyncio.create_task(self._tick())
        return self

    async def __aexit__(self, *exc):
        if self._ticker:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
        if self._progress:
            self._draw()
            self._progress.stop()
        return False

    async def _tick(self) -> None:
        while True:
            self._draw()
            await asyncio.sleep(0.5)

    def _draw(self) -> None:
        for q in self.queues:
            out = self.outcomes[q.spec.name]
            note = f"429s {q.limiter.stats.rate_limited}" + ("  stopped" if q.stopped else "")
            self._progress.update(self._tasks[q.spec.name], completed=out.already_done + q.stored + q.failed, note=note)

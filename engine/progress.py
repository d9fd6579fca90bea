"""A live progress bar per model (rich), redrawn twice a second from the queues' counters."""

from __future__ import annotations

import asyncio
import contextlib

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


class ProgressReporter:
    """Async context manager; draws nothing when disabled or when stderr is not a terminal."""

    def __init__(self, queues, totals: dict[str, tuple[int, int]], *, enabled: bool = True):
        self.queues = queues  # objects with .spec, .counts and .limiter.stats (ModelQueue, ModelTally)
        self.totals = totals  # model -> (planned, done before this session)
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
                planned, done = self.totals.get(q.spec.name, (0, 0))
                self._tasks[q.spec.name] = self._progress.add_task(q.spec.name, total=planned, completed=done,
                                                                   note="")
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
            done = self.totals.get(q.spec.name, (0, 0))[1]
            note = f"429s {q.limiter.stats.rate_limited}" + ("  stopped" if q.counts.stopped else "")
            self._progress.update(self._tasks[q.spec.name], completed=done + q.counts.stored + q.counts.failed,
                                  note=note)

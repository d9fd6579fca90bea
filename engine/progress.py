"""Progress while a run works: per model, what is stored of what is planned, how fast, how long still,
retries, failures, 429s, the current pace (the learned limit when adaptive), spend so far, and why a
model stopped. A live table on a terminal; one line per model every `every_s` seconds (10 by default,
$FAIRSWEEP_PROGRESS_S) when stderr is not a terminal (nohup, CI, a log file). `live_lines()` gives the same
lines to the run's live-read server (storage/live.py), for `fairsweep view`."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections import deque
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # rich is imported when a reporter is made: not on the way to the first request
    from rich.live import Live
    from rich.table import Table

    from ..config import ModelSpec
    from .run_outcome import SendCounts

WINDOW_S = 30.0  # answers/s over the last half minute: recent enough to track a change of pace
EVERY_S = 10.0
_ACTIVE: list["ProgressReporter"] = []  # reporters of this process's running sessions (live_lines)


def progress_every_s() -> float:
    """Seconds between progress lines when stderr is not a terminal ($FAIRSWEEP_PROGRESS_S, checked by
    the config's env knobs)."""
    from ..config import env_int
    return float(env_int("FAIRSWEEP_PROGRESS_S") or EVERY_S)


@dataclass
class ModelLine:
    """One model's progress, as shown."""

    name: str
    done: int
    planned: int
    rate: float | None
    eta_s: float | None
    retries: int
    failed: int
    rate_limited: int
    pace: float | None
    spent: float | None
    stopped: str | None

    def text(self) -> str:
        parts = [f"{self.name}: {self.done}/{self.planned} stored",
                 f"{self.rate:.2f}/s" if self.rate is not None else "-/s",
                 f"ETA {format_eta(self.eta_s)}", f"retries {self.retries}", f"failed {self.failed}",
                 f"429s {self.rate_limited}", f"pace {format_pace(self.pace)}"]
        if self.spent is not None:
            parts.append(f"spent ${self.spent:.4f}")
        if self.stopped:
            parts.append(f"STOPPED: {self.stopped}")
        return ", ".join(parts)


def format_eta(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = int(round(seconds))
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"


def format_pace(rate: float | None) -> str:
    return "unpaced" if rate is None else f"{rate:.2f}/s"


class Watched(Protocol):
    """What progress reads of one model: a ModelQueue (local, and in Ray workers) or the Ray driver's
    ModelTally."""

    spec: ModelSpec
    counts: SendCounts

    @property
    def rate_limited(self) -> int: ...

    @property
    def pace(self) -> float | None: ...


class ModelWatch:
    """Samples one model's counters to tell its recent answer rate."""

    def __init__(self, queue: Watched, totals: dict[str, tuple[int, int]], spend):
        self.queue, self.totals, self.spend = queue, totals, spend  # totals grow while a plan is fed
        self._samples: deque[tuple[float, int]] = deque()

    def line(self, now: float) -> ModelLine:
        q, counts = self.queue, self.queue.counts
        planned, done_before = self.totals.get(q.spec.name, (0, 0))
        settled = counts.stored + counts.failed
        self._samples.append((now, settled))
        while now - self._samples[0][0] > WINDOW_S:
            self._samples.popleft()
        t0, n0 = self._samples[0]
        rate = (settled - n0) / (now - t0) if now - t0 >= 1.0 else None
        left = max(0, planned - done_before - settled)
        eta = left / rate if rate else (0.0 if left == 0 else None)
        return ModelLine(q.spec.name, done_before + counts.stored + counts.failed, planned, rate, eta,
                         counts.retries, counts.failed, q.rate_limited, q.pace, self.spend(q.spec.name),
                         counts.stopped)


class ProgressReporter:
    """Async context manager around a run: a live table on a terminal, else periodic lines, else nothing.
    `queues`: what to watch (Watched: a ModelQueue or a ModelTally);
    `totals`: model -> (planned, done before this session); `spend(model)`: USD so far or None."""

    def __init__(self, queues: list[Watched], totals: dict[str, tuple[int, int]], *, enabled: bool = True, spend=None,
                 every_s: float = EVERY_S, stream=None):
        self.stream = stream or sys.stderr
        self.mode = "off"
        if enabled and queues:  # rich only for a reporter that shows something: not on the way to the first request
            from rich.console import Console

            self.console = Console(file=self.stream)
            self.mode = "live" if self.console.is_terminal else "lines"
        self.every_s = every_s
        spend = spend or (lambda model: None)
        self.watches = [ModelWatch(q, totals, spend) for q in queues]
        self._live: Live | None = None
        self._ticker: asyncio.Task | None = None

    async def __aenter__(self):
        _ACTIVE.append(self)
        if self.mode == "live":
            from rich.live import Live

            self._live = Live(self._table(), console=self.console, refresh_per_second=2, transient=False)
            self._live.start()
        if self.mode != "off":
            self._ticker = asyncio.create_task(self._tick())
        return self

    async def __aexit__(self, *exc):
        with contextlib.suppress(ValueError):
            _ACTIVE.remove(self)
        if self._ticker:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
        if self._live:
            self._live.update(self._table())
            self._live.stop()
        elif self.mode == "lines":
            self._print_lines()
        return False

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(0.5 if self.mode == "live" else self.every_s)
            if self._live:
                self._live.update(self._table())
            else:
                self._print_lines()

    def lines(self) -> list[ModelLine]:
        now = time.monotonic()
        return [w.line(now) for w in self.watches]

    def _print_lines(self) -> None:
        stamp = time.strftime("%H:%M:%S")
        for line in self.lines():
            print(f"[{stamp}] {line.text()}", file=self.stream, flush=True)

    def _table(self) -> Table:
        from rich.table import Table

        table = Table(box=None, pad_edge=False)
        for col in ("model", "stored / planned", "answers/s", "ETA", "retries", "failed", "429s", "pace", "spent $",
                    "stopped"):
            table.add_column(col, justify="left" if col in ("model", "stopped") else "right")
        for line in self.lines():
            table.add_row(line.name, f"{line.done} / {line.planned}", "-" if line.rate is None else f"{line.rate:.2f}",
                          format_eta(line.eta_s), str(line.retries), str(line.failed), str(line.rate_limited),
                          format_pace(line.pace), "-" if line.spent is None else f"{line.spent:.4f}",
                          line.stopped or "")
        return table


def live_lines() -> list[dict]:
    """Every model line of this process's running sessions, as plain dicts (read from another thread: the
    counters are only read, and a watch's sample window tolerates an extra sample)."""
    return [asdict(line) for reporter in list(_ACTIVE) for line in reporter.lines()]

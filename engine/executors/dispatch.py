"""The driver's book of remaining work for a distributed session.

Hands out small shards round-robin over the models, commits what workers stream back (through the
one BatchWriter, whose keyed inserts make a repeated row harmless), counts every request once by its
request_id, and puts back the unfinished items of a shard whose worker died.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from ...config import ModelSpec
from ..limiter import LimiterStats
from ..work import WorkItem
from .shards import Shard, ShardUpdate

if TYPE_CHECKING:
    from ...storage.writer import BatchWriter
    from ..gate import SendGate
    from ..runner import ModelOutcome


@dataclass
class _Stats:
    stats: LimiterStats = field(default_factory=LimiterStats)


@dataclass
class ModelTally:
    """The driver's view of one model (what ProgressReporter reads from a ModelQueue)."""

    spec: ModelSpec
    todo: int
    limiter: _Stats = field(default_factory=_Stats)
    stored: int = 0
    failed: int = 0
    gave_up: int = 0
    stopped: str | None = None
    last_errors: dict[str, str] = field(default_factory=dict)


class ShardBook:
    """Pending items per model, shards in flight, and what has been settled (stored or failed for good)."""

    def __init__(self, specs: list[ModelSpec], todo: dict[str, list[WorkItem]], writer: BatchWriter,
                 session_id: str, shard_size: int, worker_spec: Callable[[ModelSpec], ModelSpec],
                 gate: SendGate | None = None):
        self.specs = {s.name: s for s in specs}
        self.pending = {s.name: deque(todo[s.name]) for s in specs if todo[s.name]}
        self.tallies = {name: ModelTally(self.specs[name], len(items)) for name, items in self.pending.items()}
        self.writer, self.session_id, self.shard_size = writer, session_id, shard_size
        self.worker_spec = worker_spec
        self.gate = gate
        self.in_flight: dict[int, Shard] = {}
        self.settled: set[str] = set()
        self.requeued = 0
        self.shards_done: dict[str, int] = {}  # worker id -> shards finished (for tests and the bench)
        self.closed = False
        self._order = deque(self.pending)
        self._next_id = 0
        self._changed = asyncio.Event()

    async def next_shard(self) -> Shard | None:
        """The next shard to send; None once nothing is pending and nothing in flight can come back."""
        while True:
            shard = self._take()
            if shard is not None or self.closed or not self.in_flight:
                return shard
            self._changed.clear()
            await self._changed.wait()

    def _take(self) -> Shard | None:
        if self.closed:
            return None
        for _ in range(len(self._order)):
            name = self._order[0]
            self._order.rotate(-1)
            items = self.pending[name]
            if items and self.gate is not None and self.tallies[name].stopped is None:
                self.tallies[name].stopped = self.gate.stopped(name)  # spend cap or strict drift
            if items and self.tallies[name].stopped is None:
                batch = tuple(items.popleft() for _ in range(min(self.shard_size, len(items))))
                shard = Shard(self._next_id, self.worker_spec(self.specs[name]), batch, self.session_id)
                self._next_id += 1
                self.in_flight[shard.shard_id] = shard
                return shard
        return None

    def apply(self, shard: Shard, update: ShardUpdate) -> None:
        """Commit the rows of one update and count what they settle."""
        tally = self.tallies[shard.spec.name]
        for row in update.attempts:
            self.writer.add("attempts", row)
            rid, outcome, error_class, message = row[1], row[6], row[7], row[10]
            if outcome == "rate_limited":
                tally.limiter.stats.rate_limited += 1
            elif outcome == "permanent" and rid not in self.settled:
                self.settled.add(rid)
                tally.failed += 1
                tally.last_errors[error_class] = message
            elif outcome == "auth" and tally.stopped is None:
                tally.stopped = message  # no new shards for this model from now on
        for row in update.responses:
            self.writer.add("responses", row)
            if row[0] not in self.settled:
                self.settled.add(row[0])
                tally.stored += 1
                if self.gate is not None:  # cost, provider model, fingerprint (see storage.writer)
                    self.gate.observe(shard.spec.name, row[0], row[6], row[7], row[8])
        if update.end is not None:
            tally.gave_up += update.end.gave_up
            tally.last_errors.update(update.end.last_errors)
            if update.end.stopped:
                tally.stopped = update.end.stopped

    def finish(self, shard: Shard, worker_id: str) -> None:
        self.in_flight.pop(shard.shard_id, None)
        self.shards_done[worker_id] = self.shards_done.get(worker_id, 0) + 1
        self._changed.set()

    def requeue(self, shard: Shard) -> int:
        """A worker died: its shard's unsettled items go back to the front of their model's queue."""
        self.in_flight.pop(shard.shard_id, None)
        lost = [item for item in shard.items if item.request_id not in self.settled]
        self.pending[shard.spec.name].extendleft(reversed(lost))
        self.requeued += len(lost)
        self._changed.set()
        return len(lost)

    def close(self) -> None:
        """Stop handing out shards (Ctrl-C, or a fatal error)."""
        self.closed = True
        self._changed.set()

    def fill(self, outcomes: list[ModelOutcome]) -> None:
        for out in outcomes:
            tally = self.tallies.get(out.name)
            if tally is None:
                continue
            out.stored, out.failed, out.gave_up = tally.stored, tally.failed, tally.gave_up
            out.not_sent = tally.todo - tally.stored - tally.failed - tally.gave_up
            out.stopped = tally.stopped
            out.last_errors = dict(tally.last_errors)

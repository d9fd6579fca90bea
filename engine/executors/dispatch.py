"""The driver's book of remaining work for a distributed session.

Hands out small shards round-robin over the models, commits what workers stream back (through the
one RowWriter, whose keyed inserts make a repeated row harmless), counts every request once by its
request_id, and puts back the unfinished items of a shard whose worker died.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from ...config import ModelSpec
from ...records import Outcome, ResponseRow, WorkItem
from ..run_outcome import SendCounts
from ..retry import Disposition, disposition
from .shards import Shard, ShardUpdate

if TYPE_CHECKING:
    from ...storage.writer import RowWriter
    from ..gate import SendGate
    from ..plan_stream import PlanFeed


@dataclass
class ModelTally:
    """The driver's view of one model (a progress.Watched, as a ModelQueue is). The driver books no sends
    (the limiter actors do), so it shows no pace; 429s are counted from the attempt rows."""

    spec: ModelSpec
    todo: int
    counts: SendCounts = field(default_factory=SendCounts)
    rate_limited: int = 0
    pace: float | None = None


class ShardBook:
    """Pending items per model, shards in flight, and what has been settled (stored or failed for good)."""

    def __init__(self, specs: list[ModelSpec], todo: dict[str, list[WorkItem]], writer: RowWriter,
                 session_id: str, shard_size: int, worker_spec: Callable[[ModelSpec], ModelSpec],
                 gate: SendGate | None = None, feed: PlanFeed | None = None):
        self.specs = {s.name: s for s in specs}
        self.feed = feed  # set: `todo` holds the deques a plan still being fed tops up
        self.pending = ({s.name: todo[s.name] for s in specs} if feed else
                        {s.name: deque(todo[s.name]) for s in specs if todo[s.name]})
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
            if shard is not None or self.closed or not (self.in_flight or self._feeding()):
                return shard
            self._changed.clear()
            await self._changed.wait()

    def _feeding(self) -> bool:
        return self.feed is not None and not self.feed.finished

    def wake(self) -> None:
        """New items were fed (or the feed ended)."""
        self._changed.set()

    def stopped(self, name: str) -> str | None:
        """Whether a model must not be fed any more (its tally stopped, or the gate stops it)."""
        return self.tallies[name].counts.stopped or (self.gate.stopped(name) if self.gate is not None else None)

    def _take(self) -> Shard | None:
        if self.closed:
            return None
        for _ in range(len(self._order)):
            name = self._order[0]
            self._order.rotate(-1)
            items = self.pending[name]
            if items and self.gate is not None and self.tallies[name].counts.stopped is None:
                self.tallies[name].counts.stop(self.gate.stopped(name))  # spend cap or strict drift
            if items and self.tallies[name].counts.stopped is None:
                batch = tuple(items.popleft() for _ in range(min(self.shard_size, len(items))))
                shard = Shard(self._next_id, self.worker_spec(self.specs[name]), batch, self.session_id)
                self._next_id += 1
                self.in_flight[shard.shard_id] = shard
                return shard
        return None

    def apply(self, shard: Shard, update: ShardUpdate) -> None:
        """Commit the rows of one update and count what they settle."""
        tally = self.tallies[shard.spec.name]
        counts = tally.counts
        self.writer.add(*update.rows)
        for row in update.rows:
            if isinstance(row, ResponseRow):
                if self._settle(row.request_id):
                    counts.stored += 1
                    if self.gate is not None:
                        self.gate.observe(shard.spec.name, row.request_id, row.cost_usd, row.provider_model,
                                          row.system_fingerprint)
                continue
            if row.outcome == Outcome.RATE_LIMITED:
                tally.rate_limited += 1
            # a row says nothing of the request's budget: the worker's scheduler settles what runs out of it
            settled = disposition(row.outcome, row.error_class, out_of_tries=False)
            if settled is Disposition.FAILED and self._settle(row.request_id):
                counts.failed += 1
                counts.error(row.error_class, row.error_message)
            elif settled is Disposition.STOP:
                tally.counts.stop(row.error_message)  # no new shards for this model from now on
        if (end := update.end) is not None:
            counts.gave_up += end.counts.gave_up
            counts.retries += end.counts.retries
            counts.last_errors.update(end.counts.last_errors)
            tally.counts.stop(end.counts.stopped)

    def _settle(self, request_id: str) -> bool:
        """Count a request once, whichever row (or repeated row) settles it."""
        if request_id in self.settled:
            return False
        self.settled.add(request_id)
        return True

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

    def counts(self) -> dict[str, SendCounts]:
        for name, tally in self.tallies.items():
            if self.feed is not None:
                tally.todo = self.feed.fed[name]
            c = tally.counts
            c.not_sent = tally.todo - c.stored - c.failed - c.gave_up
            c.rate_limited = tally.rate_limited
        return {name: tally.counts for name, tally in self.tallies.items()}

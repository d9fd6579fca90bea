"""Shards: what a remote worker is given, how it runs one, and what it streams back.

A worker runs the ordinary Scheduler over a shard (retries and error classification stay where they
are); its recorder builds the very rows the local executor writes, but buffers them so that they
travel back to the driver, the only writer. Nothing here knows about Ray.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import AsyncIterator

from ...config import ModelSpec
from ...records import AttemptRow, ResponseRow, WorkItem
from ..attempts import AttemptRecorder
from ..run_outcome import SendCounts
from ..retry import OutputCheck, RetryPolicy
from ..scheduler import ModelQueue, Scheduler


@dataclass(frozen=True)
class Shard:
    """A slice of one model's remaining work. `spec.max_concurrency` is the per-worker concurrency."""

    shard_id: int
    spec: ModelSpec
    items: tuple[WorkItem, ...]
    session_id: str


@dataclass
class ShardEnd:
    """How a shard finished (sent once, last): the queue's counts (stored and failed ones are counted by
    the driver from the rows themselves)."""

    counts: SendCounts
    interrupted: bool


@dataclass
class ShardUpdate:
    """Rows produced since the previous update, ready for RowWriter.add."""

    rows: list[AttemptRow | ResponseRow] = field(default_factory=list)
    end: ShardEnd | None = None


class RowBuffer:
    """Stands in for the RowWriter on a worker: keeps rows until the next update."""

    def __init__(self) -> None:
        self.rows: list[AttemptRow | ResponseRow] = []

    def add(self, *rows: AttemptRow | ResponseRow, prompt=None) -> None:
        self.rows.extend(rows)  # not the prompt: the driver's labellers read it from the DB

    def __bool__(self) -> bool:
        return bool(self.rows)

    def take(self, end: ShardEnd | None = None) -> ShardUpdate:
        update, self.rows = ShardUpdate(self.rows, end), []
        return update


async def run_shard(shard: Shard, provider, limiter, policy: RetryPolicy, check: OutputCheck | None, *,
                    stream_s: float, running: set[asyncio.Task] | None = None) -> AsyncIterator[ShardUpdate]:
    """Run the Scheduler over one shard; yield new rows every `stream_s`, then a final update with
    the shard's ShardEnd. Cancelling the scheduler task (found in `running`) stops it like Ctrl-C."""
    queue = ModelQueue(shard.spec, provider, limiter, deque(shard.items))
    buffer = RowBuffer()
    task = asyncio.create_task(Scheduler([queue], AttemptRecorder(buffer, shard.session_id), policy, check).run())
    if running is not None:
        running.add(task)
    try:
        while not task.done():
            await asyncio.wait({task}, timeout=stream_s)
            if buffer and not task.done():
                yield buffer.take()
    finally:
        if running is not None:
            running.discard(task)
        if not task.done():  # the consumer went away: stop sending
            task.cancel()
    interrupted = task.cancelled()
    if not interrupted and task.exception() is not None:
        raise task.exception()
    yield buffer.take(ShardEnd(queue.final_counts(), interrupted))

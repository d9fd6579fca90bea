"""Shards: what a remote worker is given, how it runs one, and what it streams back.

A worker runs the ordinary Scheduler over a shard (retries and error classification stay where they
are); its recorder builds the very rows the local executor writes, but buffers them so that they
travel back to the driver, the only writer. Nothing here knows about Ray.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import AsyncIterator, Callable

from ...config import ModelSpec
from ...providers.base import ProviderFailure
from ..attempts import AttemptRecorder
from ..scheduler import ModelQueue, OutputCheck, RetryPolicy, Scheduler
from ..work import WorkItem


@dataclass(frozen=True)
class Shard:
    """A slice of one model's remaining work. `spec.max_concurrency` is the per-worker concurrency."""

    shard_id: int
    spec: ModelSpec
    items: tuple[WorkItem, ...]
    session_id: str


@dataclass
class ShardEnd:
    """How a shard finished (sent once, last)."""

    gave_up: int
    stopped: str | None
    last_errors: dict[str, str]
    interrupted: bool


@dataclass
class ShardUpdate:
    """Rows produced since the previous update, ready for BatchWriter.add."""

    attempts: list[tuple] = field(default_factory=list)
    responses: list[tuple] = field(default_factory=list)
    end: ShardEnd | None = None


class RowBuffer:
    """Stands in for the BatchWriter on a worker: keeps rows until the next update."""

    def __init__(self) -> None:
        self.rows: dict[str, list[tuple]] = {"attempts": [], "responses": []}

    def add(self, table: str, row: tuple) -> None:
        self.rows[table].append(row)

    def __bool__(self) -> bool:
        return any(self.rows.values())

    def take(self, end: ShardEnd | None = None) -> ShardUpdate:
        update = ShardUpdate(self.rows["attempts"], self.rows["responses"], end)
        self.rows = {"attempts": [], "responses": []}
        return update


class BufferedRecorder(AttemptRecorder):
    """The local recorder's rows, into a RowBuffer; tells `on_auth` at once when a key is refused."""

    def __init__(self, buffer: RowBuffer, session_id: str, on_auth: Callable[[str, str], None] | None):
        super().__init__(buffer, session_id)  # type: ignore[arg-type]  (duck-typed writer)
        self.on_auth = on_auth

    def failure(self, item: WorkItem, attempt_no: int, started, latency_ms: float,
                failure: ProviderFailure) -> None:
        super().failure(item, attempt_no, started, latency_ms, failure)
        if failure.kind == "auth" and self.on_auth is not None:
            self.on_auth(item.model, failure.message)


async def run_shard(shard: Shard, provider, limiter, policy: RetryPolicy, check: OutputCheck | None, *,
                    stream_s: float, on_auth: Callable[[str, str], None] | None = None,
                    running: set[asyncio.Task] | None = None) -> AsyncIterator[ShardUpdate]:
    """Run the Scheduler over one shard; yield new rows every `stream_s`, then a final update with
    the shard's ShardEnd. Cancelling the scheduler task (found in `running`) stops it like Ctrl-C."""
    queue = ModelQueue(shard.spec, provider, limiter, deque(shard.items))
    buffer = RowBuffer()
    recorder = BufferedRecorder(buffer, shard.session_id, on_auth)
    task = asyncio.create_task(Scheduler([queue], recorder, policy, check).run())
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
    yield buffer.take(ShardEnd(queue.gave_up, queue.stopped, dict(queue.last_errors), interrupted))

"""Executors: how one session's remaining work gets sent. The runner plans, opens the DB and owns the
writer; an executor only sends and hands every row to that writer.

- `local`: the asyncio scheduler in this process (the default).
- `ray`:   the same scheduler inside stateless Ray workers fed with shards; results stream back here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ...errors import MissingDependencyError
from ..limit_policy import BreakerSettings

if TYPE_CHECKING:
    from ...config import ModelSpec, SweepConfig
    from ...records import WorkItem
    from ...storage.writer import BatchWriter
    from ..gate import SendGate
    from ..outcome import SessionCounts
    from ..plan_stream import PlanFeed
    from ..scheduler import OutputCheck, RetryPolicy


@dataclass
class SweepJob:
    """One session's work: what is left per model, where rows go, and how to retry."""

    specs: list[ModelSpec]
    todo: dict[str, list[WorkItem]]
    writer: BatchWriter
    session_id: str
    policy: RetryPolicy
    progress: bool
    check: OutputCheck | None = None
    gate: SendGate | None = None  # spend caps and drift, consulted before each send
    totals: dict[str, tuple[int, int]] = field(default_factory=dict)  # model -> (planned, done before)
    breaker: BreakerSettings = field(default_factory=BreakerSettings)  # when a dead endpoint stops its model
    feed: PlanFeed | None = None  # set: `todo` is being planned still; run feed.run() beside the sending


class Executor(Protocol):
    def execute(self, job: SweepJob) -> SessionCounts:
        """Send job.todo, give every attempt/response row to job.writer, return what happened per
        model. On Ctrl-C or SIGTERM: stop sending, hand over what arrived, return with interrupted set."""


def select_executor(config: SweepConfig) -> Executor:
    """The executor named by config.executor ("local" or "ray")."""
    if config.executor == "ray":
        try:
            from .ray_executor import RayExecutor
        except ImportError as exc:
            raise MissingDependencyError(
                f"--executor ray needs Ray ({exc.name or 'ray'} is not importable): "
                f"pip install 'fairsweep[ray]' on the driver and on every node") from None
        return RayExecutor(address=config.ray_address)
    from .local import LocalExecutor
    return LocalExecutor()

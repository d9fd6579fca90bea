"""One session's work as the runner hands it to an executor, and what an executor is."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ..limit_policy import BreakerSettings

if TYPE_CHECKING:
    from ...config import ModelSpec
    from ...records import WorkItem
    from ...storage.writer import RowWriter
    from ..gate import SendGate
    from ..plan_stream import PlanFeed
    from ..run_outcome import SessionCounts
    from ..retry import OutputCheck, RetryPolicy


@dataclass
class SweepJob:
    """One session's work: what is left per model, where rows go, and how to retry."""

    specs: list[ModelSpec]
    todo: dict[str, list[WorkItem]]
    writer: RowWriter
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

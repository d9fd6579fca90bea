"""What the scheduler asks of one model's share of its provider key's limits: the `ModelLimiter`
protocol, the `Lease` of an admitted request and `ModelStopped`.

Two transports implement it over the one LimitPolicy (engine/limit_policy.py): `LocalModelLimiter`
(engine/limiter.py: the key's limits in this process) and `ClusterModelLimiter`
(engine/executors/ray_limiter.py: the key's limits in one Ray actor, shared by every worker). Whether a
model's limits have stopped it is the policy's to decide (`stopped`); the session's record of a stop, and
its reason, is the model's SendCounts (`SendCounts.stop`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import AsyncContextManager, Protocol

from .limit_policy import LimiterStats


class ModelStopped(Exception):
    """This model may send no more in this session (auth, configuration, breaker); `reason` says why."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass
class Lease:
    """One admitted request: when it was sent and what it reserved."""

    sent_at: float
    estimated_tokens: int
    actual_tokens: int | None = None


class ModelLimiter(Protocol):
    """One model's view of its key's limits."""

    @property
    def stats(self) -> LimiterStats:
        """The key's counters (429s, waits): shared by the models of the key."""

    @property
    def stopped(self) -> str | None:
        """Why the limits stopped this model in this session; None while it may send."""

    @property
    def pace(self) -> float | None:
        """The key's current pace in requests/s (declared or learned); None: unpaced."""

    def slot(self, estimated_tokens: int) -> AsyncContextManager[Lease]:
        """Wait for every limit, then hold a concurrency slot while the request is in flight; raises
        ModelStopped once the model is stopped. Set `lease.actual_tokens` to correct the token budget."""

    def on_success(self, lease: Lease | None = None, quota=None) -> None:
        """An answer came back (to the request sent under `lease`); `quota`: the request quota the provider
        reported with it (providers.base.RequestQuota), if any."""

    def on_reply(self) -> None:
        """An error reply came back: the endpoint is up (the breaker's count starts again)."""

    def on_rate_limited(self, lease: Lease, retry_after: float | None) -> None:
        """A 429 for the request sent under `lease`: cool down (and learn the limit when adaptive)."""

    def on_endpoint_failure(self, reason: str, lease: Lease | None = None) -> str | None:
        """Nothing came back at all; the stop reason if the breaker now stops the model (a transport that
        decides elsewhere answers None and reports the stop through `stopped` later)."""

    def on_config_failure(self, reason: str) -> str | None:
        """A configuration answer (unknown model, missing route); the stop reason if the model stops now."""

    def stop(self, reason: str) -> str:
        """Stop the model (credentials refused); the first reason given stays and is returned."""

"""The local transport of a provider key's limits: the shared LimitPolicy, awaited on this process's
event loop, plus a concurrency cap and asyncio-throttle's sliding window as a hard cap on the pace.

One KeyLimiter per provider key; each model sending through the key holds a LocalModelLimiter view of it
(engine/model_limiter.ModelLimiter, the protocol the scheduler uses; the Ray transport implements it too).
Rate-limited requests wait here, they are never dropped.
"""

from __future__ import annotations

import asyncio
import time
from contextlib import asynccontextmanager
from typing import AsyncIterator, Callable

from asyncio_throttle import Throttler

from .limit_policy import SLICE_S, BreakerSettings, LimiterStats, LimitPolicy
from .model_limiter import Lease, ModelStopped


def hard_cap(rate_per_s: float) -> Throttler:
    """asyncio-throttle's window over ~100 ms slices, one send of slack over the pace, so that timer
    jitter in the spacing never makes it bind; it only binds if the spacing ever failed."""
    burst = max(1, int(rate_per_s * SLICE_S))
    return Throttler(rate_limit=burst + 1, period=burst / rate_per_s, retry_interval=min(0.01, 1 / (4 * rate_per_s)))


class KeyLimiter:
    """All the limits of one provider key, in this process."""

    def __init__(self, rpm: float | None = None, tpm: float | None = None, max_concurrency: int = 8,
                 breaker: BreakerSettings | None = None, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self.policy = LimitPolicy(rpm, tpm, breaker or BreakerSettings(), now=clock())
        self._slots = asyncio.Semaphore(max_concurrency)
        self._booking = asyncio.Lock()
        self._cap: tuple[float, Throttler] | None = None

    @property
    def stats(self) -> LimiterStats:
        return self.policy.stats

    def for_model(self, model: str) -> LocalModelLimiter:
        return LocalModelLimiter(self, model)

    @asynccontextmanager
    async def slot(self, model: str, estimated_tokens: int) -> AsyncIterator[Lease]:
        """Wait for every limit, then hold a concurrency slot while the request is in flight."""
        async with self._slots:
            await self._turn(model, estimated_tokens)
            lease = Lease(sent_at=self.clock(), estimated_tokens=estimated_tokens)
            yield lease
            if lease.actual_tokens is not None:
                self.policy.settle(estimated_tokens, lease.actual_tokens)

    async def _turn(self, model: str, tokens: int) -> None:
        """Wait for this request's send time. One waiter books at a time, so a change of pace or a
        cool-down applies to the very next booking; a 429 that arrives while a request waits sends it
        back to book again."""
        async with self._booking:
            while True:
                if (reason := self.policy.stopped.get(model)) is not None:
                    raise ModelStopped(reason)
                now = self.clock()
                at = self.policy.book(tokens, now)
                if at > now:
                    await asyncio.sleep(at - now)
                if self.policy.cooldown_until <= self.clock():
                    break
            if self.policy.rate:
                await self._hard_cap(self.policy.rate).acquire()

    def _hard_cap(self, rate: float) -> Throttler:
        if self._cap is None or self._cap[0] != rate:
            self._cap = (rate, hard_cap(rate))
        return self._cap[1]


class LocalModelLimiter:
    """One model's view of its key's limiter in this process: a ModelLimiter (engine/model_limiter.py)."""

    def __init__(self, key: KeyLimiter, model: str):
        self.key, self.model = key, model

    @property
    def stats(self) -> LimiterStats:
        return self.key.stats

    @property
    def stopped(self) -> str | None:
        return self.key.policy.stopped.get(self.model)

    @property
    def pace(self) -> float | None:
        """The key's current pace in requests/s (declared or learned; None: unpaced)."""
        return self.key.policy.rate

    def slot(self, estimated_tokens: int):
        return self.key.slot(self.model, estimated_tokens)

    def on_success(self, lease: Lease | None = None, quota=None) -> None:
        self.key.policy.on_success(self.model, self.key.clock(), quota, lease.sent_at if lease else None)

    def on_reply(self) -> None:
        self.key.policy.on_reply(self.model, self.key.clock())

    def on_rate_limited(self, lease: Lease, retry_after: float | None) -> None:
        self.key.policy.on_rate_limited(self.model, lease.sent_at, retry_after, self.key.clock())

    def on_endpoint_failure(self, reason: str, lease: Lease | None = None) -> str | None:
        return self.key.policy.on_endpoint_failure(self.model, reason, self.key.clock(),
                                                   lease.sent_at if lease else None)

    def on_config_failure(self, reason: str) -> str | None:
        return self.key.policy.on_config_failure(self.model, reason)

    def stop(self, reason: str) -> str:
        return self.key.policy.stop(self.model, reason)

"""Per-provider-key limits: a smooth RPM pacer, a TPM budget, a concurrency cap, and cool-downs.

One ProviderLimiter per key; all state lives on the object. Rate-limited requests wait here, they are
never dropped.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import AsyncIterator

from asyncio_throttle import Throttler

# Pace a little under the declared limit: the server counts arrivals, which jitter by a few ms.
SAFETY = 0.98
# Slice the quota into ~100 ms windows so a minute's quota is never sent in one burst.
SLICE_S = 0.1
# Adaptive (undeclared) limits: multiplicative decrease on 429, a slow (~0.25%/s) probe upward.
DECREASE = 0.95
INCREASE_PER_SUCCESS = 0.0025
# Cool-down when a 429 carries no hint: doubled on each consecutive hint-less 429, capped.
DEFAULT_COOLDOWN_S = 1.0
MAX_COOLDOWN_S = 60.0


class RatePacer:
    """Requests per second, paced smoothly: asyncio-throttle's sliding window over ~100 ms slices.

    One task at a time polls the throttler (the lock), so waiting costs no CPU per queued request.
    """

    def __init__(self, rate_per_s: float):
        self._lock = asyncio.Lock()
        self._throttler = Throttler(rate_limit=1)
        self.rate = 0.0
        self.set_rate(rate_per_s)

    def set_rate(self, rate_per_s: float) -> None:
        self.rate = max(rate_per_s, 0.01)
        burst = max(1, int(self.rate * SLICE_S))
        period = burst / self.rate
        self._throttler.rate_limit = burst
        self._throttler.period = period
        self._throttler.retry_interval = min(0.01, period / 10)

    async def acquire(self) -> None:
        async with self._lock:
            await self._throttler.acquire()


class TokenBudget:
    """Tokens per second with a small burst; may go into debt by one request, then waits it off."""

    def __init__(self, tokens_per_s: float):
        self.rate = tokens_per_s
        self.capacity = tokens_per_s * SLICE_S
        self.level = self.capacity
        self._updated = time.monotonic()
        self._lock = asyncio.Lock()

    def _refill(self) -> None:
        now = time.monotonic()
        self.level = min(self.capacity, self.level + (now - self._updated) * self.rate)
        self._updated = now

    async def acquire(self, tokens: int) -> None:
        async with self._lock:
            self._refill()
            if self.level < 0:
                await asyncio.sleep(-self.level / self.rate)
                self._refill()
            self.level -= tokens

    def settle(self, estimated: int, actual: int) -> None:
        """Correct the reservation once the provider reported real usage."""
        self._refill()
        self.level -= actual - estimated


@dataclass
class LimiterStats:
    rate_limited: int = 0
    cooldown_s: float = 0.0
    decreases: int = 0


@dataclass
class Lease:
    """One admitted request: when it was sent and what it reserved."""

    sent_at: float
    estimated_tokens: int
    actual_tokens: int | None = None


@dataclass
class ProviderLimiter:
    """All the limits of one provider key."""

    rpm: float | None = None
    tpm: float | None = None
    max_concurrency: int = 8
    stats: LimiterStats = field(default_factory=LimiterStats)

    def __post_init__(self) -> None:
        self._slots = asyncio.Semaphore(self.max_concurrency)
        self._pacer = RatePacer(self.rpm / 60 * SAFETY) if self.rpm else None
        self._tokens = TokenBudget(self.tpm / 60 * SAFETY) if self.tpm else None
        self._adaptive = self.rpm is None
        self._cooldown_until = 0.0
        self._last_decrease = 0.0
        self._hintless_streak = 0
        self._successes: deque[float] = deque()

    @property
    def paced_rate(self) -> float | None:
        """Current pacing in requests/s (None: not paced yet)."""
        return self._pacer.rate if self._pacer else None

    @asynccontextmanager
    async def slot(self, estimated_tokens: int) -> AsyncIterator[Lease]:
        """Wait for every limit, then hold a concurrency slot while the request is in flight."""
        async with self._slots:
            await self._wait_cooldown()
            if self._pacer:
                await self._pacer.acquire()
            if self._tokens:
                await self._tokens.acquire(estimated_tokens)
            lease = Lease(sent_at=time.monotonic(), estimated_tokens=estimated_tokens)
            yield lease
            if self._tokens and lease.actual_tokens is not None:
                self._tokens.settle(estimated_tokens, lease.actual_tokens)

    async def _wait_cooldown(self) -> None:
        while (delay := self._cooldown_until - time.monotonic()) > 0:
            await asyncio.sleep(delay)

    def on_success(self) -> None:
        self._hintless_streak = 0
        if not self._adaptive:
            return
        now = time.monotonic()
        self._successes.append(now)
        while self._successes and now - self._successes[0] > 2.0:
            self._successes.popleft()
        if self._pacer:
            # +g per success at ~rate successes/s grows the rate by g (0.25%) per second.
            self._pacer.set_rate(self._pacer.rate + INCREASE_PER_SUCCESS)

    def on_rate_limited(self, lease: Lease, retry_after: float | None) -> None:
        """A 429: cool the whole key down as told, and slow down if we were guessing the limit."""
        now = time.monotonic()
        self.stats.rate_limited += 1
        if retry_after is None:
            retry_after = min(MAX_COOLDOWN_S, DEFAULT_COOLDOWN_S * 2 ** self._hintless_streak)
            self._hintless_streak += 1
        until = now + retry_after
        if until > self._cooldown_until:
            self.stats.cooldown_s += until - max(now, self._cooldown_until)
            self._cooldown_until = until
        if self._adaptive and lease.sent_at >= self._last_decrease:
            self._decrease(now)

    def _decrease(self, now: float) -> None:
        """One decrease per congestion epoch: 429s for requests sent before it don't count again."""
        measured = self._measured_rate(now)
        current = self._pacer.rate if self._pacer else measured
        new_rate = max(0.05, min(current * DECREASE, measured * 0.97 if measured else current * DECREASE))
        if self._pacer:
            self._pacer.set_rate(new_rate)
        else:
            self._pacer = RatePacer(new_rate)
        self._last_decrease = now
        self.stats.decreases += 1

    def _measured_rate(self, now: float) -> float:
        """Successes per second over the last second or two (what the server actually admitted)."""
        if not self._successes:
            return 0.0
        span = max(1.0, now - self._successes[0])
        return len(self._successes) / span

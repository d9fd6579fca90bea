"""Per-provider-key limits: a smooth RPM pacer, a TPM budget, a concurrency cap, and cool-downs.

One ProviderLimiter per key; all state lives on the object. Rate-limited requests wait here, they are
never dropped.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import AsyncIterator

from asyncio_throttle import Throttler

log = logging.getLogger(__name__)

# Pace a little under the declared limit: the server counts arrivals, which jitter by a few ms.
SAFETY = 0.99
# Slice the quota into ~100 ms windows so a minute's quota is never sent in one burst.
SLICE_S = 0.1
# Cool-down when a 429 carries no hint: doubled on each consecutive hint-less 429, capped.
DEFAULT_COOLDOWN_S = 1.0
MAX_COOLDOWN_S = 60.0


class RatePacer:
    """Requests per second, spaced evenly; never a burst, not even after the event loop stalled.

    Spacing (GCRA): one waiter at a time sleeps until the next slot, then books the following one
    1/rate after it (after the current time when it did not have to wait, so idling or a stall never
    turns into a burst).
    No polling: one timer per request. asyncio-throttle's sliding window stays as a hard cap on top
    (it never binds while the spacing works, so it never has to poll).
    """

    def __init__(self, rate_per_s: float):
        self._lock = asyncio.Lock()
        self._throttler = Throttler(rate_limit=1)
        self._next_slot = 0.0
        self.rate = 0.0
        self.set_rate(rate_per_s)

    def set_rate(self, rate_per_s: float) -> None:
        self.rate = max(rate_per_s, 0.01)
        burst = max(1, int(self.rate * SLICE_S))
        # One send of slack over the pace, so timer jitter in the spacing never makes the cap bind.
        self._throttler.rate_limit = burst + 1
        self._throttler.period = burst / self.rate
        self._throttler.retry_interval = min(0.01, 1 / (4 * self.rate))

    async def acquire(self) -> None:
        async with self._lock:
            slot = self._next_slot
            now = time.monotonic()
            if slot > now:
                await asyncio.sleep(slot - now)
                base = slot  # timer overshoot does not slow the pace down
            else:
                base = now  # idle or late: the next slot is one interval from now, never a catch-up burst
            self._next_slot = base + 1 / self.rate
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


class AdaptiveRate:
    """Learns an undeclared rate limit from 429s (for keys with no rpm in the config).

    The first 429 comes while sending unpaced, so the rate admitted until then is only a rough
    guess: from it, grow fast (SLOW_START_PER_S) until the next 429. From then on, a 429 marks the
    refused pace (or the rate the server admitted, if lower) as the ceiling and drops to DECREASE x
    ceiling; the pace recovers
    quickly to just under the ceiling, and above it probes upward slowly at first, doubling the probe
    speed every PROBE_DOUBLING_S without a 429 (in case the limit rose).
    """

    DECREASE = 0.9
    SLOW_START_PER_S = 0.25
    RECOVER_PER_S = 0.05
    NEAR_CEILING = 0.97
    PROBE_PER_S = 0.0025
    PROBE_DOUBLING_S = 10.0
    PROBE_MAX_PER_S = 0.10

    def __init__(self) -> None:
        now = time.monotonic()
        self.ceiling: float | None = None
        self._last_429 = now
        self._last_update = now
        self._successes: deque[float] = deque()

    def on_success(self, pacer: RatePacer | None, now: float) -> None:
        self._successes.append(now)
        while now - self._successes[0] > 2.0:
            self._successes.popleft()
        if pacer is None:
            return
        dt, self._last_update = now - self._last_update, now
        pacer.set_rate(pacer.rate * (1 + self._growth_per_s(pacer.rate, now) * dt))

    def _growth_per_s(self, rate: float, now: float) -> float:
        if self.ceiling is None:
            return self.SLOW_START_PER_S
        if rate < self.NEAR_CEILING * self.ceiling:
            return self.RECOVER_PER_S
        doublings = (now - self._last_429) / self.PROBE_DOUBLING_S
        return min(self.PROBE_MAX_PER_S, self.PROBE_PER_S * 2 ** doublings)

    def refused_at(self, pacer: RatePacer | None, now: float) -> float:
        """The new pacing rate after a 429."""
        self._last_429 = self._last_update = now
        if pacer is None:  # unpaced so far: a rough guess, refined by slow start
            return max(0.05, self.DECREASE * self.admitted_rate(now))
        # Refused at this pace; what the server let through over the last seconds bounds it too.
        self.ceiling = min(pacer.rate, max(self.admitted_rate(now), 0.5 * pacer.rate))
        return max(0.05, self.DECREASE * self.ceiling)

    def admitted_rate(self, now: float) -> float:
        """Successes per second over the last second or two (what the server actually admitted)."""
        if not self._successes:
            return 1.0
        return len(self._successes) / max(1.0, now - self._successes[0])


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
        self._adaptive_rate = AdaptiveRate() if self._adaptive else None
        self._last_decrease = 0.0
        self._hintless_streak = 0

    @property
    def paced_rate(self) -> float | None:
        """Current pacing in requests/s (None: not paced yet)."""
        return self._pacer.rate if self._pacer else None

    @asynccontextmanager
    async def slot(self, estimated_tokens: int) -> AsyncIterator[Lease]:
        """Wait for every limit, then hold a concurrency slot while the request is in flight."""
        async with self._slots:
            await self._wait_cooldown()
            while self._pacer:
                await self._pacer.acquire()
                if self._cooldown_until <= time.monotonic():
                    break
                await self._wait_cooldown()  # a 429 arrived while we queued for a slot: wait, re-queue
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
        if self._adaptive_rate:
            self._adaptive_rate.on_success(self._pacer, time.monotonic())

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
        before = self._pacer.rate if self._pacer else None
        new_rate = self._adaptive_rate.refused_at(self._pacer, now)
        if self._pacer:
            self._pacer.set_rate(new_rate)
        else:
            self._pacer = RatePacer(new_rate)
        self._last_decrease = now
        self.stats.decreases += 1
        log.debug("429: pacing %s -> %.2f req/s", f"{before:.2f}" if before else "unpaced", new_rate)

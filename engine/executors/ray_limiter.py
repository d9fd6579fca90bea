"""Cluster-wide limits for the Ray executor: one actor per provider key books every send.

`PermitBook` (pure bookkeeping) holds the only copy of a key's limits: a GCRA request pace, a GCRA
token budget, 429 cool-downs with the local limiter's adaptive pacing, the concurrency cap (slots
leased to workers), and the models stopped by an authentication failure. `LimiterActor` serves it;
each worker talks to it through a `ClusterLimiter`, which batches asks and reports (one RPC per batch,
not per request) and keeps a freed slot for a moment so that the next request of the same worker
needs no RPC. Times are wall-clock seconds (time.time()), which mean the same on every node.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import AsyncIterator

from ...providers.base import AuthError
from ..limiter import (DEFAULT_COOLDOWN_S, MAX_COOLDOWN_S, SAFETY, SLICE_S, AdaptiveRate, Lease,
                       LimiterStats)

# Book at most this far ahead: a 429 seen by one worker reaches the others within it.
HORIZON_S = 0.25
# A permit used later than this after its time is dropped and booked again: late sends would bunch up.
STALE_S = 0.01
# How long a worker keeps a freed concurrency slot for its own next request before giving it back.
LINGER_S = 0.02
# Longest an actor call waits for a slot before answering "none yet" (the worker asks again).
SLOT_WAIT_S = 0.5
# A busy worker refreshes cool-downs, stops and pacing at least this often.
HEARTBEAT_S = 0.2


@dataclass
class Info:
    """The key's shared state, as a worker needs it."""

    cooldown_until: float = 0.0
    paced: bool = True  # sends need a booked permit (unknown until the first answer: assume so)
    stopped: dict[str, str] = field(default_factory=dict)
    contended: bool = False  # some worker is waiting for a slot
    fair_share: int = 1


@dataclass
class Report:
    """What a worker tells the actor in one exchange."""

    release: int = 0
    successes: int = 0
    token_delta: int = 0  # actual minus estimated tokens of settled requests
    limited: list[tuple[float, float | None]] = field(default_factory=list)  # (sent_at, retry_after)
    stops: dict[str, str] = field(default_factory=dict)
    asks: list[tuple[str, int]] = field(default_factory=list)  # (model, estimated tokens) per permit
    lead: float = 0.0  # book no earlier than now + lead: the permit must arrive before its time

    def urgent(self) -> bool:
        """Worth an RPC now; successes and token corrections ride along with the next one."""
        return bool(self.release or self.limited or self.stops or self.asks)


class PermitBook:
    """All the limits of one provider key, for the whole cluster. No I/O, no sleeping."""

    def __init__(self, rpm: float | None, tpm: float | None, max_concurrency: int):
        self.rate = rpm / 60 * SAFETY if rpm else None  # requests/s; None: unpaced until a 429
        self.token_rate = tpm / 60 * SAFETY if tpm else None
        self.token_burst = (self.token_rate or 0) * SLICE_S
        self.capacity = max_concurrency
        self.adaptive = AdaptiveRate() if not rpm else None
        self.next_send = 0.0  # GCRA: the earliest time of the next send
        self.token_tat = 0.0  # GCRA over tokens (may run one request into debt, like TokenBudget)
        self.cooldown_until = 0.0
        self.held: dict[str, int] = {}
        self.dead: set[str] = set()
        self.stopped: dict[str, str] = {}
        self.stats = LimiterStats()
        self.peak_held = 0
        self.permits = 0
        self.exchanges = 0
        self._hintless = 0
        self._last_decrease = 0.0

    @property
    def paced(self) -> bool:
        return self.rate is not None or self.token_rate is not None

    def set_rate(self, rate_per_s: float) -> None:  # AdaptiveRate drives this object like a RatePacer
        self.rate = max(rate_per_s, 0.01)

    def book(self, asks: list[tuple[str, int]], now: float, lead: float) -> tuple[list[float | None], float | None]:
        """A send time per ask, in order, up to HORIZON_S ahead; then (None..., when to ask again)."""
        times: list[float | None] = []
        for model, cost in asks:
            if model in self.stopped:
                times.append(None)
                continue
            at = max(now + lead, self.next_send, self.cooldown_until)
            if self.token_rate:
                at = max(at, self.token_tat - self.token_burst / self.token_rate)
            if at > now + HORIZON_S:
                return times + [None] * (len(asks) - len(times)), at - HORIZON_S
            times.append(at)
            self.permits += 1
            if self.rate:
                self.next_send = at + 1 / self.rate
            if self.token_rate:
                self.token_tat = max(self.token_tat, at) + cost / self.token_rate
        return times, None

    def grant(self, worker: str, want: int) -> int:
        if worker in self.dead:
            return 0
        granted = max(0, min(want, self.capacity - sum(self.held.values())))
        self.held[worker] = self.held.get(worker, 0) + granted
        self.peak_held = max(self.peak_held, sum(self.held.values()))
        return granted

    def release(self, worker: str, n: int) -> None:
        if worker in self.held:
            self.held[worker] = max(0, self.held[worker] - n)

    def forget(self, worker: str) -> None:
        """A worker died: its slots come back, and it never gets new ones."""
        self.dead.add(worker)
        self.held.pop(worker, None)

    def report(self, report: Report, now: float) -> None:
        if report.successes:
            self._hintless = 0
            if self.adaptive:
                mono = time.monotonic()
                for _ in range(report.successes):
                    self.adaptive.on_success(self if self.rate else None, mono)
        if report.token_delta and self.token_rate:
            self.token_tat += report.token_delta / self.token_rate
        for sent_at, retry_after in report.limited:
            self._rate_limited(sent_at, retry_after, now)
        self.stopped.update(report.stops)

    def _rate_limited(self, sent_at: float, retry_after: float | None, now: float) -> None:
        """As ProviderLimiter.on_rate_limited, for the whole cluster."""
        self.stats.rate_limited += 1
        if retry_after is None:
            retry_after = min(MAX_COOLDOWN_S, DEFAULT_COOLDOWN_S * 2 ** self._hintless)
            self._hintless += 1
        if now + retry_after > self.cooldown_until:
            self.stats.cooldown_s += now + retry_after - max(now, self.cooldown_until)
            self.cooldown_until = now + retry_after
        if self.adaptive and sent_at >= self._last_decrease:
            self.set_rate(self.adaptive.refused_at(self if self.rate else None, time.monotonic()))
            self._last_decrease = now
            self.stats.decreases += 1

    def info(self, waiting: int) -> Info:
        sharing = len([w for w, n in self.held.items() if n]) + waiting
        return Info(self.cooldown_until, self.paced, dict(self.stopped), waiting > 0,
                    max(1, math.ceil(self.capacity / max(1, sharing))))


class LimiterActor:
    """Serves one key's PermitBook to every worker (a Ray async actor: one event loop, no locks)."""

    def __init__(self, rpm: float | None, tpm: float | None, max_concurrency: int):
        self.book = PermitBook(rpm, tpm, max_concurrency)
        self._waiting: dict[str, int] = {}
        self._sleepers: list[asyncio.Future] = []

    async def acquire(self, worker: str, want: int) -> tuple[int, Info]:
        """Up to `want` concurrency slots; waits up to SLOT_WAIT_S for one to come free."""
        deadline = time.monotonic() + SLOT_WAIT_S
        granted = self.book.grant(worker, want)
        while not granted and worker not in self.book.dead and (left := deadline - time.monotonic()) > 0:
            self._waiting[worker] = want
            sleeper = asyncio.get_running_loop().create_future()
            self._sleepers.append(sleeper)
            try:
                await asyncio.wait_for(sleeper, left)
            except asyncio.TimeoutError:
                pass
            finally:
                self._waiting.pop(worker, None)
            granted = self.book.grant(worker, want)
        return granted, self.book.info(len(self._waiting))

    async def exchange(self, worker: str, report: Report) -> tuple[list[float | None], float | None, Info]:
        """Take a worker's reports; book its asks. Never waits."""
        now = time.time()
        self.book.exchanges += 1
        self.book.report(report, now)
        if report.release:
            self.book.release(worker, report.release)
            self._wake()
        times, retry_at = self.book.book(report.asks, now, report.lead)
        return times, retry_at, self.book.info(len(self._waiting))

    async def forget(self, worker: str) -> None:
        self.book.forget(worker)
        self._wake()

    async def snapshot(self) -> dict:
        b = self.book
        return {"peak_held": b.peak_held, "held": sum(b.held.values()), "permits": b.permits,
                "exchanges": b.exchanges,
                "rate_limited": b.stats.rate_limited, "decreases": b.stats.decreases, "rate": b.rate,
                "stopped": dict(b.stopped)}

    def _wake(self) -> None:
        for sleeper in self._sleepers:
            if not sleeper.done():
                sleeper.set_result(None)
        self._sleepers.clear()


class ClusterLimiter:
    """A worker's side of one key's LimiterActor; `for_model(name)` gives ProviderLimiter's interface."""

    def __init__(self, actor, worker_id: str, local_cap: int):
        self.stats = LimiterStats()
        self._actor, self._worker, self._cap = actor, worker_id, max(1, local_cap)
        self._held = self._busy = 0
        self._slot_waiters: deque[tuple[str, asyncio.Future]] = deque()
        self._asks: list[tuple[str, int, asyncio.Future]] = []
        self._report = Report()
        self._info = Info(fair_share=self._cap)
        self._local_cooldown = 0.0
        self._rtt = 0.002
        self._last_exchange = 0.0
        self._beat = False
        self._slot_pump: asyncio.Task | None = None
        self._report_pump: asyncio.Task | None = None
        self._kicked: asyncio.Event | None = None
        self._trim: asyncio.TimerHandle | None = None

    def for_model(self, model: str) -> "ModelLimiter":
        return ModelLimiter(self, model)

    # -- the request path -------------------------------------------------------------------

    @asynccontextmanager
    async def slot(self, model: str, tokens: int) -> AsyncIterator[Lease]:
        await self._take_slot(model)
        try:
            await self._permit(model, tokens)
            lease = Lease(sent_at=time.time(), estimated_tokens=tokens)
            yield lease
            if lease.actual_tokens is not None:
                self._report.token_delta += lease.actual_tokens - tokens
        finally:
            self._give_slot()

    async def _take_slot(self, model: str) -> None:
        self._check(model)
        self._maybe_heartbeat()
        if not self._live_waiters() and self._busy < self._held:
            self._busy += 1
            return
        future = asyncio.get_running_loop().create_future()
        self._slot_waiters.append((model, future))
        self._kick_slots()
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled() and future.exception() is None:
                self._give_slot()  # a slot was handed over just as this request was cancelled
            raise

    async def _permit(self, model: str, tokens: int) -> None:
        """Wait for the key's cool-down and a booked send time (not needed while the key is unpaced)."""
        while True:
            self._check(model)
            while (delay := self._cooldown() - time.time()) > 0:
                await asyncio.sleep(delay)
            if not self._info.paced:
                return
            future = asyncio.get_running_loop().create_future()
            self._asks.append((model, tokens, future))
            self._kick_reports()
            at = await future
            if (delay := at - time.time()) > 0:
                await asyncio.sleep(delay)
            if time.time() - at <= STALE_S and self._cooldown() <= time.time():
                return  # else: woke too late, or a 429 arrived meanwhile: book again

    def _give_slot(self) -> None:
        self._busy -= 1
        info = self._info
        if info.contended and self._held > info.fair_share:
            self._release(1)  # others wait: give back what is above this worker's share
        if self._live_waiters():
            self._assign()
            if self._live_waiters():
                self._kick_slots()  # still short (e.g. a slot just went back): ask the actor
        elif self._trim is None and self._held > self._busy:
            self._trim = asyncio.get_running_loop().call_later(LINGER_S, self._release_spare)

    def _release_spare(self) -> None:
        self._trim = None
        if not self._live_waiters() and self._held > self._busy:
            self._release(self._held - self._busy)

    def _release(self, n: int) -> None:
        self._held -= n
        self._report.release += n
        self._kick_reports()

    def _assign(self) -> None:
        while self._slot_waiters and self._busy < self._held:
            model, future = self._slot_waiters.popleft()
            if future.done():
                continue
            if model in self._info.stopped:
                future.set_exception(self._auth(model))
                continue
            self._busy += 1
            future.set_result(None)

    def _live_waiters(self) -> int:
        return sum(1 for _, f in self._slot_waiters if not f.done())

    # -- reports from the scheduler ------------------------------------------------------------

    def on_success(self) -> None:
        self._report.successes += 1

    def on_rate_limited(self, lease: Lease, retry_after: float | None) -> None:
        self.stats.rate_limited += 1
        self._local_cooldown = max(self._local_cooldown, time.time() + (retry_after or DEFAULT_COOLDOWN_S))
        self._report.limited.append((lease.sent_at, retry_after))
        self._kick_reports()

    def report_stop(self, model: str, message: str) -> None:
        """An auth failure: stop this model here now, and everywhere with the next exchange."""
        self._info.stopped = {**self._info.stopped, model: message}
        self._report.stops[model] = message
        self._kick_reports()

    # -- the two pumps: slots (may wait at the actor) and reports/permits (never wait there) ----------

    def _kick_slots(self) -> None:
        if self._slot_pump is None or self._slot_pump.done():
            self._slot_pump = asyncio.get_running_loop().create_task(self._pump_slots())

    async def _pump_slots(self) -> None:
        try:
            while (want := min(self._live_waiters(), self._cap - self._held)) > 0:
                granted, info = await self._actor.acquire.remote(self._worker, want)
                self._held += granted
                self._apply(info)
                self._assign()
                if not granted:
                    await asyncio.sleep(0.05)  # the actor waited already; never spin
        except BaseException as exc:  # the limiter actor is gone: fail the waiting requests, loudly
            self._fail_all(exc)
            raise

    def _kick_reports(self) -> None:
        if self._kicked is not None:
            self._kicked.set()
        if self._report_pump is None or self._report_pump.done():
            self._report_pump = asyncio.get_running_loop().create_task(self._pump_reports())

    def _maybe_heartbeat(self) -> None:
        if time.time() - self._last_exchange > HEARTBEAT_S:
            self._beat = True
            self._kick_reports()

    async def _pump_reports(self) -> None:
        self._kicked = asyncio.Event()
        try:
            while True:
                asks = [a for a in self._asks if not a[2].done()]
                report = self._report
                report.asks, report.lead = [(m, t) for m, t, _ in asks], 1.5 * self._rtt + 0.002
                if not report.urgent() and not self._beat:
                    report.asks = []
                    return
                self._report, self._asks = Report(), []
                self._beat = False
                self._kicked.clear()
                started = time.time()
                times, retry_at, info = await self._actor.exchange.remote(self._worker, report)
                self._last_exchange = time.time()
                self._rtt = 0.8 * self._rtt + 0.2 * (self._last_exchange - started)
                self._apply(info)
                for (model, tokens, future), at in zip(asks, times):
                    if future.done():
                        continue
                    if model in info.stopped:
                        future.set_exception(self._auth(model))
                    elif at is None:
                        self._asks.append((model, tokens, future))
                    else:
                        future.set_result(at)
                if retry_at is not None and any(not f.done() for _, _, f in self._asks):
                    # Booked up to the horizon: ask again shortly before the next free time.
                    await self._wait_kick(retry_at - time.time())
        except BaseException as exc:
            self._fail_all(exc)
            raise

    async def _wait_kick(self, timeout: float) -> None:
        if timeout > 0:
            try:
                await asyncio.wait_for(self._kicked.wait(), timeout)
            except asyncio.TimeoutError:
                pass

    def _apply(self, info: Info) -> None:
        info.stopped = {**info.stopped, **self._info.stopped}
        self._info = info
        for model, future in self._slot_waiters:
            if model in info.stopped and not future.done():
                future.set_exception(self._auth(model))

    def _fail_all(self, exc: BaseException) -> None:
        failure = exc if isinstance(exc, Exception) else RuntimeError("the key's limiter actor is gone")
        for _, future in self._slot_waiters:
            if not future.done():
                future.set_exception(failure)
        for _, _, future in self._asks:
            if not future.done():
                future.set_exception(failure)

    # -- helpers ------------------------------------------------------------------------------------

    def _cooldown(self) -> float:
        return max(self._info.cooldown_until, self._local_cooldown)

    def _check(self, model: str) -> None:
        if model in self._info.stopped:
            raise self._auth(model)

    def _auth(self, model: str) -> AuthError:
        return AuthError(self._info.stopped[model], error_class="auth")


class ModelLimiter:
    """ProviderLimiter's interface for one model over a shared ClusterLimiter (what ModelQueue holds)."""

    def __init__(self, cluster: ClusterLimiter, model: str):
        self.cluster, self.model = cluster, model

    @property
    def stats(self) -> LimiterStats:
        return self.cluster.stats

    def slot(self, estimated_tokens: int):
        return self.cluster.slot(self.model, estimated_tokens)

    def on_success(self) -> None:
        self.cluster.on_success()

    def on_rate_limited(self, lease: Lease, retry_after: float | None) -> None:
        self.cluster.on_rate_limited(lease, retry_after)

"""Cluster-wide limits for the Ray executor: one actor per provider key books every send.

`PermitBook` holds the only copy of a key's limits for the whole cluster: the shared LimitPolicy
(engine/limit_policy.py: pace, token budget, cool-downs, adaptive pacing, stops and the breaker, the
same code the local limiter runs) plus the concurrency cap as slots leased to workers. `LimiterActor`
serves it; each worker talks to it through a `ClusterLimiter`, which batches asks and reports (one RPC
per batch, not per request) and keeps a freed slot for a moment so that the next request of the same
worker needs no RPC. Times are wall-clock seconds (time.time()), which mean the same on every node.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import AsyncIterator

from ..limit_policy import DEFAULT_COOLDOWN_S, BreakerSettings, LimiterStats, LimitPolicy
from ..model_limiter import Lease, ModelStopped

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
    rate: float | None = None  # the key's pace in requests/s (declared or learned); None: unpaced


@dataclass
class Report:
    """What a worker tells the actor in one exchange. `events` keep their order (the breaker counts
    failures in a row): ("ok", model, at), ("reply", model, at), ("limited", model, sent_at, retry_after),
    ("endpoint", model, reason, at, sent_at), ("config", model, reason), ("stop", model, reason)."""

    release: int = 0
    token_delta: int = 0  # actual minus estimated tokens of settled requests
    events: list[tuple] = field(default_factory=list)
    asks: list[tuple[str, int]] = field(default_factory=list)  # (model, estimated tokens) per permit
    lead: float = 0.0  # book no earlier than now + lead: the permit must arrive before its time

    def urgent(self) -> bool:
        """Worth an RPC now; successes and token corrections ride along with the next one."""
        return bool(self.release or self.asks or any(e[0] not in ("ok", "reply") for e in self.events))


class PermitBook:
    """All the limits of one provider key, for the whole cluster. No I/O, no sleeping."""

    def __init__(self, rpm: float | None, tpm: float | None, max_concurrency: int,
                 breaker: BreakerSettings | None = None, now: float | None = None):
        self.policy = LimitPolicy(rpm, tpm, breaker or BreakerSettings(), now=time.time() if now is None else now)
        self.capacity = max_concurrency
        self.held: dict[str, int] = {}
        self.dead: set[str] = set()
        self.peak_held = 0
        self.permits = 0
        self.exchanges = 0

    @property
    def stats(self) -> LimiterStats:
        return self.policy.stats

    @property
    def stopped(self) -> dict[str, str]:
        return self.policy.stopped

    def book(self, asks: list[tuple[str, int]], now: float, lead: float) -> tuple[list[float | None], float | None]:
        """A send time per ask, in order, up to HORIZON_S ahead; then (None..., when to ask again)."""
        times: list[float | None] = []
        for model, cost in asks:
            if model in self.policy.stopped:
                times.append(None)
                continue
            at = self.policy.book(cost, now, horizon=HORIZON_S, lead=lead)
            if at is None:
                return times + [None] * (len(asks) - len(times)), self.policy.free_at() - HORIZON_S
            times.append(at)
            self.permits += 1
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
        policy = self.policy
        if report.token_delta:
            policy.settle(0, report.token_delta)
        for kind, model, *rest in report.events:
            if kind == "ok":  # ("ok", model, at[, quota, sent_at])
                policy.on_success(model, *(rest or [now]))
            elif kind == "reply":
                policy.on_reply(model, rest[0] if rest else now)
            elif kind == "limited":
                policy.on_rate_limited(model, rest[0], rest[1], now)
            elif kind == "endpoint":
                policy.on_endpoint_failure(model, *rest)
            elif kind == "config":
                policy.on_config_failure(model, rest[0])
            elif kind == "stop":
                policy.stop(model, rest[0])

    def info(self, waiting: int) -> Info:
        sharing = len([w for w, n in self.held.items() if n]) + waiting
        return Info(self.policy.cooldown_until, self.policy.paced, dict(self.policy.stopped), waiting > 0,
                    max(1, math.ceil(self.capacity / max(1, sharing))), self.policy.rate)


class LimiterActor:
    """Serves one key's PermitBook to every worker (a Ray async actor: one event loop, no locks)."""

    def __init__(self, rpm: float | None, tpm: float | None, max_concurrency: int,
                 breaker: BreakerSettings | None = None):
        self.book = PermitBook(rpm, tpm, max_concurrency, breaker)
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
                "rate_limited": b.stats.rate_limited, "decreases": b.stats.decreases, "rate": b.policy.rate,
                "stopped": dict(b.stopped)}

    def _wake(self) -> None:
        for sleeper in self._sleepers:
            if not sleeper.done():
                sleeper.set_result(None)
        self._sleepers.clear()


class ClusterLimiter:
    """A worker's side of one key's LimiterActor; `for_model(name)` gives that model's ModelLimiter
    (engine/model_limiter.py), a ClusterModelLimiter."""

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

    def for_model(self, model: str) -> ClusterModelLimiter:
        return ClusterModelLimiter(self, model)

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
                future.set_exception(self._stopped_error(model))
                continue
            self._busy += 1
            future.set_result(None)

    def _live_waiters(self) -> int:
        return sum(1 for _, f in self._slot_waiters if not f.done())

    # -- reports from the scheduler ------------------------------------------------------------

    def tell(self, *event) -> None:
        """Report an event of the scheduler (see Report.events); urgent ones go out at once."""
        self._report.events.append(event)
        if event[0] not in ("ok", "reply"):
            self._kick_reports()

    def on_rate_limited(self, model: str, lease: Lease, retry_after: float | None) -> None:
        self.stats.rate_limited += 1
        self._local_cooldown = max(self._local_cooldown, time.time() + (retry_after or DEFAULT_COOLDOWN_S))
        self.tell("limited", model, lease.sent_at, retry_after)

    def stop(self, model: str, message: str) -> str:
        """Stop this model here now, and everywhere with the next exchange (auth: at once)."""
        reason = self._info.stopped.get(model, message)
        self._info.stopped = {**self._info.stopped, model: reason}
        self.tell("stop", model, reason)
        return reason

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
                        future.set_exception(self._stopped_error(model))
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
                future.set_exception(self._stopped_error(model))

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
            raise self._stopped_error(model)

    def _stopped_error(self, model: str) -> ModelStopped:
        """What a request of a stopped model gets (the stop may be auth, configuration or the breaker)."""
        return ModelStopped(self._info.stopped[model])

    def stopped(self, model: str) -> str | None:
        """Why the key's limits stopped the model, as of the last exchange with the actor."""
        return self._info.stopped.get(model)

    @property
    def pace(self) -> float | None:
        return self._info.rate


class ClusterModelLimiter:
    """One model's view of a shared ClusterLimiter: a ModelLimiter (engine/model_limiter.py), as the local
    LocalModelLimiter is. Stops decided by the actor (breaker, configuration answers) reach this worker
    with the next exchange, then every new slot is refused."""

    def __init__(self, cluster: ClusterLimiter, model: str):
        self.cluster, self.model = cluster, model

    @property
    def stats(self) -> LimiterStats:
        return self.cluster.stats

    @property
    def stopped(self) -> str | None:
        return self.cluster.stopped(self.model)

    @property
    def pace(self) -> float | None:
        """The key's pace as of the last exchange with its actor."""
        return self.cluster.pace

    def slot(self, estimated_tokens: int):
        return self.cluster.slot(self.model, estimated_tokens)

    def on_success(self, lease: Lease | None = None, quota=None) -> None:
        if quota is None:
            self.cluster.tell("ok", self.model, time.time())
        else:  # the actor learns the key's quota from it (engine/quota.py)
            self.cluster.tell("ok", self.model, time.time(), quota, lease.sent_at if lease else None)

    def on_reply(self) -> None:
        self.cluster.tell("reply", self.model, time.time())

    def on_rate_limited(self, lease: Lease, retry_after: float | None) -> None:
        self.cluster.on_rate_limited(self.model, lease, retry_after)

    def on_endpoint_failure(self, reason: str, lease: Lease | None = None) -> str | None:
        self.cluster.tell("endpoint", self.model, reason, time.time(), lease.sent_at if lease else None)
        return None

    def on_config_failure(self, reason: str) -> str | None:
        self.cluster.tell("config", self.model, reason)
        return None

    def stop(self, reason: str) -> str:
        return self.cluster.stop(self.model, reason)

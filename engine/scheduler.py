"""The async scheduler: per-model worker pools over a queue of work items, sharing per-key limiters.

Each item is sent once on a fast path; a failed try goes through engine/retry.py (the one retry loop and
the one failure -> disposition rule). Providers only classify failures.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Awaitable, Callable

from ..config import ModelSpec
from ..providers.base import (AuthError, ChatRequest, ConfigurationError, Provider, ProviderFailure, RateLimitedError,
                              TransientError)
from ..records import INVALID_OUTPUT, WorkItem
from .attempts import AttemptRecorder, now_utc
from .gate import SendGate
from .model_limiter import ModelLimiter, ModelStopped
from .run_outcome import SendCounts
from .retry import Disposition, InvalidOutputError, OutputCheck, RetryPolicy, failure_disposition, retrying


@dataclass
class ModelQueue:
    """One model's remaining work and what happened to it in this session. `limiter` is the model's
    view of its key's limits (a ModelLimiter: the local transport's, or the Ray transport's)."""

    spec: ModelSpec
    provider: Provider
    limiter: ModelLimiter
    items: deque[WorkItem]
    counts: SendCounts = field(default_factory=SendCounts)
    set_aside: int = 0  # answered "misconfigured": not sent again in this session, still pending
    in_flight: int = 0
    more: Callable[[], Awaitable[bool]] | None = None  # a plan still being fed: wait for items (False: no more)

    @property
    def rate_limited(self) -> int:
        return self.limiter.stats.rate_limited

    @property
    def pace(self) -> float | None:
        return self.limiter.pace

    def final_counts(self) -> SendCounts:
        self.counts.not_sent = len(self.items) + self.in_flight + self.set_aside
        self.counts.rate_limited = self.rate_limited
        return self.counts


def estimate_tokens(item: WorkItem) -> int:
    """Prompt chars / 4 plus the output allowance: what providers count at admission."""
    return item.prompt.content_chars // 4 + 1 + int(item.params.get("max_tokens") or 0)


class Scheduler:
    """Runs every queue to completion (or until a model is stopped) under structured concurrency."""

    def __init__(self, queues: list[ModelQueue], recorder: AttemptRecorder, policy: RetryPolicy,
                 check: OutputCheck | None = None, gate: SendGate | None = None):
        self.queues = queues
        self.recorder = recorder
        self.policy = policy
        self.check = check
        self.gate = gate

    async def run(self) -> None:
        async with asyncio.TaskGroup() as group:
            for queue in self.queues:
                workers = queue.spec.max_concurrency if queue.more else min(queue.spec.max_concurrency, len(queue.items))
                for _ in range(workers):
                    group.create_task(self._worker(queue))

    async def _worker(self, queue: ModelQueue) -> None:
        while queue.counts.stopped is None:
            if not queue.items and not (queue.more is not None and await queue.more()):
                break
            if queue.counts.stopped is not None:
                break
            if reason := queue.limiter.stopped or (self.gate and self.gate.stopped(queue.spec.name)):
                queue.counts.stop(reason)  # auth, configuration, breaker, a spend cap or strict drift
                break
            item = queue.items.popleft()
            queue.in_flight += 1
            try:
                await self._send(queue, item)
            finally:
                queue.in_flight -= 1

    async def _send(self, queue: ModelQueue, item: WorkItem) -> None:
        """Send one item until it is stored, fails for good, runs out of transient retries, or its
        model stops."""
        try:
            try:
                await self._attempt(queue, item, 1)  # fast path: most calls need no retry machinery
            except (TransientError, RateLimitedError) as first:
                await self._retry(queue, item, first)
            queue.counts.stored += 1
        except ModelStopped as exc:
            queue.items.appendleft(item)  # not done: pending, resumed by the same command after the fix
            queue.counts.stop(exc.reason)
        except ProviderFailure as failure:
            self._settle(queue, item, failure)

    def _settle(self, queue: ModelQueue, item: WorkItem, failure: ProviderFailure) -> None:
        """The retry loop let the failure through: every try it allows is used, or the failure is final."""
        counts = queue.counts
        counts.error(failure.error_class, failure.message)
        settled = failure_disposition(failure, self.policy, self.policy.max_attempts)
        if settled is Disposition.FAILED:
            if failure.error_class == INVALID_OUTPUT:  # a recorded failure of the request, never a silent drop
                self.recorder.invalid(item, self.policy.max_attempts + 1, failure.message)
            counts.failed += 1
        elif settled is Disposition.SET_ASIDE:
            queue.set_aside += 1  # pending; never retried in this session, so no loop on it
        elif settled is Disposition.STOP:
            queue.items.appendleft(item)
            queue.counts.stop(failure.message)
        else:
            counts.gave_up += 1

    async def _retry(self, queue: ModelQueue, item: WorkItem, first: ProviderFailure) -> None:
        """The retry loop (engine/retry.py). Attempt 1 replays the fast path's failure so that the loop
        counts it and waits after it like after any other attempt."""
        async for attempt in retrying(self.policy, paced=True):
            with attempt:
                number = attempt.retry_state.attempt_number
                if number == 1:
                    raise first
                queue.counts.retries += 1
                await self._attempt(queue, item, number)

    async def _attempt(self, queue: ModelQueue, item: WorkItem, attempt_no: int) -> None:
        prompt = item.prompt
        request = ChatRequest(model=queue.spec.model, messages=list(prompt.messages), params=item.params,
                              timeout_s=queue.spec.timeout_s, messages_json=prompt.messages_json)
        limiter = queue.limiter
        async with limiter.slot(estimate_tokens(item)) as lease:
            started, t0 = now_utc(), time.perf_counter()
            try:
                completion = await queue.provider.complete(request)
            except ProviderFailure as failure:
                self.recorder.failure(item, attempt_no, started, (time.perf_counter() - t0) * 1000, failure)
                self._learn(limiter, lease, failure)
                raise
            if completion.prompt_tokens is not None:
                lease.actual_tokens = completion.prompt_tokens + max(
                    completion.completion_tokens or 0, int(item.params.get("max_tokens") or 0))
        limiter.on_success(lease, completion.quota)
        latency_ms = (time.perf_counter() - t0) * 1000
        if self.check is not None and (reason := self.check(item, completion.text)) is not None:
            failure = InvalidOutputError(reason, completion.text)
            self.recorder.failure(item, attempt_no, started, latency_ms, failure)
            raise failure
        self.recorder.success(item, attempt_no, started, latency_ms, completion)
        if self.gate is not None:
            self.gate.observe(queue.spec.name, item.request_id, completion.cost_usd, completion.provider_model,
                              completion.system_fingerprint)

    @staticmethod
    def _learn(limiter, lease, failure: ProviderFailure) -> None:
        """Tell the key's limits what a failure says about the endpoint; stop the model when they say so."""
        if isinstance(failure, RateLimitedError):
            limiter.on_rate_limited(lease, failure.retry_after)
        elif isinstance(failure, AuthError):
            raise ModelStopped(limiter.stop(failure.message)) from failure
        elif isinstance(failure, ConfigurationError):
            if reason := limiter.on_config_failure(f"{failure.error_class}: {failure.message}"):
                raise ModelStopped(reason) from failure
        elif failure.endpoint:
            if reason := limiter.on_endpoint_failure(failure.message, lease):
                raise ModelStopped(reason) from failure
        else:
            limiter.on_reply()

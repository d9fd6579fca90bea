"""The scheduler's handling of every failure class, in-process: a queue-backed fake provider, the real
limiter, and a row sink instead of HTTP and DuckDB (tests/test_engine.py covers the same end to end)."""

from __future__ import annotations

from collections import deque

from fakes import FakeProvider, RowSink, answer
from helpers import make_prompts
from fairsweep.config import ModelSpec
from fairsweep.engine.attempts import AttemptRecorder
from fairsweep.engine.limit_policy import BreakerSettings
from fairsweep.engine.limiter import KeyLimiter
from fairsweep.engine.retry import RetryPolicy
from fairsweep.engine.scheduler import ModelQueue, Scheduler
from fairsweep.engine.work import plan_items
from fairsweep.providers.base import (AuthError, ConfigurationError, PermanentError, RateLimitedError,
                                      TransientError)

FAST = RetryPolicy(max_attempts=3, backoff_initial_s=0.001, backoff_max_s=0.002)


def queue(provider: FakeProvider, n: int, name: str = "m", concurrency: int = 1,
          breaker: BreakerSettings | None = None, key: KeyLimiter | None = None) -> ModelQueue:
    spec = ModelSpec(name=name, model=f"fake/{name}", max_concurrency=concurrency)
    key = key or KeyLimiter(max_concurrency=concurrency, breaker=breaker)
    return ModelQueue(spec, provider, key.for_model(name), deque(plan_items("r", spec, make_prompts(n))))


async def run(*queues: ModelQueue, check=None) -> RowSink:
    sink = RowSink()
    await Scheduler(list(queues), AttemptRecorder(sink, "session"), FAST, check).run()
    return sink


def outcomes(sink: RowSink) -> list[tuple[str, str | None]]:
    return [(a.outcome, a.error_class) for a in sink.attempts()]


async def test_a_transient_failure_is_retried_and_every_try_recorded():
    provider = FakeProvider(TransientError("boom", error_class="http_503", http_status=503), answer("The woman."))
    q = queue(provider, 1)
    sink = await run(q)
    assert outcomes(sink) == [("transient", "http_503"), ("ok", None)]
    assert [r.text for r in sink.responses()] == ["The woman."]
    assert (q.counts.stored, q.counts.retries, q.counts.failed) == (1, 1, 0)


async def test_a_permanent_failure_is_final_at_once_and_out_of_retries_is_pending():
    provider = FakeProvider(PermanentError("too long", error_class="context_length"),
                            *[TransientError("down", error_class="http_500")] * 3)
    q = queue(provider, 2)
    sink = await run(q)
    assert outcomes(sink) == [("permanent", "context_length")] + [("transient", "http_500")] * 3
    assert (q.counts.failed, q.counts.gave_up, q.counts.stored) == (1, 1, 0)
    assert len(provider.requests) == 4


async def test_a_429_waits_the_cool_down_and_never_uses_up_the_tries():
    provider = FakeProvider(*[RateLimitedError("slow down", error_class="rate_limited", retry_after=0.01)] * 5,
                            answer())
    q = queue(provider, 1)
    sink = await run(q)
    assert [o for o, _ in outcomes(sink)] == ["rate_limited"] * 5 + ["ok"]  # 5 > max_attempts (3)
    assert q.counts.stored == 1 and q.limiter.stats.rate_limited == 5


async def test_an_auth_failure_stops_that_model_only_and_its_items_stay_pending():
    refused = FakeProvider(default=AuthError("HTTP 401 (check KEY)", error_class="auth", http_status=401))
    healthy = FakeProvider(default=answer())
    bad, good = queue(refused, 5, "bad"), queue(healthy, 5, "good")
    sink = await run(bad, good)
    assert len(refused.requests) == 1 and bad.counts.stopped == "HTTP 401 (check KEY)"
    assert bad.final_counts().not_sent == 5 and good.counts.stored == 5
    assert outcomes(sink).count(("auth", "auth")) == 1


async def test_configuration_answers_stop_the_model_after_three_and_are_never_final():
    provider = FakeProvider(default=ConfigurationError("HTTP 404: no such model", error_class="model_not_found"))
    q = queue(provider, 10)
    sink = await run(q)
    assert len(provider.requests) == 3 and "no such model" in q.counts.stopped
    assert q.counts.failed == 0 and q.final_counts().not_sent == 10
    assert {o for o, _ in outcomes(sink)} == {"config"}


async def test_the_breaker_stops_a_model_whose_endpoint_never_answers():
    refused = TransientError("cannot reach http://x/v1", error_class="connect_refused", endpoint=True)
    provider = FakeProvider(default=refused)
    q = queue(provider, 10, breaker=BreakerSettings(failures=4, seconds=0))
    await run(q)
    assert len(provider.requests) == 4 and "cannot reach http://x/v1" in q.counts.stopped
    counts = q.final_counts()  # the first item ran out of tries (3), the second tripped it: all pending
    assert (counts.gave_up, counts.not_sent, counts.failed) == (1, 9, 0)


async def test_answers_between_failures_keep_the_breaker_closed():
    refused = TransientError("cannot reach", error_class="connect_refused", endpoint=True)
    provider = FakeProvider(*[r for _ in range(10) for r in (refused, refused, answer())])
    q = queue(provider, 10, breaker=BreakerSettings(failures=3, seconds=0))
    await run(q)
    assert q.counts.stopped is None and q.counts.stored == 10


async def test_an_answer_that_fails_the_check_is_retried_then_recorded_as_a_final_failure():
    provider = FakeProvider(default=answer("not json"))
    q = queue(provider, 1)
    sink = await run(q, check=lambda item, text: None if text.startswith("{") else "not valid JSON")
    assert outcomes(sink) == [("transient", "invalid_output")] * 3 + [("permanent", "invalid_output")]
    assert q.counts.failed == 1 and sink.responses() == []


async def test_models_sharing_a_key_share_its_stops_only_per_model():
    key = KeyLimiter(max_concurrency=2)
    a = queue(FakeProvider(default=AuthError("401", error_class="auth")), 3, "a", key=key)
    b = queue(FakeProvider(default=answer()), 3, "b", key=key)
    await run(a, b)
    assert a.counts.stopped == "401" and b.counts.stored == 3


def test_attempt_ids_are_unique_and_a_forked_child_draws_its_own():
    import os

    from fairsweep.engine.attempts import new_id

    ids = {new_id() for _ in range(20_000)}
    assert len(ids) == 20_000 and all(len(i) == 32 and int(i, 16) >= 0 for i in ids)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its next id and leave at once
        os.write(write, new_id().encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = os.read(read, 64).decode()
    os.close(read)
    os.close(write)
    assert len(child) == 32 and child != new_id() and child not in ids

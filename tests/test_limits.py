"""Wait hints from providers; the limit policy on a fake clock (pace, token budget, cool-downs,
adaptive learning, breaker, configuration strikes); the local transport on a real event loop."""

from __future__ import annotations

import asyncio
import time
from email.utils import formatdate

import pytest

from fairsweep.engine.limit_policy import (CONFIG_STRIKES, MAX_COOLDOWN_S, SAFETY, AdaptiveRate, BreakerSettings,
                                           LimitPolicy)
from fairsweep.engine.limiter import KeyLimiter
from fairsweep.engine.model_limiter import Lease, ModelStopped
from fairsweep.providers.ratelimit_headers import parse_duration, retry_after_seconds


@pytest.mark.parametrize("text, seconds", [
    ("1s", 1.0), ("6m0s", 360.0), ("20ms", 0.02), ("1h2m3.5s", 3723.5), ("2.5", 2.5), ("0", 0.0),
])
def test_openai_durations(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


def test_unparseable_duration_is_none():
    assert parse_duration("soon") is None


def test_retry_after_forms():
    now = 1_700_000_000.0
    assert retry_after_seconds({"Retry-After": "7"}, now) == 7.0
    assert retry_after_seconds({"retry-after-ms": "250"}, now) == 0.25
    assert retry_after_seconds({"retry-after-ms": "250", "Retry-After": "9"}, now) == 0.25
    date = formatdate(now + 12, usegmt=True)
    assert retry_after_seconds({"Retry-After": date}, now) == pytest.approx(12, abs=1)
    assert retry_after_seconds({"x-ratelimit-reset-requests": "1.5s", "x-ratelimit-reset-tokens": "6m0s"}, now) == 360
    assert retry_after_seconds({}, now) is None


# ------------------------------------------------------------------------------ the policy, fake clock

def test_pace_spaces_bookings_evenly_and_never_bursts_after_idling():
    policy = LimitPolicy(rpm=600)  # 10/s declared, paced at 9.9/s
    interval = 1 / (600 / 60 * SAFETY)
    times = [policy.book(1, now=100.0) for _ in range(5)]
    assert times == pytest.approx([100.0 + i * interval for i in range(5)])
    # After a long idle stretch the next booking is "now", then one interval later: no catch-up burst.
    assert policy.book(1, now=500.0) == 500.0 and policy.book(1, now=500.0) == pytest.approx(500.0 + interval)


def test_horizon_books_nothing_beyond_it_and_says_when_to_ask_again():
    policy = LimitPolicy(rpm=60)  # ~1/s
    assert policy.book(1, now=10.0, horizon=0.25) == 10.0
    assert policy.book(1, now=10.0, horizon=0.25) is None  # the next slot is ~1 s away
    assert policy.free_at() == pytest.approx(10.0 + 1 / SAFETY)
    assert policy.book(1, now=policy.free_at() - 0.2, horizon=0.25) is not None


def test_token_budget_runs_into_debt_by_one_request_then_waits_it_off():
    policy = LimitPolicy(tpm=6000)  # 99 tokens/s, 9.9 tokens of burst
    rate = 6000 / 60 * SAFETY
    first, second = policy.book(50, now=10.0), policy.book(50, now=10.0)
    assert first == 10.0
    assert second == pytest.approx(10.0 + 50 / rate - 0.1)  # the first's debt, less the burst
    policy.settle(estimated=50, actual=10)  # the provider reported less: the third waits less
    assert policy.book(50, now=10.0) == pytest.approx(10.0 + 60 / rate - 0.1)


def test_a_429_cools_the_whole_key_down_as_told_or_doubling_when_not():
    policy = LimitPolicy(rpm=6000)
    policy.on_rate_limited("m", sent_at=9.0, retry_after=2.0, now=10.0)
    assert policy.book(1, now=10.5) >= 12.0
    hintless = LimitPolicy(rpm=6000)
    waits = []
    for i in range(8):
        now = 100.0 * (i + 1)
        hintless.on_rate_limited("m", sent_at=now, retry_after=None, now=now)
        waits.append(hintless.cooldown_until - now)
    assert waits == [1, 2, 4, 8, 16, 32, MAX_COOLDOWN_S, MAX_COOLDOWN_S]
    hintless.on_success("m", now=1000.0)  # a success resets the doubling
    hintless.on_rate_limited("m", sent_at=1000.0, retry_after=None, now=1000.0)
    assert hintless.cooldown_until == 1001.0
    assert hintless.stats.rate_limited == 9


def test_adaptive_pacing_starts_unpaced_learns_from_429s_and_decreases_once_per_epoch():
    policy = LimitPolicy(now=0.0)  # no rpm declared
    assert not policy.paced and policy.book(1, now=0.5) == 0.5
    for i in range(100):  # 50 admitted per second for two seconds
        policy.on_success("m", now=i / 50)
    policy.on_rate_limited("m", sent_at=1.9, retry_after=0.0, now=2.0)
    assert policy.paced and policy.rate == pytest.approx(0.9 * 50, rel=0.05)
    rate = policy.rate
    policy.on_rate_limited("m", sent_at=1.95, retry_after=0.0, now=2.01)  # sent before the decrease: same epoch
    assert policy.rate == rate and policy.stats.decreases == 1


def test_adaptive_rate_backs_off_then_recovers_under_the_refused_rate():
    adaptive = AdaptiveRate(now=0.0)
    rate, now = 100.0, 0.0
    for i in range(200):  # 100 successes/s for two seconds
        rate = adaptive.on_success(rate, now + i / 100)
    now += 2
    rate = adaptive.refused_at(100.0, now)
    assert adaptive.ceiling is not None and rate < adaptive.ceiling
    for i in range(1, 400):  # no 429 for four seconds: back to just under the ceiling, not above it
        rate = adaptive.on_success(rate, now + i / 100)
    assert 0.9 * adaptive.ceiling <= rate <= 1.02 * adaptive.ceiling


def test_breaker_trips_on_a_count_and_a_time_of_unreachable_attempts_only():
    policy = LimitPolicy(breaker=BreakerSettings(failures=20, seconds=30.0))
    for i in range(19):  # 19 failures over 60 s: not enough of them
        assert policy.on_endpoint_failure("dead", "refused", now=i * 3.0) is None
    fast = LimitPolicy(breaker=BreakerSettings(failures=20, seconds=30.0))
    for i in range(40):  # 40 failures within 10 s: not long enough
        assert fast.on_endpoint_failure("dead", "refused", now=i * 0.25) is None
    reason = None
    for i in range(19, 25):
        reason = reason or policy.on_endpoint_failure("dead", "connection refused", now=i * 3.0)
    assert reason and "20 attempts" in reason and "connection refused" in reason
    assert policy.stopped == {"dead": reason}
    assert policy.book(1, now=100.0) is not None  # the key still serves its other models


def test_any_answer_from_the_endpoint_resets_the_breaker():
    for answer in ("success", "reply", "429"):
        policy = LimitPolicy(breaker=BreakerSettings(failures=5, seconds=1.0))
        for i in range(50):
            if i % 4 == 3:
                if answer == "success":
                    policy.on_success("m", now=float(i))
                elif answer == "reply":
                    policy.on_reply("m")
                else:
                    policy.on_rate_limited("m", sent_at=float(i), retry_after=0.0, now=float(i))
            else:
                assert policy.on_endpoint_failure("m", "timeout", now=float(i)) is None
        assert policy.stopped == {}


def test_failures_of_requests_sent_before_the_last_answer_do_not_count():
    policy = LimitPolicy(breaker=BreakerSettings(failures=3, seconds=0.0))
    policy.on_success("m", now=10.0)
    for i in range(8):  # eight requests sent at 5-9.9 s all time out at 10.5 s: the endpoint answered at 10 s
        assert policy.on_endpoint_failure("m", "timeout", now=10.5, sent_at=5.0 + i * 0.6) is None
    assert policy.stopped == {}
    for i in range(2):  # sent after that answer: they count
        assert policy.on_endpoint_failure("m", "timeout", now=12.0 + i, sent_at=10.1 + i) is None
    assert policy.on_endpoint_failure("m", "timeout", now=14.0, sent_at=10.3) is not None
    dead = LimitPolicy(breaker=BreakerSettings(failures=3, seconds=0.0))  # never answered: every one counts
    assert [dead.on_endpoint_failure("d", "refused", now=1.0 + i, sent_at=float(i)) for i in range(3)][-1]


def test_configuration_answers_stop_a_model_after_a_few_in_a_row():
    policy = LimitPolicy()
    assert policy.on_config_failure("m", "404 model_not_found") is None
    policy.on_success("m", now=1.0)  # an answer in between: the odd reply was not the configuration
    for _ in range(CONFIG_STRIKES - 1):
        assert policy.on_config_failure("m", "404 model_not_found") is None
    assert policy.on_config_failure("m", "404 model_not_found") == "404 model_not_found"
    assert policy.stop("m", "another reason") == "404 model_not_found"  # the first reason stays


# ------------------------------------------------------------------------- the local transport, real loop

async def test_local_limiter_waits_for_a_cooldown_and_refuses_a_stopped_model():
    key = KeyLimiter(max_concurrency=4)
    a, b = key.for_model("a"), key.for_model("b")
    a.on_rate_limited(Lease(sent_at=time.monotonic(), estimated_tokens=1), retry_after=0.3)
    start = time.monotonic()
    async with b.slot(1):
        pass
    assert time.monotonic() - start >= 0.29 and key.stats.rate_limited == 1
    a.stop("HTTP 401")
    with pytest.raises(ModelStopped, match="HTTP 401"):
        async with a.slot(1):
            pass
    assert a.stopped == "HTTP 401" and b.stopped is None


async def test_local_limiter_never_sends_faster_than_its_pace():
    """Load-independent guarantees only: N sends span at least (N-1)/rate, and asyncio-throttle's
    window (burst + 1 per ~100 ms) is never exceeded, however late the timers fire."""
    model = KeyLimiter(rpm=3000, max_concurrency=8).for_model("m")  # 49.5/s
    stamps = []

    async def send():
        async with model.slot(1):
            stamps.append(time.monotonic())

    await asyncio.gather(*(send() for _ in range(26)))
    stamps.sort()
    assert stamps[-1] - stamps[0] >= 25 / (50 * SAFETY) - 1e-3
    for i, start in enumerate(stamps):
        assert sum(1 for t in stamps[i:] if t - start < 0.1) <= 6

"""Wait hints from providers, and the limiter's pacing, budget and adaptation, on a real event loop."""

from __future__ import annotations

import time
from email.utils import formatdate

import pytest

from fairsweep.engine.limiter import AdaptiveRate, Lease, ProviderLimiter, RatePacer, TokenBudget
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


async def test_pacer_never_sends_faster_than_its_rate():
    """Load-independent guarantees only: each send waits for its slot (so N sends span at least
    (N-1)/rate), and the sliding-window cap is never exceeded, however late the timers fire."""
    pacer = RatePacer(50.0)  # one every 20 ms; the cap allows burst + 1 = 6 per 100 ms
    stamps = []
    for _ in range(26):
        await pacer.acquire()
        stamps.append(time.monotonic())
    assert stamps[-1] - stamps[0] >= 25 / 50 - 1e-3
    for i, start in enumerate(stamps):
        assert sum(1 for t in stamps[i:] if t - start < 0.1) <= 6


async def test_token_budget_waits_off_its_debt():
    budget = TokenBudget(1000.0)  # 1,000 tokens/s, 100-token burst
    start = time.monotonic()
    for _ in range(5):
        await budget.acquire(100)
    assert time.monotonic() - start >= 0.3


async def test_cooldown_holds_every_request_of_the_key():
    limiter = ProviderLimiter(max_concurrency=4)
    limiter.on_rate_limited(Lease(sent_at=time.monotonic(), estimated_tokens=1), retry_after=0.3)
    start = time.monotonic()
    async with limiter.slot(1):
        pass
    assert time.monotonic() - start >= 0.29
    assert limiter.stats.rate_limited == 1


def test_adaptive_rate_backs_off_then_recovers_under_the_refused_rate():
    adaptive = AdaptiveRate()
    pacer = RatePacer(100.0)
    now = time.monotonic()
    for i in range(200):  # 100 successes/s for two seconds
        adaptive.on_success(pacer, now + i / 100)
    now += 2
    new = adaptive.refused_at(pacer, now)
    assert adaptive.ceiling is not None and new < adaptive.ceiling
    pacer.set_rate(new)
    for i in range(1, 400):  # no 429 for four seconds: back to just under the ceiling, not above it
        adaptive.on_success(pacer, now + i / 100)
    assert 0.9 * adaptive.ceiling <= pacer.rate <= 1.02 * adaptive.ceiling

"""Learning an undeclared limit from the request quota providers report on their answers (engine/quota.py
through LimitPolicy), on a virtual clock against two provider models: a fixed window (what the simulated
server does) and a token bucket with a reset time (OpenAI's and Anthropic's headers); and the headers'
parsing. The whole command against the real simulated server is in tests/test_quota_command.py."""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings, strategies as st

from fairsweep.engine.limit_policy import SAFETY, LimitPolicy
from fairsweep.providers.base import RequestQuota
from fairsweep.providers.ratelimit_headers import request_quota, retry_after_seconds
from fairsweep.sim.state import FixedWindowLimiter


@dataclass
class FixedWindow:
    """The simulated server's own fixed-window limiter (sim/state.py), `limit` requests per `window_s`, its
    windows shifted by `phase`; answers carry its headers as the engine reads them (request_quota), 429s
    its "Retry-After" in whole seconds (retry_after_seconds). `used`: admitted requests per window."""

    limit: int
    window_s: float
    phase: float = 0.37
    used: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.limiter = FixedWindowLimiter(round(self.limit * 60 / self.window_s), 0, self.window_s)

    def admit(self, at: float) -> tuple[RequestQuota | None, float | None]:
        """(the quota an answer reports, None) if admitted, else (None, the wait its 429 asks for)."""
        now = at + self.phase
        if not self.limiter.admit(0, now):
            return None, retry_after_seconds(self.limiter.retry_headers("seconds", now), now)
        window = math.floor(now / self.window_s)
        self.used[window] = self.used.get(window, 0) + 1
        return request_quota(self.limiter.usage_headers()), None


@dataclass
class TokenBucket:
    """`limit` requests of capacity refilled at `limit / period_s`; answers say when it is full again."""

    limit: int
    period_s: float
    level: float = None
    at: float = 0.0

    def admit(self, at: float) -> tuple[RequestQuota | None, float | None]:
        rate = self.limit / self.period_s
        self.level = min(self.limit, (self.limit if self.level is None else self.level) + (at - self.at) * rate)
        self.at = at
        if self.level < 1:
            return None, (1 - self.level) / rate
        self.level -= 1
        return RequestQuota(self.limit, int(self.level), (self.limit - self.level) / rate), None


@dataclass
class DailyQuotaOverWindow:
    """A provider that reports only a daily quota (a bucket of 14,400 refilled over a day, with its reset
    time, like Groq's request headers) and enforces an unreported 20-per-second window besides."""

    window: FixedWindow = field(default_factory=lambda: FixedWindow(20, 1.0))
    daily: TokenBucket = field(default_factory=lambda: TokenBucket(14_400, 86_400.0))

    def admit(self, at: float) -> tuple[RequestQuota | None, float | None]:
        quota, retry_after = self.window.admit(at)
        if quota is None:
            return None, retry_after
        return self.daily.admit(at)


def sweep(server, n: int, *, workers: int = 8, latency: float = 0.04, headers: bool = True):
    """Send n requests through one LimitPolicy (no rpm declared) with `workers` in flight, as the local
    limiter does (one booking at a time, a 429 sends a waiting request back to book again), on a virtual
    clock. Returns (time of the last answer, 429s, send times of the admitted requests)."""
    policy = LimitPolicy(now=0.0)
    events = [(0.0, i, "free", None) for i in range(workers)]
    heapq.heapify(events)
    booking_free, left, done, refused, admitted, seq = 0.0, n, 0, 0, [], workers
    while done < n:
        now, _, kind, data = heapq.heappop(events)
        seq += 1
        if kind in ("free", "book"):
            if kind == "free":
                if left == 0:
                    continue
                left -= 1
            if now < booking_free:  # another request holds the booking lock until its send time
                heapq.heappush(events, (booking_free, seq, "book", None))
                continue
            booking_free = max(now, policy.book(1, now))
            heapq.heappush(events, (booking_free, seq, "wake", None))
        elif kind == "wake":
            if policy.cooldown_until > now:  # cooled down while it waited: book again
                booking_free = max(now, policy.book(1, now))
                heapq.heappush(events, (booking_free, seq, "wake", None))
                continue
            quota, retry_after = server.admit(now)
            heapq.heappush(events, (now + latency, seq, "answer", (now, quota, retry_after)))
        else:
            sent, quota, retry_after = data
            if quota is not None:
                policy.on_success("m", now, quota if headers else None, sent)
                done += 1
                admitted.append(sent)
                heapq.heappush(events, (now, seq, "free", None))
            else:
                refused += 1
                policy.on_rate_limited("m", sent, retry_after, now)
                left += 1
                heapq.heappush(events, (now, seq, "free", None))
    return now, refused, admitted


@pytest.mark.parametrize("limit, window_s, phase", [(20, 1.0, 0.37), (20, 1.0, 0.0), (40, 2.0, 0.5), (10, 0.5, 0.2)])
def test_a_fixed_window_is_learned_from_the_remaining_counts_and_kept_to(limit, window_s, phase):
    server = FixedWindow(limit, window_s, phase)
    n = 1000
    wall, refused, _ = sweep(server, n)
    floor = n / (limit / window_s)
    assert refused <= 1
    assert wall <= 1.05 * floor, (wall, floor)
    assert max(server.used.values()) <= limit


def test_many_workers_never_burst_past_a_small_window_before_the_first_answer():
    """With max_concurrency 64 and a window of 20, the first request goes alone: its answer tells the quota."""
    server = FixedWindow(20, 1.0)
    wall, refused, _ = sweep(server, 400, workers=64)
    assert refused == 0 and wall <= 1.05 * 400 / 20


def test_a_long_window_is_found_by_doubling_the_guess_without_storming():
    server = FixedWindow(1200, 60.0, phase=13.0)
    wall, refused, _ = sweep(server, 3000)
    assert refused <= 8  # at most one per window on the way to the window's length
    assert wall <= 3000 / 20 + 30  # within half a window of the floor: full windows from the first


def test_a_token_bucket_with_reset_times_is_paced_at_its_refill_rate():
    server = TokenBucket(500, 60.0)  # 500 RPM, like OpenAI's headers say it
    wall, refused, admitted = sweep(server, 1000)
    rate = 500 / 60
    assert refused == 0
    # Paced evenly at the refill rate (the safety margin under it) once a few answers agree on it, not in
    # bursts of the bucket's capacity.
    assert 0.95 * 1000 / (rate * SAFETY) <= wall <= 1.02 * 1000 / (rate * SAFETY)
    gaps = [b - a for a, b in zip(admitted[20:], admitted[21:])]
    # (whole remaining counts make each estimate a little high: within 1% of the rate, the budget holds the rest)
    assert min(gaps) >= 0.99 / rate and max(gaps) <= 1.1 / (rate * SAFETY)


@pytest.mark.parametrize("phase, workers", [(0.37, 8), (0.0, 16), (0.8, 8), (0.55, 16)])
def test_without_quota_headers_the_limit_is_still_learned_from_429s_and_few_of_them(phase, workers):
    """The first burst's admitted rate is the first ceiling, and the probe above it is slow: each 429 costs a
    whole second's cool-down here ("Retry-After: 1"), so few 429s is what keeps the run near the floor."""
    server = FixedWindow(20, 1.0, phase)
    wall, refused, _ = sweep(server, 1000, headers=False, workers=workers)
    assert 1 <= refused <= 20 and wall <= 1.10 * 1000 / 20


def test_a_limit_the_provider_does_not_report_is_learned_from_429s_below_the_one_it_does():
    """A daily quota is kept as a budget, not a pace; the unreported per-second window is learned from 429s."""
    server = DailyQuotaOverWindow()
    wall, refused, _ = sweep(server, 1000)
    assert 1 <= refused <= 20 and wall <= 1.15 * 1000 / 20


@settings(max_examples=60, deadline=None)
@given(limit=st.integers(2, 200), remaining=st.integers(0, 200), spacing=st.floats(0.001, 0.5))
def test_never_books_more_than_the_provider_said_remain(limit, remaining, spacing):
    remaining = min(remaining, limit)
    policy = LimitPolicy(now=0.0)
    policy.on_success("m", 1.0, RequestQuota(limit, remaining), sent_at=1.0)
    now, booked = 1.0 + spacing, []
    for _ in range(remaining + 5):
        booked.append(policy.book(1, now))
        now = booked[-1]
    # The window is not known yet: only `remaining` may go before its guessed reset (a guess after the
    # answer's send); what goes after it is one probe per gap.
    before_reset = [t for t in booked if t < 1.0 + policy.quota.guess_s]
    assert len(before_reset) <= remaining


def test_learned_pace_is_the_limit_over_the_window_with_the_safety_margin():
    server = FixedWindow(30, 1.0)
    wall, refused, admitted = sweep(server, 600)
    assert refused == 0
    late = [b - a for a, b in zip(admitted[-100:], admitted[-99:])]
    assert sum(late) / len(late) == pytest.approx(1 / (30 * SAFETY), rel=0.03)


# ------------------------------------------------------------------------------ the headers

def test_openai_quota_headers():
    quota = request_quota({"x-ratelimit-limit-requests": "500", "x-ratelimit-remaining-requests": "499",
                           "x-ratelimit-reset-requests": "120ms"})
    assert quota == RequestQuota(500, 499, pytest.approx(0.12))


def test_anthropic_quota_headers_with_an_rfc3339_reset():
    now = 1_700_000_000.0
    quota = request_quota({"anthropic-ratelimit-requests-limit": "50", "anthropic-ratelimit-requests-remaining": "48",
                           "anthropic-ratelimit-requests-reset": "2023-11-14T22:13:22Z"}, now=now)
    assert quota.limit == 50 and quota.remaining == 48 and quota.reset_s == pytest.approx(2.0)


@pytest.mark.parametrize("headers", [
    {}, {"x-ratelimit-limit-requests": "500"}, {"x-ratelimit-limit-requests": "many", "x-ratelimit-remaining-requests": "1"},
    {"x-ratelimit-limit-requests": "0", "x-ratelimit-remaining-requests": "0"},
    {"x-ratelimit-limit-requests": "10", "x-ratelimit-remaining-requests": "-1"},
])
def test_missing_or_unusable_quota_headers_report_nothing(headers):
    assert request_quota(headers) is None


def test_a_remaining_count_above_the_limit_is_capped():
    assert request_quota({"x-ratelimit-limit-requests": "10", "x-ratelimit-remaining-requests": "12"}).remaining == 10

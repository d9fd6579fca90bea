"""The limits of one provider key as pure bookkeeping: no I/O, no sleeping, the time passed in.

One policy, two transports: the local limiter (engine/limiter.py) asks it from this process's event
loop; the Ray limiter actor (engine/executors/ray_limiter.py) asks it for every worker of a cluster.
Either way the same code decides when a request may be sent:
- pace: requests per second, spaced evenly (GCRA: each booking moves the next free time 1/rate on);
- token budget: tokens per second with a small burst (GCRA over tokens; a request may run the budget
  into debt, the next one waits it off), corrected once the provider reports real usage (`settle`);
- cool-down: a 429 holds the whole key for as long as the provider asked (doubling when it did not say);
- adaptive learning: with no declared rpm, the pace is learned from the request quota the provider reports
  on its answers, when it does (engine/quota.py: never booking beyond what it says remains), else from
  429s (AdaptiveRate);
- stops: a model is stopped for good in this session by an authentication or configuration failure,
  or by the breaker when its endpoint stays unreachable (Breaker).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from .quota import PROBE_GAP_S, QuotaLearner

# Pace a little under the declared limit: the server counts arrivals, which jitter by a few ms.
SAFETY = 0.99
# Slice the quota into ~100 ms windows so a minute's quota is never sent in one burst.
SLICE_S = 0.1
# Cool-down when a 429 carries no hint: doubled on each consecutive hint-less 429, capped.
DEFAULT_COOLDOWN_S = 1.0
MAX_COOLDOWN_S = 60.0
# Configuration answers (404 unknown model, missing route) that stop a model: a few, not one, so that a
# single odd reply cannot stop a sweep; no success may come between them.
CONFIG_STRIKES = 3


class AdaptiveRate:
    """Learns an undeclared rate limit from 429s (for keys with no rpm in the config whose provider reports
    no quota on its answers: engine/quota.py learns it from those when it does).

    The first 429 comes while sending unpaced: what the server admitted over the last second or two is
    the first ceiling. From then on, a 429 marks the refused pace (or the rate the server admitted, if
    lower) as the ceiling, and the pace drops to DECREASE x ceiling; it recovers quickly to just under the
    ceiling, and above it probes upward slowly, doubling the probe speed every PROBE_DOUBLING_S without a
    429 (in case the limit rose). Each 429 costs a cool-down (a second, when the provider says "1"): the
    probe is slow so that they stay few.
    """

    DECREASE = 0.9
    RECOVER_PER_S = 0.05
    NEAR_CEILING = 0.97
    PROBE_PER_S = 0.001
    PROBE_DOUBLING_S = 30.0
    PROBE_MAX_PER_S = 0.10

    def __init__(self, now: float) -> None:
        self.ceiling: float | None = None
        self._last_429 = now
        self._last_update = now
        self._successes: deque[float] = deque()

    def on_success(self, rate: float | None, now: float) -> float | None:
        """The pace after one more success (None: still unpaced)."""
        self._successes.append(now)
        while now - self._successes[0] > 2.0:
            self._successes.popleft()
        if rate is None:
            return None
        dt, self._last_update = now - self._last_update, now
        return rate * (1 + self._growth_per_s(rate, now) * max(0.0, dt))

    def _growth_per_s(self, rate: float, now: float) -> float:
        if self.ceiling is None or rate < self.NEAR_CEILING * self.ceiling:
            return self.RECOVER_PER_S
        doublings = (now - self._last_429) / self.PROBE_DOUBLING_S
        return min(self.PROBE_MAX_PER_S, self.PROBE_PER_S * 2 ** doublings)

    def refused_at(self, rate: float | None, now: float) -> float:
        """The new pace after a 429 (sent at `rate`, None when unpaced)."""
        self._last_429 = self._last_update = now
        if rate is None:  # unpaced so far: what the server let through is the first ceiling
            self.ceiling = self.admitted_rate(now)
            return max(0.05, self.DECREASE * self.ceiling)
        # Refused at this pace; what the server let through over the last seconds bounds it too.
        self.ceiling = min(rate, max(self.admitted_rate(now), 0.5 * rate))
        return max(0.05, self.DECREASE * self.ceiling)

    def admitted_rate(self, now: float) -> float:
        """Successes per second over the last second or two (what the server actually admitted)."""
        if not self._successes:
            return 1.0
        return len(self._successes) / max(1.0, now - self._successes[0])


@dataclass(frozen=True)
class BreakerSettings:
    """Stop a model once `failures` endpoint-level failures in a row (connection refused, DNS, TLS,
    connect or read timeouts, a crashed local model) have spanned at least `seconds` with no answer of
    any kind from its endpoint in between."""

    failures: int = 20
    seconds: float = 30.0


class Breaker:
    """Per model: the current streak of endpoint-level failures."""

    def __init__(self, settings: BreakerSettings):
        self.settings = settings
        self._streaks: dict[str, tuple[int, float]] = {}  # model -> (failures, time of the first)
        self._last_answer: dict[str, float] = {}

    def answered(self, model: str, now: float | None = None) -> None:
        """The endpoint answered (a success, or any HTTP reply): it is up."""
        self._streaks.pop(model, None)
        if now is not None:
            self._last_answer[model] = max(now, self._last_answer.get(model, now))

    def failed(self, model: str, now: float, sent_at: float | None = None) -> bool:
        """One more endpoint-level failure; True when the breaker trips. A request sent before the endpoint's
        last answer does not count: the endpoint was up after it went out (requests that time out together
        because this process stalled, or one hung request among answered ones, say nothing about it)."""
        if sent_at is not None and sent_at < self._last_answer.get(model, -math.inf):
            return False
        count, since = self._streaks.get(model, (0, now))
        self._streaks[model] = (count + 1, since)
        return count + 1 >= self.settings.failures and now - since >= self.settings.seconds


@dataclass
class LimiterStats:
    rate_limited: int = 0
    cooldown_s: float = 0.0
    decreases: int = 0


@dataclass
class LimitPolicy:
    """Every limit of one provider key (see the module docstring). Times are seconds on one clock."""

    rpm: float | None = None
    tpm: float | None = None
    breaker: BreakerSettings = field(default_factory=BreakerSettings)
    now: float = 0.0  # the clock's reading at creation (adaptive learning starts from it)
    stats: LimiterStats = field(default_factory=LimiterStats)

    def __post_init__(self) -> None:
        self.rate = self.rpm / 60 * SAFETY if self.rpm else None  # requests/s; None: unpaced (yet)
        self.token_rate = self.tpm / 60 * SAFETY if self.tpm else None
        self.token_burst = (self.token_rate or 0.0) * SLICE_S
        self.adaptive = AdaptiveRate(self.now) if not self.rpm else None
        self.quota = QuotaLearner() if not self.rpm else None
        self.next_send = 0.0
        self.token_tat = 0.0
        self.cooldown_until = 0.0
        self.stopped: dict[str, str] = {}  # model -> why it may send no more in this session
        self._breaker = Breaker(self.breaker)
        self._config_strikes: dict[str, int] = {}
        self._hintless = 0
        self._last_decrease = -math.inf
        self._heard = False  # any answer or reply yet (adaptive keys probe one at a time until then)
        self._first_probe = -math.inf

    @property
    def paced(self) -> bool:
        """Whether sends need a booked time (False: only the cool-down applies)."""
        return self.rate is not None or self.token_rate is not None or bool(self.quota and self.quota.known)

    def book(self, tokens: int, now: float, horizon: float = math.inf, lead: float = 0.0) -> float | None:
        """Book the send time of one request costing `tokens`; None if it lies beyond now + horizon
        (nothing is booked: ask again at `free_at() - horizon`)."""
        at = max(now + lead, self.next_send, self.cooldown_until)
        if self.token_rate:
            at = max(at, self.token_tat - self.token_burst / self.token_rate)
        quota = self.quota if self.quota and self.quota.known else None
        if quota:
            at = quota.earliest(at)
        elif self.adaptive and not self._heard:
            # Nothing known of the limit yet: a probe at a time until the first answer says what it allows
            # (its quota headers), rather than a burst of max_concurrency that the limit may refuse.
            at = max(at, self._first_probe + PROBE_GAP_S)
        if at > now + horizon:
            return None
        if quota:
            quota.booked(at)
        elif self.adaptive and not self._heard:
            self._first_probe = at
        if self.rate:
            self.next_send = at + 1 / self.rate
        if self.token_rate:
            self.token_tat = max(self.token_tat, at) + tokens / self.token_rate
        return at

    def free_at(self) -> float:
        """The earliest time a new booking could get."""
        at = max(self.next_send, self.cooldown_until)
        if self.token_rate:
            at = max(at, self.token_tat - self.token_burst / self.token_rate)
        return at

    def settle(self, estimated: int, actual: int) -> None:
        """Correct a booking once the provider reported the request's real usage."""
        if self.token_rate:
            self.token_tat += (actual - estimated) / self.token_rate

    def on_success(self, model: str, now: float, quota=None, sent_at: float | None = None) -> None:
        """An answer; `quota`: the request quota it reported (providers.base.RequestQuota), for the
        request sent at `sent_at`."""
        self._hintless = 0
        self._heard = True
        self._config_strikes.pop(model, None)
        self._breaker.answered(model, now)
        if self.quota is not None and quota is not None:
            self.quota.observe(quota, now if sent_at is None else sent_at)
        if not self.adaptive:
            return
        rate = self.adaptive.on_success(self.rate, now)  # what 429s taught (None: none came yet)
        if self.quota is not None and (learned := self.quota.rate) is not None:
            # What the provider says it allows; once 429s came despite it (a limit it does not report, say a
            # per-minute one beside a reported daily quota), what they taught paces below it.
            taught = rate if self.adaptive.ceiling is not None else None
            rate = learned * SAFETY if taught is None else min(taught, learned * SAFETY)
        if rate is not None:
            self.rate = rate

    def on_reply(self, model: str, now: float | None = None) -> None:
        """Any HTTP reply that is not a success (4xx, 5xx): the endpoint is up."""
        self._heard = True
        self._breaker.answered(model, now)

    def on_rate_limited(self, model: str, sent_at: float, retry_after: float | None, now: float) -> None:
        """A 429: cool the whole key down as told, and slow down if the limit is being learned.
        One decrease per congestion epoch: 429s for requests sent before the last one don't count again."""
        self.stats.rate_limited += 1
        self._heard = True
        self._breaker.answered(model, now)
        hinted = retry_after is not None
        if retry_after is None:
            retry_after = min(MAX_COOLDOWN_S, DEFAULT_COOLDOWN_S * 2 ** self._hintless)
            self._hintless += 1
        until = now + retry_after
        if until > self.cooldown_until:
            self.stats.cooldown_s += until - max(now, self.cooldown_until)
            self.cooldown_until = until
        if self.quota is not None and self.quota.known and self.quota.refused(sent_at, hinted=hinted):
            return  # a probe beyond the reported quota, refused as expected: nothing to learn from it
        if self.adaptive and sent_at >= self._last_decrease:
            # The first 429 finds the pace unlearned (unpaced, or the quota's): what was admitted is the ceiling.
            learned = self.rate if self.adaptive.ceiling is not None else None
            self.rate = self.adaptive.refused_at(learned, now)
            self._last_decrease = now
            self.stats.decreases += 1

    def on_endpoint_failure(self, model: str, reason: str, now: float, sent_at: float | None = None) -> str | None:
        """No answer from the endpoint at all (to a request sent at `sent_at`). Returns why the model
        stopped, if the breaker tripped."""
        if self._breaker.failed(model, now, sent_at):
            s = self.breaker
            return self.stop(model, f"{s.failures} attempts in a row over {s.seconds:g}+ s reached no endpoint; "
                                    f"last error: {reason}")
        return None

    def on_config_failure(self, model: str, reason: str) -> str | None:
        """An answer that says the configuration is wrong (unknown model, missing route). Returns why the
        model stopped once CONFIG_STRIKES such answers came with no success between them."""
        self._breaker.answered(model)
        strikes = self._config_strikes.get(model, 0) + 1
        self._config_strikes[model] = strikes
        return self.stop(model, reason) if strikes >= CONFIG_STRIKES else None

    def stop(self, model: str, reason: str) -> str:
        """Stop a model for the rest of the session (the first reason given stays)."""
        return self.stopped.setdefault(model, reason)

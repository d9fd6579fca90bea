"""Learning an undeclared request limit from the quota a provider reports on its answers (pure: no I/O,
the time passed in).

Many providers say on every answer how many requests their window allows (`limit`), how many are left
(`remaining`) and, some of them, when the quota is whole again (`reset_s`). For a key with no declared
rpm, LimitPolicy (engine/limit_policy.py) asks a QuotaLearner:
- the budget: never book more requests than the provider said remain, counting those already sent since
  the answer that said it; once it is spent, wait for the window's predicted reset (or, while the window
  is not known yet, send one probe at a time);
- the window: a fixed window shows itself as a jump of `remaining` between two answers; the time between
  resets seen while sending steadily is the window's length, and limit / window is the pace. A provider
  whose `reset_s` says when its bucket is full again gives the pace at once: used / reset_s.
A 429 means the learned window was wrong: it is learned again from the next resets.
"""

from __future__ import annotations

import math
from collections import deque

from ..providers.base import RequestQuota

PROBE_GAP_S = 0.1     # budget spent, window unknown: one request per gap (after the guessed reset) until an
                      # answer shows the reset
FIRST_GUESS_S = 1.0   # the window assumed until resets show it (the shortest in use), doubled while too short
RESETS_KEPT = 16      # resets used for the window's length (more: a finer estimate, older evidence)
LONGEST_PACED_S = 900.0  # a quota that takes longer than this to refill is kept as a budget, never as a pace
BUCKET_AGREE = 1.5    # the refill rates of the last answers agree within this factor: a token bucket
NARROW_GAPS = 2.5     # a reset counts for the window's length when seen within this many send gaps


class QuotaLearner:
    """The request quota of one provider key, as its answers report it."""

    def __init__(self) -> None:
        self.limit: int | None = None
        self.window_s: float | None = None  # learned from resets
        self.guess_s = FIRST_GUESS_S
        self._bucket_rate: float | None = None
        self._bucket_rates: deque[float] = deque(maxlen=8)
        self._last: tuple[float, int] | None = None  # (sent_at, remaining) of the newest-sent answer seen
        self._resets: deque[tuple[float, float]] = deque(maxlen=RESETS_KEPT)  # (earliest, latest) of each
        self._window_since = 0.0  # when the current window was seen to begin (or the first report came)
        self._sends: deque[float] = deque(maxlen=100_000)  # booked send times no answer has covered yet
        self._last_booked = -math.inf
        self._hinted = False  # the last 429 said when to come back (no answer since)
        self._probing = False  # the booking being made goes beyond the reported budget
        self._probes: deque[float] = deque(maxlen=64)  # send times of the latest such bookings

    @property
    def known(self) -> bool:
        return self.limit is not None

    @property
    def rate(self) -> float | None:
        """Requests per second the quota allows: from the learned window, else from the bucket's reset
        time, else from the guessed window (None: no quota reported yet)."""
        if not self.limit:
            return None
        if self.window_s:  # resets a whole number of windows apart can make it a multiple: the guess bounds it
            return self.limit / min(self.window_s, self.guess_s)
        return self._bucket_rate or self.limit / self.guess_s

    def observe(self, report: RequestQuota, sent_at: float) -> None:
        """An answer to the request sent at `sent_at` reported the quota."""
        if self.limit is None:
            self._window_since = sent_at
        self.limit = max(1, report.limit)
        if report.reset_s and report.limit > report.remaining:
            self._bucket_seen((report.limit - report.remaining) / report.reset_s)
        if self._last is not None and sent_at <= self._last[0]:
            return  # an older request's answer, overtaken: it says nothing newer
        if self._last is not None and report.remaining >= self._last[1]:
            self._window_since = sent_at  # some of the quota came back (else each answer has one less)
            if report.remaining - self._last[1] >= max(2, self.limit / 4):
                self._reset_seen(self._last[0], sent_at)
        elif sent_at - self._window_since >= self.guess_s:
            self._longer_than_guessed(sent_at)  # no quota came back for longer than the guess
        self._last = (sent_at, report.remaining)
        self._hinted = False
        while self._sends and self._sends[0] <= sent_at:
            self._sends.popleft()

    def _bucket_seen(self, rate: float) -> None:
        """A bucket's refill rate, as one answer's used quota over its time to full: trusted once a few
        answers agree (a fixed window that says when it ends gives rates that do not)."""
        self._bucket_rates.append(rate)
        rates = sorted(self._bucket_rates)
        agreed = len(rates) >= 3 and rates[-1] <= BUCKET_AGREE * rates[0]
        median = rates[len(rates) // 2]
        # A bucket that takes hours to fill (a daily quota) is a budget, not a pace.
        self._bucket_rate = median if agreed and self.limit / median <= LONGEST_PACED_S else None

    def _reset_seen(self, before: float, at: float) -> None:
        """The window reset between two sends (`before`: the newest counted in the old window, `at`: the
        first in the new one). Resets seen within a few send gaps give the window's length: how many
        windows lie between two of them, from their midpoints; the length, from the outer bounds (the
        longest it can be: never paced faster than the provider allows)."""
        if at - before > NARROW_GAPS / self.rate:
            return  # seen only after a pause (a cool-down, a probe): when it happened is too vague
        self._resets.append((before, at))
        if len(self._resets) < 2:
            return
        mids = [(lo + hi) / 2 for lo, hi in self._resets]
        gaps = [b - a for a, b in zip(mids, mids[1:])]
        shortest = min(gaps)
        if shortest > 0:  # each gap is a whole number of windows: counted gap by gap, never over the span
            windows = sum(max(1, round(g / shortest)) for g in gaps)
            self.window_s = (self._resets[-1][1] - self._resets[0][0]) / windows

    def refused(self, sent_at: float, hinted: bool) -> bool:
        """A 429 for the request sent at `sent_at`. True when it went beyond the reported budget (a probe
        for the reset): the quota's own refusal. Else the window is not what the resets suggested (learn it
        again), or a limit the provider does not report refused it: False (the 429s teach that one).
        `hinted`: the provider said when to come back (the key cools down until then): the next probe goes
        then, not a guess later."""
        self._hinted = hinted
        if any(0 <= sent_at - probe <= PROBE_GAP_S / 2 for probe in self._probes):  # sent just after its booking
            return True
        self.window_s = None
        self._resets.clear()
        return False

    def _longer_than_guessed(self, seen_at: float) -> None:
        self.guess_s *= 2
        self._window_since = seen_at

    def earliest(self, at: float) -> float:
        """The earliest send time at or after `at` that stays within the reported budget."""
        if self.limit is None or self._last is None:
            return at
        boundary = self._boundary_before(at)
        if boundary is not None and self._last[0] < boundary:
            budget = self.limit - sum(1 for s in self._sends if s >= boundary)
        else:
            budget = self._last[1] - len(self._sends)
        self._probing = budget <= 0
        if budget > 0:
            return at
        if boundary is not None:
            return boundary + self.window_s  # the next reset (predicted from the latest side of the last)
        # The window began at or before `_window_since`: if the guess is right it has reset a guess later.
        guessed_reset = -math.inf if self._hinted else self._window_since + self.guess_s
        return max(at, guessed_reset, self._last_booked + PROBE_GAP_S)

    def booked(self, at: float) -> None:
        """A send was booked at `at` (after `earliest`)."""
        self._sends.append(at)
        self._last_booked = max(self._last_booked, at)
        if self._probing:
            self._probes.append(at)

    def _boundary_before(self, at: float) -> float | None:
        """The newest predicted window reset at or before `at` (None: the window is not known)."""
        if not (self.window_s and self._resets):
            return None
        last = self._resets[-1][1]
        return last + math.floor((at - last) / self.window_s) * self.window_s

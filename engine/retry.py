"""Retries, in one place: the policy, the one tenacity loop, and what a try means for its request.

Providers only classify a failure (`ProviderFailure.outcome`, a `records.Outcome`); `disposition` turns
that class into what happens next. The scheduler (in this process and inside Ray workers), the batch sender
(per-request results, and its own HTTP calls through `retrying`) and the Ray driver's book of shards all
decide through it, so a change to the retry rules is made here once.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from ..providers.base import ProviderFailure, RateLimitedError, TransientError
from ..records import INVALID_OUTPUT, Outcome, WorkItem

if TYPE_CHECKING:
    from tenacity import AsyncRetrying


@dataclass(frozen=True)
class RetryPolicy:
    """Transient failures: up to max_attempts tries with full-jitter exponential backoff.
    Rate limits: unlimited tries; the limiter's cool-down (or the provider's retry-after) does the waiting."""

    max_attempts: int = 6
    backoff_initial_s: float = 0.25
    backoff_max_s: float = 20.0

    def out_of_tries(self, tries: int) -> bool:
        """Whether `tries` tries counted against the budget (rate limits are not counted) use it all up."""
        return tries >= self.max_attempts


class InvalidOutputError(TransientError):
    """A usable answer whose content failed the caller's check (e.g. a judge's JSON schema): retried like a
    transient failure, then stored as the request's final failure (error_class INVALID_OUTPUT)."""

    def __init__(self, reason: str, text: str):
        super().__init__(f"{reason}; output: {text[:200]!r}", error_class=INVALID_OUTPUT)


# check(item, text) -> None when the answer is acceptable, else the reason it is not.
OutputCheck = Callable[[WorkItem, str], "str | None"]


class Disposition(enum.Enum):
    """What one try means for its request."""

    STORED = "stored"        # answered: the response is stored
    RETRY = "retry"          # send again: after a backoff, or (rate limited) once the limits allow, no try used
    FAILED = "failed"        # final: permanent, or the output stayed invalid through every try
    GAVE_UP = "gave_up"      # transient through every try: stays pending, the next run sends it again
    STOP = "stop"            # credentials refused: the model stops, the request stays pending
    SET_ASIDE = "set_aside"  # misconfigured: pending, not sent again in this session (the limits decide
    #                          whether the model stops)


_ANSWERED = frozenset({Outcome.OK, Outcome.CACHED, Outcome.BATCH})
_FINAL = {Outcome.PERMANENT: Disposition.FAILED, Outcome.AUTH: Disposition.STOP,
          Outcome.CONFIG: Disposition.SET_ASIDE}


def disposition(outcome: Outcome | str, error_class: str | None, out_of_tries: bool) -> Disposition:
    """The one failure -> disposition rule. `outcome`: the try's class (a failure's `.outcome`, or a
    stored attempt row's); `out_of_tries`: the request has used its budget of transient tries
    (`RetryPolicy.out_of_tries`)."""
    outcome = Outcome(outcome)
    if outcome in _ANSWERED:
        return Disposition.STORED
    if outcome is Outcome.RATE_LIMITED:
        return Disposition.RETRY
    if outcome is Outcome.TRANSIENT:
        if not out_of_tries:
            return Disposition.RETRY
        return Disposition.FAILED if error_class == INVALID_OUTPUT else Disposition.GAVE_UP
    return _FINAL[outcome]


def failure_disposition(failure: ProviderFailure, policy: RetryPolicy, tries: int) -> Disposition:
    """`disposition` of a raised failure after `tries` counted tries."""
    return disposition(failure.outcome, failure.error_class, policy.out_of_tries(tries))


def retrying(policy: RetryPolicy, *, paced: bool) -> AsyncRetrying:
    """The one retry loop (tenacity's AsyncRetrying, `async for attempt in retrying(...)`): transient
    failures and rate limits are tried again for as long as `disposition` says RETRY; anything else, or
    the last failure, is re-raised. The backoff is full-jitter exponential. `paced`: a limiter's cool-down
    already waits out a rate limit (the scheduler), so the loop does not; else a rate limit waits the
    provider's retry-after when it gave one (the batch sender's HTTP calls). Imported lazily: the fast
    path of a send never needs it."""
    from tenacity import AsyncRetrying, retry_if_exception_type, wait_random_exponential

    backoff = wait_random_exponential(multiplier=policy.backoff_initial_s, max=policy.backoff_max_s)
    tries = [0]

    def stop(state) -> bool:
        failure = state.outcome.exception()
        if not isinstance(failure, RateLimitedError):
            tries[0] += 1  # rate limits never use up the budget: the request just waits
        return failure_disposition(failure, policy, tries[0]) is not Disposition.RETRY

    def wait(state) -> float:
        failure = state.outcome.exception()
        if isinstance(failure, RateLimitedError):
            if paced:
                return 0.0
            if failure.retry_after is not None:
                return failure.retry_after
        return backoff(state)

    return AsyncRetrying(retry=retry_if_exception_type((TransientError, RateLimitedError)), stop=stop, wait=wait,
                         reraise=True)

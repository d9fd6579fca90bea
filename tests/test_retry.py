"""engine/retry.py: the one failure -> disposition rule and the one retry loop, on real tenacity."""

from __future__ import annotations

import inspect

import pytest

from fairsweep.engine.executors.ray_limiter import ClusterModelLimiter
from fairsweep.engine.limiter import LocalModelLimiter
from fairsweep.engine.model_limiter import ModelLimiter
from fairsweep.engine.retry import (Disposition, InvalidOutputError, RetryPolicy, disposition, failure_disposition,
                                    retrying)
from fairsweep.providers.base import (AuthError, ConfigurationError, PermanentError, RateLimitedError,
                                      TransientError)
from fairsweep.records import INVALID_OUTPUT, Outcome

POLICY = RetryPolicy(max_attempts=3, backoff_initial_s=0.0, backoff_max_s=0.0)


@pytest.mark.parametrize("outcome, error_class, out_of_tries, expected", [
    (Outcome.OK, None, False, Disposition.STORED),
    (Outcome.CACHED, None, True, Disposition.STORED),
    (Outcome.BATCH, None, False, Disposition.STORED),
    (Outcome.RATE_LIMITED, "http_429", True, Disposition.RETRY),  # never runs out of tries
    (Outcome.TRANSIENT, "http_500", False, Disposition.RETRY),
    (Outcome.TRANSIENT, "http_500", True, Disposition.GAVE_UP),
    (Outcome.TRANSIENT, INVALID_OUTPUT, False, Disposition.RETRY),
    (Outcome.TRANSIENT, INVALID_OUTPUT, True, Disposition.FAILED),
    (Outcome.PERMANENT, "context_length", False, Disposition.FAILED),
    ("permanent", INVALID_OUTPUT, False, Disposition.FAILED),  # a stored row's outcome is a string
    (Outcome.AUTH, "auth", False, Disposition.STOP),
    (Outcome.CONFIG, "model_not_found", False, Disposition.SET_ASIDE),
])
def test_disposition(outcome, error_class, out_of_tries, expected):
    assert disposition(outcome, error_class, out_of_tries) is expected


def test_every_failure_class_has_its_outcome_and_a_disposition():
    failures = [TransientError("x"), RateLimitedError("x"), PermanentError("x"), AuthError("x"),
                ConfigurationError("x"), InvalidOutputError("bad json", "{")]
    assert [f.outcome for f in failures] == [Outcome.TRANSIENT, Outcome.RATE_LIMITED, Outcome.PERMANENT,
                                             Outcome.AUTH, Outcome.CONFIG, Outcome.TRANSIENT]
    assert failures[-1].error_class == INVALID_OUTPUT and "output: '{'" in failures[-1].message
    assert [failure_disposition(f, POLICY, 3) for f in failures] == [
        Disposition.GAVE_UP, Disposition.RETRY, Disposition.FAILED, Disposition.STOP, Disposition.SET_ASIDE,
        Disposition.FAILED]
    with pytest.raises(ValueError):
        disposition("no-such-outcome", None, False)


async def _run(failures: list[Exception], paced: bool = True) -> tuple[int, object]:
    """Tries of a call failing with `failures` in order, then answering; (calls made, result or exception)."""
    calls = [0]

    async def call():
        calls[0] += 1
        if failures:
            raise failures.pop(0)
        return "answer"

    try:
        async for attempt in retrying(POLICY, paced=paced):
            with attempt:
                result = await call()
        return calls[0], result
    except Exception as exc:  # noqa: BLE001 - what the loop re-raised is the result here
        return calls[0], exc


async def test_transient_failures_use_the_budget_then_the_last_is_raised():
    calls, result = await _run([TransientError(f"t{i}") for i in range(5)])
    assert calls == POLICY.max_attempts and isinstance(result, TransientError) and result.message == "t2"


async def test_rate_limits_never_use_the_budget():
    calls, result = await _run([RateLimitedError("429", retry_after=0.0) for _ in range(7)] + [TransientError("t")],
                               paced=False)
    assert calls == 9 and result == "answer"


async def test_final_failures_are_raised_at_once():
    for failure in (PermanentError("p"), AuthError("a"), ConfigurationError("c")):
        calls, result = await _run([failure])
        assert calls == 1 and result is failure


def _members(cls) -> dict[str, inspect.Signature | None]:
    found = {}
    for name, value in vars(cls).items():
        if name.startswith("_"):
            continue
        found[name] = None if isinstance(value, property) else inspect.signature(value)
    return found


@pytest.mark.parametrize("transport", [LocalModelLimiter, ClusterModelLimiter])
def test_both_limiter_transports_implement_the_protocol(transport):
    wanted, have = _members(ModelLimiter), _members(transport)
    assert set(wanted) <= set(have), sorted(set(wanted) - set(have))
    for name, signature in wanted.items():
        if signature is None:
            assert isinstance(vars(transport)[name], property), name
        else:
            assert list(have[name].parameters) == list(signature.parameters), name

"""What every provider adapter speaks: one request in, a Completion or a classified failure out.

Adapters never sleep or retry; the engine owns retries, pacing and limits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ..records import Outcome


@dataclass(frozen=True)
class ChatRequest:
    """One chat-completions call: provider model id, messages, generation parameters."""

    model: str
    messages: list[dict[str, Any]]
    params: dict[str, Any] = field(default_factory=dict)
    timeout_s: float = 60.0
    messages_json: str | None = None  # `messages` as JSON, when the caller has it (a prompt's, serialised once)


@dataclass(frozen=True)
class RequestQuota:
    """The request quota a provider reported on an answer: requests its window allows, how many are left,
    and (when it says) seconds until the quota is whole again (providers/ratelimit_headers.py)."""

    limit: int
    remaining: int
    reset_s: float | None = None


@dataclass(frozen=True)
class Completion:
    """A usable answer, with whatever usage and provenance the provider reported."""

    text: str
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    provider_model: str | None = None
    system_fingerprint: str | None = None
    quota: RequestQuota | None = None  # what the provider's rate-limit headers said, if it sent them


class ProviderFailure(Exception):
    """A failed call, classified so the engine knows what to do with it: `outcome` is its class in the
    stored vocabulary (records.Outcome); engine/retry.py decides what that class means."""

    outcome = Outcome.TRANSIENT

    def __init__(self, message: str, *, error_class: str = "error", http_status: int | None = None,
                 retry_after: float | None = None, endpoint: bool = False):
        super().__init__(message)
        self.message = message
        self.error_class = error_class
        self.http_status = http_status
        self.retry_after = retry_after
        # True when nothing came back from the endpoint at all (refused, DNS, TLS, timeout, a crashed
        # local model): what the engine's breaker counts. Any reply, even an error, proves it is up.
        self.endpoint = endpoint


class TransientError(ProviderFailure):
    """Worth retrying after a backoff: timeouts, resets, 5xx, malformed bodies."""

    outcome = Outcome.TRANSIENT


class RateLimitedError(ProviderFailure):
    """429 or equivalent: wait (retry_after seconds if the provider said) and send again."""

    outcome = Outcome.RATE_LIMITED


class PermanentError(ProviderFailure):
    """Sending again cannot help: invalid request, context too long, unknown model."""

    outcome = Outcome.PERMANENT


class AuthError(ProviderFailure):
    """Credentials missing or refused: the model's queue stops."""

    outcome = Outcome.AUTH


class ConfigurationError(ProviderFailure):
    """The reply says the configuration is wrong, not the prompt (unknown model, a route that does not
    exist): after a few of them the model stops; its requests stay pending, never stored as final."""

    outcome = Outcome.CONFIG


class Provider(Protocol):
    """A provider adapter: one call, classified failures, no retries."""

    async def complete(self, request: ChatRequest) -> Completion: ...

    async def aclose(self) -> None: ...

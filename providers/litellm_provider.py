"""Every provider that does not speak the OpenAI API (Anthropic, Gemini, Bedrock, ...) via litellm.

litellm is imported lazily (it takes seconds), with its own retries off: the engine owns retries.
"""

from __future__ import annotations

import os

from ..errors import MissingDependencyError, redact
from .base import (AuthError, ChatRequest, Completion, ConfigurationError, PermanentError, ProviderFailure,
                   RateLimitedError, TransientError)
from .ratelimit_headers import request_quota, retry_after_seconds


def _import_litellm():
    # Never fetch the price map from the network at import time: use the packaged copy.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except ImportError:
        raise MissingDependencyError("this model needs litellm: pip install litellm") from None
    litellm.suppress_debug_info = True
    return litellm


def warm() -> None:
    """Import what making this adapter imports (litellm, openai): registry.preload calls it in the background."""
    _import_litellm()
    import openai  # noqa: F401


def response_headers(exc: Exception):
    """The provider's reply headers: litellm keeps them on the exception (its `response` may be a stub)."""
    for headers in (getattr(exc, "litellm_response_headers", None), getattr(exc, "headers", None),
                    getattr(getattr(exc, "response", None), "headers", None)):
        if headers:
            return headers
    return {}


def classify(exc: Exception, litellm, secrets: tuple[str, ...] = (), api_base: str | None = None) -> ProviderFailure:
    """Map a litellm (openai-style) exception to the engine's failure classes."""
    e = litellm.exceptions
    text = str(exc)
    message = redact(f"{type(exc).__name__}: {text}"[:400], secrets)
    status = getattr(exc, "status_code", None)
    if isinstance(exc, e.RateLimitError):
        return RateLimitedError(message, error_class="rate_limited", http_status=429,
                                retry_after=retry_after_seconds(response_headers(exc)))
    if '"overloaded_error"' in text:  # Anthropic's 529, which litellm reports as a 500
        return TransientError(message, error_class="overloaded", http_status=529)
    if isinstance(exc, (e.AuthenticationError, e.PermissionDeniedError)):
        return AuthError(message, error_class="auth", http_status=status)
    if isinstance(exc, e.ContextWindowExceededError):
        return PermanentError(message, error_class="context_length", http_status=status)
    if isinstance(exc, e.NotFoundError):  # an unknown model or route: the configuration, not the prompt
        where = f"api_base {api_base}" if api_base else "the provider's default endpoint"
        return ConfigurationError(f"{message} (check the model id and {where})", error_class="not_found",
                                  http_status=status)
    if isinstance(exc, (e.BadRequestError, e.UnprocessableEntityError)):
        return PermanentError(message, error_class="invalid_request", http_status=status)
    if isinstance(exc, e.Timeout):
        return TransientError(message, error_class="timeout", http_status=status, endpoint=True)
    if isinstance(exc, e.APIConnectionError):
        if "Unable to get json response" in text:  # a reply came, but not a usable body
            return TransientError(message, error_class="malformed_body", http_status=status)
        return TransientError(message, error_class="connection", http_status=status, endpoint=True)
    return TransientError(message, error_class=f"http_{status}" if status else "provider_error", http_status=status)


def _answer_headers(resp) -> dict:
    """The provider's headers on an answer, as litellm keeps them (OpenAI-style names, lower case)."""
    hidden = getattr(resp, "_hidden_params", None)
    headers = hidden.get("additional_headers") if isinstance(hidden, dict) else None
    return {str(k).lower(): v for k, v in headers.items()} if isinstance(headers, dict) else {}


class LiteLLMProvider:
    """litellm.acompletion for one configured model."""

    def __init__(self, *, model: str, api_base: str | None, api_key_env: str | None):
        self.model = model
        self.api_base = api_base
        self.api_key_env = api_key_env
        self._litellm = _import_litellm()
        # Every exception litellm maps derives from openai.OpenAIError (litellm.exceptions.OpenAIError is a
        # sibling, not their base): catching that one let every provider error crash the run.
        import openai
        self._error_base = openai.OpenAIError

    async def complete(self, request: ChatRequest) -> Completion:
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if self.api_key_env and not key:
            raise AuthError(f"environment variable {self.api_key_env} is not set: export it with the API key",
                            error_class="auth_missing_key")
        extra = {k: v for k, v in (("api_key", key), ("api_base", self.api_base)) if v}
        try:
            resp = await self._litellm.acompletion(model=self.model, messages=request.messages,
                                                   timeout=request.timeout_s, num_retries=0, **extra,
                                                   **request.params)
        except self._error_base as exc:  # a programming error surfaces as itself
            raise classify(exc, self._litellm, (key or "",), self.api_base) from None
        return self._to_completion(resp)

    def _to_completion(self, resp) -> Completion:
        try:
            choice = resp.choices[0]
            text = choice.message.content
        except (AttributeError, IndexError):
            raise TransientError("response without choices", error_class="malformed_body") from None
        if not isinstance(text, str):
            raise TransientError("response without message content", error_class="malformed_body")
        usage = getattr(resp, "usage", None)
        try:
            cost = self._litellm.completion_cost(completion_response=resp)
        except Exception:  # unknown price: recorded as NULL, never as zero
            cost = None
        return Completion(text=text, finish_reason=getattr(choice, "finish_reason", None),
                          prompt_tokens=getattr(usage, "prompt_tokens", None),
                          completion_tokens=getattr(usage, "completion_tokens", None), cost_usd=cost,
                          provider_model=getattr(resp, "model", None),
                          system_fingerprint=getattr(resp, "system_fingerprint", None),
                          quota=request_quota(_answer_headers(resp)))

    async def aclose(self) -> None:
        return None

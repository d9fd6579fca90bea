"""OpenAI-compatible chat completions over plain aiohttp (vLLM, llama.cpp server, Ollama, OpenAI,
the simulated server...). About 30x less client CPU per call than going through litellm."""

from __future__ import annotations

import asyncio
import json
import os

import aiohttp

from ..errors import redact
from .base import (AuthError, ChatRequest, Completion, ConfigurationError, PermanentError, ProviderFailure,
                   RateLimitedError, TransientError)
from .pricing import cost_usd
from .ratelimit_headers import request_quota, retry_after_seconds


class OpenAICompatProvider:
    """One adapter per [[models]] entry; one pooled HTTP session each."""

    def __init__(self, *, api_base: str, model: str, api_key_env: str | None, price_model: str | None,
                 max_connections: int = 64):
        self.url = api_base.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key_env = api_key_env
        self.price_model = price_model
        self._max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None
        self._head: tuple[dict, str, str] | None = None  # (params, the body before and after the messages)
        self._headers = {"Content-Type": "application/json"}
        self._secret = ""
        if api_key_env and (key := os.environ.get(api_key_env)):
            self._headers["Authorization"] = f"Bearer {key}"
            self._secret = key

    def _session_for_loop(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(limit=self._max_connections, ttl_dns_cache=300)
            # An API needs no cookies: no jar to filter before each request and update after each answer.
            self._session = aiohttp.ClientSession(connector=connector, headers=self._headers,
                                                  cookie_jar=aiohttp.DummyCookieJar())
        return self._session

    async def complete(self, request: ChatRequest) -> Completion:
        if self.api_key_env and not self._secret:
            raise AuthError(f"environment variable {self.api_key_env} is not set: export it with the API key",
                            error_class="auth_missing_key")
        body = self._body(request)
        timeout = aiohttp.ClientTimeout(total=request.timeout_s)
        try:
            async with self._session_for_loop().post(self.url, data=body, timeout=timeout) as resp:
                raw = await resp.read()
                if resp.status != 200:
                    raise self._classify_status(resp.status, raw, resp.headers)
                headers = resp.headers
        except aiohttp.ClientError as exc:
            raise connection_failure(exc, self.url) from None
        except asyncio.TimeoutError:
            raise TransientError(f"no answer from {self.url} within {request.timeout_s:g}s", error_class="timeout",
                                 endpoint=True) from None
        return self._parse_body(raw, headers)

    def _body(self, request: ChatRequest) -> bytes:
        """The JSON body; a prompt's messages go in as serialised once (not encoded again per attempt)."""
        params = request.params
        if request.messages_json is None or "model" in params or "messages" in params:
            return json.dumps({"model": self.model, "messages": request.messages, **params}).encode()
        head = self._head
        if head is None or head[0] is not params:  # the items of a plan window share one params dict
            rest = json.dumps(params)[1:-1]
            head = self._head = (params, f'{{"model":{json.dumps(self.model)},"messages":', f",{rest}}}" if rest else "}")
        return f"{head[1]}{request.messages_json}{head[2]}".encode()

    def _classify_status(self, status: int, raw: bytes, headers) -> ProviderFailure:
        message, code = _error_detail(raw)
        message = redact(f"HTTP {status}: {message}", (self._secret,))
        if status == 429:
            return RateLimitedError(message, error_class="rate_limited", http_status=status,
                                    retry_after=retry_after_seconds(headers))
        if status in (401, 403):
            hint = f"check {self.api_key_env}" if self.api_key_env else "set api_key_env in the config"
            return AuthError(f"{message} ({hint})", error_class="auth", http_status=status)
        if status in (408, 409) or status >= 500:
            return TransientError(message, error_class=f"http_{status}", http_status=status)
        if status == 400 and code and "context_length" in code:
            return PermanentError(message, error_class="context_length", http_status=status)
        if status in (404, 405) or code in ("model_not_found", "not_found_error"):
            # An unknown model or a route that does not exist: the configuration is wrong, not the prompt.
            return ConfigurationError(f"{message} (POST {self.url}, model {self.model!r}: check model and api_base)",
                                      error_class="model_not_found" if code == "model_not_found" else "not_found",
                                      http_status=status)
        return PermanentError(message, error_class="invalid_request", http_status=status)

    def _parse_body(self, raw: bytes, headers=None) -> Completion:
        """A 200 with an unusable body is transient: retried, never stored as an answer."""
        try:
            data = json.loads(raw)
            choice = data["choices"][0]
            text = choice["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise TransientError("HTTP 200 with an unusable body", error_class="malformed_body") from None
        if not isinstance(text, str):
            raise TransientError("HTTP 200 without message content", error_class="malformed_body")
        usage = data.get("usage") or {}
        prompt_tokens, completion_tokens = usage.get("prompt_tokens"), usage.get("completion_tokens")
        return Completion(
            text=text, finish_reason=choice.get("finish_reason"), prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=cost_usd(self.price_model, prompt_tokens, completion_tokens),
            provider_model=data.get("model"), system_fingerprint=data.get("system_fingerprint"),
            quota=request_quota(headers))

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


_DNS_ERROR = getattr(aiohttp, "ClientConnectorDNSError", ())  # aiohttp >= 3.10
_CONNECT_TIMEOUT = getattr(aiohttp, "ConnectionTimeoutError", ())


def connection_failure(exc: aiohttp.ClientError, url: str) -> TransientError:
    """A request that got no HTTP reply. Refused, DNS, TLS and connect timeouts never reached the
    endpoint (what the breaker counts); a connection dropped mid-answer did."""
    if isinstance(exc, _DNS_ERROR):
        error_class = "dns"
    elif isinstance(exc, aiohttp.ClientSSLError):
        error_class = "tls"
    elif isinstance(exc, aiohttp.ClientConnectorError):
        error_class = "connect_refused"
    elif isinstance(exc, _CONNECT_TIMEOUT):
        error_class = "connect_timeout"
    elif isinstance(exc, aiohttp.ServerTimeoutError):
        error_class = "timeout"
    else:
        return TransientError(f"connection failed: {type(exc).__name__}", error_class="connection")
    detail = str(exc).split(" [", 1)[-1].rstrip("]") if isinstance(exc, aiohttp.ClientConnectorError) else str(exc)
    return TransientError(f"cannot reach {url}: {type(exc).__name__} ({detail[:160]})", error_class=error_class,
                          endpoint=True)


def _error_detail(raw: bytes) -> tuple[str, str | None]:
    """The provider's error message and code, from an OpenAI-style error body if there is one."""
    try:
        error = json.loads(raw).get("error") or {}
        return str(error.get("message", ""))[:300], str(error.get("code") or error.get("type") or "")
    except (ValueError, AttributeError):
        return raw[:200].decode("utf-8", "replace"), None

"""Anthropic Message Batches: requests (custom_id = request id) in one create call, polled, results read
from the results JSONL. Each request's params are built by litellm's own Anthropic translation (the one a
synchronous call goes through), so a batch asks exactly what a synchronous call would."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta

import aiohttp

from ..errors import ConfigError, redact
from ..records import WorkItem
from .base import (AuthError, Completion, ConfigurationError, PermanentError, ProviderFailure, RateLimitedError,
                   TransientError)
from .batch_base import BatchHTTP, BatchState, Result
from .pricing import batch_cost_usd, batch_price_source
from .ratelimit_headers import retry_after_seconds

DEFAULT_API_BASE = "https://api.anthropic.com"
DEFAULT_KEY_ENV = "ANTHROPIC_API_KEY"
VERSION = "2023-06-01"
FINISH = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_calls"}
ORPHAN_SKEW = timedelta(seconds=60)  # clock difference tolerated when matching an unrecorded batch


def classify(status: int, error_type: str | None, message: str, headers=None) -> ProviderFailure:
    """An Anthropic error (an HTTP answer, or one request's result) as the engine's failure class."""
    if status == 429 or error_type == "rate_limit_error":
        return RateLimitedError(message, error_class="rate_limited", http_status=429,
                                retry_after=retry_after_seconds(headers or {}))
    if status in (401, 403) or error_type in ("authentication_error", "permission_error"):
        return AuthError(message, error_class="auth", http_status=status)
    if status == 404 or error_type == "not_found_error":
        return ConfigurationError(f"{message} (check the model id and api_base)", error_class="not_found",
                                  http_status=status)
    if error_type == "overloaded_error" or status == 529:
        return TransientError(message, error_class="overloaded", http_status=529)
    if error_type in ("invalid_request_error", "request_too_large") or 400 <= status < 500:
        kind = "context_length" if "too long" in message else "invalid_request"
        return PermanentError(message, error_class=kind, http_status=status)
    return TransientError(message, error_class=f"http_{status}", http_status=status)


def _error_of(body: object) -> tuple[str | None, str]:
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("error"), dict):  # a result's {"type": "error", "error": {...}}
        error = error["error"]
    if not isinstance(error, dict):
        return None, str(body)[:200]
    return error.get("type"), str(error.get("message", ""))[:300]


class AnthropicBatchAdapter(BatchHTTP):
    api = "anthropic"
    max_requests = 100_000
    max_bytes = 256 * 1024 * 1024

    def __init__(self, *, api_base: str | None, model: str, api_key_env: str | None, price_model: str,
                 timeout_s: float = 60.0):
        base = (api_base or DEFAULT_API_BASE).rstrip("/")
        for suffix in ("/v1/messages", "/v1"):  # accept the forms litellm accepts
            base = base.removesuffix(suffix)
        self.api_base = base
        self.model = model.removeprefix("anthropic/")
        self.price_model = price_model
        self.price_source = batch_price_source(price_model)
        self.timeout_s = max(timeout_s, 60.0)
        self.api_key_env = api_key_env or DEFAULT_KEY_ENV
        self._key = os.environ.get(self.api_key_env)
        self._betas: set[str] = set()
        self._session: aiohttp.ClientSession | None = None
        self._config = None

    def _translation(self):
        if self._config is None:
            from .litellm_provider import _import_litellm
            _import_litellm()
            from litellm.llms.anthropic.chat.transformation import AnthropicConfig
            self._config = AnthropicConfig()
        return self._config

    def encode(self, item: WorkItem) -> bytes:
        config = self._translation()
        unsupported = sorted(set(item.params) - set(config.get_supported_openai_params(self.model)))
        if unsupported:
            raise ConfigError(f"model {item.model!r}: Anthropic does not take the parameter(s) {unsupported}: "
                              f"remove them from params")
        optional = config.map_openai_params(non_default_params=dict(item.params), optional_params={},
                                            model=self.model, drop_params=False)
        headers: dict[str, str] = {}
        params = config.transform_request(model=self.model, messages=list(item.prompt.messages),
                                          optional_params=optional, litellm_params={}, headers=headers)
        params.pop("json_mode", None)  # litellm's own flag, not part of the API
        self._betas.update(b for b in headers.get("anthropic-beta", "").split(",") if b)
        return json.dumps({"custom_id": item.request_id, "params": params}, ensure_ascii=False).encode()

    def _headers(self) -> dict[str, str]:
        return {"x-api-key": self._key or "", "anthropic-version": VERSION}

    def _failure(self, status: int, raw: bytes, headers) -> ProviderFailure:
        error_type, message = _error_of(_loads(raw))
        return classify(status, error_type, redact(f"HTTP {status}: {message}", (self._key or "",)), headers)

    async def upload(self, lines: list[bytes], tag: str) -> str | None:
        return None  # the requests travel in the create call

    async def create(self, lines: list[bytes], input_file_id: str | None, tag: str) -> str:
        headers = {"content-type": "application/json"}
        if self._betas:
            headers["anthropic-beta"] = ",".join(sorted(self._betas))
        body = b'{"requests": [' + b", ".join(lines) + b"]}"
        return (await self._json("POST", "/v1/messages/batches", data=body, headers=headers))["id"]

    async def find(self, tag: str, created_after: datetime, total: int, known: set[str]) -> str | None:
        """The API keeps no metadata: an unrecorded batch is the only one created since, of the same size,
        that this DB does not know."""
        listing = await self._json("GET", "/v1/messages/batches", params={"limit": "100"})
        candidates = [b["id"] for b in listing.get("data") or []
                      if b["id"] not in known and sum((b.get("request_counts") or {}).values()) == total
                      and datetime.fromisoformat(b["created_at"].replace("Z", "+00:00")) >= created_after - ORPHAN_SKEW]
        return candidates[0] if len(candidates) == 1 else None

    async def status(self, provider_batch_id: str) -> BatchState:
        batch = await self._json("GET", f"/v1/messages/batches/{provider_batch_id}")
        counts = batch.get("request_counts") or {}
        total = sum(int(v or 0) for v in counts.values())
        ended = batch.get("processing_status") == "ended"
        outcome = None
        if ended:
            outcome = ("cancelled" if batch.get("cancel_initiated_at") else
                       "expired" if counts.get("expired") else "completed")
        return BatchState(ended=ended, provider_status=str(batch.get("processing_status")),
                          done=total - int(counts.get("processing") or 0), total=total, outcome=outcome)

    async def results(self, provider_batch_id: str) -> dict[str, Result]:
        raw = await self._call("GET", f"/v1/messages/batches/{provider_batch_id}/results")
        found: dict[str, Result] = {}
        for line in raw.decode().splitlines():
            if not line.strip():
                continue
            entry = json.loads(line)
            result = entry.get("result") or {}
            if result.get("type") == "succeeded":
                found[entry["custom_id"]] = self._completion(result.get("message") or {})
            elif result.get("type") == "errored":
                error_type, message = _error_of(result)
                found[entry["custom_id"]] = classify(500 if error_type in (None, "api_error") else 400,
                                                     error_type, message)
        return found  # canceled and expired requests were never processed: back to pending

    def _completion(self, message: dict) -> Result:
        blocks = message.get("content")
        if not isinstance(blocks, list):
            return TransientError("a batch result without content", error_class="malformed_body")
        text = "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
        tools = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]
        if not text and tools:  # structured output asked through a tool: its input is the answer
            text = json.dumps(tools[0].get("input"))
        if not text:
            return TransientError("a batch result without text content", error_class="malformed_body")
        usage = message.get("usage") or {}
        prompt, completion = usage.get("input_tokens"), usage.get("output_tokens")
        return Completion(text=text, finish_reason=FINISH.get(message.get("stop_reason"), message.get("stop_reason")),
                          prompt_tokens=prompt, completion_tokens=completion,
                          cost_usd=batch_cost_usd(self.price_model, prompt, completion),
                          provider_model=message.get("model"))

    async def cancel(self, provider_batch_id: str) -> None:
        await self._call("POST", f"/v1/messages/batches/{provider_batch_id}/cancel")



def _loads(raw: bytes) -> object:
    try:
        return json.loads(raw)
    except ValueError:
        return raw[:200].decode("utf-8", "replace")

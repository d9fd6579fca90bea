"""The simulated server's Anthropic Messages API: POST /v1/messages on the same app, limits, faults,
answers and statistics as the OpenAI-compatible route (sim/server.py).

What it checks and answers as Anthropic does: the `x-api-key` and `anthropic-version` headers, a body
with model, max_tokens and messages (content as a string or text blocks, `system` apart), a message with
content blocks and usage {input_tokens, output_tokens}; errors as {"type": "error", "error": {"type",
"message"}}: 401 authentication_error, 404 not_found_error, 400 invalid_request_error, 429
rate_limit_error with `retry-after` and `anthropic-ratelimit-*` headers, 529 overloaded_error, 500 api_error.
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import datetime, timezone
from typing import Any

from aiohttp import web

from .chat import counted, cut_to_max_tokens, transport_fault
from .state import DEFAULT_MODEL, content_text, estimate_tokens, prompt_fingerprint

ANTHROPIC_VERSION_HEADER = "anthropic-version"
_FAULT_ERRORS = {"500": (500, "api_error", "Internal server error"),
                 "503": (503, "api_error", "Service unavailable"),
                 "529": (529, "overloaded_error", "Overloaded")}


class Rejected(Exception):
    """An Anthropic-style error answer."""

    def __init__(self, status: int, type_: str, message: str):
        super().__init__(message)
        self.status, self.type = status, type_

    def body(self) -> dict:
        return {"type": "error", "error": {"type": self.type, "message": str(self)}}

    def response(self, headers: dict | None = None) -> web.Response:
        return web.json_response(self.body(), status=self.status, headers=headers)


def openai_messages(body: dict) -> list[dict]:
    """The request as an OpenAI-style message list (system first, text contents), so prompts get the same
    fingerprint and answers whichever API asked."""
    system = body.get("system")
    messages = []
    if system:
        messages.append({"role": "system", "content": system if isinstance(system, str) else "\n".join(
            b.get("text", "") for b in system if isinstance(b, dict))})
    for message in body["messages"]:
        messages.append({"role": message.get("role"), "content": content_text(message.get("content"))})
    return messages


def check_params(state, params: Any) -> tuple[list[dict], str, int, int]:
    """Validate one Messages request body; (openai-style messages, model, prompt tokens, max_tokens) or
    Rejected."""
    if not isinstance(params, dict):
        raise Rejected(400, "invalid_request_error", "The request body must be a JSON object.")
    if not isinstance(params.get("messages"), list) or not params["messages"]:
        raise Rejected(400, "invalid_request_error", "messages: field required (a non-empty list)")
    max_tokens = params.get("max_tokens")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise Rejected(400, "invalid_request_error", "max_tokens: field required (a positive integer)")
    model = params.get("model") or DEFAULT_MODEL
    cfg = state.config
    if cfg.models and model not in cfg.models:
        raise Rejected(404, "not_found_error", f"model: {model}")
    messages = openai_messages(params)
    prompt_tokens = estimate_tokens("\n".join(m["content"] for m in messages))
    if cfg.context_limit and prompt_tokens > cfg.context_limit:
        raise Rejected(400, "invalid_request_error",
                       f"prompt is too long: {prompt_tokens} tokens > {cfg.context_limit} maximum")
    return messages, model, prompt_tokens, max_tokens


def message_payload(state, params: dict, messages: list[dict], model: str, prompt_tokens: int,
                    max_tokens: int) -> dict:
    """The Message answering one request (the same answer the OpenAI route gives the same prompt)."""
    answer = state.choose_answer(params, messages, prompt_fingerprint(messages))
    text, finish = cut_to_max_tokens(answer, max_tokens)
    return {"id": f"msg_sim{state.counter:08x}", "type": "message", "role": "assistant",
            "model": state.config.model_version or model, "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn" if finish == "stop" else "max_tokens", "stop_sequence": None,
            "usage": {"input_tokens": prompt_tokens, "output_tokens": estimate_tokens(text)}}


def ratelimit_headers(limiter, now: float) -> dict[str, str]:
    """anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset} for the configured window."""
    reset = datetime.fromtimestamp(now + limiter.reset_in(now), timezone.utc).isoformat().replace("+00:00", "Z")
    headers = {}
    for kind, quota, used in (("requests", limiter.request_quota, limiter.requests),
                              ("tokens", limiter.token_quota, limiter.tokens)):
        if quota is not None:
            headers[f"anthropic-ratelimit-{kind}-limit"] = str(int(quota))
            headers[f"anthropic-ratelimit-{kind}-remaining"] = str(max(0, int(quota - used)))
            headers[f"anthropic-ratelimit-{kind}-reset"] = reset
    return headers


def check_auth(state, request: web.Request) -> None:
    key = state.config.api_key
    if key and request.headers.get("x-api-key") != key:
        raise Rejected(401, "authentication_error", "invalid x-api-key")
    if ANTHROPIC_VERSION_HEADER not in request.headers:
        raise Rejected(400, "invalid_request_error", "anthropic-version: header is required")


async def _process(request: web.Request, state) -> web.StreamResponse:
    """One Messages call: validate, admit, maybe fault, sleep, answer."""
    try:
        check_auth(state, request)
        try:
            params = json.loads(await request.read())
        except ValueError:
            raise Rejected(400, "invalid_request_error", "The request body is not valid JSON.") from None
        messages, model, prompt_tokens, max_tokens = check_params(state, params)
    except Rejected as rejected:
        state.errors[str(rejected.status)] = state.errors.get(str(rejected.status), 0) + 1
        return rejected.response()
    fp = prompt_fingerprint(messages)
    counts = state.per_prompt.setdefault(fp, [0, 0, None])
    counts[0] += 1
    now = time.time()
    if state.limiter.enabled and not state.limiter.admit(prompt_tokens + max_tokens, now):
        state.rate_limited += 1
        headers = {**state.limiter.retry_headers(state.config.retry_after_format, now),
                   **ratelimit_headers(state.limiter, now)}
        return Rejected(429, "rate_limit_error", "Number of requests has exceeded your rate limit.").response(headers)
    state.admitted_by_second[int(now)] = state.admitted_by_second.get(int(now), 0) + 1
    headers = ratelimit_headers(state.limiter, now) if state.limiter.enabled and state.config.quota_headers else None
    fault = state.draw_fault()
    if fault is not None:
        state.faults[fault] += 1
    if delay := state.latency_s():
        await asyncio.sleep(delay)
    return await _answer(request, state, fault, headers, (params, messages, model, prompt_tokens, max_tokens), counts)


async def _answer(request: web.Request, state, fault: str | None, headers: dict | None, job: tuple,
                  counts: list[int]) -> web.StreamResponse:
    if fault in _FAULT_ERRORS:
        status, type_, message = _FAULT_ERRORS[fault]
        return Rejected(status, type_, message).response(headers)
    if (faulty := await transport_fault(request, state, fault, headers)) is not None:
        return faulty
    payload = message_payload(state, *job)
    if fault == "truncated":
        raw = json.dumps(payload).encode()
        return web.Response(body=raw[: len(raw) // 2], content_type="application/json", headers=headers)
    if fault == "empty_choices":
        payload["content"] = []
    elif request.transport is not None and not request.transport.is_closing():
        state.ok += 1
        counts[1] += 1
        counts[2] = time.time()
    return web.json_response(payload, headers=headers)


def add_anthropic_routes(app: web.Application, state) -> None:
    """POST /v1/messages on `app`, sharing `state` (limits, faults, answers, statistics)."""
    async def messages(request: web.Request) -> web.StreamResponse:
        return await counted(request, state, _process)

    app.router.add_post("/v1/messages", messages)

"""The OpenAI-compatible routes of the simulated provider: /v1/chat/completions (auth, validation,
rate limits, faults, answers), /v1/models, /health and /stats."""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import time
from dataclasses import dataclass

from aiohttp import web

from .state import (DEFAULT_MAX_TOKENS_COST, DEFAULT_MODEL, STATE_KEY, SimState, error_body, estimate_tokens,
                    json_response, messages_text, prompt_fingerprint)


# --------------------------------------------------------------------------- completions

def cut_to_max_tokens(answer: str, max_tokens: int | None) -> tuple[str, str]:
    """Cut the answer at ``max_tokens`` words (words stand in for tokens)."""
    if max_tokens is None:
        return answer, "stop"
    words = answer.split()
    if len(words) <= max_tokens:
        return answer, "stop"
    return " ".join(words[:max_tokens]), "length"


def requested_max_tokens(body: dict) -> tuple[int | None, bool]:
    """(max_tokens or None, valid?) honouring the newer ``max_completion_tokens`` alias."""
    value = body.get("max_tokens", body.get("max_completion_tokens"))
    if value is None:
        return None, True
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return None, False
    return value, True


def completion_payload(state: SimState, model: str, content: str, finish_reason: str,
                        prompt_tokens: int) -> dict:
    completion_tokens = estimate_tokens(content)
    return {
        "id": f"chatcmpl-sim{state.counter:08x}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": state.config.model_version or model,
        "system_fingerprint": state.config.fingerprint,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "logprobs": None,
            "finish_reason": finish_reason,
        }],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


async def transport_fault(request: web.Request, state: SimState, fault: str | None,
                          headers: dict) -> web.Response | None:
    """The faults both APIs inject alike: a reset socket, a body that is not JSON, a hang (then the answer
    follows); None when there is nothing to send instead of the answer."""
    if fault == "reset":
        abort_connection(request)
        return web.Response(status=500)  # never reaches the client: the socket is gone
    if fault == "malformed":
        return web.Response(body=b"<html><body><h1>502 Bad Gateway</h1></body></html>",
                            content_type="application/json", headers=headers)
    if fault == "hang":
        await asyncio.sleep(state.config.hang_s)
    return None


def abort_connection(request: web.Request) -> None:
    """Reset the TCP connection (RST, no response) to simulate a dropped peer."""
    transport = request.transport
    if transport is None:
        return
    sock = transport.get_extra_info("socket")
    if sock is not None:
        # Linger 0 makes close() send RST instead of a graceful FIN.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()


class RequestRejected(Exception):
    """A permanent request error turned into an OpenAI-style error response."""

    def __init__(self, status: int, message: str, type_: str, code: str | None):
        super().__init__(message)
        self.status, self.type, self.code = status, type_, code

    def response(self) -> web.Response:
        return json_response(error_body(str(self), self.type, self.code), status=self.status)


async def _parse_request(request: web.Request, state: SimState) -> dict:
    """Auth and body validation; raises RequestRejected for permanent errors."""
    cfg = state.config
    if cfg.api_key and request.headers.get("Authorization") != f"Bearer {cfg.api_key}":
        raise RequestRejected(401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key")
    try:
        body = json.loads(await request.read())
    except ValueError:
        raise RequestRejected(400, "The request body is not valid JSON.", "invalid_request_error", "invalid_json")
    if not isinstance(body, dict):
        raise RequestRejected(400, "The request body must be a JSON object.", "invalid_request_error", "invalid_json")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestRejected(400, "'messages' must be a non-empty list.", "invalid_request_error", "invalid_messages")
    return body


def check_request(state: SimState, body: dict, model: str, prompt_tokens: int) -> int | None:
    """Model, context and max_tokens checks; returns max_tokens or raises RequestRejected."""
    cfg = state.config
    if cfg.models and model not in cfg.models:
        raise RequestRejected(404, f"The model '{model}' does not exist.", "invalid_request_error", "model_not_found")
    if cfg.context_limit and prompt_tokens > cfg.context_limit:
        raise RequestRejected(400, f"This model's maximum context length is {cfg.context_limit} tokens; "
                           f"the messages use {prompt_tokens}.", "invalid_request_error",
                      "context_length_exceeded")
    max_tokens, valid = requested_max_tokens(body)
    if not valid:
        raise RequestRejected(400, "'max_tokens' must be a positive integer.", "invalid_request_error", "invalid_value")
    return max_tokens


def _rate_limited(state: SimState, now: float) -> web.Response:
    state.rate_limited += 1
    body = error_body("Rate limit reached for requests; please retry later.",
                       "rate_limit_exceeded", "rate_limit_exceeded")
    headers = state.limiter.retry_headers(state.config.retry_after_format, now)
    return json_response(body, status=429, headers=headers)


@dataclass
class _Job:
    """A validated completion request."""

    body: dict
    messages: list
    fp: str
    model: str
    prompt_tokens: int
    max_tokens: int | None
    prompt_counts: list  # this prompt's [received, ok, last ok time] stats cell


async def _validate(request: web.Request, state: SimState) -> _Job:
    """Parse and check a request, counting it per prompt; raises RequestRejected."""
    body = await _parse_request(request, state)
    messages = body["messages"]
    fp = prompt_fingerprint(messages)
    prompt_counts = state.per_prompt.get(fp)
    if prompt_counts is None:
        prompt_counts = state.per_prompt[fp] = [0, 0, None]
    prompt_counts[0] += 1
    model = body.get("model") or DEFAULT_MODEL
    prompt_tokens = estimate_tokens(messages_text(messages))
    max_tokens = check_request(state, body, model, prompt_tokens)
    return _Job(body, messages, fp, model, prompt_tokens, max_tokens, prompt_counts)


async def _process(request: web.Request, state: SimState) -> web.StreamResponse:
    """One completion: validate, admit, maybe fault, sleep, answer."""
    try:
        job = await _validate(request, state)
    except RequestRejected as reject:
        state.errors[str(reject.status)] += 1
        return reject.response()

    now = time.time()
    cost = job.prompt_tokens + (job.max_tokens if job.max_tokens is not None else DEFAULT_MAX_TOKENS_COST)
    if state.limiter.enabled and not state.limiter.admit(cost, now):
        return _rate_limited(state, now)
    second = int(now)
    state.admitted_by_second[second] = state.admitted_by_second.get(second, 0) + 1
    headers = state.limiter.usage_headers() if state.limiter.enabled and state.config.quota_headers else None

    fault = state.draw_fault()
    if fault is not None:
        state.faults[fault] += 1
    delay = state.latency_s()
    if delay:
        await asyncio.sleep(delay)
    return await _answer(request, state, job, fault, headers)


async def _answer(request: web.Request, state: SimState, job: _Job, fault: str | None,
                  headers: dict | None) -> web.StreamResponse:
    """Build the (possibly faulty) response for an admitted request."""
    if fault == "500":
        return json_response(error_body("The server had an error while processing your request.",
                                          "server_error", "internal_error"), 500, headers)
    if fault in ("503", "529"):
        return json_response(error_body("The engine is currently overloaded, please try again later.",
                                          "server_error", "service_unavailable"), int(fault), headers)
    if (faulty := await transport_fault(request, state, fault, headers)) is not None:
        return faulty

    answer = state.choose_answer(job.body, job.messages, job.fp)
    content, finish_reason = cut_to_max_tokens(answer, job.max_tokens)
    payload = completion_payload(state, job.model, content, finish_reason, job.prompt_tokens)
    if fault == "truncated":
        raw = json.dumps(payload).encode()
        return web.Response(body=raw[: len(raw) // 2], content_type="application/json", headers=headers)
    if fault == "empty_choices":
        payload["choices"] = []
        return json_response(payload, headers=headers)
    transport = request.transport
    if transport is not None and not transport.is_closing():  # a hung client may be gone
        state.ok += 1
        job.prompt_counts[1] += 1
        job.prompt_counts[2] = time.time()
    return json_response(payload, headers=headers)


async def _chat_completions(request: web.Request) -> web.StreamResponse:
    """POST /v1/chat/completions."""
    return await counted(request, request.app[STATE_KEY], _process)


async def counted(request: web.Request, state: SimState, process) -> web.StreamResponse:
    """Count one request of either API and run `process(request, state)` under the concurrency gate;
    max_in_flight counts requests from receipt to response."""
    state.requests += 1
    state.paths[request.path] = state.paths.get(request.path, 0) + 1
    state.counter += 1
    if state.first_request_at is None:
        state.first_request_at = time.time()
    second = int(time.time())
    state.received_by_second[second] = state.received_by_second.get(second, 0) + 1
    state.in_flight += 1
    if state.in_flight > state.max_in_flight:
        state.max_in_flight = state.in_flight
    try:
        if state.semaphore is None:
            return await process(request, state)
        async with state.semaphore:
            return await process(request, state)
    finally:
        state.in_flight -= 1


# --------------------------------------------------------------------------- other routes

async def _models(request: web.Request) -> web.Response:
    state = request.app[STATE_KEY]
    cfg = state.config
    if cfg.api_key and request.headers.get("Authorization") != f"Bearer {cfg.api_key}":
        return json_response(error_body("Incorrect API key provided.", "invalid_request_error",
                                          "invalid_api_key"), status=401)
    names = cfg.models or (cfg.model_version or DEFAULT_MODEL,)
    data = [{"id": name, "object": "model", "created": 0, "owned_by": "fairsweep-sim"} for name in names]
    return json_response({"object": "list", "data": data})


async def _health(request: web.Request) -> web.Response:
    return json_response({"status": "ok"})


async def _stats(request: web.Request) -> web.Response:
    return json_response(request.app[STATE_KEY].snapshot())


async def _stats_reset(request: web.Request) -> web.Response:
    state = request.app[STATE_KEY]
    state.reset_stats()
    return json_response(state.snapshot())


def add_openai_routes(app: web.Application) -> None:
    """/v1/chat/completions, /v1/models, /health, /stats and /stats/reset on the app (its state set)."""
    app.router.add_post("/v1/chat/completions", _chat_completions)
    app.router.add_get("/v1/models", _models)
    app.router.add_get("/health", _health)
    app.router.add_get("/stats", _stats)
    app.router.add_post("/stats/reset", _stats_reset)

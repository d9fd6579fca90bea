"""Simulated OpenAI-compatible chat-completions provider (aiohttp.web), which also speaks the Anthropic
Messages API on /v1/messages (sim/anthropic.py): one server can serve both.

Used by tests, benchmarks and demos: deterministic answers, configurable
latency and concurrency, fixed-window rate limits with several retry-hint
styles, seeded fault injection and cheap live statistics.

Run it with ``python -m fairsweep.sim.server --help``.
"""

from __future__ import annotations

import argparse
import asyncio
import email.utils
import hashlib
import json
import math
import queue
import random
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass
from typing import Any

from aiohttp import web

__all__ = [
    "FAULT_KINDS",
    "RETRY_AFTER_FORMATS",
    "FixedWindowLimiter",
    "SimConfig",
    "SimServerProcess",
    "SimState",
    "build_app",
    "estimate_tokens",
    "format_openai_duration",
    "load_answers",
    "main",
    "parse_args",
    "prompt_fingerprint",
    "serve",
]

FAULT_KINDS = ("500", "503", "hang", "reset", "malformed", "truncated", "empty_choices", "529")
RETRY_AFTER_FORMATS = ("seconds", "http-date", "ms", "reset", "none")
ERROR_STATUSES = ("401", "404", "400")
DEFAULT_MODEL = "fairsweep-sim"
DEFAULT_MAX_TOKENS_COST = 16  # token cost charged at admission when max_tokens is absent
LISTENING_PREFIX = "fairsweep sim-server listening on "
_LISTENING_RE = re.compile(re.escape(LISTENING_PREFIX) + r"(http://\S+/v1)\s*$")

# Built-in vocabulary for the pseudo-random default answers.
_SUBJECTS = ("The nurse", "The engineer", "The manager", "The teacher", "A student",
             "The doctor", "The pilot", "My neighbour", "The committee", "The parent")
_VERBS = ("prefers", "reviews", "explains", "recommends", "questions", "supports",
          "rejects", "describes")
_OBJECTS = ("the proposal", "a cautious plan", "the new schedule", "the final report",
            "both options", "the team decision", "the first answer", "a short summary")
_ENDINGS = ("today.", "carefully.", "without hesitation.", "after some thought.",
            "for now.", "with confidence.")


# --------------------------------------------------------------------------- helpers

def estimate_tokens(text: str) -> int:
    """Rough token count: ceil(characters / 4)."""
    return math.ceil(len(text) / 4)


def prompt_fingerprint(messages: list) -> str:
    """First 16 hex chars of sha256 over the canonical JSON of ``messages``."""
    canonical = json.dumps(messages, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def format_openai_duration(seconds: float) -> str:
    """Format a wait like OpenAI's reset headers: ``20ms``, ``1.5s``, ``6m0s``, ``1h2m3s``."""
    ms = max(1, math.ceil(seconds * 1000))  # round up so clients never retry early
    if ms < 1000:
        return f"{ms}ms"
    hours, rem = divmod(ms, 3_600_000)
    minutes, rem = divmod(rem, 60_000)
    secs = f"{rem / 1000:.3f}".rstrip("0").rstrip(".") or "0"
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


def _content_text(content: Any) -> str:
    """Text of a message content: a string or a list of OpenAI content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content
                         if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _messages_text(messages: list) -> str:
    return "\n".join(_content_text(m.get("content")) for m in messages if isinstance(m, dict))


def _last_user_text(messages: list) -> str:
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return _content_text(message.get("content"))
    return ""


def _error_body(message: str, type_: str, code: str | None) -> dict:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


def _json_response(payload: Any, status: int = 200, headers: dict | None = None) -> web.Response:
    return web.Response(body=json.dumps(payload).encode(), status=status, headers=headers,
                        content_type="application/json")


# --------------------------------------------------------------------------- config

@dataclass
class SimConfig:
    """All options of the simulated provider (one field per CLI option)."""

    host: str = "127.0.0.1"
    port: int = 8001
    model_version: str | None = None
    fingerprint: str = "fp_sim_1"
    seed: int = 0
    answers: str | None = None  # path of the answers JSON file
    latency_ms: float = 0.0
    latency_jitter_ms: float = 0.0
    max_concurrency: int = 0
    rpm: int = 0
    tpm: int = 0
    window_s: float = 60.0
    retry_after_format: str = "seconds"
    fault_seed: int = 1
    fault_500: float = 0.0
    fault_503: float = 0.0
    fault_hang: float = 0.0
    fault_reset: float = 0.0
    fault_malformed: float = 0.0
    fault_truncated: float = 0.0
    fault_empty_choices: float = 0.0
    fault_529: float = 0.0  # 529 overloaded (Anthropic's answer when it is overloaded)
    hang_s: float = 30.0
    api_key: str | None = None
    models: tuple[str, ...] = ()
    context_limit: int = 0
    batch_duration_s: float = 2.0  # batch APIs: a batch's requests finish over this many seconds
    batch_error: float = 0.0       # probability that one batch request errors (a server error)
    batch_expire_first: int = 0    # the first N batches expire halfway through

    def fault_table(self) -> tuple[tuple[str, float], ...]:
        """(kind, probability) pairs in FAULT_KINDS order."""
        return tuple((kind, getattr(self, f"fault_{kind}")) for kind in FAULT_KINDS)


def load_answers(path: str | None) -> dict:
    """Load and validate an answers file; ``{}`` when no path is given."""
    if not path:
        return {}
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: answers file must hold a JSON object")
    by_fp = data.get("by_fingerprint", {})
    rules = data.get("rules", [])
    if not isinstance(by_fp, dict) or not isinstance(rules, list):
        raise ValueError(f"{path}: 'by_fingerprint' must be an object and 'rules' a list")
    for rule in rules:
        if not (isinstance(rule, dict) and isinstance(rule.get("contains"), str)
                and isinstance(rule.get("answer"), str)):
            raise ValueError(f"{path}: each rule needs string 'contains' and 'answer': {rule!r}")
    default = data.get("default")
    if default is not None and not isinstance(default, str):
        raise ValueError(f"{path}: 'default' must be a string")
    return {"by_fingerprint": by_fp, "rules": rules, "default": default}


# --------------------------------------------------------------------------- rate limit

class FixedWindowLimiter:
    """Request/token quotas per fixed window aligned to multiples of ``window_s``."""

    def __init__(self, rpm: int, tpm: int, window_s: float):
        self.window_s = window_s
        self.request_quota = rpm * window_s / 60 if rpm > 0 else None
        self.token_quota = tpm * window_s / 60 if tpm > 0 else None
        self._window = None
        self.requests = 0
        self.tokens = 0

    @property
    def enabled(self) -> bool:
        return self.request_quota is not None or self.token_quota is not None

    def _roll(self, now: float) -> None:
        window = math.floor(now / self.window_s)
        if window != self._window:
            self._window, self.requests, self.tokens = window, 0, 0

    def reset_in(self, now: float) -> float:
        """Seconds until the current window ends."""
        return (math.floor(now / self.window_s) + 1) * self.window_s - now

    def admit(self, cost: int, now: float) -> bool:
        """Consume one request and ``cost`` tokens if both fit; rejected requests cost nothing."""
        self._roll(now)
        if self.request_quota is not None and self.requests + 1 > self.request_quota:
            return False
        if self.token_quota is not None and self.tokens + cost > self.token_quota:
            return False
        self.requests += 1
        self.tokens += cost
        return True

    def usage_headers(self) -> dict[str, str]:
        """x-ratelimit-limit/remaining headers for the configured limits (per window)."""
        headers = {}
        if self.request_quota is not None:
            headers["x-ratelimit-limit-requests"] = str(int(self.request_quota))
            headers["x-ratelimit-remaining-requests"] = str(max(0, int(self.request_quota - self.requests)))
        if self.token_quota is not None:
            headers["x-ratelimit-limit-tokens"] = str(int(self.token_quota))
            headers["x-ratelimit-remaining-tokens"] = str(max(0, int(self.token_quota - self.tokens)))
        return headers

    def retry_headers(self, fmt: str, now: float) -> dict[str, str]:
        """Wait hint for a 429 in the requested style."""
        wait = self.reset_in(now)
        if fmt == "seconds":
            return {"Retry-After": str(max(1, math.ceil(wait)))}
        if fmt == "http-date":
            return {"Retry-After": email.utils.formatdate(math.ceil(now + wait), usegmt=True)}
        if fmt == "ms":
            return {"retry-after-ms": str(max(1, math.ceil(wait * 1000)))}
        if fmt == "reset":
            text = format_openai_duration(wait)
            headers = {}
            if self.request_quota is not None:
                headers["x-ratelimit-reset-requests"] = text
            if self.token_quota is not None:
                headers["x-ratelimit-reset-tokens"] = text
            return headers
        return {}


# --------------------------------------------------------------------------- state

class SimState:
    """Per-app mutable state: limiter, RNGs, concurrency gate and statistics.

    Everything runs on one event loop thread, so plain ints and dicts suffice.
    """

    def __init__(self, config: SimConfig, answers: dict):
        self.config = config
        self.answers = answers
        self.limiter = FixedWindowLimiter(config.rpm, config.tpm, config.window_s)
        self.fault_rng = random.Random(config.fault_seed)
        self.latency_rng = random.Random(f"latency:{config.fault_seed}")
        self.faults_enabled = any(p > 0 for _, p in config.fault_table())
        self.semaphore = asyncio.Semaphore(config.max_concurrency) if config.max_concurrency > 0 else None
        self.counter = 0  # per-request counter: response ids and non-deterministic sampling
        self.in_flight = 0
        self.batch_sim = None  # sim/batches.BatchSim once the routes are added
        self.reset_stats()

    def reset_stats(self) -> None:
        self.requests = 0
        self.ok = 0
        self.rate_limited = 0
        self.faults = dict.fromkeys(FAULT_KINDS, 0)
        self.errors = dict.fromkeys(ERROR_STATUSES, 0)
        self.per_prompt: dict[str, list] = {}  # fp -> [received, ok, wall time of the last ok answer]
        self.received_by_second: dict[int, int] = {}
        self.first_request_at: float | None = None  # wall time: how long a client took to send its first
        self.admitted_by_second: dict[int, int] = {}
        self.max_in_flight = self.in_flight
        self.paths: dict[str, int] = {}  # requests received per route (chat completions, messages, batches...)
        if self.batch_sim is not None:
            self.batch_sim.reset_stats()

    def snapshot(self) -> dict:
        """Statistics as a JSON-ready dict."""
        return {
            "requests": self.requests,
            "ok": self.ok,
            "rate_limited": self.rate_limited,
            "faults": dict(self.faults),
            "errors": dict(self.errors),
            "per_prompt": {fp: {"received": r, "ok": o} for fp, (r, o, _) in self.per_prompt.items()},
            "answered_at": {fp: t for fp, (_, _, t) in self.per_prompt.items() if t is not None},  # last ok, wall
            "received_by_second": dict(self.received_by_second),
            "first_request_at": self.first_request_at,
            "admitted_by_second": dict(self.admitted_by_second),
            "max_in_flight": self.max_in_flight,
            "paths": dict(self.paths),
            "batches": dict(self.batch_sim.stats) if self.batch_sim is not None else {},
        }

    def draw_fault(self) -> str | None:
        """At most one fault per request, by cumulative probability."""
        if not self.faults_enabled:
            return None
        draw = self.fault_rng.random()
        cumulative = 0.0
        for kind, probability in self.config.fault_table():
            cumulative += probability
            if draw < cumulative:
                return kind
        return None

    def latency_s(self) -> float:
        cfg = self.config
        if cfg.latency_ms <= 0 and cfg.latency_jitter_ms <= 0:
            return 0.0
        jitter = self.latency_rng.uniform(-cfg.latency_jitter_ms, cfg.latency_jitter_ms)
        return max(0.0, cfg.latency_ms + jitter) / 1000

    def choose_answer(self, body: dict, messages: list, fp: str) -> str:
        """Answers file first (fingerprint, rules, default), else a seeded sentence."""
        by_fp = self.answers.get("by_fingerprint")
        if by_fp and fp in by_fp:
            return by_fp[fp]
        rules = self.answers.get("rules")
        if rules:
            last_user = _last_user_text(messages)
            for rule in rules:
                if rule["contains"] in last_user:
                    return rule["answer"]
        if self.answers.get("default") is not None:
            return self.answers["default"]
        return _sentence(random.Random(self._rng_key(body, fp)))

    def _rng_key(self, body: dict, fp: str) -> str:
        # Absent temperature counts as 0 so that plain requests stay reproducible.
        temperature = body.get("temperature") or 0
        request_seed = body.get("seed")
        if not isinstance(temperature, (int, float)) or temperature <= 0:
            return f"{self.config.seed}:{fp}"
        if request_seed is not None:
            return f"{self.config.seed}:{fp}:seed={request_seed}"
        return f"{self.config.seed}:{fp}:n={self.counter}"


STATE_KEY = web.AppKey("fairsweep_sim_state", SimState)


def _sentence(rng: random.Random) -> str:
    return " ".join((rng.choice(_SUBJECTS), rng.choice(_VERBS), rng.choice(_OBJECTS), rng.choice(_ENDINGS)))


# --------------------------------------------------------------------------- completions

def _cut_to_max_tokens(answer: str, max_tokens: int | None) -> tuple[str, str]:
    """Cut the answer at ``max_tokens`` words (words stand in for tokens)."""
    if max_tokens is None:
        return answer, "stop"
    words = answer.split()
    if len(words) <= max_tokens:
        return answer, "stop"
    return " ".join(words[:max_tokens]), "length"


def _requested_max_tokens(body: dict) -> tuple[int | None, bool]:
    """(max_tokens or None, valid?) honouring the newer ``max_completion_tokens`` alias."""
    value = body.get("max_tokens", body.get("max_completion_tokens"))
    if value is None:
        return None, True
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return None, False
    return value, True


def _completion_payload(state: SimState, model: str, content: str, finish_reason: str,
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


def _abort_connection(request: web.Request) -> None:
    """Reset the TCP connection (RST, no response) to simulate a dropped peer."""
    transport = request.transport
    if transport is None:
        return
    sock = transport.get_extra_info("socket")
    if sock is not None:
        # Linger 0 makes close() send RST instead of a graceful FIN.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()


class _Reject(Exception):
    """A permanent request error turned into an OpenAI-style error response."""

    def __init__(self, status: int, message: str, type_: str, code: str | None):
        super().__init__(message)
        self.status, self.type, self.code = status, type_, code

    def response(self) -> web.Response:
        return _json_response(_error_body(str(self), self.type, self.code), status=self.status)


async def _parse_request(request: web.Request, state: SimState) -> dict:
    """Auth and body validation; raises _Reject for permanent errors."""
    cfg = state.config
    if cfg.api_key and request.headers.get("Authorization") != f"Bearer {cfg.api_key}":
        raise _Reject(401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key")
    try:
        body = json.loads(await request.read())
    except ValueError:
        raise _Reject(400, "The request body is not valid JSON.", "invalid_request_error", "invalid_json")
    if not isinstance(body, dict):
        raise _Reject(400, "The request body must be a JSON object.", "invalid_request_error", "invalid_json")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _Reject(400, "'messages' must be a non-empty list.", "invalid_request_error", "invalid_messages")
    return body


def _check_request(state: SimState, body: dict, model: str, prompt_tokens: int) -> int | None:
    """Model, context and max_tokens checks; returns max_tokens or raises _Reject."""
    cfg = state.config
    if cfg.models and model not in cfg.models:
        raise _Reject(404, f"The model '{model}' does not exist.", "invalid_request_error", "model_not_found")
    if cfg.context_limit and prompt_tokens > cfg.context_limit:
        raise _Reject(400, f"This model's maximum context length is {cfg.context_limit} tokens; "
                           f"the messages use {prompt_tokens}.", "invalid_request_error",
                      "context_length_exceeded")
    max_tokens, valid = _requested_max_tokens(body)
    if not valid:
        raise _Reject(400, "'max_tokens' must be a positive integer.", "invalid_request_error", "invalid_value")
    return max_tokens


def _rate_limited(state: SimState, now: float) -> web.Response:
    state.rate_limited += 1
    body = _error_body("Rate limit reached for requests; please retry later.",
                       "rate_limit_exceeded", "rate_limit_exceeded")
    headers = state.limiter.retry_headers(state.config.retry_after_format, now)
    return _json_response(body, status=429, headers=headers)


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
    """Parse and check a request, counting it per prompt; raises _Reject."""
    body = await _parse_request(request, state)
    messages = body["messages"]
    fp = prompt_fingerprint(messages)
    prompt_counts = state.per_prompt.get(fp)
    if prompt_counts is None:
        prompt_counts = state.per_prompt[fp] = [0, 0, None]
    prompt_counts[0] += 1
    model = body.get("model") or DEFAULT_MODEL
    prompt_tokens = estimate_tokens(_messages_text(messages))
    max_tokens = _check_request(state, body, model, prompt_tokens)
    return _Job(body, messages, fp, model, prompt_tokens, max_tokens, prompt_counts)


async def _process(request: web.Request, state: SimState) -> web.StreamResponse:
    """One completion: validate, admit, maybe fault, sleep, answer."""
    try:
        job = await _validate(request, state)
    except _Reject as reject:
        state.errors[str(reject.status)] += 1
        return reject.response()

    now = time.time()
    cost = job.prompt_tokens + (job.max_tokens if job.max_tokens is not None else DEFAULT_MAX_TOKENS_COST)
    if state.limiter.enabled and not state.limiter.admit(cost, now):
        return _rate_limited(state, now)
    second = int(now)
    state.admitted_by_second[second] = state.admitted_by_second.get(second, 0) + 1
    headers = state.limiter.usage_headers() if state.limiter.enabled else None

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
        return _json_response(_error_body("The server had an error while processing your request.",
                                          "server_error", "internal_error"), 500, headers)
    if fault in ("503", "529"):
        return _json_response(_error_body("The engine is currently overloaded, please try again later.",
                                          "server_error", "service_unavailable"), int(fault), headers)
    if fault == "reset":
        _abort_connection(request)
        return web.Response(status=500)  # never reaches the client: the socket is gone
    if fault == "malformed":
        return web.Response(body=b"<html><body><h1>502 Bad Gateway</h1></body></html>",
                            content_type="application/json", headers=headers)
    if fault == "hang":
        await asyncio.sleep(state.config.hang_s)

    answer = state.choose_answer(job.body, job.messages, job.fp)
    content, finish_reason = _cut_to_max_tokens(answer, job.max_tokens)
    payload = _completion_payload(state, job.model, content, finish_reason, job.prompt_tokens)
    if fault == "truncated":
        raw = json.dumps(payload).encode()
        return web.Response(body=raw[: len(raw) // 2], content_type="application/json", headers=headers)
    if fault == "empty_choices":
        payload["choices"] = []
        return _json_response(payload, headers=headers)
    transport = request.transport
    if transport is not None and not transport.is_closing():  # a hung client may be gone
        state.ok += 1
        job.prompt_counts[1] += 1
        job.prompt_counts[2] = time.time()
    return _json_response(payload, headers=headers)


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
        return _json_response(_error_body("Incorrect API key provided.", "invalid_request_error",
                                          "invalid_api_key"), status=401)
    names = cfg.models or (cfg.model_version or DEFAULT_MODEL,)
    data = [{"id": name, "object": "model", "created": 0, "owned_by": "fairsweep-sim"} for name in names]
    return _json_response({"object": "list", "data": data})


async def _health(request: web.Request) -> web.Response:
    return _json_response({"status": "ok"})


async def _stats(request: web.Request) -> web.Response:
    return _json_response(request.app[STATE_KEY].snapshot())


async def _stats_reset(request: web.Request) -> web.Response:
    state = request.app[STATE_KEY]
    state.reset_stats()
    return _json_response(state.snapshot())


def build_app(config: SimConfig) -> web.Application:
    """Create the aiohttp application for ``config`` (loads the answers file)."""
    if config.retry_after_format not in RETRY_AFTER_FORMATS:
        raise ValueError(f"retry_after_format must be one of {RETRY_AFTER_FORMATS}")
    if config.window_s <= 0:
        raise ValueError("window_s must be > 0")
    app = web.Application()
    app[STATE_KEY] = SimState(config, load_answers(config.answers))
    app.router.add_post("/v1/chat/completions", _chat_completions)
    from .anthropic import add_anthropic_routes  # here, not at the top: it imports this module
    add_anthropic_routes(app, app[STATE_KEY])
    from .batches import add_batch_routes
    add_batch_routes(app, app[STATE_KEY])
    app.router.add_get("/v1/models", _models)
    app.router.add_get("/health", _health)
    app.router.add_get("/stats", _stats)
    app.router.add_post("/stats/reset", _stats_reset)
    return app


# --------------------------------------------------------------------------- CLI

def _probability(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"probability must be in [0, 1], got {text}")
    return value


def _build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fairsweep sim-server",
                                description="Simulated OpenAI-compatible chat-completions provider.")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8001, help="0 picks a free port")
    p.add_argument("--model-version", default=None, help="model name reported in responses")
    p.add_argument("--fingerprint", default="fp_sim_1", help="system_fingerprint in responses")
    p.add_argument("--seed", type=int, default=0, help="seed of the built-in answers")
    p.add_argument("--answers", default=None, metavar="FILE", help="answers JSON file")
    p.add_argument("--latency-ms", type=float, default=0.0)
    p.add_argument("--latency-jitter-ms", type=float, default=0.0)
    p.add_argument("--max-concurrency", type=int, default=0, help="0 = unlimited")
    p.add_argument("--rpm", type=int, default=0, help="requests per minute, 0 = unlimited")
    p.add_argument("--tpm", type=int, default=0, help="tokens per minute, 0 = unlimited")
    p.add_argument("--window-s", type=float, default=60.0, help="rate-limit window length")
    p.add_argument("--retry-after-format", choices=RETRY_AFTER_FORMATS, default="seconds")
    p.add_argument("--fault-seed", type=int, default=1)
    for kind in FAULT_KINDS:
        p.add_argument(f"--fault-{kind.replace('_', '-')}", dest=f"fault_{kind}", type=_probability,
                       default=0.0, metavar="P")
    p.add_argument("--hang-s", type=float, default=30.0)
    p.add_argument("--api-key", default=None)
    p.add_argument("--models", default="", help="comma-separated list of accepted models")
    p.add_argument("--context-limit", type=int, default=0, help="max prompt tokens, 0 = unlimited")
    p.add_argument("--batch-duration-s", type=float, default=2.0, help="batch APIs: seconds a batch takes")
    p.add_argument("--batch-error", type=_probability, default=0.0, metavar="P",
                   help="batch APIs: probability that a request errors (a server error)")
    p.add_argument("--batch-expire-first", type=int, default=0, metavar="N",
                   help="batch APIs: the first N batches expire halfway through")
    return p


def parse_args(argv: list[str] | None = None) -> SimConfig:
    """Parse CLI options into a SimConfig."""
    ns = vars(_build_parser().parse_args(argv))
    ns["models"] = tuple(m.strip() for m in ns["models"].split(",") if m.strip())
    return SimConfig(**ns)


def _display_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


async def serve(config: SimConfig) -> None:
    """Serve until SIGINT/SIGTERM, printing the listening line once bound."""
    runner = web.AppRunner(build_app(config), access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    try:
        site = web.TCPSite(runner, config.host, config.port)
        await site.start()
        port = runner.addresses[0][1]
        print(f"{LISTENING_PREFIX}http://{_display_host(config.host)}:{port}/v1", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
    finally:
        await runner.cleanup()


def main(argv: list[str] | None = None) -> int:
    """CLI entry point: ``fairsweep sim-server [options]``."""
    config = parse_args(argv)
    try:
        asyncio.run(serve(config))
    except KeyboardInterrupt:  # SIGINT before the handlers were installed
        pass
    return 0


# --------------------------------------------------------------------------- subprocess helper

class SimServerProcess:
    """Run the sim server in a subprocess: ``with SimServerProcess(["--rpm", "60"]) as sim: ...``."""

    def __init__(self, args: list[str] | None = None, startup_timeout: float = 30.0):
        self.args = list(args or [])
        self.startup_timeout = startup_timeout
        self.base_url: str | None = None
        self.proc: subprocess.Popen | None = None
        self._stderr = None
        self._pump: threading.Thread | None = None

    @property
    def root_url(self) -> str:
        """Server root (base_url without the trailing /v1)."""
        assert self.base_url is not None, "server not started"
        return self.base_url[: -len("/v1")]

    def __enter__(self) -> "SimServerProcess":
        self.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def start(self) -> None:
        cmd = [sys.executable, "-m", "fairsweep.sim.server", "--port", "0", *self.args]
        self._stderr = tempfile.TemporaryFile()  # a file, not a pipe: it can never fill up and block
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self._stderr,
                                     stdin=subprocess.DEVNULL, text=True)
        lines: queue.Queue = queue.Queue()
        self._pump = threading.Thread(target=self._pump_stdout, args=(self.proc.stdout, lines), daemon=True)
        self._pump.start()
        try:
            self.base_url = self._wait_listening(lines)
        except BaseException:
            self.stop()
            raise

    @staticmethod
    def _pump_stdout(stream, lines: queue.Queue) -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)

    def _wait_listening(self, lines: queue.Queue) -> str:
        deadline = time.monotonic() + self.startup_timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"sim server did not report listening within {self.startup_timeout}s")
            try:
                line = lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                raise RuntimeError(f"sim server exited early:\n{self._stderr_text()}")
            match = _LISTENING_RE.match(line)
            if match:
                return match.group(1)

    def _stderr_text(self) -> str:
        if self.proc is not None:
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")

    def stop(self) -> None:
        """Terminate the server (kill if it does not stop within 5 s)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._pump is not None:
            self._pump.join(timeout=2)  # EOF follows process exit; join before closing the pipe
        pump_done = self._pump is None or not self._pump.is_alive()
        if self.proc is not None and self.proc.stdout is not None and pump_done:
            self.proc.stdout.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def _call(self, method: str, path: str) -> dict:
        req = urllib.request.Request(self.root_url + path, method=method,
                                     data=b"" if method == "POST" else None)
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read())

    def stats(self) -> dict:
        """GET /stats."""
        return self._call("GET", "/stats")

    def reset_stats(self) -> dict:
        """POST /stats/reset."""
        return self._call("POST", "/stats/reset")


if __name__ == "__main__":
    sys.exit(main())

"""The simulated provider's options (SimConfig), its shared state and statistics (SimState), its
fixed-window rate limiter, and the text helpers every route uses (token estimate, fingerprints)."""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import json
import math
import random
import re
from dataclasses import dataclass
from typing import Any

from aiohttp import web

FAULT_KINDS = ("500", "503", "hang", "reset", "malformed", "truncated", "empty_choices", "529")
RETRY_AFTER_FORMATS = ("seconds", "http-date", "ms", "reset", "none")
ERROR_STATUSES = ("401", "404", "400")
DEFAULT_MODEL = "fairsweep-sim"
DEFAULT_MAX_TOKENS_COST = 16  # token cost charged at admission when max_tokens is absent
LISTENING_PREFIX = "fairsweep sim-server listening on "

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


def content_text(content: Any) -> str:
    """Text of a message content: a string or a list of OpenAI content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content
                         if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def messages_text(messages: list) -> str:
    return "\n".join(content_text(m.get("content")) for m in messages if isinstance(m, dict))


def last_user_text(messages: list) -> str:
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return content_text(message.get("content"))
    return ""


def error_body(message: str, type_: str, code: str | None) -> dict:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


def json_response(payload: Any, status: int = 200, headers: dict | None = None) -> web.Response:
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
    quota_headers: bool = True  # answers report the window's quota (x-ratelimit-limit/remaining-*)
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
            last_user = last_user_text(messages)
            for rule in rules:
                if rule["contains"] in last_user:
                    return rule["answer"]
        if self.answers.get("default") is not None:
            return self.answers["default"]
        return sentence(random.Random(self._rng_key(body, fp)))

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


def sentence(rng: random.Random) -> str:
    return " ".join((rng.choice(_SUBJECTS), rng.choice(_VERBS), rng.choice(_OBJECTS), rng.choice(_ENDINGS)))

"""The records every layer shares: prompts, work items, outcomes and the rows that store them.

A leaf module: it imports nothing from fairsweep, so storage/, engine/ and benchmarks/ can all use it
without importing each other.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple


def canonical_json(value: Any) -> str:
    return _CANONICAL(value)


# json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")) builds an encoder at every call:
# one, built once, gives the same text (planning serialises several values per request).
_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode


@dataclass(frozen=True)
class Prompt:
    """A benchmark prompt: a stable key, the chat messages, and metadata for the SQL views."""

    benchmark: str
    key: str
    messages: tuple[dict[str, Any], ...]
    metadata: dict[str, Any]

    @functools.cached_property  # read several times per request while planning: computed once per prompt
    def prompt_hash(self) -> str:
        return hashlib.sha256(self.messages_json.encode()).hexdigest()[:16]

    @functools.cached_property  # hashed into every model's cache keys, stored with the prompt, sent as the body
    def messages_json(self) -> str:
        return canonical_json(list(self.messages))

    @functools.cached_property  # every attempt's token estimate (engine/scheduler.py) counts it
    def content_chars(self) -> int:
        return sum(len(str(m.get("content", ""))) for m in self.messages)


@dataclass(frozen=True)
class WorkItem:
    """One request to send: (run, model, prompt, sample) with its generation parameters."""

    request_id: str
    run: str
    model: str
    prompt: Prompt
    sample: int
    params: dict[str, Any]
    ordinal: int
    cache_key: str | None = None


class Outcome(str, enum.Enum):
    """What one attempt came to (the stored attempts.outcome). Only PERMANENT ends a request without
    an answer: a request that cannot succeed (too long for the context, a prompt the provider rejects),
    or whose output stayed invalid through every try (error_class 'invalid_output')."""

    OK = "ok"
    CACHED = "cached"              # served from the response cache
    TRANSIENT = "transient"        # retried after a backoff
    RATE_LIMITED = "rate_limited"  # waited for, never counted against max_attempts
    PERMANENT = "permanent"        # final: not sent again (unless --retry-failed)
    AUTH = "auth"                  # credentials refused: the model stops, the request stays pending
    CONFIG = "config"              # the model or endpoint is misconfigured: the model stops, pending
    BATCH = "batch"                # answered through a provider batch (batch mode); the response is stored

    def __str__(self) -> str:
        return self.value


INVALID_OUTPUT = "invalid_output"  # the error_class of a final failure after every try was invalid


class AttemptRow(NamedTuple):
    """One row of `attempts` (field order = column order)."""

    attempt_id: str
    request_id: str
    session_id: str
    attempt_no: int
    started_at: datetime
    latency_ms: float
    outcome: str
    error_class: str | None
    http_status: int | None
    retry_after_s: float | None
    error_message: str | None
    prompt_tokens: int | None
    completion_tokens: int | None


class ResponseRow(NamedTuple):
    """One row of `responses` (field order = column order)."""

    request_id: str
    attempt_id: str
    text: str
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: float | None
    provider_model: str | None
    system_fingerprint: str | None
    latency_ms: float
    received_at: datetime


class DriftRow(NamedTuple):
    """One row of `drift_events`."""

    run: str
    model: str
    request_id: str
    field: str
    previous: str | None
    observed: str | None
    detected_at: datetime

"""Turns each try into rows for the writer: every attempt, and the response when there is one."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from typing import Protocol

from ..providers.base import Completion, ProviderFailure
from ..records import INVALID_OUTPUT, AttemptRow, Outcome, ResponseRow, WorkItem

MAX_ERROR_CHARS = 500


class RowSink(Protocol):
    """Where rows go: the batch writer, or a buffer that carries them to it (Ray workers)."""

    def add(self, row: AttemptRow | ResponseRow) -> None: ...


class AttemptRecorder:
    """Writes attempts and responses of one session."""

    def __init__(self, sink: RowSink, session_id: str):
        self.sink = sink
        self.session_id = session_id

    def failure(self, item: WorkItem, attempt_no: int, started: datetime, latency_ms: float,
                failure: ProviderFailure) -> None:
        self.sink.add(AttemptRow(
            uuid.uuid4().hex, item.request_id, self.session_id, attempt_no, started, latency_ms, failure.kind,
            failure.error_class, failure.http_status, failure.retry_after, failure.message[:MAX_ERROR_CHARS],
            None, None))

    def invalid(self, item: WorkItem, attempt_no: int, message: str) -> None:
        """The request's final failure after its output stayed invalid through every try."""
        self.sink.add(AttemptRow(
            uuid.uuid4().hex, item.request_id, self.session_id, attempt_no, now_utc(), 0.0,
            Outcome.PERMANENT.value, INVALID_OUTPUT, None, None,
            f"output still invalid after {attempt_no - 1} tries: {message}"[:MAX_ERROR_CHARS], None, None))

    def success(self, item: WorkItem, attempt_no: int, started: datetime, latency_ms: float,
                completion: Completion) -> None:
        attempt_id = uuid.uuid4().hex
        self.sink.add(AttemptRow(
            attempt_id, item.request_id, self.session_id, attempt_no, started, latency_ms, Outcome.OK.value, None,
            None, None, None, completion.prompt_tokens, completion.completion_tokens))
        self.sink.add(ResponseRow(
            item.request_id, attempt_id, completion.text, completion.finish_reason, completion.prompt_tokens,
            completion.completion_tokens, completion.cost_usd, completion.provider_model,
            completion.system_fingerprint, latency_ms, now_utc()))


def now_utc() -> datetime:
    return datetime.now(timezone.utc)

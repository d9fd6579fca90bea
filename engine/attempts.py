"""Turns each try into rows for the writer: every attempt, and the response when there is one."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

from ..providers.base import Completion, ProviderFailure
from ..storage.writer import BatchWriter
from .work import WorkItem

MAX_ERROR_CHARS = 500


class AttemptRecorder:
    """Writes attempts and responses of one session through the batch writer."""

    def __init__(self, writer: BatchWriter, session_id: str):
        self.writer = writer
        self.session_id = session_id

    def failure(self, item: WorkItem, attempt_no: int, started: datetime, latency_ms: float,
                failure: ProviderFailure) -> None:
        self.writer.add("attempts", (
            uuid.uuid4().hex, item.request_id, self.session_id, attempt_no, started, latency_ms, failure.kind,
            failure.error_class, failure.http_status, failure.retry_after, failure.message[:MAX_ERROR_CHARS],
            None, None))

    def success(self, item: WorkItem, attempt_no: int, started: datetime, latency_ms: float,
                completion: Completion) -> None:
        attempt_id = uuid.uuid4().hex
        self.writer.add("attempts", (
            attempt_id, item.request_id, self.session_id, attempt_no, started, latency_ms, "ok", None, None,
            None, None, completion.prompt_tokens, completion.completion_tokens))
        self.writer.add("responses", (
            item.request_id, attempt_id, completion.text, completion.finish_reason, completion.prompt_tokens,
            completion.completion_tokens, completion.cost_usd, completion.provider_model,
            completion.system_fingerprint, latency_ms, datetime.now(timezone.utc)))


def now_utc() -> datetime:
    return datetime.now(timezone.utc)

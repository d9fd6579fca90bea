"""The rows a batch result becomes: the same attempts and responses as a synchronous answer, with outcome
'batch', and attempt ids derived from (provider batch, request) so collecting a batch twice (a run killed
between storing its results and marking it collected) changes nothing."""

from __future__ import annotations

import hashlib
from datetime import datetime

from ...providers.base import Completion, ProviderFailure
from ...records import INVALID_OUTPUT, AttemptRow, Outcome, ResponseRow, WorkItem
from ..attempts import MAX_ERROR_CHARS, RowSink, now_utc


def attempt_id(provider_batch_id: str, request_id: str, kind: str = "") -> str:
    return hashlib.sha256(f"{provider_batch_id}:{request_id}:{kind}".encode()).hexdigest()[:32]


class BatchRows:
    """Writes one session's batch results to the writer."""

    def __init__(self, sink: RowSink, session_id: str):
        self.sink = sink
        self.session_id = session_id

    def answer(self, batch: str, item: WorkItem, attempt_no: int, submitted: datetime,
               completion: Completion) -> None:
        aid, received = attempt_id(batch, item.request_id), now_utc()
        latency_ms = (received - submitted).total_seconds() * 1000  # the batch's turnaround
        self.sink.add(AttemptRow(aid, item.request_id, self.session_id, attempt_no, submitted, latency_ms,
                                 Outcome.BATCH.value, None, None, None, None, completion.prompt_tokens,
                                 completion.completion_tokens),
                      ResponseRow(item.request_id, aid, completion.text, completion.finish_reason,
                                  completion.prompt_tokens, completion.completion_tokens, completion.cost_usd,
                                  completion.provider_model, completion.system_fingerprint, latency_ms, received))

    def failure(self, batch: str, item: WorkItem, attempt_no: int, submitted: datetime, failure: ProviderFailure,
                kind: str = "") -> None:
        latency_ms = (now_utc() - submitted).total_seconds() * 1000
        self.sink.add(AttemptRow(attempt_id(batch, item.request_id, kind), item.request_id, self.session_id,
                                 attempt_no, submitted, latency_ms, failure.kind, failure.error_class,
                                 failure.http_status, failure.retry_after, failure.message[:MAX_ERROR_CHARS],
                                 None, None))

    def invalid(self, batch: str, item: WorkItem, attempt_no: int, message: str) -> None:
        """The request's final failure after its answers stayed invalid through every try."""
        self.sink.add(AttemptRow(attempt_id(batch, item.request_id, "final"), item.request_id, self.session_id,
                                 attempt_no, now_utc(), 0.0, Outcome.PERMANENT.value, INVALID_OUTPUT, None, None,
                                 f"output still invalid after {attempt_no - 1} tries: {message}"[:MAX_ERROR_CHARS],
                                 None, None))

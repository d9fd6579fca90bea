"""The rows a batch result becomes: the same attempts and responses as a synchronous answer, with outcome
'batch', and attempt ids derived from (provider batch, request) so collecting a batch twice (a run killed
between storing its results and marking it collected) changes nothing."""

from __future__ import annotations

import hashlib
from datetime import datetime

from ...providers.base import Completion, ProviderFailure
from ...records import Outcome, WorkItem
from ..attempts import RowSink, answer_rows, failure_row, invalid_row, now_utc


def attempt_id(provider_batch_id: str, request_id: str, kind: str = "") -> str:
    return hashlib.sha256(f"{provider_batch_id}:{request_id}:{kind}".encode()).hexdigest()[:32]


class BatchRows:
    """Writes one session's batch results to the writer."""

    def __init__(self, sink: RowSink, session_id: str):
        self.sink = sink
        self.session_id = session_id

    def answer(self, batch: str, item: WorkItem, attempt_no: int, submitted: datetime,
               completion: Completion) -> None:
        received = now_utc()
        latency_ms = (received - submitted).total_seconds() * 1000  # the batch's turnaround
        self.sink.add(*answer_rows(attempt_id(batch, item.request_id), self.session_id, item, attempt_no, submitted,
                                   latency_ms, Outcome.BATCH.value, completion, received), prompt=item.prompt)

    def failure(self, batch: str, item: WorkItem, attempt_no: int, submitted: datetime, failure: ProviderFailure,
                kind: str = "") -> None:
        latency_ms = (now_utc() - submitted).total_seconds() * 1000
        self.sink.add(failure_row(attempt_id(batch, item.request_id, kind), self.session_id, item, attempt_no,
                                  submitted, latency_ms, failure))

    def invalid(self, batch: str, item: WorkItem, attempt_no: int, message: str) -> None:
        """The request's final failure after its answers stayed invalid through every try."""
        self.sink.add(invalid_row(attempt_id(batch, item.request_id, "final"), self.session_id, item, attempt_no,
                                  message))

"""Turns each try into rows for the writer: every attempt, and the response when there is one."""

from __future__ import annotations

import os
import random
from datetime import datetime, timezone
from typing import Protocol

from ..providers.base import Completion, ProviderFailure
from ..records import INVALID_OUTPUT, AttemptRow, Outcome, Prompt, ResponseRow, WorkItem

MAX_ERROR_CHARS = 500


class RowSink(Protocol):
    """Where rows go: the RowWriter, or a buffer that carries them to it (Ray workers). `prompt`: the prompt of
    the request the rows belong to, given with an answer (the writer hands it to the benchmarks' labellers, which
    then need not read it back from the DB)."""

    def add(self, *rows: AttemptRow | ResponseRow, prompt: Prompt | None = None) -> None: ...


class AttemptRecorder:
    """Writes attempts and responses of one session."""

    def __init__(self, sink: RowSink, session_id: str):
        self.sink = sink
        self.session_id = session_id

    def failure(self, item: WorkItem, attempt_no: int, started: datetime, latency_ms: float,
                failure: ProviderFailure) -> None:
        self.sink.add(failure_row(new_id(), self.session_id, item, attempt_no, started, latency_ms, failure))

    def invalid(self, item: WorkItem, attempt_no: int, message: str) -> None:
        """The request's final failure after its output stayed invalid through every try."""
        self.sink.add(invalid_row(new_id(), self.session_id, item, attempt_no, message))

    def success(self, item: WorkItem, attempt_no: int, started: datetime, latency_ms: float,
                completion: Completion) -> None:
        self.sink.add(*answer_rows(new_id(), self.session_id, item, attempt_no, started, latency_ms,
                                   Outcome.OK.value, completion, now_utc()), prompt=item.prompt)


# The rows of one try, shared by synchronous sends (AttemptRecorder) and batch results (engine/batch/rows.py).

def answer_rows(attempt_id: str, session_id: str, item: WorkItem, attempt_no: int, started: datetime,
                latency_ms: float, outcome: str, completion: Completion,
                received: datetime) -> tuple[AttemptRow, ResponseRow]:
    """An answered try: its attempt and its response."""
    return (AttemptRow(attempt_id, item.request_id, session_id, attempt_no, started, latency_ms, outcome, None,
                       None, None, None, completion.prompt_tokens, completion.completion_tokens),
            ResponseRow(item.request_id, attempt_id, completion.text, completion.finish_reason,
                        completion.prompt_tokens, completion.completion_tokens, completion.cost_usd,
                        completion.provider_model, completion.system_fingerprint, latency_ms, received))


def failure_row(attempt_id: str, session_id: str, item: WorkItem, attempt_no: int, started: datetime,
                latency_ms: float, failure: ProviderFailure) -> AttemptRow:
    return AttemptRow(attempt_id, item.request_id, session_id, attempt_no, started, latency_ms, failure.outcome.value,
                      failure.error_class, failure.http_status, failure.retry_after,
                      failure.message[:MAX_ERROR_CHARS], None, None)


def invalid_row(attempt_id: str, session_id: str, item: WorkItem, attempt_no: int, message: str) -> AttemptRow:
    """The request's final failure after its output stayed invalid through every try."""
    return AttemptRow(attempt_id, item.request_id, session_id, attempt_no, now_utc(), 0.0, Outcome.PERMANENT.value,
                      INVALID_OUTPUT, None, None,
                      f"output still invalid after {attempt_no - 1} tries: {message}"[:MAX_ERROR_CHARS], None, None)


_ids = random.Random()  # seeded from os.urandom: unique across processes without a syscall per id
os.register_at_fork(after_in_child=_ids.seed)  # a forked child must not repeat its parent's ids


def new_id() -> str:
    """A random 128-bit id, as uuid4().hex would give (uuid4 reads os.urandom for every id)."""
    return f"{_ids.getrandbits(128):032x}"


def now_utc() -> datetime:
    return datetime.now(timezone.utc)

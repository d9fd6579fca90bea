"""What a run came to: the counts an executor returns per model (SendCounts, SessionCounts), and the
outcome the runner reports (ModelOutcome, RunOutcome). The stored outcome of one attempt is records.Outcome."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class SendCounts:
    """One model's sending in one session (what an executor returns, and what progress shows)."""

    stored: int = 0
    failed: int = 0        # final failures stored (per-prompt: context length, invalid output...)
    gave_up: int = 0       # still failing after every transient retry: pending, resumable
    not_sent: int = 0      # never sent, or set aside (a stopped model, a configuration answer)
    retries: int = 0
    rate_limited: int = 0
    stopped: str | None = None  # why the model sends no more in this session: set through stop()
    last_errors: dict[str, str] = field(default_factory=dict)

    def error(self, error_class: str, message: str) -> None:
        self.last_errors[error_class] = message

    def stop(self, reason: str | None) -> None:
        """The one record of "this model has stopped" in a session, whoever decided it (the key's limits,
        the send gate, a batch refused): the first reason stays."""
        if reason and self.stopped is None:
            self.stopped = reason


def merged(a: SendCounts | None, b: SendCounts) -> SendCounts:
    """One model's counts from two senders (synchronous calls and batches) in one session."""
    if a is None:
        return b
    total = SendCounts(**{f: getattr(a, f) + getattr(b, f) for f in ("stored", "failed", "gave_up", "not_sent",
                                                                     "retries", "rate_limited")})
    total.stopped = a.stopped or b.stopped
    total.last_errors = {**a.last_errors, **b.last_errors}
    return total


@dataclass
class SessionCounts:
    """What an executor returns: SendCounts per model, and whether Ctrl-C or SIGTERM ended it early."""

    models: dict[str, SendCounts] = field(default_factory=dict)
    interrupted: bool = False


@dataclass
class ModelOutcome:
    """What a session did for one model, and what is still missing."""

    name: str
    planned: int
    already_done: int       # finished before this session (answers and final failures)
    answered_before: int = 0  # of those, answers
    cached: int = 0
    stored: int = 0
    failed: int = 0
    gave_up: int = 0
    not_sent: int = 0
    stopped: str | None = None
    last_errors: dict[str, str] = field(default_factory=dict)

    @property
    def missing(self) -> int:
        return self.gave_up + self.not_sent

    @property
    def answered(self) -> int:
        return self.answered_before + self.cached + self.stored

    def add(self, counts: SendCounts | None) -> None:
        """What this session sent (None: nothing was left to send)."""
        if counts is None:
            return
        self.stored, self.failed, self.gave_up = counts.stored, counts.failed, counts.gave_up
        self.not_sent, self.stopped, self.last_errors = counts.not_sent, counts.stopped, dict(counts.last_errors)


@dataclass
class RunOutcome:
    run: str
    db: str
    models: list[ModelOutcome]
    interrupted: bool = False
    warnings: list[str] = field(default_factory=list)
    batches_in_flight: int = 0  # provider batches left running (Ctrl-C): the same command collects them
    stage_of: str | None = None  # the run this is a later stage of (GAMA's judges); None: the run itself

    @property
    def complete(self) -> bool:
        """Every request has an answer or a per-prompt final failure, and no model has only failures."""
        return not self.interrupted and not self.batches_in_flight and all(m.missing == 0 and (m.answered > 0 or m.planned == 0)
                                            for m in self.models)

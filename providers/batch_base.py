"""What a provider batch adapter speaks: requests encoded for the provider's batch file or body, submit,
poll, results, cancel. Adapters only translate; the engine (engine/batch) owns the loop, the DB and retries.
Failures of the HTTP calls themselves are the same classified ProviderFailures as synchronous calls."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from ..records import WorkItem
from .base import Completion, ProviderFailure

# A request's result: an answer, a classified failure; a request without one was not processed
# (its batch expired or was cancelled first).
Result = Completion | ProviderFailure


@dataclass(frozen=True)
class BatchState:
    """A batch as its provider reports it."""

    ended: bool                 # no request will be processed any more
    provider_status: str        # the provider's own word (in_progress, finalizing, ended, expired, ...)
    done: int                   # requests processed so far
    total: int
    outcome: str | None = None  # once ended: completed, expired, cancelled or failed
    error: str | None = None    # why a batch failed (e.g. its file did not validate)


class BatchAdapter(Protocol):
    api: str                    # 'openai' | 'anthropic'
    api_base: str
    max_requests: int           # the provider's limits for one batch
    max_bytes: int
    price_source: str | None    # how answers are priced (pricing.batch_price_source)

    def encode(self, item: WorkItem) -> bytes:
        """One request as it goes into the batch (its size counts against max_bytes)."""

    async def upload(self, lines: list[bytes], tag: str) -> str | None:
        """Upload the batch's input where the API needs one (OpenAI: a JSONL file); its id, else None."""

    async def create(self, lines: list[bytes], input_file_id: str | None, tag: str) -> str:
        """Create the batch; the provider's batch id. `tag` is fairsweep's batch id (sent as metadata
        where the API has it)."""

    async def find(self, tag: str, created_after: datetime, total: int, known: set[str]) -> str | None:
        """A batch created by a run killed before it could record the provider's id, if it can be told apart."""

    async def status(self, provider_batch_id: str) -> BatchState: ...

    async def results(self, provider_batch_id: str) -> dict[str, Result]:
        """custom_id (= request_id) -> result, for every request the provider processed."""

    async def cancel(self, provider_batch_id: str) -> None: ...

    async def aclose(self) -> None: ...

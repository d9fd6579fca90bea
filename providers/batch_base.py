"""What a provider batch adapter speaks: requests encoded for the provider's batch file or body, submit,
poll, results, cancel. Adapters only translate; the engine (engine/batch) owns the loop, the DB and retries.
Failures of the HTTP calls themselves are the same classified ProviderFailures as synchronous calls."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

import aiohttp

from ..records import WorkItem
from .base import AuthError, Completion, ProviderFailure, TransientError
from .openai_compat import connection_failure

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


class BatchHTTP:
    """Base of the OpenAI-compatible and Anthropic batch adapters (subclasses set api_base, timeout_s,
    api_key_env, _key and implement _headers and _failure)."""

    api_base: str
    timeout_s: float
    api_key_env: str | None
    _key: str | None
    _session: aiohttp.ClientSession | None = None

    def _headers(self) -> dict[str, str]:
        raise NotImplementedError

    def _failure(self, status: int, raw: bytes, headers) -> ProviderFailure:
        raise NotImplementedError

    async def _call(self, method: str, path: str, **kwargs) -> bytes:
        if self.api_key_env and not self._key:
            raise AuthError(f"environment variable {self.api_key_env} is not set: export it with the API key",
                            error_class="auth_missing_key")
        if self._session is None:
            self._session = aiohttp.ClientSession(headers=self._headers())
        url = self.api_base + path
        try:
            async with self._session.request(method, url, timeout=aiohttp.ClientTimeout(total=self.timeout_s),
                                             **kwargs) as resp:
                raw = await resp.read()
                if resp.status != 200:
                    raise self._failure(resp.status, raw, resp.headers)
                return raw
        except aiohttp.ClientError as exc:
            raise connection_failure(exc, url) from None
        except asyncio.TimeoutError:
            raise TransientError(f"no answer from {url} within {self.timeout_s:g}s", error_class="timeout",
                                 endpoint=True) from None

    async def _json(self, method: str, path: str, **kwargs) -> dict:
        raw = await self._call(method, path, **kwargs)
        try:
            return json.loads(raw)
        except ValueError:
            raise TransientError(f"{method} {path}: HTTP 200 with an unusable body",
                                 error_class="malformed_body") from None

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

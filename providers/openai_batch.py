"""OpenAI-compatible Files + Batches: a JSONL file of chat-completion requests (custom_id = request id) is
uploaded, a batch created over it, polled, and its output and error files read back. Answers and errors
are parsed and classified exactly as the synchronous adapter does (providers/openai_compat.py)."""

from __future__ import annotations

import dataclasses
import json
import os
from datetime import datetime

import aiohttp

from ..records import WorkItem
from .base import ProviderFailure
from .batch_base import BatchHTTP, BatchState, Result
from .openai_compat import OpenAICompatProvider
from .pricing import batch_cost_usd, batch_price_source

ENDPOINT = "/v1/chat/completions"
TAG_KEY = "fairsweep_batch"
_ENDED = {"completed": "completed", "expired": "expired", "cancelled": "cancelled", "failed": "failed"}
_UNFINISHED = ("batch_expired", "batch_cancelled")


class OpenAIBatchAdapter(BatchHTTP):
    api = "openai"
    max_requests = 50_000
    max_bytes = 200 * 1024 * 1024

    def __init__(self, *, api_base: str, model: str, api_key_env: str | None, price_model: str | None,
                 timeout_s: float = 60.0):
        self.api_base = api_base.rstrip("/")
        self.model = model
        self.price_model = price_model
        self.price_source = batch_price_source(price_model)
        self.timeout_s = max(timeout_s, 60.0)  # files can be large: never less than a minute
        self.api_key_env = api_key_env
        self._key = os.environ.get(api_key_env) if api_key_env else None
        # The synchronous adapter classifies error bodies and parses answers; it never sends here.
        self._sync = OpenAICompatProvider(api_base=api_base, model=model, api_key_env=api_key_env,
                                          price_model=price_model)
        self._session: aiohttp.ClientSession | None = None

    def encode(self, item: WorkItem) -> bytes:
        body = {"model": self.model, "messages": list(item.prompt.messages), **item.params}
        line = {"custom_id": item.request_id, "method": "POST", "url": ENDPOINT, "body": body}
        return (json.dumps(line, ensure_ascii=False) + "\n").encode()

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._key}"} if self._key else {}

    def _failure(self, status: int, raw: bytes, headers) -> ProviderFailure:
        return self._sync._classify_status(status, raw, headers)

    async def upload(self, lines: list[bytes], tag: str) -> str | None:
        form = aiohttp.FormData()
        form.add_field("purpose", "batch")
        form.add_field("file", b"".join(lines), filename=f"{tag}.jsonl", content_type="application/jsonl")
        return (await self._json("POST", "/files", data=form))["id"]

    async def create(self, lines: list[bytes], input_file_id: str | None, tag: str) -> str:
        body = {"input_file_id": input_file_id, "endpoint": ENDPOINT, "completion_window": "24h",
                "metadata": {TAG_KEY: tag}}
        return (await self._json("POST", "/batches", json=body))["id"]

    async def find(self, tag: str, created_after: datetime, total: int, known: set[str]) -> str | None:
        listing = await self._json("GET", "/batches", params={"limit": "100"})
        for batch in listing.get("data") or []:
            if (batch.get("metadata") or {}).get(TAG_KEY) == tag:
                return batch["id"]
        return None

    async def status(self, provider_batch_id: str) -> BatchState:
        batch = await self._json("GET", f"/batches/{provider_batch_id}")
        counts = batch.get("request_counts") or {}
        status = str(batch.get("status"))
        errors = (batch.get("errors") or {}).get("data") or []
        return BatchState(ended=status in _ENDED, provider_status=status,
                          done=int(counts.get("completed") or 0) + int(counts.get("failed") or 0),
                          total=int(counts.get("total") or 0), outcome=_ENDED.get(status),
                          error="; ".join(str(e.get("message")) for e in errors)[:300] or None)

    async def results(self, provider_batch_id: str) -> dict[str, Result]:
        batch = await self._json("GET", f"/batches/{provider_batch_id}")
        found: dict[str, Result] = {}
        for file_id in (batch.get("output_file_id"), batch.get("error_file_id")):
            if file_id:
                for line in (await self._call("GET", f"/files/{file_id}/content")).decode().splitlines():
                    if line.strip():
                        self._read_line(json.loads(line), found)
        return found

    def _read_line(self, line: dict, found: dict[str, Result]) -> None:
        custom_id = line.get("custom_id")
        error = line.get("error") or {}
        if error.get("code") in _UNFINISHED:
            return  # never processed: back to pending
        response = line.get("response") or {}
        status = response.get("status_code")
        raw = json.dumps(response.get("body") or {"error": error}).encode()
        if status == 200:
            try:
                completion = self._sync._parse_body(raw)
            except ProviderFailure as failure:
                found[custom_id] = failure
                return
            found[custom_id] = dataclasses.replace(completion, cost_usd=batch_cost_usd(
                self.price_model, completion.prompt_tokens, completion.completion_tokens))
        else:
            found[custom_id] = self._sync._classify_status(int(status or 500), raw, {})

    async def cancel(self, provider_batch_id: str) -> None:
        await self._call("POST", f"/batches/{provider_batch_id}/cancel")


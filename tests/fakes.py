"""In-process stand-ins for unit tests of the engine: a provider that answers what you queue and records
what it was asked, and a sink that keeps the rows a recorder writes. Integration tests use the real
simulated HTTP server and a real DuckDB file instead."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Callable, Union

from fairsweep.providers.base import ChatRequest, Completion, ProviderFailure
from fairsweep.records import AttemptRow, Prompt, ResponseRow

# What a call returns: an answer, a failure to raise, or a function of the request giving either.
Reply = Union[Completion, ProviderFailure, Callable[[ChatRequest], Union[Completion, ProviderFailure]]]


class FakeProvider:
    """Answers calls from a queue, in order; when the queue is empty, with `default` (or fails the test
    loudly). `requests` lists every call it received."""

    def __init__(self, *replies: Reply, default: Reply | None = None, delay_s: float = 0.0):
        self.replies: deque[Reply] = deque(replies)
        self.default = default
        self.delay_s = delay_s
        self.requests: list[ChatRequest] = []
        self.closed = False

    def enqueue(self, *replies: Reply) -> "FakeProvider":
        self.replies.extend(replies)
        return self

    async def complete(self, request: ChatRequest) -> Completion:
        self.requests.append(request)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.replies:
            reply = self.replies.popleft()
        elif self.default is not None:
            reply = self.default
        else:
            raise AssertionError(f"FakeProvider: no reply queued for call {len(self.requests)}")
        if callable(reply) and not isinstance(reply, (Completion, ProviderFailure)):
            reply = reply(request)
        if isinstance(reply, ProviderFailure):
            raise reply
        return reply

    async def aclose(self) -> None:
        self.closed = True


class RowSink:
    """Keeps every row a recorder writes (what the batch writer would commit)."""

    def __init__(self) -> None:
        self.rows: list[AttemptRow | ResponseRow] = []
        self.prompts: dict[str, Prompt] = {}  # request_id -> the prompt given with its answer

    def add(self, *rows: AttemptRow | ResponseRow, prompt=None) -> None:
        self.rows.extend(rows)
        if prompt is not None:
            self.prompts[rows[0].request_id] = prompt

    def attempts(self) -> list[AttemptRow]:
        return [r for r in self.rows if isinstance(r, AttemptRow)]

    def responses(self) -> list[ResponseRow]:
        return [r for r in self.rows if isinstance(r, ResponseRow)]


def answer(text: str = "The man.", **usage) -> Completion:
    return Completion(text=text, finish_reason="stop", prompt_tokens=usage.get("prompt_tokens", 10),
                      completion_tokens=usage.get("completion_tokens", 3), cost_usd=usage.get("cost_usd"))

"""The batch loop: submit, poll with backoff, collect, send again what is worth sending again.

Every batch is committed to `batches` (status 'preparing', with its request ids) before the provider sees
it; the provider's id is recorded as soon as it answers. A run killed in between leaves a 'preparing'
batch: the next run first looks for it at the provider (find) and only creates it if it is not there.
Per-request results are classified as synchronous answers are: transient errors (and the unprocessed
requests of an expired batch) go into a next batch, permanent ones are stored, an invalid answer is
retried like a transient error. Requests of a cancelled batch stay pending for a later run.
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from dataclasses import dataclass, field

from ...config import ModelSpec, SweepConfig
from ...providers.base import AuthError, Completion, ProviderFailure, RateLimitedError, TransientError
from ...providers.batch_base import BatchState
from ...providers.registry import make_batch_adapter
from ...records import WorkItem
from ...storage.batches import BatchRecord, attached_provider_ids, live_batches, record_batch, update_batch
from ..attempts import now_utc
from ..run_outcome import SendCounts
from ..retry import Disposition, InvalidOutputError, OutputCheck, RetryPolicy, failure_disposition, retrying
from ..signals import cancel_on_sigterm
from .rows import BatchRows
from .split import split

MAX_BACKOFF = 10  # polls back off to at most this many times batch_poll_s while nothing changes


@dataclass
class Live:
    """A batch this session follows."""

    record: BatchRecord
    items: dict[str, WorkItem]   # request_id -> item, for the requests still to store
    lines: list[bytes] | None = None  # what to submit, while it is not submitted
    may_exist: bool = False      # a create was (maybe) sent: look for it before creating again
    cancelled_before: bool = False  # cancelled by `fairsweep batches cancel`: send the rest again now
    failures: int = 0            # submission attempts that failed
    unchanged: int = 0           # polls in a row without progress
    done: int = -1
    next_poll: float = 0.0


@dataclass
class ModelState:
    spec: ModelSpec
    adapter: object
    counts: SendCounts = field(default_factory=SendCounts)
    queue: list[WorkItem] = field(default_factory=list)


class BatchSender:
    """Sends the batch models' requests of one session and follows their batches to the end."""

    def __init__(self, conn, config: SweepConfig, specs: list[ModelSpec], writer, session_id: str,
                 policy: RetryPolicy, check: OutputCheck | None = None, gate=None):
        self.conn, self.run, self.writer, self.session_id = conn, config.run, writer, session_id
        self.poll_s, self.policy, self.check, self.gate = config.batch_poll_s, policy, check, gate
        self.models = {s.name: ModelState(s, make_batch_adapter(s)) for s in specs}
        self.rows = BatchRows(writer, session_id)
        self.live: list[Live] = []
        self.tries: dict[str, int] = {}
        self.interrupted = False

    # ------------------------------------------------------------------ the runner's three calls

    def attach(self, todo: dict[str, list[WorkItem]]) -> dict[str, list[WorkItem]]:
        """Follow the run's batches still in flight; returns `todo` without their requests."""
        taken: set[str] = set()
        for record in live_batches(self.conn, self.run, list(self.models)):
            ids = set(record.request_ids)
            mine = {i.request_id: i for i in todo.get(record.model, ()) if i.request_id in ids}
            self.live.append(Live(record, mine, may_exist=record.provider_batch_id is None,
                                  cancelled_before=record.status == "cancelling"))
            taken.update(record.request_ids)
            self._say(record, f"re-attached ({record.status}, {len(record.request_ids)} requests)")
        return {name: [i for i in items if i.request_id not in taken] for name, items in todo.items()}

    def submit(self, todo: dict[str, list[WorkItem]]) -> None:
        """Record and submit batches for the batch models' remaining requests (before synchronous sending)."""
        for name, state in self.models.items():
            if state.spec.batch:
                state.queue.extend(todo.get(name, ()))
        self._run(self._submit_queued())

    def wait(self) -> dict[str, SendCounts]:
        """Poll, collect and re-batch until no batch is left in flight (or Ctrl-C / SIGTERM)."""
        self._run(self._loop())
        return self.counts()

    def counts(self) -> dict[str, SendCounts]:
        for state in self.models.values():
            state.counts.not_sent += len(state.queue)
            state.queue.clear()
        return {name: state.counts for name, state in self.models.items()}

    def in_flight(self) -> list[BatchRecord]:
        return [live.record for live in self.live]

    def _run(self, coroutine) -> None:
        if self.interrupted:
            coroutine.close()
            return
        try:
            asyncio.run(self._guarded(coroutine))
        except (KeyboardInterrupt, asyncio.CancelledError):  # the batches keep running at the provider
            self.interrupted = True

    async def _guarded(self, coroutine) -> None:
        cancel_on_sigterm()
        try:
            await coroutine
        finally:
            for state in self.models.values():
                await state.adapter.aclose()

    # ------------------------------------------------------------------ submitting

    async def _submit_queued(self) -> None:
        for name, state in self.models.items():
            if not state.queue or state.counts.stopped:
                continue
            if self.gate is not None and (reason := self.gate.stopped(name)):
                state.counts.stop(reason)
                continue
            items, state.queue = state.queue, []
            encoded = [state.adapter.encode(item) for item in items]
            for group in split(encoded, state.adapter.max_requests, state.adapter.max_bytes):
                await self._new_batch(state, [items[i] for i in group], [encoded[i] for i in group])

    async def _new_batch(self, state: ModelState, items: list[WorkItem], lines: list[bytes]) -> None:
        adapter = state.adapter
        record = BatchRecord(uuid.uuid4().hex, self.run, state.spec.name, adapter.api, adapter.api_base,
                             "preparing", [i.request_id for i in items], self.session_id, now_utc())
        record_batch(self.conn, record)  # committed before the provider sees anything
        live = Live(record, {i.request_id: i for i in items}, lines)
        self.live.append(live)
        await self._ensure_submitted(live)

    async def _ensure_submitted(self, live: Live) -> None:
        """Create the provider batch of a 'preparing' record (or find the one a killed run created)."""
        record, state = live.record, self.models[live.record.model]
        adapter = state.adapter
        try:
            provider_id = None
            if live.may_exist:
                known = attached_provider_ids(self.conn, adapter.api_base)
                provider_id = await self._call(lambda: adapter.find(record.batch_id, record.created_at,
                                                                    len(record.request_ids), known))
            if provider_id is None:
                if live.lines is None:  # re-attached and not found: build it again from its requests
                    live.lines = [adapter.encode(live.items[r]) for r in record.request_ids if r in live.items]
                if record.input_file_id is None and (
                        file_id := await self._call(lambda: adapter.upload(live.lines, record.batch_id))):
                    record.input_file_id = file_id
                    update_batch(self.conn, record.batch_id, input_file_id=file_id)
                live.may_exist = True  # from here on the provider may hold it: look before creating again
                provider_id = await adapter.create(live.lines, record.input_file_id, record.batch_id)
        except (TransientError, RateLimitedError) as failure:
            live.failures += 1
            live.next_poll = time.monotonic() + self.poll_s
            if live.failures >= self.policy.max_attempts:
                self._give_up(live, failure, "gave_up")
            return
        except ProviderFailure as failure:  # auth, configuration, a refused batch: it would fail again
            self._give_up(live, failure, "stopped")
            return
        record.provider_batch_id, record.status, record.submitted_at = provider_id, "submitted", now_utc()
        update_batch(self.conn, record.batch_id, provider_batch_id=provider_id, status="submitted",
                     submitted_at=record.submitted_at, price_source=adapter.price_source)
        live.lines, live.next_poll = None, time.monotonic() + self.poll_s
        self._say(record, f"submitted {len(record.request_ids)} requests")

    def _give_up(self, live: Live, failure: ProviderFailure, how: str) -> None:
        """The batch never reached the provider: its requests stay pending."""
        counts = self.models[live.record.model].counts
        update_batch(self.conn, live.record.batch_id, status="failed", error=failure.message[:300], ended_at=now_utc())
        self.live.remove(live)
        counts.error(failure.error_class, failure.message)
        if how == "gave_up":
            counts.gave_up += len(live.items)
        else:
            counts.not_sent += len(live.items)
            counts.stop(f"batch submission refused: {failure.message}")
        self._say(live.record, f"not submitted: {failure.message}")

    # ------------------------------------------------------------------ polling and collecting

    async def _loop(self) -> None:
        while True:
            await self._submit_queued()
            if not self.live:
                return
            now = time.monotonic()
            due = [live for live in self.live if live.next_poll <= now]
            for live in due:
                if live.record.provider_batch_id is None:
                    await self._ensure_submitted(live)
                else:
                    await self._poll(live)
            if self.live and not any(s.queue for s in self.models.values() if not s.counts.stopped):
                await asyncio.sleep(max(0.0, min(live.next_poll for live in self.live) - time.monotonic()))

    async def _poll(self, live: Live) -> None:
        adapter = self.models[live.record.model].adapter
        try:
            state = await self._call(lambda: adapter.status(live.record.provider_batch_id))
            if state.ended:
                await self._collect(live, state)
                return
        except AuthError as failure:  # the batch keeps running; a later run with the key collects it
            self.live.remove(live)
            self.models[live.record.model].counts.stop(failure.message)
            return
        except ProviderFailure as failure:  # the provider is unwell: try again later, the batch is safe
            state = BatchState(False, f"unreachable ({failure.error_class})", live.done, len(live.record.request_ids))
        live.unchanged = 0 if state.done != live.done else live.unchanged + 1
        if state.done != live.done:
            self._say(live.record, f"{state.provider_status}: {state.done}/{state.total} done")
            update_batch(self.conn, live.record.batch_id, provider_status=state.provider_status)
        live.done = state.done
        live.next_poll = time.monotonic() + min(self.poll_s * 2 ** live.unchanged, MAX_BACKOFF * self.poll_s)

    async def _collect(self, live: Live, state: BatchState) -> None:
        record = live.record
        adapter = self.models[record.model].adapter
        results = {} if state.outcome == "failed" else await self._call(
            lambda: adapter.results(record.provider_batch_id))
        tally = {"succeeded": 0, "errored": 0, "unfinished": 0}
        for request_id in record.request_ids:
            item = live.items.get(request_id)
            if item is None:
                continue  # stored already (collected by a session killed before it could mark the batch)
            result = results.get(request_id)
            if result is None:
                tally["unfinished"] += 1
                self._unfinished(live, item, state)
            elif isinstance(result, Completion):
                tally["succeeded"] += 1
                self._answered(live, item, result)
            else:
                tally["errored"] += 1
                self._failed(live, item, result)
        self.writer.flush()  # the rows are committed before the batch is marked collected
        update_batch(self.conn, record.batch_id, status=state.outcome, provider_status=state.provider_status,
                     ended_at=now_utc(), error=state.error, **tally)
        self.live.remove(live)
        self._say(record, f"ended {state.outcome}: {tally['succeeded']} answers, {tally['errored']} errors, "
                          f"{tally['unfinished']} unprocessed")

    def _try(self, item: WorkItem) -> int:
        self.tries[item.request_id] = self.tries.get(item.request_id, 0) + 1
        return self.tries[item.request_id]

    def _answered(self, live: Live, item: WorkItem, completion: Completion) -> None:
        record, counts = live.record, self.models[live.record.model].counts
        attempt = self._try(item)
        reason = self.check(item, completion.text) if self.check is not None else None
        if reason is None:
            self.rows.answer(record.provider_batch_id, item, attempt, record.submitted_at or record.created_at,
                             completion)
            counts.stored += 1
            if self.gate is not None:
                self.gate.observe(record.model, item.request_id, completion.cost_usd, completion.provider_model,
                                  completion.system_fingerprint)
            return
        failure = InvalidOutputError(reason, completion.text)
        self.rows.failure(record.provider_batch_id, item, attempt, record.submitted_at or record.created_at, failure)
        if failure_disposition(failure, self.policy, attempt) is Disposition.FAILED:
            self.rows.invalid(record.provider_batch_id, item, attempt + 1, failure.message)
            counts.failed += 1
            counts.error(failure.error_class, failure.message)
        else:
            self._again(item, counts)

    def _failed(self, live: Live, item: WorkItem, failure: ProviderFailure) -> None:
        record, state = live.record, self.models[live.record.model]
        counts = state.counts
        rate_limited = isinstance(failure, RateLimitedError)
        attempt = self.tries.get(item.request_id, 0) + 1 if rate_limited else self._try(item)
        self.rows.failure(record.provider_batch_id, item, attempt, record.submitted_at or record.created_at, failure)
        counts.error(failure.error_class, failure.message)
        settled = failure_disposition(failure, self.policy, attempt)
        if settled is Disposition.FAILED:
            counts.failed += 1
        elif settled in (Disposition.STOP, Disposition.SET_ASIDE):  # no limiter here: the model stops at once
            counts.not_sent += 1
            counts.stop(failure.message)
        elif settled is Disposition.RETRY:
            self._again(item, counts)
        else:
            counts.gave_up += 1

    def _unfinished(self, live: Live, item: WorkItem, state: BatchState) -> None:
        """A request the provider never processed: an expired batch's go into the next batch, and so do
        those of a batch cancelled with `fairsweep batches cancel` before this session; those of a batch
        cancelled during this session (or that failed) stay pending for a later run."""
        counts = self.models[live.record.model].counts
        if state.outcome == "cancelled" and live.cancelled_before:
            self._again(item, counts)  # the user cancelled that batch and has now asked for the run again
        elif state.outcome == "expired":
            failure = TransientError(f"batch {live.record.provider_batch_id} expired before this request ran",
                                     error_class="batch_expired")
            self.rows.failure(live.record.provider_batch_id, item, self.tries.get(item.request_id, 0) + 1,
                              live.record.submitted_at or live.record.created_at, failure, "expired")
            self._again(item, counts)
        else:
            counts.not_sent += 1
            if state.error:
                counts.stop(f"batch {live.record.provider_batch_id} failed: {state.error}")

    def _again(self, item: WorkItem, counts: SendCounts) -> None:
        state = self.models[item.model]
        if counts.stopped:
            counts.not_sent += 1
        else:
            counts.retries += 1
            state.queue.append(item)

    # ------------------------------------------------------------------ plumbing

    async def _call(self, make):
        """make() -> one HTTP exchange with the provider, through the one retry loop (engine/retry.py):
        transient failures up to max_attempts with backoff, rate limits as long as the provider asks (its
        retry-after honoured). Only for calls that are safe to repeat: a batch create is never repeated
        blindly (see _ensure_submitted)."""
        async for attempt in retrying(self.policy, paced=False):
            with attempt:
                return await make()

    @staticmethod
    def _say(record: BatchRecord, message: str) -> None:
        """One line per change, to stderr: batches take minutes to hours, a bar would say little."""
        name = record.provider_batch_id or record.batch_id[:12]
        print(f"batch {name} ({record.model}): {message}", file=sys.stderr, flush=True)

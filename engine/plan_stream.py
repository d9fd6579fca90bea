"""Plan while sending: a session's plan is written in steps while its first requests are already out.

The planner writes the plan to DuckDB a step at a time (a slice of the prompts for one model, one
transaction each, slice-major over the models so that every model can start after its first step). In the
executor's event loop, `PlanFeed.run` tops up each model's pending requests a window at a time from the part
of the plan already committed: what is finished (stored answers, final failures) is left out, what the
response cache answers is served from it, the rest goes to the executor. Nothing is held for the whole plan:
a model's pending requests stay within a window or two, so the memory of a run does not grow with its plan.

A run killed while planning left whole steps in the DB (each is a transaction): the next run looks up what
each model has planned, writes only what is missing (each request once: the plan table has no key, whose
index would grow with the plan and stay in memory) and sends only what is not finished.
"""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import datetime, timezone
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Callable, Iterator

from ..config import ModelSpec, SweepConfig, env_int
from ..records import Prompt, WorkItem
from ..storage.cache import serve_from_cache
from ..storage.checkpoint import answered_count, plan_chunk, remaining
from ..storage.memory import plan_written
from .run_outcome import ModelOutcome
from .work import plan_items

if TYPE_CHECKING:
    from .opening import DbOpening

PLAN_ROWS = 32  # requests in the first planned step (one transaction, ~1 ms; 256 took ~15 ms more of the first
                # request's start, hashing and storing prompts the first window did not need) ...
MAX_PLAN_ROWS = 1024  # ... doubling per slice up to this: fewer transactions, no long stall of the loop
IDLE_PLAN_ROWS = 4096  # per step once nothing is left to feed (every model fed or stopped): nothing waits ...
IDLE_FROM = 200_000  # ... if this many requests are left to plan. A step that large goes in through NumPy
                     # (storage/bulk.py COLUMNAR_FROM), ~4.6 us per request faster than lists; below this, the
                     # ~15 MB NumPy adds to the run (94,080 answers: 185-186 against 190-198 MB peak) and its
                     # import cost more than they save
FEED_PER_SLOT = 8  # a window handed to the executor: 8 requests per slot of max_concurrency (64 to 512);
                   # topped up when fewer than 2 per slot wait: a model holds ~10 per slot, whatever its plan
POLL_S = 0.02     # how often the feed looks again while every model has enough, or waits for the planner
FIRST_SEND_S = 0.1  # after the first windows, the loop is left to the executor until an answer comes back or
                    # this long: a plan step (tens of ms) taken at once would hold the first requests on their
                    # way out (connect, write), and the time to the first request would grow with the plan

# A step of the plan: (model, how many of its prompts are planned with it, its requests, their distinct prompts).
PlanStep = tuple[str, int, list[WorkItem], list[Prompt]]


class Planner:
    """Writes the whole plan, a step per call of `step()`; `planned[model]`: how many prompts of it are
    committed (or handed out before a new DB opened, and written once it has). A new run is written
    slice-major (every model starts after one step); a resumed one model by model, writing only what its
    earlier sessions did not (looked up per model: a finished run plans in the time it takes to read its ids).
    It runs in the event loop between other work, never in a thread of its own: a CPU-bound thread beside the
    event loop would make every socket call of the loop wait for the GIL."""

    def __init__(self, conn, run: str, prompts: Sequence[Prompt], specs: list[ModelSpec], step_rows: int = PLAN_ROWS,
                 *, resumed: bool = False, max_rows: int = MAX_PLAN_ROWS, opening: "DbOpening | None" = None):
        self._cursor = conn.cursor()
        self._opening = opening  # a new DB opening beside the run (engine/opening.py), else None
        self._held: list[tuple[list[WorkItem], list[Prompt]]] = []  # steps handed out before it was open
        self._holding = opening is not None
        self._lock = threading.Lock()  # the held steps: handed out here, written by the opening thread
        if opening is not None:
            opening.on_open(self._write_held)
        self.run_name, self.prompts, self.specs = run, prompts, specs
        self._samples = max((s.samples for s in specs), default=1)
        self.step_prompts = max(1, step_rows // self._samples)
        self._max_prompts = max(self.step_prompts, max_rows // self._samples)
        self.planned = {s.name: 0 for s in specs}
        self.done = False
        self._steps = self._plan_models() if resumed else self._plan_slices()

    def step(self) -> bool:
        """Write the next step (one transaction); False when there was nothing to do. While a new DB is still
        opening, the first slice (a step per model) is planned and handed out unwritten: nothing that waits for
        the DB holds the first requests. The opening thread writes it as the DB opens, before any answer is
        committed (an answer's labels are derived from its planned request)."""
        with self._lock:
            if self._holding:
                if self._opening.ready:  # it ended without writing them: it failed, and this raises its error
                    self._opening.wait()
                if self.done or len(self._held) >= len(self.specs):
                    return False
                return self._next_step(hold=True)
        return self._next_step(hold=False)

    def _next_step(self, hold: bool) -> bool:
        step = next(self._steps, None)
        if step is None:
            if not self.done and not hold:  # (held steps are one per model: the end of a plan is never held)
                plan_written(self._cursor)  # the smaller margin from now on
            self.done = True
            return False
        name, upto, items, prompts = step
        if hold:
            self._held.append((items, prompts))
        elif items:
            plan_chunk(self._cursor, items, prompts)
        self.planned[name] = upto
        return True

    def _write_held(self, conn) -> None:
        """In the opening thread, as the new DB opens: the steps handed out so far; the next are written here."""
        with self._lock:
            for items, prompts in self._held:
                if items:
                    plan_chunk(conn, items, prompts)
            self._held.clear()
            self._holding = False

    def hurry(self) -> None:
        """Nothing waits for the event loop: larger steps from now on, if much of the plan is left."""
        if self._left() >= IDLE_FROM:
            self._max_prompts = max(self._max_prompts, IDLE_PLAN_ROWS // self._samples)
        self.step_prompts = self._max_prompts

    def _left(self) -> int:
        """Requests not planned yet (at most: a resumed plan skips the ones its earlier sessions wrote)."""
        return sum(len(self.prompts) - planned for planned in self.planned.values()) * self._samples

    def finish(self) -> None:
        if self._opening is not None:
            self._opening.wait()  # a new DB still opening: its held steps are written then
        self.hurry()
        while self.step():
            pass

    def close(self) -> None:
        self.done = True
        self._cursor.close()

    def _plan_models(self) -> Iterator[PlanStep]:
        for spec in self.specs:
            planned = {r[0] for r in self._cursor.execute(
                "SELECT request_id FROM requests WHERE run = ? AND model = ?", [self.run_name, spec.name]).fetchall()}
            start = 0
            while start < len(self.prompts):
                chunk = self.prompts[start:start + self.step_prompts]
                items = [i for i in plan_items(self.run_name, spec, chunk, start) if i.request_id not in planned]
                start += len(chunk)
                yield spec.name, start, items, _distinct([i.prompt for i in items])
                self.step_prompts = min(2 * self.step_prompts, self._max_prompts)

    def _plan_slices(self) -> Iterator[PlanStep]:
        start = 0
        while start < len(self.prompts):
            chunk = self.prompts[start:start + self.step_prompts]
            for k, spec in enumerate(self.specs):
                yield (spec.name, start + len(chunk), plan_items(self.run_name, spec, chunk, start),
                       _distinct(chunk) if k == 0 else [])
            start += len(chunk)
            self.step_prompts = min(2 * self.step_prompts, self._max_prompts)


async def _let_out(answered: Callable[[], bool]) -> None:
    """Leave the event loop to the executor until `answered()` or FIRST_SEND_S (see FIRST_SEND_S)."""
    deadline = time.monotonic() + FIRST_SEND_S
    while not answered() and time.monotonic() < deadline:
        await asyncio.sleep(0.002)


def _distinct(prompts: Sequence[Prompt]) -> list[Prompt]:
    seen: dict[tuple, Prompt] = {}
    for p in prompts:
        seen.setdefault((p.benchmark, p.key, p.prompt_hash), p)
    return list(seen.values())


class PlanFeed:
    """Per model, the planned requests still to send (`pending`, the deques the executor takes from),
    topped up from the committed plan; the outcome so far of each model (`outcomes`, `totals`)."""

    def __init__(self, conn, config: SweepConfig, prompts: Sequence[Prompt], specs: list[ModelSpec],
                 retry_failed: tuple[str, ...] | None, session_id: str, *, step_rows: int | None = None,
                 opening: "DbOpening | None" = None, replayed: bool = False):
        """`opening`: the DB is new, created by this session beside its first requests (engine/opening.py), so it
        holds nothing yet. `replayed`: a killed run's journal was replayed as the DB opened: it may hold answers
        of this run planned by no session (sent before that run's DB was open)."""
        new_db = opening is not None
        self.run_name, self.prompts, self.specs = config.run, prompts, specs
        self.retry_failed, self.session_id = retry_failed, session_id
        self._cursor = conn.cursor()
        self.started = datetime.now(timezone.utc)
        # A run with nothing planned or replayed before this session has nothing finished: no need to look it up.
        self.fresh = new_db or (not replayed and not conn.execute(
            "SELECT EXISTS (SELECT 1 FROM requests WHERE run = ?)", [config.run]).fetchone()[0])
        # Only answers stored before this session serve from the cache: none, no need to look.
        self.cache_filled = not new_db and conn.execute("SELECT EXISTS (SELECT 1 FROM responses)").fetchone()[0]
        rows = step_rows or env_int("FAIRSWEEP_PLAN_ROWS")  # set: every step this size (tests slow a plan down)
        self.planner = Planner(conn, config.run, prompts, specs, rows or PLAN_ROWS, resumed=not self.fresh,
                               max_rows=rows or MAX_PLAN_ROWS, opening=opening)
        self.pending: dict[str, deque[WorkItem]] = {s.name: deque() for s in specs}
        self.outcomes = [ModelOutcome(s.name, len(prompts) * s.samples, 0) for s in specs]
        self._outcome = {o.name: o for o in self.outcomes}
        self.totals = {o.name: (o.planned, 0) for o in self.outcomes}
        self.fed = {s.name: 0 for s in specs}
        self._next = {s.name: 0 for s in specs}  # the next prompt to feed, per model
        self._finished: set[str] = set()
        self._left: dict[str, set[str]] = {}  # per looked-up model: the ids still to send
        self._events: dict[str, asyncio.Event] = {}
        self._stepped_ahead = False

    # ---------------------------------------------------------------- the runner's side

    def plan_ahead(self) -> None:
        """Write the plan's first step now, before the executor starts: the first request then waits only for
        what is left of the start-up (e.g. the adapters' modules, imported in the background). run() feeds
        that step before it takes the next one."""
        if not self._stepped_ahead:
            self.planner.step()
            self._stepped_ahead = True

    def finish_plan(self) -> None:
        """Write what is left of the plan (the session ended early: every model stopped, say)."""
        self.planner.finish()

    def close(self) -> None:
        """Stop planning (a plan cut short is completed by the next run) and release the cursors."""
        if self._cursor is not None:
            self.planner.close()
            self._cursor.close()
            self._cursor = None

    def unfed(self, name: str) -> int:
        """Planned requests of a model never looked at in this session (it stopped, or the run did)."""
        o = self._outcome[name]
        return max(0, o.planned - o.already_done - o.cached - self.fed[name])

    # ---------------------------------------------------------------- the executor's side

    @property
    def finished(self) -> bool:
        return len(self._finished) == len(self.specs)

    async def run(self, stopped: Callable[[str], "str | None"] = lambda name: None,
                  wake: Callable[[], None] = lambda: None, answered: Callable[[], bool] = lambda: False) -> None:
        """Top up every model's pending requests until its plan is fed (or `stopped(model)` says it must not
        send any more); `wake()` after each top-up. After the first windows, the next plan step waits until
        `answered()` (some request came back) or FIRST_SEND_S."""
        low = {s.name: 2 * s.max_concurrency for s in self.specs}
        planner = self.planner
        first_windows = True
        while not (self.finished and planner.done):
            if self._stepped_ahead:  # the first step was written before the loop started: feed it first
                self._stepped_ahead = False
                progressed = not planner.done
            else:
                progressed = planner.step()  # one step of the plan, then answers and windows
            for spec in self.specs:
                name = spec.name
                if name in self._finished:
                    continue
                if stopped(name) or self._next[name] >= len(self.prompts):
                    self._finish(name)
                elif len(self.pending[name]) >= low[name]:
                    continue
                elif planner.planned[name] > self._next[name]:
                    self._feed_window(spec)
                    progressed = True
                else:
                    continue
                wake()
                await asyncio.sleep(0)  # answers that arrived meanwhile are read between windows
            if self.finished:
                planner.hurry()
            if first_windows and any(self.fed.values()):
                first_windows = False
                await _let_out(answered)
            else:
                await asyncio.sleep(0 if progressed else POLL_S)
        wake()

    async def primed(self) -> None:
        """Wait until some request is pending or every model is fed (run() must be running)."""
        while not self.finished and not any(self.pending.values()):
            await asyncio.sleep(POLL_S)

    async def wait_items(self, name: str) -> bool:
        """Wait until the model has a pending request (True) or never will in this session (False)."""
        while not self.pending[name]:
            if name in self._finished:
                return False
            event = self._events.setdefault(name, asyncio.Event())
            event.clear()
            await event.wait()
        return True

    def _feed_window(self, spec: ModelSpec) -> None:
        name, outcome = spec.name, self._outcome[spec.name]
        start = self._next[name]
        if start == 0 and (not self.fresh or (spec.cache and self.cache_filled)):
            self._left[name] = self._look_up(spec)
        window = min(512, max(64, FEED_PER_SLOT * spec.max_concurrency))
        end = min(start + max(1, window // spec.samples), self.planner.planned[name])
        items = plan_items(self.run_name, spec, self.prompts[start:end], start)
        self._next[name] = end
        if (left := self._left.get(name)) is not None:
            items = [i for i in items if i.request_id in left]
            left.difference_update(i.request_id for i in items)
        self.pending[name].extend(items)
        self.fed[name] += len(items)
        self._wake(name)

    def _look_up(self, spec: ModelSpec) -> set[str]:
        """A resumed model (or one the cache may answer): what is finished and what the cache serves, in one
        query each over its whole plan, as a session that plans first does; returns the ids left to send
        (only they are kept: a finished model keeps nothing)."""
        outcome = self._outcome[spec.name]
        items = plan_items(self.run_name, spec, self.prompts)
        todo = items
        if not self.fresh:
            todo = remaining(self._cursor, items, self.retry_failed)
            outcome.already_done = len(items) - len(todo)
            outcome.answered_before = answered_count(self._cursor, items) if outcome.already_done else 0
        if spec.cache and todo and self.cache_filled:
            still = serve_from_cache(self._cursor, todo, self.session_id, self.started)
            outcome.cached = len(todo) - len(still)
            todo = still
        self.totals[spec.name] = (outcome.planned, outcome.already_done + outcome.cached)
        return {i.request_id for i in todo}

    def _finish(self, name: str) -> None:
        self._finished.add(name)
        self._wake(name)

    def _wake(self, name: str) -> None:
        if (event := self._events.get(name)) is not None:
            event.set()

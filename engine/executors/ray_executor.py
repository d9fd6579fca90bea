"""The Ray executor: stateless workers run the ordinary Scheduler over shards; the driver owns the DB.

The driver (this process) cuts the runner's remaining work into small shards, feeds them to N worker
actors (two shards in flight per worker, so that none idles at a shard's tail), commits the rows they
stream back through the runner's one RowWriter, and when a worker dies re-queues the unsettled items
of its shards and starts a replacement. Limits hold cluster-wide through one LimiterActor per provider
key (ray_limiter.py). Workers read API keys from their own environment: secrets never travel.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import time
from dataclasses import dataclass

import ray
from ray.exceptions import RayActorError, RayTaskError, WorkerCrashedError

from ...config import ModelSpec, env_int
from ...errors import ConfigError, FairsweepError
from ...providers.registry import make_provider
from ..run_outcome import SessionCounts
from ..progress import ProgressReporter, progress_every_s
from ..retry import OutputCheck, RetryPolicy
from ..signals import cancel_on_sigterm
from .job import SweepJob
from .dispatch import ShardBook
from .ray_limiter import ClusterLimiter, LimiterActor
from .shards import Shard, run_shard

STREAM_S = 0.1  # a worker sends its new rows at least this often
LANES_PER_WORKER = 2
DEFAULT_SHARD_SIZE = 64
DRAIN_S = 5.0  # on Ctrl-C, how long the driver waits for workers to hand over what arrived
WORKER_DIED = (RayActorError, WorkerCrashedError)


class ShardWorker:
    """A Ray actor: runs shards with the local engine, keeps only caches (HTTP pools, leased slots)."""

    def __init__(self, worker_id: str, limiters: dict, caps: dict[str, int], policy: RetryPolicy,
                 check: OutputCheck | None):
        self.worker_id = worker_id
        self._limiters = {key: ClusterLimiter(actor, worker_id, caps[key]) for key, actor in limiters.items()}
        self._providers: dict[str, object] = {}
        self._running: set[asyncio.Task] = set()
        self._policy, self._check = policy, check

    async def pid(self) -> int:
        return os.getpid()

    async def run(self, shard: Shard):
        spec = shard.spec
        cluster = self._limiters[spec.limiter_key()]
        if spec.name not in self._providers:
            self._providers[spec.name] = make_provider(spec)  # reads the API key from this node's env
        async for update in run_shard(shard, self._providers[spec.name], cluster.for_model(spec.name),
                                      self._policy, self._check, stream_s=STREAM_S, running=self._running):
            yield update

    async def stop(self) -> None:
        """Ctrl-C on the driver: stop sending; each running shard then sends what arrived and ends."""
        for task in list(self._running):
            task.cancel()

    async def close(self) -> None:
        for provider in self._providers.values():
            with contextlib.suppress(Exception):
                await provider.aclose()


RemoteWorker = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(ShardWorker)
RemoteLimiter = ray.remote(num_cpus=0, max_restarts=0)(LimiterActor)


@dataclass
class WorkerRef:
    actor: object
    worker_id: str
    generation: int


class WorkerPool:
    """The limiter actors and the worker actors of one session."""

    def __init__(self, job: SweepJob, caps: dict[str, int], size: int):
        self.job, self.caps, self.size = job, caps, size
        self.limiters: dict[str, object] = {}
        self.workers: list[WorkerRef] = []
        self.pids: list[int] = []
        self.replaced = 0

    async def start(self) -> None:
        for spec in self.job.specs:  # the first spec naming a key declares its limits, as locally
            if spec.limiter_key() not in self.limiters:
                self.limiters[spec.limiter_key()] = RemoteLimiter.remote(spec.rpm, spec.tpm, spec.max_concurrency,
                                                                         self.job.breaker)
        self.workers = [self._spawn(i, 0) for i in range(self.size)]
        self.pids[:] = await asyncio.gather(*(w.actor.pid.remote() for w in self.workers))

    def _spawn(self, index: int, generation: int) -> WorkerRef:
        worker_id = f"w{index}.{generation}"
        actor = RemoteWorker.remote(worker_id, self.limiters, self.caps, self.job.policy, self.job.check)
        return WorkerRef(actor, worker_id, generation)

    async def replace(self, index: int, dead: WorkerRef) -> None:
        """Once per death (both lanes of a worker see it): kill for sure, free its slots, start anew."""
        if self.workers[index] is not dead:
            return
        with contextlib.suppress(Exception):
            ray.kill(dead.actor, no_restart=True)  # "unavailable" may still be alive: make sure it is not
        self.workers[index] = self._spawn(index, dead.generation + 1)
        self.replaced += 1
        await asyncio.gather(*(lim.forget.remote(dead.worker_id) for lim in self.limiters.values()))

    async def stop_all(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.gather(*(w.actor.stop.remote() for w in self.workers),
                                                  return_exceptions=True), 2.0)

    async def snapshots(self) -> dict[str, dict]:
        keys = list(self.limiters)
        with contextlib.suppress(Exception):
            found = await asyncio.wait_for(asyncio.gather(*(self.limiters[k].snapshot.remote() for k in keys)), 5.0)
            return dict(zip(keys, found))
        return {}

    async def shutdown(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.gather(*(w.actor.close.remote() for w in self.workers),
                                                  return_exceptions=True), 2.0)
        for actor in [w.actor for w in self.workers] + list(self.limiters.values()):
            with contextlib.suppress(Exception):
                ray.kill(actor, no_restart=True)


class RayExecutor:
    """Runs a session on a Ray cluster. `address` None: RAY_ADDRESS, a cluster started on this machine
    with `ray start`, or else a new local one. num_workers defaults to $FAIRSWEEP_RAY_WORKERS, else the
    cluster's free CPUs; worker_concurrency caps each worker's requests in flight per provider key."""

    name = "ray"

    def __init__(self, address: str | None = None, *, num_workers: int | None = None,
                 shard_size: int = DEFAULT_SHARD_SIZE, worker_concurrency: int | None = None):
        self.address = address
        self.num_workers = num_workers or env_int("FAIRSWEEP_RAY_WORKERS")
        self.shard_size = shard_size
        self.worker_concurrency = worker_concurrency
        self.worker_pids: list[int] = []
        self.stats: dict = {}

    def execute(self, job: SweepJob) -> SessionCounts:
        if job.feed is None and not any(job.todo.values()):
            return SessionCounts()  # nothing left: no need for a cluster
        connected_here = self._connect()
        book = self._book(job)
        interrupted = False
        try:
            asyncio.run(self._drive(job, book))
        except (KeyboardInterrupt, asyncio.CancelledError):  # Ctrl-C, or SIGTERM cancelling the loop
            interrupted = True
        finally:
            if connected_here:
                ray.shutdown()
        return SessionCounts(book.counts(), interrupted)

    def _connect(self) -> bool:
        if ray.is_initialized():
            return False
        kwargs: dict = {"address": self.address}
        if runtime_env := os.environ.get("FAIRSWEEP_RAY_RUNTIME_ENV"):
            kwargs["runtime_env"] = _runtime_env(runtime_env)
        try:
            ray.init(**kwargs)
        except Exception as exc:  # ConnectionError, a bad address, a version mismatch...
            where = f"at {self.address}" if self.address else "(none given, none found)"
            raise ConfigError(f"cannot use a Ray cluster {where}: {str(exc).splitlines()[0][:200]}; start one "
                              f"with `ray start --head` and pass its address with --ray-address") from None
        return True

    def _workers(self) -> int:
        free = int(ray.available_resources().get("CPU", 0))
        if self.num_workers is not None and self.num_workers > free:
            raise ConfigError(f"{self.num_workers} Ray workers asked for, but the cluster has {free} free CPU(s): "
                              f"set FAIRSWEEP_RAY_WORKERS to at most {free}, or add nodes (`ray start --address ...`)")
        if free < 1:
            raise ConfigError("the Ray cluster has no free CPU for a worker: stop other jobs or add nodes")
        return self.num_workers or free

    def _caps(self, specs: list[ModelSpec]) -> dict[str, int]:
        caps: dict[str, int] = {}
        for spec in specs:
            caps.setdefault(spec.limiter_key(), min(spec.max_concurrency, self.worker_concurrency or spec.max_concurrency))
        return caps

    def _book(self, job: SweepJob) -> ShardBook:
        caps = self._caps(job.specs)
        return ShardBook(job.specs, job.todo, job.writer, job.session_id, self.shard_size,
                         lambda s: dataclasses.replace(s, max_concurrency=min(s.max_concurrency, caps[s.limiter_key()])),
                         gate=job.gate, feed=job.feed)

    async def _drive(self, job: SweepJob, book: ShardBook) -> None:
        cancel_on_sigterm()
        feeding = None
        if job.feed is not None:  # planning goes on: feed the book while the workers send
            feeding = asyncio.create_task(_feed(job.feed, book))
            primed = asyncio.create_task(job.feed.primed())
            await asyncio.wait({feeding, primed}, return_when=asyncio.FIRST_COMPLETED)
            primed.cancel()
            if feeding.done():
                feeding.result()  # the plan failed: its error
        try:
            if any(book.pending.values()):
                await self._send(job, book)
            if feeding is not None:
                await feeding
        finally:
            if feeding is not None and not feeding.done():
                feeding.cancel()
                await asyncio.gather(feeding, return_exceptions=True)

    async def _send(self, job: SweepJob, book: ShardBook) -> None:
        pool = WorkerPool(job, self._caps(job.specs), self._workers())
        self.worker_pids = pool.pids
        started = time.perf_counter()
        try:
            await pool.start()
            self.stats["startup_s"] = time.perf_counter() - started
            async with ProgressReporter(list(book.tallies.values()), job.totals, enabled=job.progress,
                                        spend=job.gate and job.gate.spent, every_s=progress_every_s()):
                await self._run_lanes(book, pool)
        finally:
            self.stats.update(workers=pool.size, shards=dict(book.shards_done), requeued=book.requeued,
                              replaced=pool.replaced, limiters=await pool.snapshots())
            await pool.shutdown()

    async def _run_lanes(self, book: ShardBook, pool: WorkerPool) -> None:
        lanes = [asyncio.create_task(self._lane(book, pool, i)) for i in range(pool.size)
                 for _ in range(LANES_PER_WORKER)]
        try:
            done, _ = await asyncio.wait(lanes, return_when=asyncio.FIRST_EXCEPTION)
            for lane in done:
                if (exc := lane.exception()) is not None:
                    raise _unwrap(exc)
        except asyncio.CancelledError:  # Ctrl-C / SIGTERM: stop sending, take what arrived, then stop
            book.close()
            await pool.stop_all()
            await asyncio.wait(lanes, timeout=DRAIN_S)
            raise
        finally:
            book.close()
            for lane in lanes:
                lane.cancel()
            await asyncio.gather(*lanes, return_exceptions=True)

    async def _lane(self, book: ShardBook, pool: WorkerPool, index: int) -> None:
        while (shard := await book.next_shard()) is not None:
            worker = pool.workers[index]
            try:
                async for ref in worker.actor.run.options(num_returns="streaming").remote(shard):
                    update = await ref
                    book.apply(shard, update)
                    if update.end is not None:
                        break
                book.finish(shard, worker.worker_id)
            except WORKER_DIED as exc:
                if isinstance(exc, RayTaskError):
                    raise  # the worker lives but failed (e.g. it lost a limiter actor): not a retry case
                book.requeue(shard)  # unsettled items are retried by whichever worker is free next
                await pool.replace(index, worker)


async def _feed(feed, book: ShardBook) -> None:
    try:
        await feed.run(stopped=book.stopped, wake=book.wake)
    except BaseException:
        book.close()  # the plan failed: lanes waiting for shards stop; its error is raised by the driver
        raise


def _unwrap(exc: BaseException) -> BaseException:
    """A user-fixable error raised on a worker (e.g. a bad api_base) reads as if raised here."""
    if isinstance(exc, RayTaskError) and isinstance(exc.cause, FairsweepError):
        return exc.cause
    return exc


def _runtime_env(text: str) -> dict:
    """$FAIRSWEEP_RAY_RUNTIME_ENV: a JSON object for ray.init(runtime_env=...). Its value is never echoed."""
    try:
        value = json.loads(text)
        problem = None if isinstance(value, dict) else f"a JSON {type(value).__name__}, not an object"
    except json.JSONDecodeError as exc:
        problem = f"not valid JSON: {exc.msg} at character {exc.pos}"
    if problem:
        raise ConfigError(f"FAIRSWEEP_RAY_RUNTIME_ENV is {problem}: set it to a JSON object, e.g. "
                          f"'{{\"pip\": [\"fairsweep[ray]==X.Y.Z\"]}}', or unset it")
    return value

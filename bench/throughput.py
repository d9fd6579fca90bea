"""Throughput of the full MRNI-BB run (4,704 prompts) against the simulated provider.

For a server-side limit of R requests/s (enforced over one-second windows), prints, side by side:
wall time / floor (floor = N / R), achieved rate / R, client CPU ms per request (the whole client
process: event loop, HTTP, retries, batched DuckDB writes), and the 429 count, for
  - declared: the config declares the server's limit (rpm = 60 R),
  - adaptive: no limit declared; the engine learns it from 429s (AIMD),
  - polled: as declared, while another process runs `fairsweep status` on the DB every second (live
    reads through the running process); the wall-time ratio polled / declared is printed (target <= 1.02).

    FAIRSWEEP_MRNI_DIR=../shared/data/mrni-bb python bench/throughput.py [--rate 100] [--faults 0.05]
Targets: declared <= 1.10 x floor with 0 429s; adaptive >= 0.85 x R; <= 0.5 ms client CPU per request.
goodput/R counts stored answers; admitted/R counts every request the server let through (faults included:
they use up quota too). A bare aiohttp loop at the same pace is measured in the same run as a baseline.
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from fairsweep.benchmarks.mrni.data import resolve_data_dir
from fairsweep.benchmarks.mrni.prompts import build_prompts
from fairsweep.config import ModelSpec, SweepConfig
from fairsweep.engine.runner import run_sweep
from fairsweep.sim.server import SimServerProcess

import asyncio

import aiohttp


def fault_args(rate: float) -> list[str]:
    """Split a total transient-fault rate over the kinds a real provider produces."""
    share = {"--fault-500": 0.3, "--fault-503": 0.3, "--fault-malformed": 0.15, "--fault-truncated": 0.1,
             "--fault-reset": 0.15}
    return [x for flag, w in share.items() for x in (flag, f"{rate * w:.4f}")] if rate else []


def bare_aiohttp_cpu_ms(prompts, rate: float, latency_ms: float) -> float:
    """Baseline: client CPU per request of a bare aiohttp loop sending the same prompts at the same pace
    (no limiter, retries or storage). At a paced rate every request wakes an idle process, which costs
    more CPU than the same request inside a busy loop; this is the floor for any asyncio client."""
    async def go(url: str) -> float:
        async with aiohttp.ClientSession() as session:
            async def send(p):
                body = {"model": "sim-model", "messages": list(p.messages), "temperature": 0.0, "max_tokens": 64}
                async with session.post(url + "/chat/completions", json=body) as resp:
                    await resp.json()
            cpu0, start, tasks = time.process_time(), time.monotonic(), []
            for i, p in enumerate(prompts):
                delay = start + i / rate - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                tasks.append(asyncio.create_task(send(p)))
            await asyncio.gather(*tasks)
            return (time.process_time() - cpu0) / len(prompts) * 1000
    args = ["--latency-ms", str(latency_ms), "--latency-jitter-ms", str(latency_ms / 2)]
    with SimServerProcess(args) as server:
        return asyncio.run(go(server.base_url))


class StatusPoller:
    """Runs `fairsweep status --db DB` in a separate process every `every_s` while a run writes DB."""

    def __init__(self, db: str, every_s: float = 1.0):
        self.db, self.every_s = db, every_s
        self.polls, self.failures = 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> "StatusPoller":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            if not Path(self.db).exists():
                continue
            done = subprocess.run([sys.executable, "-m", "fairsweep.cli", "status", "--db", self.db],
                                  capture_output=True, timeout=60)
            self.polls += 1
            self.failures += done.returncode != 0


def journal_cost(n: int = 20_000) -> dict:
    """What the journal adds per answer: encoding and appending its two rows (attempt and response), with
    fsync off (the default: survives a killed process) and on (survives a power cut)."""
    import datetime as dt

    from fairsweep.records import AttemptRow, ResponseRow
    from fairsweep.storage.journal import Journal

    now = dt.datetime.now(dt.timezone.utc)
    text = "The man. " * 8
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for fsync in (False, True):
            journal = Journal(Path(tmp) / f"j{fsync}.duckdb", fsync=fsync)
            count = n if not fsync else max(1, n // 50)
            cpu0, t0 = time.process_time(), time.perf_counter()
            for i in range(count):
                journal.append(AttemptRow(f"a{i}", f"r{i}", "s", 1, now, 20.0, "ok", None, None, None, None, 60, 8))
                journal.append(ResponseRow(f"r{i}", f"a{i}", text, "stop", 60, 8, None, "sim", "fp", 20.0, now))
            out[fsync] = ((time.process_time() - cpu0) / count * 1e6, (time.perf_counter() - t0) / count * 1e6)
            journal.close()
    return out


def measure(label: str, prompts, rate: float, declared: bool, faults: float, concurrency: int,
            retry_format: str, latency_ms: float, poll_status: bool = False) -> dict:
    server_args = ["--rpm", str(int(rate * 60)) if rate < 1e6 else "0", "--window-s", "1", "--retry-after-format", retry_format,
                   "--latency-ms", str(latency_ms), "--latency-jitter-ms", str(latency_ms / 2), *fault_args(faults)]
    with SimServerProcess(server_args) as server, tempfile.TemporaryDirectory() as tmp:
        spec = ModelSpec(name="sim", model="sim-model", api_base=server.base_url, max_concurrency=concurrency,
                         rpm=rate * 60 if declared else None, timeout_s=10)
        config = SweepConfig(db=str(Path(tmp) / "bench.duckdb"), run=label, models=(spec,))
        poller = StatusPoller(config.db) if poll_status else contextlib.nullcontext()
        cpu0, t0 = time.process_time(), time.perf_counter()
        with poller:
            outcome = run_sweep(config, prompts, command="bench", progress=False)
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        stats = server.stats()
    n = len(prompts)
    return {"label": label, "complete": outcome.complete, "wall_s": wall, "floor_s": n / rate,
            "ratio": wall / (n / rate), "achieved": n / wall / rate, "cpu_ms": cpu / n * 1000,
            "admitted": (stats["requests"] - stats["rate_limited"]) / wall / rate,
            "http_429": stats["rate_limited"], "sent": stats["requests"], "faults": sum(stats["faults"].values()),
            "polls": getattr(poller, "polls", 0), "poll_failures": getattr(poller, "failures", 0)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=100.0, help="server limit R in requests/s")
    parser.add_argument("--faults", type=float, default=0.05, help="total transient fault rate")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--retry-after-format", default="seconds",
                        choices=("seconds", "ms", "http-date", "reset", "none"))
    parser.add_argument("--limit", type=int, help="only the first N prompts (quick look)")
    parser.add_argument("--only", choices=("declared", "polled", "adaptive", "unlimited", "bare"), action="append")
    args = parser.parse_args()
    prompts = build_prompts(resolve_data_dir())
    prompts = prompts[: args.limit] if args.limit else prompts
    modes = args.only or ["declared", "polled", "adaptive", "unlimited", "bare"]
    results = []
    bare = bare_aiohttp_cpu_ms(prompts, args.rate, args.latency_ms) if "bare" in modes else None
    for mode in (m for m in modes if m != "bare"):
        rate = args.rate if mode != "unlimited" else 1e6
        results.append(measure(mode, prompts, rate, mode in ("declared", "polled"), args.faults, args.concurrency,
                               args.retry_after_format, args.latency_ms if mode != "unlimited" else 0.0,
                               poll_status=mode == "polled"))
    print(f"N={len(prompts)} prompts, R={args.rate:g}/s over 1 s windows, faults={args.faults:.0%}, "
          f"latency={args.latency_ms:g} ms, concurrency={args.concurrency}, retry-after={args.retry_after_format}")
    print(f"{'mode':<10}{'complete':>9}{'wall s':>9}{'floor s':>9}{'wall/floor':>11}{'goodput/R':>10}"
          f"{'admitted/R':>11}{'cpu ms/req':>11}{'429s':>7}{'sent':>7}{'faults':>7}")
    for r in results:
        floor = f"{r['floor_s']:.1f}" if r["label"] != "unlimited" else "-"
        ratio = f"{r['ratio']:.3f}" if r["label"] != "unlimited" else "-"
        unlimited = r["label"] == "unlimited"
        achieved = f"{r['achieved']:.3f}" if not unlimited else f"{len(prompts) / r['wall_s']:.0f}/s"
        admitted = f"{r['admitted']:.3f}" if not unlimited else "-"
        print(f"{r['label']:<10}{str(r['complete']):>9}{r['wall_s']:>9.1f}{floor:>9}{ratio:>11}{achieved:>10}"
              f"{admitted:>11}{r['cpu_ms']:>11.3f}{r['http_429']:>7}{r['sent']:>7}{r['faults']:>7}")
    by_mode = {r["label"]: r for r in results}
    if "polled" in by_mode and "declared" in by_mode:
        polled = by_mode["polled"]
        print(f"live reads: `fairsweep status` polled every 1 s from another process ({polled['polls']} polls, "
              f"{polled['poll_failures']} failed): wall polled / declared = "
              f"{polled['wall_s'] / by_mode['declared']['wall_s']:.3f}")
    cost = journal_cost()
    print(f"journal per answer (attempt + response rows): fsync off {cost[False][0]:.1f} us CPU, "
          f"{cost[False][1]:.1f} us wall; fsync on {cost[True][0]:.1f} us CPU, {cost[True][1]:.0f} us wall")
    if bare is not None:
        print(f"bare aiohttp loop at the same pace, no limiter/retries/storage: {bare:.3f} ms CPU per request")
        for r in results:
            if r["label"] != "unlimited":
                print(f"  {r['label']}: engine / bare aiohttp CPU per request = {r['cpu_ms'] / bare:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

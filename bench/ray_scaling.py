"""Ray executor scaling: the same workload on 1 and 2 Ray workers, and on the local executor.

The simulated provider answers every request after a fixed latency (no rate limit), and each worker
holds C connections, so a worker's throughput is bounded by C / latency: the per-connection latency is
the bottleneck, and adding a worker adds connections. The key's cluster-wide concurrency cap is set
high enough not to bind. Prints, per worker count, wall time, the workers' start-up, throughput
(overall and once started), the speedup over 1 worker, and the overhead of the Ray path against the
local executor with the same C connections (side by side, same machine, same server).

    python bench/ray_scaling.py [--requests 2000] [--latency-ms 50] [--connections 8] [--ray-address ADDR]

Without --ray-address it starts a local 2-CPU Ray cluster bound to 127.0.0.1 (no dashboard).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from fairsweep.config import ModelSpec, SweepConfig
from fairsweep.engine.runner import run_sweep
from fairsweep.records import Prompt
from fairsweep.sim.server import SimServerProcess


def prompts(n: int) -> list[Prompt]:
    return [Prompt("bench", f"p{i:06d}", ({"role": "user", "content": f"Question {i}: who is the better fit?"},),
                   {"i": i}) for i in range(n)]


def start_ray(address: str | None) -> None:
    if address is None:
        # Single-node cluster on loopback: Ray otherwise publishes the machine's outward address.
        os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    import ray
    if address is None:
        ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False,
                 object_store_memory=100 * 2**20)
    else:
        ray.init(address=address, log_to_driver=False)


def measure(label: str, server: SimServerProcess, work: list[Prompt], connections: int, executor) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        spec = ModelSpec(name="sim", model="sim-model", api_base=server.base_url, timeout_s=30,
                         max_concurrency=connections if executor is None else 16 * connections)
        config = SweepConfig(db=str(Path(tmp) / "bench.duckdb"), run=label, models=(spec,))
        cpu0, t0 = time.process_time(), time.perf_counter()
        outcome = run_sweep(config, work, command="bench", progress=False, executor=executor)
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    startup = executor.stats.get("startup_s", 0.0) if executor is not None else 0.0
    rpcs = sum(s.get("exchanges", 0) for s in executor.stats.get("limiters", {}).values()) if executor else 0
    n = len(work)
    return {"label": label, "complete": outcome.complete, "wall": wall, "startup": startup,
            "rate": n / wall, "steady": n / (wall - startup), "driver_cpu_ms": cpu / n * 1000,
            "rpc_per_req": rpcs / n}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--connections", type=int, default=8, help="connections per worker (and for local)")
    parser.add_argument("--shard-size", type=int, default=64)
    parser.add_argument("--ray-address", help="an existing cluster (default: start a local 2-CPU one)")
    args = parser.parse_args()
    start_ray(args.ray_address)
    from fairsweep.engine.executors.ray_executor import RayExecutor

    work = prompts(args.requests)
    results = []
    with SimServerProcess(["--latency-ms", str(args.latency_ms)]) as server:
        results.append(measure("local", server, work, args.connections, None))
        for workers in (1, 2):
            executor = RayExecutor(num_workers=workers, shard_size=args.shard_size,
                                   worker_concurrency=args.connections)
            results.append(measure(f"ray x{workers}", server, work, args.connections, executor))
    ceiling = args.connections / (args.latency_ms / 1000)
    print(f"N={args.requests} requests, server latency {args.latency_ms:g} ms, no rate limit, "
          f"{args.connections} connections per worker: ceiling {ceiling:.0f} req/s per worker")
    print(f"{'executor':<10}{'complete':>9}{'wall s':>8}{'start s':>8}{'req/s':>8}{'req/s started':>14}"
          f"{'x 1 worker':>11}{'driver cpu ms/req':>18}{'limiter RPC/req':>16}")
    one = results[1]
    for r in results:
        scale = f"{r['steady'] / one['steady']:.2f}" if r["label"].startswith("ray") else "-"
        print(f"{r['label']:<10}{str(r['complete']):>9}{r['wall']:>8.2f}{r['startup']:>8.2f}{r['rate']:>8.0f}"
              f"{r['steady']:>14.0f}{scale:>11}{r['driver_cpu_ms']:>18.3f}{r['rpc_per_req']:>16.3f}")
    local = results[0]
    print(f"Ray path overhead vs local (1 worker, same connections): "
          f"{(local['rate'] / one['steady'] - 1) * 100:+.1f}% time once started, "
          f"{(one['wall'] / local['wall'] - 1) * 100:+.1f}% wall including {one['startup']:.1f} s worker start-up")
    return 0 if all(r["complete"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())

"""Whole `fairsweep run` commands over many models, and a million-request plan, before and after, side by side.

    FAIRSWEEP_MRNI_DIR=../shared/data/mrni-bb python bench/multimodel.py --before /tmp/pkgs-base [--rounds 3]

`--before DIR`: a PYTHONPATH entry whose `fairsweep` is another checkout (e.g. a symlink to a worktree of the
original main); the code under test is the one `import fairsweep` finds now. For each round, both versions run
the same commands one after the other (alternating which goes first), each as a subprocess under GNU time, each
version with its own copy of the cache folder, warmed up by one short run:
- multi-model: 1, 5 and 20 models (distinct model ids, one limiter key each, max_concurrency 16 per model) x
  the 4,704 MRNI-BB prompts against an unthrottled simulated server: time from launch to the server's first
  request, peak RSS, client CPU (user + sys) per stored answer, wall (scoring included);
- million plan: 213 models x 4,704 prompts = 1,001,952 planned requests with a run spend cap of $0.0001 (priced
  as gpt-4o-mini): the models stop after their first answers, the whole plan is still written; peak RSS
  (target < 300 MB), wall, and the time to the first request.
Printed: the median of the rounds with the spread (min-max) per version, and after / before.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fairsweep.jsonfile import cache_dir
from fairsweep.sim.server import SimServerProcess

PROMPTS = 4704
MILLION_MODELS = 213


def config_text(db: Path, server: SimServerProcess, models: int, *, million: bool) -> str:
    head = f'db = "{db}"\nrun = "mm"\nbenchmarks = ["mrni"]\n' + ("max_cost = 0.0001\n" if million else "")
    body = []
    for k in range(models):
        model = "gpt-4o-mini" if million else f"sim-model-{k}"  # priced (the cap) / distinct (no shared cache)
        body.append(f'\n[[models]]\nname = "m{k}"\nmodel = "{model}"\napi_base = "{server.base_url}"\n'
                    f"max_concurrency = {2 if million else 16}\n"
                    + ('cache = false\napi_key_env = "FAIRSWEEP_BENCH_SIM_KEY"\n' if million else ""))
    return head + "".join(body)


def version_env(pythonpath: str, workdir: Path) -> dict:
    """The environment of one version's runs: its PYTHONPATH, and its own copy of the cache folder (two versions
    whose derived caches differ, e.g. in the prompts' format, would each derive them again at every run)."""
    cache = workdir / ("cache" + re.sub(r"\W", "_", pythonpath))
    if not cache.exists():
        source = cache_dir()
        shutil.copytree(source, cache / "fairsweep") if source.is_dir() else cache.mkdir()
    env = {**os.environ, "PYTHONPATH": pythonpath, "XDG_CACHE_HOME": str(cache),
           "FAIRSWEEP_BENCH_SIM_KEY": "unused-by-the-sim-server"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: bytecode written once, then read
    return env


def warm_up(pythonpath: str, workdir: Path) -> None:
    """One short run per version before the rounds: its caches derived, its bytecode written."""
    with SimServerProcess([]) as server:
        subprocess.run([sys.executable, "-m", "fairsweep.cli", "run", "--model", f"sim=sim-model@{server.base_url}",
                        "--limit", "2", "--no-progress", "--db", str(workdir / "warm.duckdb")],
                       env=version_env(pythonpath, workdir), capture_output=True, text=True, check=True)
    for stale in workdir.glob("warm.duckdb*"):
        stale.unlink()


def timed_run(pythonpath: str, config: Path, workdir: Path) -> dict:
    env = version_env(pythonpath, workdir)
    usage = workdir / "usage.txt"
    command = ["/usr/bin/time", "-o", str(usage), "-f", "%M %U %S", sys.executable, "-m", "fairsweep.cli", "run",
               "--config", str(config), "--no-progress"]
    started = time.time()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = time.time() - started
    if done.returncode not in (0, 1):  # 1: the spend cap stopped the million-plan run, as meant
        raise SystemExit(f"run failed ({done.returncode}): {done.stderr[-800:]}")
    rss_kb, user, system = usage.read_text().split()[-3:]
    return {"started": started, "wall": wall, "cpu": float(user) + float(system), "rss_mb": int(rss_kb) / 1024}


def measure(pythonpath: str, models: int, workdir: Path, tag: str, *, million: bool = False) -> dict[str, float]:
    db = workdir / f"{tag}.duckdb"
    for stale in workdir.glob(f"{tag}.duckdb*"):
        stale.unlink()
    with SimServerProcess([]) as server:
        config = workdir / f"{tag}.toml"
        config.write_text(config_text(db, server, models, million=million))
        run = timed_run(pythonpath, config, workdir)
        stats = server.stats()
    out = {"first request (s)": stats["first_request_at"] - run["started"], "peak RSS (MB)": run["rss_mb"],
           "wall (s)": run["wall"]}
    if million:
        import duckdb
        out["planned requests"] = duckdb.connect(str(db), read_only=True).execute(
            "SELECT count(*) FROM requests").fetchone()[0]
    else:
        out["CPU per answer (ms)"] = run["cpu"] / max(1, stats["ok"]) * 1000
        out["answers"] = stats["ok"]
    for stale in workdir.glob(f"{tag}.duckdb*"):
        stale.unlink()
    return out


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):9.3f} ({min(values):.3f}-{max(values):.3f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="PYTHONPATH entry of the version to compare with")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--models", default="1,5,20", help='model counts, or "none" (the million plan only)')
    parser.add_argument("--no-million", action="store_true")
    args = parser.parse_args()
    after = str(Path(__import__("fairsweep").__file__).resolve().parents[1])
    after_path = os.environ.get("PYTHONPATH", after)
    versions = {"before": args.before, "after": after_path}
    counts = [] if args.models == "none" else [int(n) for n in args.models.split(",")]
    cases = [(f"{n} model{'s' if n > 1 else ''} x {PROMPTS}", n, False) for n in counts]
    if not args.no_million:
        cases.append((f"million plan ({MILLION_MODELS} x {PROMPTS})", MILLION_MODELS, True))
    results: dict[tuple[str, str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for path in versions.values():
            warm_up(path, workdir)
        for r in range(args.rounds):
            for case, n, million in cases:
                order = list(versions) if r % 2 == 0 else list(reversed(versions))
                for version in order:
                    found = measure(versions[version], n, workdir, f"{version}{r}", million=million)
                    for metric, value in found.items():
                        results.setdefault((case, metric, version), []).append(value)
                    print(f"round {r + 1} {case} {version}: " + ", ".join(f"{k} {v:.3f}" for k, v in found.items()),
                          file=sys.stderr, flush=True)
    print(f"whole commands, median (min-max) of {args.rounds} rounds, {os.cpu_count()} cores "
          f"(the machine is shared: ratios measured side by side)")
    print(f"  {'case':28} {'metric':22} {'before':>24} {'after':>24} {'after/before':>12}")
    for case, _, _ in cases:
        metrics = dict.fromkeys(m for (c, m, _) in results if c == case)
        for metric in metrics:
            b, a = results[(case, metric, "before")], results[(case, metric, "after")]
            ratio = statistics.median(a) / statistics.median(b) if statistics.median(b) else float("nan")
            print(f"  {case:28} {metric:22} {spread(b):>24} {spread(a):>24} {ratio:12.2f}")


if __name__ == "__main__":
    main()

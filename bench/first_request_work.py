"""The work a command does before its first request leaves, counted in instructions: noise-free, side by side.

    FAIRSWEEP_MRNI_DIR=../shared/data/mrni-bb python bench/first_request_work.py [--before DIR] [--full]

The wall time to the first request (bench/command.py) moves by ±15% from run to run on a shared machine, more
than most changes to it. This counts instead the instructions every thread of the process executes from its
start to the moment its first request would leave (valgrind's callgrind, all threads; the process ends there),
for:
- a plain asyncio + aiohttp client sending one prompt (bench/command.py's);
- the floor: that client after validating a pydantic config and storing its plan in a new DuckDB file;
- `fairsweep run --limit 1` (or the whole 4,704-prompt plan with --full) against the simulated server, a new DB;
- with `--before DIR`, the same run of the version whose `fairsweep` that PYTHONPATH entry finds.
Each version keeps its own cache folder (derived caches are read back, as on a user's second run). Printed:
instructions (millions) and the ratio to the plain client. Instructions are not time: work without the GIL
(TLS certificates, DuckDB's C++) overlaps across threads, and system calls and page faults are not counted.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from fairsweep.sim.probe import at_first_request
from fairsweep.sim.server import SimServerProcess

sys.path.insert(0, str(Path(__file__).resolve().parent))
from command import PLAIN_CLIENT  # noqa: E402  (bench/command.py, the same plain client)


def instructions(command: list[str], env: dict, workdir: Path) -> float:
    """Millions of instructions until the first request (valgrind --tool=callgrind, every thread)."""
    out = workdir / "callgrind.out"
    done = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *command], env=env,
                          capture_output=True, text=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if not found:
        raise SystemExit(f"{command[:3]}: no count ({done.returncode}): {done.stderr[-600:]}")
    return int(found.group(1)) / 1e6


def child_env(site: Path, pythonpath: str | None, cache: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), pythonpath) if p)
    env["XDG_CACHE_HOME"] = str(cache)
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="PYTHONPATH entry of the version to compare with")
    parser.add_argument("--full", action="store_true", help="the whole 4,704-prompt plan instead of --limit 1")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is needed (e.g. apt-get install valgrind)")
    with tempfile.TemporaryDirectory() as tmp, SimServerProcess([]) as server:
        work = Path(tmp)
        site = work / "site"
        site.mkdir()
        (site / "sitecustomize.py").write_text(at_first_request())
        one = work / "one.json"
        one.write_text(json.dumps([[{"role": "user", "content": "Say hello."}]]))
        plain_env = child_env(site, None, work / "cache-plain")
        counts = {"plain aiohttp client": instructions(
            [sys.executable, "-c", PLAIN_CLIENT, server.base_url, str(one), str(work / "p.json"), "1", "64"],
            plain_env, work)}
        counts["floor: + pydantic config + DuckDB plan"] = instructions(
            [sys.executable, "-c", PLAIN_CLIENT, server.base_url, str(one), str(work / "p.json"), "1", "64",
             str(work / "floor.duckdb")], plain_env, work)
        versions = {"fairsweep run (this checkout)": None}
        if args.before:
            versions[f"fairsweep run (--before {args.before})"] = args.before
        for k, (name, path) in enumerate(versions.items()):
            env = child_env(site, path, work / f"cache-{k}")
            run = [sys.executable, "-m", "fairsweep.cli", "run", "--model", f"sim=sim-model@{server.base_url}",
                   "--no-progress", *([] if args.full else ["--limit", "1"])]
            for attempt in ("first (derives its caches)", "again"):  # the second reads the caches back
                db = work / f"{k}-{attempt[:5]}.duckdb"
                count = instructions([*run, "--db", str(db), "--run", "r"], env, work)
            counts[name] = count
    plain = counts["plain aiohttp client"]
    print(f"{'to the first request':44} {'instructions (M)':>17} {'/ plain':>8}")
    for name, count in counts.items():
        print(f"{name:44} {count:17.1f} {count / plain:8.2f}")


if __name__ == "__main__":
    main()

"""Whole `fairsweep run` commands as a user runs them, start to exit, next to a plain asyncio client.

    FAIRSWEEP_MRNI_DIR=../shared/data/mrni-bb python bench/command.py [--rounds 3]

Prints, for commands against the simulated OpenAI-compatible server on 127.0.0.1:
- start-up: time from process start to the server receiving the first request (1 prompt, no limit),
  for `fairsweep run`, for a plain asyncio + aiohttp client started the same way, and for that client when
  it first does what a resumable run cannot skip: validate a pydantic config, store its plan in DuckDB;
- paced: 1,500 MRNI-BB prompts with rpm = 2900 declared against a server limited to 3,000 RPM: the whole
  command's wall time over the floor (N / declared rate), scoring and exit included (target <= 1.05);
- undeclared: 1,000 prompts with no rpm declared against a server limited to 1,200 RPM in one-second windows
  (20 each), 40 ms latency: the whole command over the floor (N / the server's rate) and the server's 429
  count (targets: <= 1.10, <= 20 429s), next to a plain client that resends each 429 at once;
- unthrottled: the full 4,704-prompt run (scoring included): peak RSS and client CPU (user + sys) per
  stored answer, for fairsweep and for the plain client (targets: <= 150 MB, <= 1.0 ms).
Each figure is the median of --rounds runs with all of them listed; the two clients alternate so that load
hits both alike. The children run without PYTHONDONTWRITEBYTECODE (an installed package has its bytecode).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fairsweep.sim.server import SimServerProcess

PLAIN_CLIENT = r"""
import asyncio, json, sys
import aiohttp
url, messages_file, out, count, concurrency = sys.argv[1:6]
messages = json.load(open(messages_file))[:int(count)]
if len(sys.argv) > 6:  # the floor of a client that validates a typed config and stores its plan before sending
    import duckdb, pydantic
    class Config(pydantic.BaseModel):
        url: str
        concurrency: int
    Config(url=url, concurrency=concurrency)
    db = duckdb.connect(sys.argv[6])
    db.execute("CREATE TABLE plan (i INTEGER, messages VARCHAR)")
    db.execute("INSERT INTO plan SELECT unnest($1), unnest($2)",
               [list(range(len(messages))), list(map(json.dumps, messages))])
async def main():
    async with aiohttp.ClientSession() as session:
        semaphore = asyncio.Semaphore(int(concurrency))
        async def send(m):
            async with semaphore:
                body = {"model": "sim-model", "messages": m, "temperature": 0.0, "max_tokens": 64}
                while True:  # a 429 is sent again at once (none come from an unlimited server)
                    async with session.post(url + "/chat/completions", json=body) as resp:
                        if resp.status != 429:
                            return (await resp.json())["choices"][0]["message"]["content"]
        answers = await asyncio.gather(*(send(m) for m in messages))
    json.dump(answers, open(out, "w"))
asyncio.run(main())
"""


UNDECLARED = ["--rpm", "1200", "--window-s", "1", "--latency-ms", "40"]


def child_run(command: list[str], env: dict) -> dict:
    """Run a command under GNU time: its wall time, CPU seconds (user + sys) and peak RSS (MB)."""
    with tempfile.NamedTemporaryFile("r") as usage:
        started = time.time()
        done = subprocess.run(["/usr/bin/time", "-o", usage.name, "-f", "%M %U %S", *command], env=env,
                              capture_output=True, text=True)
        wall = time.time() - started
        if done.returncode != 0:
            raise SystemExit(f"{command[:4]} failed ({done.returncode}): {done.stderr[-500:]}")
        rss_kb, user, system = usage.read().split()[-3:]
    return {"started": started, "wall": wall, "cpu": float(user) + float(system), "rss_mb": int(rss_kb) / 1024}


def fairsweep_run(server: SimServerProcess, workdir: Path, tag: str, limit: int | None, rpm: float | None,
                  env: dict) -> dict:
    model = f"sim=sim-model@{server.base_url}"
    command = [sys.executable, "-m", "fairsweep.cli", "run", "--model", model, "--db", str(workdir / f"{tag}.duckdb"),
               "--run", tag, "--no-progress"] + (["--limit", str(limit)] if limit else [])
    if rpm:
        config = workdir / f"{tag}.toml"
        config.write_text(f'db = "{workdir / (tag + ".duckdb")}"\nrun = "{tag}"\n\n[[models]]\nname = "sim"\n'
                          f'model = "sim-model"\napi_base = "{server.base_url}"\nrpm = {rpm}\nmax_concurrency = 64\n')
        command = [sys.executable, "-m", "fairsweep.cli", "run", "--config", str(config), "--no-progress",
                   "--limit", str(limit)]
    return child_run(command, env)


def plain_run(server: SimServerProcess, workdir: Path, messages: Path, env: dict, count: int = 10**9,
              concurrency: int = 64, checkpoint: Path | None = None) -> dict:
    """The plain client; with `checkpoint` (a new DuckDB file), it first validates a pydantic config and stores
    its plan there, as a run must before it sends (resume then knows what was planned)."""
    return child_run([sys.executable, "-c", PLAIN_CLIENT, server.base_url, str(messages),
                      str(workdir / "plain.json"), str(count), str(concurrency)]
                     + ([str(checkpoint)] if checkpoint else []), env)


def first_request_s(server: SimServerProcess, run: dict) -> float:
    return server.stats()["first_request_at"] - run["started"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from fairsweep.benchmarks.sampling import load_prompts
    from fairsweep.config import SweepConfig

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    results: dict[str, list[float]] = {}

    def note(name: str, value: float) -> None:
        results.setdefault(name, []).append(value)

    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        all_prompts = load_prompts(SweepConfig(), env.get("FAIRSWEEP_MRNI_DIR"))
        one, everything = workdir / "one.json", workdir / "all.json"
        one.write_text(json.dumps([list(all_prompts[0].messages)]))
        everything.write_text(json.dumps([list(p.messages) for p in all_prompts]))
        for r in range(args.rounds):
            with SimServerProcess([]) as server:
                run = fairsweep_run(server, workdir, f"start{r}", 1, None, env)
                note("first request, fairsweep run (s)", first_request_s(server, run))
            with SimServerProcess([]) as server:
                run = plain_run(server, workdir, one, env)
                note("first request, plain aiohttp (s)", first_request_s(server, run))
            with SimServerProcess([]) as server:
                run = plain_run(server, workdir, one, env, checkpoint=workdir / f"floor{r}.duckdb")
                note("first request, plain + pydantic config + DuckDB plan (s)", first_request_s(server, run))
            with SimServerProcess(["--rpm", "3000", "--window-s", "60"]) as server:
                run = fairsweep_run(server, workdir, f"paced{r}", 1500, 2900, env)
                note("1,500 prompts at rpm 2900: whole command / floor", run["wall"] / (1500 / (2900 / 60)))
                assert server.stats()["rate_limited"] == 0
            with SimServerProcess(UNDECLARED) as server:
                run = fairsweep_run(server, workdir, f"undeclared{r}", 1000, None, env)
                note("1,000 prompts, limit undeclared: whole command / floor", run["wall"] / (1000 / 20))
                note("1,000 prompts, limit undeclared: 429s", server.stats()["rate_limited"])
            with SimServerProcess(UNDECLARED) as server:
                run = plain_run(server, workdir, everything, env, count=1000, concurrency=8)
                note("1,000 prompts, plain client resending 429s: wall / floor", run["wall"] / (1000 / 20))
                note("1,000 prompts, plain client resending 429s: 429s", server.stats()["rate_limited"])
            with SimServerProcess([]) as server:
                run = fairsweep_run(server, workdir, f"full{r}", None, None, env)
                note("4,704 prompts: fairsweep peak RSS (MB)", run["rss_mb"])
                note("4,704 prompts: fairsweep CPU per answer (ms)", run["cpu"] / len(all_prompts) * 1000)
                note("4,704 prompts: fairsweep wall (s)", run["wall"])
            with SimServerProcess([]) as server:
                run = plain_run(server, workdir, everything, env)
                note("4,704 prompts: plain aiohttp peak RSS (MB)", run["rss_mb"])
                note("4,704 prompts: plain aiohttp CPU per answer (ms)", run["cpu"] / len(all_prompts) * 1000)
                note("4,704 prompts: plain aiohttp wall (s)", run["wall"])
            print(f"round {r + 1} done", file=sys.stderr, flush=True)
    print(f"whole commands, median of {args.rounds} rounds ({os.cpu_count()} cores)")
    for name, values in results.items():
        print(f"  {name:52} {statistics.median(values):8.3f}   (all: {', '.join(f'{v:.3f}' for v in values)})")


if __name__ == "__main__":
    main()

"""The embedded model: a whole `fairsweep run` against a plain llama-cpp-python loop, side by side.

    FAIRSWEEP_MRNI_DIR=../shared/data/mrni-bb python bench/local_model.py [--n 96] [--rounds 2]
        [--other-python /path/to/venv/bin/python]   # e.g. a native (-march=native) build, same loop

Both sides answer the same N MRNI-BB prompts (the first N in the fixed order) with the same build and the
same generation settings (n_ctx 2048, max_tokens 64, temperature 0, chat template of the GGUF).
fairsweep: `fairsweep run --bench mrni --model local/smollm2 --limit N` into a fresh DB, timed from
process start to exit (imports, data loading, planning, worker start, sending, storing and scoring all
count); the native-code check is warmed once before (it is cached per build). Plain loop: one process,
`Llama(...)` then `create_chat_completion` per prompt, timed from process start (import and model load
count), with n_threads = the machine's cores (llama-cpp-python's default is half of them; both are shown).
Rounds alternate the two sides so that load from other processes hits both alike; medians are reported.
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

PLAIN_LOOP = r"""
import json, sys, time
t0 = float(sys.argv[3])
from llama_cpp import Llama
messages = json.load(open(sys.argv[1]))
threads = int(sys.argv[2]) or None
llm = Llama(model_path=sys.argv[4], n_ctx=2048, n_threads=threads, verbose=False)
for m in messages:
    llm.create_chat_completion(messages=m, max_tokens=64, temperature=0.0)
print(json.dumps({"seconds": time.time() - t0}))
"""


def prompts_file(n: int, workdir: Path) -> Path:
    from fairsweep.benchmarks.sampling import load_prompts
    from fairsweep.config import SweepConfig

    prompts = load_prompts(SweepConfig(limit=n), os.environ.get("FAIRSWEEP_MRNI_DIR"))
    path = workdir / "messages.json"
    path.write_text(json.dumps([list(p.messages) for p in prompts]))
    return path


def plain_loop(python: str, messages: Path, threads: int, model: Path) -> float:
    started = time.time()
    out = subprocess.run([python, "-c", PLAIN_LOOP, str(messages), str(threads), str(started), str(model)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["seconds"]


def fairsweep_run(n: int, workdir: Path, round_no: int) -> float:
    db = workdir / f"fs-{round_no}.duckdb"
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "fairsweep.cli", "run", "--bench", "mrni", "--model", "local/smollm2",
                    "--limit", str(n), "--db", str(db), "--run", "bench", "--no-progress"],
                   check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=96)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--other-python", help="a second interpreter whose llama-cpp-python build to compare")
    args = parser.parse_args()
    from fairsweep.providers.local_llama import preflight, smollm2_path

    preflight()  # the cached native-code check: what every later run finds
    cores = os.cpu_count() or 1
    sides = {"fairsweep run": None, f"plain loop, n_threads={cores}": (sys.executable, cores),
             f"plain loop, n_threads={max(1, cores // 2)} (default)": (sys.executable, 0)}
    if args.other_python:
        sides[f"plain loop, other build, n_threads={cores}"] = (args.other_python, cores)
    times: dict[str, list[float]] = {name: [] for name in sides}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        messages = prompts_file(args.n, workdir)
        for round_no in range(args.rounds):
            for name, side in sides.items():
                seconds = (fairsweep_run(args.n, workdir, round_no) if side is None
                           else plain_loop(side[0], messages, side[1], smollm2_path()))
                times[name].append(seconds)
                print(f"round {round_no + 1}: {name}: {seconds:.1f} s", file=sys.stderr, flush=True)
    print(f"N={args.n} MRNI-BB prompts, {cores} cores, max_tokens 64, temperature 0, {args.rounds} rounds (median)")
    print(f"{'side':44} {'wall s':>8} {'prompts/s':>10}")
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, seconds in medians.items():
        print(f"{name:44} {seconds:8.1f} {args.n / seconds:10.3f}")
    best_plain = min(v for k, v in medians.items() if k.startswith("plain loop") and "other build" not in k)
    print(f"fairsweep / fastest plain loop (same build), prompts/s: {best_plain / medians['fairsweep run']:.2f}x")
    if args.other_python:
        other = medians[f"plain loop, other build, n_threads={cores}"]
        print(f"this build / other build, plain loop prompts/s: {other / medians[f'plain loop, n_threads={cores}']:.2f}x")


if __name__ == "__main__":
    main()

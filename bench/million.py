"""A results DB of a million stored answers: resume, status, report and export timed as whole commands.

Builds (once, cached at --db) ~1,000,000 stored MRNI-BB answers through the real schema and insert path:
the 4,704-prompt MRNI-BB prompt set planned in --runs runs (213 x 4,704 = 1,001,952 requests; each run its
own model, so the response cache never links them) with storage.checkpoint (register_run, plan_requests),
attempts and responses as AttemptRow / ResponseRow through storage.writer.insert_rows. Answers are drawn
from the parser's labelled answer sets (tests/data/mrni_parser) for the prompt's language and condition,
so the parser labels them as it labels real answers; ~3% of requests needed a retry, ~0.1% (in the other
runs) ended as final failures. Each run is then scored as `fairsweep run` scores it (labels and
statistics). A DB built by an older fairsweep is migrated by the first open, before anything is timed.

Then times each command in a subprocess, start to exit, with its peak RSS (the child's ru_maxrss),
median of --repeat tries, against the targets of issue 19:
  run --config C            resume of one finished run: nothing sent, nothing re-scored (< 2 s)
  status --db DB            all runs (< 1 s); status --config C: one run
  report --bench mrni       one run (--config C, < 3 s) and all runs (--db DB)
  export --config C         one run to Parquet
and, in this process, MRNI-BB scoring of run C (score_run, as `fairsweep run` ends): after its 4,704 answers
arrived unlabelled (labels and statistics of C deleted first), then after a resume that added nothing.

    FAIRSWEEP_MRNI_DIR=../shared/data/mrni-bb python bench/million.py [--db /tmp/million.duckdb] [--repeat 3]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb

from fairsweep.benchmarks.mrni.data import resolve_data_dir
from fairsweep.benchmarks.mrni.prompts import build_prompts
from fairsweep.benchmarks.mrni.score import score_run
from fairsweep.config import ModelSpec, SweepConfig
from fairsweep.engine.work import plan_items
from fairsweep.records import AttemptRow, ResponseRow
from fairsweep.storage.checkpoint import plan_requests, register_run
from fairsweep.storage.db import open_db
from fairsweep.storage.tx import transaction
from fairsweep.storage.bulk import insert_rows

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "mrni_parser"
# Nothing listens on the discard port: had a resume sent anything, it would show as failed attempts.
API_BASE = "http://127.0.0.1:9/v1"
RETRY_SHARE, FAIL_SHARE = 0.03, 0.001


def run_name(i: int) -> str:
    return f"run-{i:03d}"


def run_config(db: Path, i: int) -> SweepConfig:
    """Run i: one model of its own (distinct cache keys), temperature 0, the full prompt set."""
    spec = ModelSpec(name=f"model-{i:03d}", model=f"sim-{i:03d}", api_base=API_BASE, max_tokens=64)
    return SweepConfig(db=str(db), run=run_name(i), benchmarks=("mrni",), models=(spec,))


def config_toml(config: SweepConfig, data_dir: Path) -> str:
    spec = config.models[0]
    return (f'db = "{config.db}"\nrun = "{config.run}"\nbenchmarks = ["mrni"]\ndata_dir = "{data_dir}"\n\n'
            f'[[models]]\nname = "{spec.name}"\nmodel = "{spec.model}"\napi_base = "{spec.api_base}"\n'
            f"max_tokens = {spec.max_tokens}\n")


def answer_texts() -> dict[tuple[str, str], list[str]]:
    """(language, condition) -> labelled answers written for it or given by the embedded model."""
    texts: dict[tuple[str, str], list[str]] = {}
    for name in ("corpus.jsonl", "real_smollm2.jsonl"):
        with open(CORPUS / name, encoding="utf-8") as fh:
            for row in map(json.loads, filter(str.strip, fh)):
                texts.setdefault((row["language"], row["condition"]), []).append(row["text"])
    return texts


def _draw(request_id: str) -> int:
    """A stable pseudo-random integer per request (the same DB every build)."""
    return int(request_id[:12], 16)


def stored_rows(items, session_id: str, texts, t0: datetime, final_failures: bool):
    """AttemptRow / ResponseRow lists for one run's items: an answer for each, some after a retry."""
    attempts, responses = [], []
    for n, item in enumerate(items):
        draw, meta = _draw(item.request_id), item.prompt.metadata
        at = t0 + timedelta(milliseconds=25 * n)
        no = 1
        if draw % 1000 < RETRY_SHARE * 1000:
            attempts.append(AttemptRow(f"{item.request_id}-1", item.request_id, session_id, 1, at, 900.0,
                                       "transient", "server_error", 503, None, "503 Service Unavailable", None, None))
            no = 2
        if final_failures and draw % 100_000 < FAIL_SHARE * 100_000:
            attempts.append(AttemptRow(f"{item.request_id}-{no}", item.request_id, session_id, no, at, 40.0,
                                       "permanent", "context_length", 400, None, "context length exceeded", None,
                                       None))
            continue
        pool = texts[(meta["language"], meta["condition"])]
        text = pool[(draw // 1000) % len(pool)]
        tokens_in, tokens_out = 180 + draw % 90, max(1, len(text) // 4)
        attempt_id = f"{item.request_id}-{no}"
        attempts.append(AttemptRow(attempt_id, item.request_id, session_id, no, at, 350.0 + draw % 400, "ok",
                                   None, 200, None, None, tokens_in, tokens_out))
        responses.append(ResponseRow(item.request_id, attempt_id, text, "stop", tokens_in, tokens_out,
                                     (tokens_in * 0.15 + tokens_out * 0.6) / 1e6, item.model, "fp_sim",
                                     350.0 + draw % 400, at))
    return attempts, responses


def build(db: Path, runs: int, timed: int, data_dir: Path) -> None:
    """Write the DB at a temporary path and move it into place once complete (a half build is never cached)."""
    partial = db.with_name(db.name + ".building")
    partial.unlink(missing_ok=True)
    prompts, texts = build_prompts(data_dir), answer_texts()
    conn = open_db(partial)
    t0, started = datetime(2026, 1, 5, tzinfo=timezone.utc), time.perf_counter()
    try:
        for i in range(runs):
            config = run_config(partial, i)
            session_id = register_run(conn, config, "bench/million.py")
            items = plan_items(config.run, config.models[0], prompts)
            plan_requests(conn, items)
            attempts, responses = stored_rows(items, session_id, texts, t0 + timedelta(days=i), i != timed)
            with transaction(conn):
                insert_rows(conn, "attempts", AttemptRow._fields, attempts)
                insert_rows(conn, "responses", ResponseRow._fields, responses)
            score_run(conn, config)
            if i % 20 == 0 or i == runs - 1:
                print(f"  built {i + 1}/{runs} runs ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
        conn.execute("CHECKPOINT")
    finally:
        conn.close()
    partial.rename(db)


def db_facts(db: Path) -> dict:
    conn = duckdb.connect(str(db), read_only=True)
    try:
        runs, requests, responses, attempts, sessions = conn.execute(
            "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM requests), (SELECT count(*) FROM responses), "
            "(SELECT count(*) FROM attempts), (SELECT count(*) FROM sessions)").fetchone()
    finally:
        conn.close()
    return {"runs": runs, "requests": requests, "responses": responses, "attempts": attempts,
            "sessions": sessions, "size_mb": db.stat().st_size / 2**20}


# Peak RSS comes from wait4 in a small launcher process: a child's ru_maxrss also counts the memory of the
# process that spawned it (the high-water mark survives exec), and this script is large after a build.
_LAUNCHER = """
import os, sys, time
null = os.open(os.devnull, os.O_WRONLY)
start = time.perf_counter()
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, null, 1)])
_, status, usage = os.wait4(pid, 0)
print(time.perf_counter() - start, usage.ru_maxrss, os.waitstatus_to_exitcode(status))
"""


def timed(argv: list[str], expect: int = 0) -> tuple[float, float, str]:
    """(wall s, peak RSS MB, stderr) of one whole command, start to exit."""
    with tempfile.TemporaryFile() as err:
        done = subprocess.run([sys.executable, "-S", "-c", _LAUNCHER, sys.executable, "-m", "fairsweep.cli", *argv],
                              stdout=subprocess.PIPE, stderr=err, text=True, check=True)
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    wall, rss_kb, code = done.stdout.split()
    if int(code) != expect:
        raise SystemExit(f"`fairsweep {' '.join(argv)}` exited {code}:\n{stderr}")
    return float(wall), int(rss_kb) / 1024, stderr


def commands(db: Path, toml: Path, out: Path) -> list[tuple[str, list[str], float | None]]:
    c = str(toml)
    return [
        ("run --config C (resume, nothing to send)", ["run", "--config", c, "--no-progress"], 2.0),
        ("status --db DB (all runs)", ["status", "--db", str(db)], 1.0),
        ("status --config C (one run)", ["status", "--config", c], 1.0),
        ("report --bench mrni --config C (one run)", ["report", "--bench", "mrni", "--config", c], 3.0),
        ("report --bench mrni --db DB (all runs)", ["report", "--bench", "mrni", "--db", str(db)], None),
        ("export --config C --format parquet (one run)",
         ["export", "--config", c, "--out", str(out), "--format", "parquet"], None),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default=str(Path(tempfile.gettempdir()) / "fairsweep-million.duckdb"),
                        help="where the built DB is kept between invocations (built when missing)")
    parser.add_argument("--runs", type=int, default=213, help="runs of 4,704 answers to build")
    parser.add_argument("--repeat", type=int, default=3, help="tries per command (the median is printed)")
    parser.add_argument("--rebuild", action="store_true", help="build the DB again even when cached")
    parser.add_argument("--build-only", action="store_true")
    args = parser.parse_args()
    db, data_dir = Path(args.db).resolve(), resolve_data_dir()
    index = args.runs // 2  # the run timed alone: its requests are all answered
    if args.rebuild or not db.exists():
        print(f"building {db} ({args.runs} runs x 4,704 answers) ...", file=sys.stderr)
        db.unlink(missing_ok=True)
        build(db, args.runs, index, data_dir)
    open_db(db).close()  # migrations and views of this fairsweep, before anything is timed
    toml = db.with_suffix(".toml")
    toml.write_text(config_toml(run_config(db, index), data_dir), encoding="utf-8")
    facts = db_facts(db)
    print(f"DB {db}: {facts['runs']} runs, {facts['requests']:,} requests, {facts['responses']:,} stored answers, "
          f"{facts['attempts']:,} attempts, {facts['size_mb']:.0f} MB; C = {toml} (run {run_name(index)})")
    if args.build_only:
        return 0
    report(db, toml, args.repeat, facts)
    scoring(db, index)
    return 0


def report(db: Path, toml: Path, repeat: int, facts: dict) -> None:
    out = Path(tempfile.mkdtemp(prefix="fairsweep-million-export-"))
    print(f"{'command':<48}{'wall s':>8}{'target':>8}{'peak RSS MB':>13}  tries (s)")
    try:
        for label, argv, target in commands(db, toml, out):
            tries = [timed(argv) for _ in range(repeat)]
            wall = statistics.median(t[0] for t in tries)
            rss = max(t[1] for t in tries)
            flag = "" if target is None or wall < target else "  > target"
            print(f"{label:<48}{wall:>8.2f}{'< ' + format(target, 'g') if target else '-':>8}{rss:>13.0f}  "
                  f"{', '.join(f'{t[0]:.2f}' for t in tries)}{flag}", flush=True)
            if argv[0] == "run":
                print("    " + _resume_check(db, facts, tries[-1][2], repeat))
    finally:
        shutil.rmtree(out, ignore_errors=True)


def _resume_check(db: Path, before: dict, stderr: str, repeat: int) -> str:
    """What the resumes did: attempts added (must be 0: nothing sent) and what the scorer said."""
    after = db_facts(db)
    scored = re.search(r"scored mrni: (.*)", stderr)
    return (f"attempts added: {after['attempts'] - before['attempts']}, sessions added: "
            f"{after['sessions'] - before['sessions']} (of {repeat} resumes); scorer: "
            f"{scored.group(1) if scored else 'no output'}")


def scoring(db: Path, index: int) -> None:
    """score_run of run C after its 4,704 answers arrived unlabelled, then with nothing new (in this
    process: the first call also imports scipy when statistics are computed, as a `fairsweep run` does)."""
    config = run_config(db, index)
    conn = open_db(db)
    try:
        with transaction(conn):
            conn.execute("DELETE FROM mrni_labels WHERE request_id IN (SELECT request_id FROM requests WHERE run = ?)",
                         [config.run])
            for table in ("mrni_intervals", "mrni_binomial", "scoring_state"):
                conn.execute(f"DELETE FROM {table} WHERE run = ?", [config.run])
        print(f"\nMRNI-BB scoring of run {config.run} (score_run, in process){'':<8}wall s   CPU s  counts")
        for label in ("after a run of 4,704 new answers", "after a resume that added nothing"):
            wall, cpu = time.perf_counter(), time.process_time()
            counts = score_run(conn, config)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            print(f"  {label:<51}{wall:>8.2f}{cpu:>8.2f}  {counts}", flush=True)
    finally:
        conn.close()


if __name__ == "__main__":
    sys.exit(main())

"""The journal: an answer the process received is on disk before its batch commits, and the next open of
the DB replays it, so a kill -9 costs only the requests in flight at that moment."""

from __future__ import annotations

import datetime as dt
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from helpers import fairsweep_cmd, rows, stored_fingerprints, wait_for_ok
from fairsweep.records import AttemptRow, ResponseRow
from fairsweep.storage.db import open_db
from fairsweep.storage.journal import Journal, decode, encode, replay, segments
from fairsweep.storage.writer import RowWriter

NOW = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.timezone.utc)
# An answer the simulated server sent this long before a kill has been read by the client (loopback): not
# in flight any more, even on a loaded machine.
LOOPBACK_S = 0.3


def attempt(i: int) -> AttemptRow:
    return AttemptRow(f"a{i}", f"r{i}", "s", 1, NOW, 5.0, "ok", None, None, None, None, 3, 2)


def response(i: int) -> ResponseRow:
    return ResponseRow(f"r{i}", f"a{i}", f"answer {i} ünïcode", "stop", 3, 2, 0.001, "m", "fp", 5.0, NOW)


def test_a_line_reads_back_as_the_row_and_a_torn_line_is_skipped():
    for row in (attempt(1), response(1)):
        assert decode(encode(row)) == row
    assert decode(encode(response(2))[:-5]) is None  # the process died in the middle of this write


def test_replay_commits_what_a_dead_process_journaled_once_and_deletes_the_segments(tmp_path):
    db = tmp_path / "j.duckdb"
    open_db(db).close()
    journal = Journal(db)
    for i in range(3):
        journal.append(attempt(i))
        journal.append(response(i))
    journal.seal()  # a batch was being committed when the process died: two segments are left
    journal.append(attempt(3))
    with open(segments(db)[-1], "ab") as fh:
        fh.write(encode(response(3))[:20])  # ... and it died in the middle of the last line
    assert len(segments(db)) == 2
    conn = open_db(db)  # a read-write open replays
    try:
        assert conn.execute("SELECT count(*) FROM attempts").fetchone() == (4,)
        assert conn.execute("SELECT request_id, text FROM responses ORDER BY 1").fetchall() == \
            [(f"r{i}", f"answer {i} ünïcode") for i in range(3)]
        assert segments(db) == []
        assert replay(conn, db) == 0  # nothing left: a second replay has nothing to do
    finally:
        conn.close()


def test_a_segment_whose_rows_were_committed_before_the_kill_stores_each_answer_once(tmp_path):
    """Killed after its batch committed but before the segment was deleted: the replay skips what is stored
    (the answer tables keep their key without an index, migration 0020)."""
    db = tmp_path / "j.duckdb"
    journal = Journal(db)
    for i in range(4):
        journal.append(attempt(i))
        journal.append(response(i))
    journal.seal()
    conn = open_db(db)
    writer = RowWriter(conn, flush_rows=100, flush_ms=60_000)
    writer.add(*(row for i in range(3) for row in (attempt(i), response(i))))  # three of the four committed
    writer.close()
    conn.close()
    conn = open_db(db)  # replays the segment: rows 0-2 are stored, row 3 is not
    try:
        assert conn.execute("SELECT count(*), count(DISTINCT attempt_id) FROM attempts").fetchone() == (4, 4)
        assert conn.execute("SELECT request_id FROM responses ORDER BY 1").fetchall() == [(f"r{i}",) for i in range(4)]
    finally:
        conn.close()


def test_a_process_killed_between_commits_loses_nothing_it_had_received(tmp_path):
    """A writer with a long flush window, its process killed before any commit."""
    db = tmp_path / "k.duckdb"
    script = f"""
import os, sys, datetime as dt
sys.path[:0] = {sys.path!r}
from fairsweep.storage.db import open_db
from fairsweep.storage.journal import Journal
from fairsweep.storage.writer import RowWriter
from test_journal import attempt, response
conn = open_db({str(db)!r})
writer = RowWriter(conn, flush_rows=100000, flush_ms=3600000, journal=Journal({str(db)!r}))
for i in range(50):
    writer.add(attempt(i)); writer.add(response(i))
os.kill(os.getpid(), 9)
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=Path(__file__).parent, capture_output=True, timeout=60)
    assert done.returncode == -signal.SIGKILL, done.stderr
    conn = open_db(db)
    try:
        assert conn.execute("SELECT count(*) FROM responses").fetchone() == (50,)
    finally:
        conn.close()


def test_three_kills_at_random_moments_never_pay_twice_for_an_answer_received(sim, tmp_path, mrni_dir):
    server = sim("--latency-ms", "40", "--latency-jitter-ms", "30")
    db = tmp_path / "kill.duckdb"
    config = tmp_path / "c.toml"
    config.write_text(f'db = "{db}"\nrun = "k"\nbenchmarks = ["mrni"]\nflush_ms = 1000\n\n[[models]]\nname = "sim"\n'
                      f'model = "sim-model"\napi_base = "{server.base_url}"\nmax_concurrency = 16\ntimeout_s = 5\n'
                      "rpm = 1800\n")  # 30 answers/s: each kill lands mid-run
    env = {**os.environ, "FAIRSWEEP_MRNI_DIR": str(mrni_dir)}
    command = fairsweep_cmd("run", "--config", str(config), "--limit", "400", "--no-progress")
    seed = random.randrange(1 << 30)
    print(f"kill seed {seed}")
    rng = random.Random(seed)
    reached_at: list[tuple[set[str], dict[str, int]]] = []
    for _ in range(3):
        ok_before = server.stats()["ok"]
        proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_ok(server, ok_before + 5 + rng.randint(5, 40))  # inside the 1 s flush window most of the time
        killed_at = time.time()
        proc.send_signal(signal.SIGKILL)
        proc.communicate()  # drains and closes its pipes
        stats = server.stats()
        # Answered by the server well before the kill (not in flight): the answer reached the process.
        reached = {p for p, at in stats["answered_at"].items() if at < killed_at - LOOPBACK_S}
        reached_at.append((reached, {p: v["received"] for p, v in stats["per_prompt"].items()}))
        open_db(db).close()  # the next open replays what was journaled
        assert reached <= stored_fingerprints(str(db)), "an answer that reached the process was lost"
    final = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert final.returncode == 0, final.stderr
    served_in_the_end = {k: v["received"] for k, v in server.stats()["per_prompt"].items()}
    for reached, served_then in reached_at:
        assert reached, "each kill should land after some answers arrived"
        again = {p for p in reached if served_in_the_end[p] != served_then[p]}
        assert not again, f"{len(again)} answer(s) that had reached the process were paid for again"
    # the final DB equals an uninterrupted run's
    clean_db = tmp_path / "clean.duckdb"
    clean_config = tmp_path / "clean.toml"
    clean_config.write_text(config.read_text().replace(str(db), str(clean_db)))
    clean = subprocess.run(fairsweep_cmd("run", "--config", str(clean_config), "--limit", "400", "--no-progress"),
                           env=env, capture_output=True, text=True, timeout=300)
    assert clean.returncode == 0, clean.stderr
    query = "SELECT prompt_key, status, response FROM results ORDER BY prompt_key"
    assert rows(str(db), query) == rows(str(clean_db), query)
    assert rows(str(db), "SELECT count(*) FROM responses") == [(400,)]
    assert segments(db) == []

"""Plan while sending (engine/plan_stream.py), as whole `fairsweep run` commands on a real DuckDB file against
the simulated server: the first answers arrive while the plan is still being written, a run killed while it
plans resumes with every request planned once and nothing lost, and a resumed run sends nothing stored. In
process: the first request leaves before the plan's second step, and duplicate prompts are found by key."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time

import pytest
from helpers import fairsweep_cmd, make_prompts, rows, sim_model, stored_fingerprints, sweep

from fairsweep.engine.plan_stream import PLAN_ROWS, PlanFeed
from fairsweep.engine.runner import run_sweep
from fairsweep.engine.work import check_unique
from fairsweep.errors import DataError
from fairsweep.records import Prompt
from fairsweep.sim.state import prompt_fingerprint
from fairsweep.storage.db import open_db

MODELS, PROMPTS = 3, 120


def write_config(tmp_path, server, *, concurrency: int = 4) -> tuple[str, str]:
    db = str(tmp_path / "stream.duckdb")
    models = "".join(f'\n[[models]]\nname = "m{k}"\nmodel = "sim-model-{k}"\napi_base = "{server.base_url}"\n'
                     f"max_concurrency = {concurrency}\ntimeout_s = 5.0\n" for k in range(MODELS))
    config = tmp_path / "stream.toml"
    config.write_text(f'db = "{db}"\nrun = "r1"\nbenchmarks = ["mrni"]\nflush_ms = 50\n{models}')
    return str(config), db


def run_args(config: str) -> list[str]:
    return ["run", "--config", config, "--limit", str(PROMPTS), "--no-progress"]


def env_with(mrni_dir, **knobs) -> dict:
    return {**os.environ, "FAIRSWEEP_MRNI_DIR": str(mrni_dir), **knobs}


def live_planned(db: str) -> int | None:
    """Requests planned so far, read through the running command (storage/live.py); None before it serves."""
    try:
        conn = open_db(db, read_only=True)
    except Exception:  # noqa: BLE001 - not serving yet (or already gone)
        return None
    try:
        return conn.execute("SELECT count(*) FROM requests").fetchone()[0]
    except Exception:  # noqa: BLE001
        return None
    finally:
        conn.close()


def start(config: str, env: dict) -> subprocess.Popen:
    return subprocess.Popen(fairsweep_cmd(*run_args(config)), env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)


def wait_until(proc: subprocess.Popen, condition, what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert proc.poll() is None, f"fairsweep run ended before {what}: {proc.stderr.read().decode()[-400:]}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def kill(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL


def planned_per_model(db: str) -> dict[str, int]:
    return dict(rows(db, "SELECT model, count(*) FROM requests WHERE run = 'r1' GROUP BY model"))


def stored_pairs(db: str) -> set[tuple[str, str]]:
    """(model, prompt fingerprint) of every stored answer (a killed run's journaled answers replayed)."""
    open_db(db).close()
    found = rows(db, "SELECT r.model, p.messages FROM responses s JOIN requests r USING (request_id) "
                     "JOIN prompts p USING (benchmark, prompt_key, prompt_hash)")
    return {(model, prompt_fingerprint(json.loads(messages))) for model, messages in found}


def resume_and_check(config: str, db: str, server, env: dict) -> None:
    """Resume to the end: every planned request stored once, and the server received exactly the missing ones."""
    before = stored_pairs(db)
    server.reset_stats()
    done = subprocess.run(fairsweep_cmd(*run_args(config)), env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-800:]
    assert planned_per_model(db) == {f"m{k}": PROMPTS for k in range(MODELS)}
    # the plan table has no key (migration 0019): each request must still be planned exactly once
    assert rows(db, "SELECT count(DISTINCT request_id), count(*) FROM requests") == [(MODELS * PROMPTS,) * 2]
    assert rows(db, "SELECT count(DISTINCT request_id), count(*) FROM responses") == [(MODELS * PROMPTS,) * 2]
    assert rows(db, "SELECT count(*) FROM requests r ANTI JOIN responses USING (request_id)") == [(0,)]
    after = stored_pairs(db)
    fingerprints = {fp for _, fp in after}
    assert len(fingerprints) == PROMPTS
    received = {fp: s["received"] for fp, s in server.stats()["per_prompt"].items()}
    missing = {fp: sum((f"m{k}", fp) not in before for k in range(MODELS)) for fp in fingerprints}
    assert received == {fp: n for fp, n in missing.items() if n}, "the resumed run sent something already stored"


def test_answers_arrive_while_the_plan_is_still_being_written(sim, tmp_path, mrni_dir):
    """The first request leaves before planning ends: seen through the running command, answers are stored
    while its plan table is still smaller than the whole plan."""
    server = sim()
    config, db = write_config(tmp_path, server)
    proc = start(config, env_with(mrni_dir, FAIRSWEEP_PLAN_ROWS="1"))  # one request per step: a slow plan
    seen: list[tuple[int, int]] = []

    def answered_while_planning() -> bool:
        ok = server.stats()["ok"]  # once answered, the run holds the DB: read it through the run only then
        if ok and (planned := live_planned(db)) is not None:
            seen.append((ok, planned))
        return bool(seen)

    try:
        wait_until(proc, answered_while_planning, "an answer")
        ok, planned = seen[0]
        assert ok >= 1 and planned < MODELS * PROMPTS, seen
    finally:
        if proc.poll() is None:
            kill(proc)


def test_a_run_killed_while_planning_resumes_with_every_request_planned_once(sim, tmp_path, mrni_dir):
    server = sim("--latency-ms", "20")
    config, db = write_config(tmp_path, server)
    env = env_with(mrni_dir, FAIRSWEEP_PLAN_ROWS="1")
    proc = start(config, env)
    wait_until(proc, lambda: server.stats()["ok"] >= 5, "5 answers")
    kill(proc)
    planned = sum(planned_per_model(db).values())
    assert 0 < planned < MODELS * PROMPTS, "the run was meant to be killed while it still planned"
    assert stored_fingerprints(db), "answers were stored before the kill"
    resume_and_check(config, db, server, env_with(mrni_dir))


def test_a_run_killed_three_times_while_planning_plans_each_request_once(sim, tmp_path, mrni_dir):
    """Each kill lands while the plan is still being written, the later ones in a resumed plan (model by
    model, skipping what is planned): no request is planned twice, nothing stored is lost or sent again."""
    server = sim("--latency-ms", "20")
    config, db = write_config(tmp_path, server)
    env = env_with(mrni_dir, FAIRSWEEP_PLAN_ROWS="1")
    planned = 0
    for kill_no in range(3):
        proc = start(config, env)
        wait_until(proc, lambda: server.stats()["ok"] >= 5 * (kill_no + 1)
                   and (live_planned(db) or 0) > planned, f"answers and new plan steps before kill {kill_no + 1}")
        kill(proc)
        now = sum(planned_per_model(db).values())
        assert planned < now < MODELS * PROMPTS, "each kill was meant to land while the run still planned"
        assert rows(db, "SELECT count(DISTINCT request_id) = count(*) FROM requests") == [(True,)]
        planned = now
    resume_and_check(config, db, server, env_with(mrni_dir))


def test_a_resumed_run_with_the_whole_plan_sends_nothing_already_stored(sim, tmp_path, mrni_dir):
    server = sim("--latency-ms", "40")
    config, db = write_config(tmp_path, server, concurrency=2)
    env = env_with(mrni_dir)
    proc = start(config, env)
    wait_until(proc, lambda: server.stats()["ok"] >= 10 and live_planned(db) == MODELS * PROMPTS,
               "the whole plan and 10 answers")
    kill(proc)
    assert sum(planned_per_model(db).values()) == MODELS * PROMPTS
    stored = stored_pairs(db)
    assert 0 < len(stored) < MODELS * PROMPTS
    resume_and_check(config, db, server, env)


@pytest.mark.parametrize("db_exists", [True, False])
def test_the_first_request_leaves_before_the_plan_takes_its_second_step(sim, tmp_path, db_exists):
    """The first window goes out before the next plan step holds the event loop: the server has the first
    request before the second step's transaction began (its rows' planned_at), so the time to the first
    request does not grow with the plan. In a DB that exists the first step is written before it; a new DB
    (engine/opening.py) may open after it, and its first step is written then, before the second."""
    server = sim()  # the planner's wait ends with the first answer, which comes after the server has its request
    db = str(tmp_path / "first.duckdb")
    if db_exists:
        open_db(db).close()
    config = sweep(db, [sim_model(server, max_concurrency=64)])
    assert run_sweep(config, make_prompts(PLAN_ROWS + 64), command="test", progress=False).complete
    first_request = server.stats()["first_request_at"]
    conn = open_db(db, read_only=True)
    first_step, second_step = conn.execute(
        "SELECT min(epoch(planned_at)) FILTER (ordinal < ?), min(epoch(planned_at)) FILTER (ordinal >= ?) "
        "FROM requests", [PLAN_ROWS, PLAN_ROWS]).fetchone()
    conn.close()
    assert first_request < second_step and first_step < second_step
    if db_exists:
        assert first_step < first_request


def test_the_first_plan_step_is_committed_before_the_executor_starts_and_fed_before_the_second(sim, tmp_path):
    """PlanFeed.plan_ahead: the runner writes the first step before the executor starts (the adapters may still
    be importing); asking twice writes it once, and run() feeds that step before it writes the next."""
    server = sim()
    db = str(tmp_path / "ahead.duckdb")
    config = sweep(db, [sim_model(server)])
    prompts = make_prompts(PLAN_ROWS + 64)
    conn = open_db(db)
    try:
        feed = PlanFeed(conn, config, prompts, list(config.models), None, "session-1")
        feed.plan_ahead()
        feed.plan_ahead()
        assert conn.execute("SELECT count(*) FROM requests").fetchone()[0] == PLAN_ROWS
        assert feed.planner.planned == {config.models[0].name: PLAN_ROWS}
        assert server.stats()["first_request_at"] is None  # nothing sent: no executor yet

        async def first_top_up() -> int:
            task = asyncio.create_task(feed.run())
            await feed.primed()
            task.cancel()
            return len(feed.pending[config.models[0].name])

        pending = asyncio.run(first_top_up())
        assert pending > 0
        assert feed.planner.planned[config.models[0].name] == PLAN_ROWS  # fed from the first step, no second yet
        first_window = feed.pending[config.models[0].name]
        first_step = {p.key for p in prompts[:PLAN_ROWS]}
        assert all(item.prompt.key in first_step for item in first_window)
    finally:
        feed.close()
        conn.close()


def test_prompts_are_told_apart_by_key_and_hashed_only_when_a_key_repeats():
    """check_unique: a key given twice with two texts is two prompts; with one text, it is refused. Prompts
    whose keys differ are not hashed before planning (the first request would wait for them)."""
    def prompt(key: str, text: str) -> Prompt:
        return Prompt("toy", key, ({"role": "user", "content": text},), {})

    prompts = [prompt("a", "one"), prompt("b", "two"), prompt("b", "two, reworded")]
    check_unique(prompts)
    assert "prompt_hash" not in vars(prompts[0])  # a key given once: not hashed here
    with pytest.raises(DataError, match="gives prompt 'b' twice"):
        check_unique([*prompts, prompt("b", "two, reworded")])
    with pytest.raises(DataError, match="gives prompt 'a' twice"):
        check_unique([prompt("a", "one"), prompt("a", "one")])
    with pytest.raises(DataError, match="gives prompt 'a' twice"):
        check_unique([prompts[0], prompts[0]])  # the very same prompt object


def test_an_idle_planner_takes_larger_steps_only_when_much_of_the_plan_is_left(server, db_path, monkeypatch):
    """Larger steps go in through NumPy (~15 MB): worth it for a large plan, not for what a run holds anyway."""
    from fairsweep.engine import plan_stream

    conn = open_db(db_path)
    prompts = make_prompts(40)
    specs = [sim_model(server, "a"), sim_model(server, "b")]
    steps = {}
    for idle_from in (81, 80):  # 80 requests are left before the first step
        monkeypatch.setattr(plan_stream, "IDLE_FROM", idle_from)
        planner = plan_stream.Planner(conn, f"r{idle_from}", prompts, specs, step_rows=4, max_rows=8)
        planner.hurry()
        steps[idle_from] = planner.step_prompts
        planner.finish()
        assert planner.planned == {"a": 40, "b": 40}
        planner.close()
    assert steps == {81: 8, 80: plan_stream.IDLE_PLAN_ROWS}
    assert conn.execute("SELECT count(*), count(DISTINCT request_id) FROM requests").fetchone() == (160, 160)
    conn.close()

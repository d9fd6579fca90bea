"""The Ray executor on a real local Ray cluster started here (2 CPUs, no dashboard, every Ray process
bound to 127.0.0.1), against the simulated provider on 127.0.0.1 and real DuckDB files."""

from __future__ import annotations

import csv
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
import ray
from ray._private import ray_constants

from helpers import (fairsweep_cmd, grown, make_prompts, rows, sim_model, stored_fingerprints, sweep, wait_for_ok,
                     wait_for_quiet)
from fairsweep.engine.executors.ray_executor import RayExecutor
from fairsweep.engine.executors.ray_limiter import HORIZON_S, PermitBook, Report
from fairsweep.engine.runner import run_sweep
from fairsweep.engine.retry import RetryPolicy

FAST = RetryPolicy(max_attempts=8, backoff_initial_s=0.02, backoff_max_s=0.3)
GOOD_KEY = "sk-raygood-0123456789abcdefghij"
BAD_KEY = "sk-raybad-0123456789abcdefghijkl"
# last_error_class of an ok row says which retries met an injected fault: history, not a result.
RESULT_COLUMNS = ("model, benchmark, prompt_key, sample, status, response, finish_reason, request_id, "
                  "CASE WHEN status = 'failed' THEN last_error_class END")


@pytest.fixture(scope="module")
def ray_cluster():
    """One cluster for the module. Returns its GCS address (for CLI drivers joining it)."""
    with pytest.MonkeyPatch.context() as mp:
        # Ray turns 127.0.0.1 into the machine's outward address unless it runs as a single-node
        # cluster: say so to this process and to every Ray process it starts.
        mp.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        mp.setattr(ray_constants, "ENABLE_RAY_CLUSTER", False)
        # Workers read API keys from the environment they inherit from the cluster's start, as on a
        # real cluster where keys are exported before `ray start`; keys never travel in tasks.
        mp.setenv("FS_RAY_GOOD_KEY", GOOD_KEY)
        mp.setenv("FS_RAY_BAD_KEY", BAD_KEY)
        ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False,
                 object_store_memory=100 * 2**20)
        try:
            assert [n["NodeManagerAddress"] for n in ray.nodes()] == ["127.0.0.1"]
            yield ray.get_runtime_context().gcs_address
        finally:
            ray.shutdown()


def results(db: str) -> list[tuple]:
    return rows(db, f"SELECT {RESULT_COLUMNS} FROM results ORDER BY model, prompt_key, sample")


def test_ray_gives_the_same_results_rows_as_the_local_executor(ray_cluster, sim, tmp_path):
    server = sim("--fault-500", "0.05", "--fault-malformed", "0.03", "--context-limit", "40", "--latency-ms", "5")
    prompts = make_prompts(150) + [p.__class__(p.benchmark, f"long{i}", p.messages, p.metadata)
                                   for i, p in enumerate(make_prompts(3, words=200))]
    models = [sim_model(server, name="a", max_concurrency=8), sim_model(server, name="b", samples=2)]
    local = run_sweep(sweep(str(tmp_path / "local.duckdb"), models), prompts, command="t", progress=False, policy=FAST)
    executor = RayExecutor(num_workers=2, shard_size=32)
    distributed = run_sweep(sweep(str(tmp_path / "ray.duckdb"), models), prompts, command="t", progress=False,
                            policy=FAST, executor=executor)
    assert local.complete and distributed.complete
    assert [(m.name, m.stored, m.failed) for m in distributed.models] == [("a", 150, 3), ("b", 300, 6)]
    assert [(m.name, m.stored, m.failed) for m in local.models] == [("a", 150, 3), ("b", 300, 6)]
    expected = results(str(tmp_path / "local.duckdb"))
    assert len(expected) == 459
    assert results(str(tmp_path / "ray.duckdb")) == expected
    assert len(executor.stats["shards"]) == 2, executor.stats  # both workers did part of it
    # The driver wrote every worker's attempts (retries included), once each, under its own session.
    assert rows(str(tmp_path / "ray.duckdb"), "SELECT count(DISTINCT session_id), count(*) > 459 FROM attempts") \
        == [(1, True)]


def test_declared_rpm_and_concurrency_hold_across_all_workers_together(ray_cluster, sim, db_path):
    server = sim("--rpm", "1800", "--window-s", "1", "--latency-ms", "100")  # 30 per one-second window
    spec = sim_model(server, rpm=1800, max_concurrency=4)
    executor = RayExecutor(num_workers=2, shard_size=8)  # each worker alone may use all 4 slots
    outcome = run_sweep(sweep(db_path, [spec]), make_prompts(120), command="t", progress=False, policy=FAST,
                        executor=executor)
    stats = server.stats()
    assert outcome.complete
    assert stats["ok"] == 120 and stats["rate_limited"] == 0
    assert max(stats["received_by_second"].values()) <= 30, stats["received_by_second"]
    assert max(stats["received_by_second"].values()) >= 20  # paced near the limit, not far under it
    assert stats["max_in_flight"] <= 4
    assert executor.stats["limiters"]["sim"]["peak_held"] <= 4
    assert len(executor.stats["shards"]) == 2 and min(executor.stats["shards"].values()) >= 3, executor.stats


def test_a_worker_killed_mid_run_loses_nothing_and_stores_nothing_twice(ray_cluster, sim, db_path):
    server = sim("--latency-ms", "40", "--latency-jitter-ms", "10")
    spec = sim_model(server, max_concurrency=8)
    executor = RayExecutor(num_workers=2, shard_size=32, worker_concurrency=4)
    killed: list[int] = []

    def kill_one_worker_mid_run() -> None:
        deadline = time.monotonic() + 60
        while (not executor.worker_pids or server.stats()["ok"] < 60) and time.monotonic() < deadline:
            time.sleep(0.02)
        killed.append(executor.worker_pids[0])
        os.kill(killed[0], signal.SIGKILL)

    killer = threading.Thread(target=kill_one_worker_mid_run, daemon=True)
    killer.start()
    outcome = run_sweep(sweep(db_path, [spec]), make_prompts(400), command="t", progress=False, policy=FAST,
                        executor=executor)
    killer.join(timeout=5)
    assert killed, "the worker was never killed"
    assert outcome.complete, outcome
    assert executor.stats["replaced"] >= 1 and executor.stats["requeued"] >= 1, executor.stats
    assert server.stats()["ok"] < 400 + 40, "far more sends than the killed worker's shards can explain"
    assert rows(db_path, "SELECT count(*), count(DISTINCT request_id) FROM responses") == [(400, 400)]
    assert rows(db_path, "SELECT count(*), count(DISTINCT prompt_key), count(*) FILTER (WHERE status = 'ok') "
                         "FROM results") == [(400, 400, 400)]
    with pytest.raises(ProcessLookupError):
        os.kill(killed[0], 0)


def test_an_auth_failure_stops_only_that_model_across_the_cluster(ray_cluster, sim, db_path):
    server = sim("--api-key", GOOD_KEY, "--latency-ms", "5")
    good = sim_model(server, name="good", api_key_env="FS_RAY_GOOD_KEY", max_concurrency=2)
    bad = sim_model(server, name="bad", api_key_env="FS_RAY_BAD_KEY", max_concurrency=2)
    outcome = run_sweep(sweep(db_path, [good, bad]), make_prompts(40), command="t", progress=False, policy=FAST,
                        executor=RayExecutor(num_workers=2, shard_size=8))
    by_model = {o.name: o for o in outcome.models}
    assert not outcome.complete
    assert by_model["good"].stored == 40 and by_model["good"].stopped is None
    assert by_model["bad"].stored == 0 and "FS_RAY_BAD_KEY" in by_model["bad"].stopped
    assert by_model["bad"].not_sent >= 36
    # At most one 401 per slot of the key's cluster-wide concurrency, plus one per worker not yet told.
    assert server.stats()["errors"]["401"] <= 4
    dumped = rows(db_path, "SELECT string_agg(coalesce(error_message, ''), ' ') FROM attempts")[0][0] or ""
    dumped += rows(db_path, "SELECT string_agg(config::VARCHAR, ' ') FROM runs")[0][0]
    assert GOOD_KEY not in dumped and BAD_KEY not in dumped


# -- the permit book every worker asks (pure logic, no cluster) ------------------------------------------------

def test_booked_sends_never_exceed_the_rate_in_any_window_and_stay_within_the_horizon():
    book = PermitBook(rpm=600, tpm=None, max_concurrency=8, now=1000.0)  # 10/s declared, paced at 9.9/s
    now, sent = 1000.0, []
    while now < 1010:
        times, retry_at = book.book([("m", 10)] * 4, now, lead=0.003)  # two workers' batches, interleaved
        granted = [t for t in times if t is not None]
        assert all(now < t <= now + HORIZON_S for t in granted)
        assert retry_at is None or granted == [] or retry_at >= granted[-1] - HORIZON_S
        sent += granted
        now += 0.05
    assert len(sent) >= 95
    for start in sent:
        assert sum(1 for t in sent if start <= t < start + 1.0) <= 10


def test_tokens_cooldowns_stops_and_slots_are_booked_for_the_whole_cluster():
    book = PermitBook(rpm=None, tpm=6000, max_concurrency=3, now=10.0)  # 99 tokens/s, 9.9 tokens of burst
    times, _ = book.book([("m", 50), ("m", 50)], 10.0, lead=0.0)
    assert times[0] == 10.0 and times[1] is None  # the second must wait ~0.5 s: beyond the horizon
    book.report(Report(events=[("limited", "m", 10.0, 2.0)]), 10.1)  # a 429 asking for 2 s, seen by any worker
    assert book.book([("m", 1)], 10.2, lead=0.0)[0] == [None]
    assert book.book([("m", 1)], 12.0, lead=0.0)[0][0] >= 12.1
    book.report(Report(events=[("stop", "bad", "HTTP 401 (check KEY)")]), 12.2)
    assert book.book([("bad", 1)], 13.0, lead=0.0)[0] == [None] and book.info(0).stopped == {"bad": "HTTP 401 (check KEY)"}
    assert (book.grant("w0", 2), book.grant("w1", 2), book.grant("w1", 1)) == (2, 1, 0)
    book.forget("w0")  # died holding two slots: they come back, and it gets no more
    assert (book.grant("w1", 5), book.grant("w0", 1), book.peak_held) == (2, 0, 3)


def test_the_cluster_breaker_is_the_local_policy_fed_in_order():
    """Events keep their order across a report: an answer between failures resets the streak."""
    book = PermitBook(rpm=None, tpm=None, max_concurrency=4, now=0.0)
    failures = [("endpoint", "dead", "refused", float(t)) for t in range(0, 40, 2)]
    book.report(Report(events=failures[:10] + [("ok", "dead")] + failures[10:]), 40.0)
    assert book.stopped == {}
    book.report(Report(events=[("endpoint", "dead", "refused", float(t)) for t in range(40, 80, 2)]), 80.0)
    assert "refused" in book.stopped["dead"] and book.info(0).stopped == book.stopped


# -- the CLI: `fairsweep run --executor ray --ray-address ADDR`, a driver joining the test's cluster ------------

def write_config(path: Path, db: str, base_url: str) -> Path:
    path.write_text("\n".join([f'db = "{db}"', 'run = "ray"', 'benchmarks = ["mrni"]', "flush_ms = 100", "",
                               "[[models]]", 'name = "sim"', 'model = "sim-model"', f'api_base = "{base_url}"',
                               "max_concurrency = 4", "timeout_s = 5"]) + "\n")
    return path


def cli_run(config: Path, address: str, limit: int) -> list[str]:
    return fairsweep_cmd("run", "--config", str(config), "--limit", str(limit), "--no-progress",
                         "--executor", "ray", "--ray-address", address)


def start_driver(ray_cluster, sim, tmp_path, mrni_dir, latency_ms: int, stdout=subprocess.DEVNULL):
    """A `fairsweep run --executor ray` driver over 200 MRNI-BB prompts: (server, db, config, env, driver)."""
    server = sim("--latency-ms", str(latency_ms))
    db = str(tmp_path / "driver.duckdb")
    config = write_config(tmp_path / "sweep.toml", db, server.base_url)
    env = {**os.environ, "FAIRSWEEP_MRNI_DIR": str(mrni_dir), "FAIRSWEEP_RAY_WORKERS": "2"}
    driver = subprocess.Popen(cli_run(config, ray_cluster, 200), env=env, stdout=stdout, stderr=subprocess.PIPE,
                              text=True)
    return server, db, config, env, driver


def test_a_killed_driver_is_resumed_like_any_run(ray_cluster, sim, tmp_path, mrni_dir):
    server, db, config, env, driver = start_driver(ray_cluster, sim, tmp_path, mrni_dir, 60)
    wait_for_ok(server, 30)
    driver.send_signal(signal.SIGKILL)
    driver.communicate()  # drains and closes its pipes
    first = stored_fingerprints(db)
    assert 0 < len(first) < 200, "the kill should land mid-run"
    wait_for_quiet(server)  # the dead driver's workers have stopped sending
    server.reset_stats()
    resumed = subprocess.run(cli_run(config, ray_cluster, 200), env=env, capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert not (set(server.stats()["per_prompt"]) & first), "a prompt already stored was sent again"
    assert rows(db, "SELECT count(*), count(DISTINCT prompt_key), count(*) FILTER (WHERE status = 'ok') "
                    "FROM results") == [(200, 200, 200)]
    assert rows(db, "SELECT count(*) FROM responses") == [(200,)]


def test_ctrl_c_on_the_driver_commits_what_arrived_and_prints_the_resume_command(ray_cluster, sim, tmp_path,
                                                                                  mrni_dir):
    server, db, _, _, driver = start_driver(ray_cluster, sim, tmp_path, mrni_dir, 100, stdout=subprocess.PIPE)
    wait_for_ok(server, 10)
    driver.send_signal(signal.SIGINT)
    _, err = driver.communicate(timeout=120)
    assert driver.returncode == 130, err
    assert "Resume with" in err and "--executor ray" in err
    answered = server.stats()["ok"]
    stored = rows(db, "SELECT count(*) FROM responses")[0][0]
    assert answered - 4 <= stored <= answered  # only requests in flight (cluster-wide concurrency 4) are lost


def test_a_ray_run_is_read_while_it_writes(ray_cluster, sim, tmp_path, mrni_dir):
    """The driver owns the DB, so it serves the live reads, as a local run does."""
    server, db, config, env, driver = start_driver(ray_cluster, sim, tmp_path, mrni_dir, 60)

    def answered() -> int:
        done = subprocess.run(fairsweep_cmd("query", "--config", str(config), "--format", "csv",
                                            "SELECT count(*) FROM results WHERE status = 'ok'"),
                              env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return int(done.stdout.splitlines()[1])

    def status_done() -> int:
        status = subprocess.run(fairsweep_cmd("status", "--config", str(config)), env=env, capture_output=True,
                                text=True, timeout=60)
        assert status.returncode == 0, status.stderr
        return int(re.search(r"(\d+) / 200", status.stdout).group(1))

    def report_answered(out: Path) -> int:
        report = subprocess.run(fairsweep_cmd("report", "--config", str(config), "--bench", "mrni", "--format",
                                              "csv", "--out", str(out)), env=env, capture_output=True, text=True,
                                timeout=60)
        assert report.returncode == 0, report.stderr
        with open(out / "mrni_conditions.csv", newline="") as fh:
            return sum(int(row["answered"]) for row in csv.DictReader(fh))

    try:
        wait_for_ok(server, 20)
        first = answered(), status_done(), report_answered(tmp_path / "r1")
        second = grown(lambda: (answered(), status_done(), report_answered(tmp_path / "r2")), first, server)
        assert all(0 < a < b for a, b in zip(first, second)), (first, second)  # query, status, report
    finally:
        _, err = driver.communicate(timeout=120)
    assert driver.returncode == 0, err
    assert rows(db, "SELECT count(*) FROM results WHERE status = 'ok'") == [(200,)]

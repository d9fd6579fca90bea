"""Fail fast per model: a dead endpoint or a misspelt model id stops that model (its prompts stay pending,
the same command sends them after the fix); per-prompt final failures stay final until --retry-failed;
fault storms and 429 storms on a healthy server never stop a model."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

from helpers import fairsweep_cmd, rows
from fairsweep.benchmarks.sampling import load_prompts
from fairsweep.config import SweepConfig
from fairsweep.sim.state import estimate_tokens, messages_text


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_config(path: Path, db: Path, models: list[dict], **top) -> Path:
    lines = [f'db = "{db}"', 'run = "ff"', 'benchmarks = ["mrni"]', "flush_ms = 100",
             *(f"{k} = {json.dumps(v)}" for k, v in top.items())]
    for model in models:
        lines += ["", "[[models]]", *(f"{k} = {json.dumps(v)}" for k, v in model.items())]
    path.write_text("\n".join(lines) + "\n")
    return path


def run(config: Path, mrni_dir: Path, *extra: str, limit: int = 40) -> subprocess.CompletedProcess:
    return subprocess.run(fairsweep_cmd("run", "--config", str(config), "--limit", str(limit), "--no-progress",
                                        *extra),
                          env={**os.environ, "FAIRSWEEP_MRNI_DIR": str(mrni_dir)}, capture_output=True, text=True,
                          timeout=240)


def model(name: str, base_url: str, **fields) -> dict:
    return {"name": name, "model": "sim-model", "api_base": base_url, "max_concurrency": 4, "timeout_s": 5, **fields}


def test_a_dead_endpoint_stops_its_model_within_a_minute_and_resumes_after_the_fix(sim, tmp_path, mrni_dir):
    healthy = sim()
    port = free_port()  # nothing listens here: connection refused
    dead_url = f"http://127.0.0.1:{port}/v1"
    config = write_config(tmp_path / "c.toml", tmp_path / "r.duckdb",
                          [model("good", healthy.base_url), model("dead", dead_url)])
    started = time.monotonic()
    first = run(config, mrni_dir)
    took = time.monotonic() - started
    assert first.returncode == 1, first.stderr
    assert took < 60, took
    stop_lines = [line for line in first.stderr.splitlines() if "dead: stopped:" in line]
    assert len(stop_lines) == 1, first.stderr  # one line: the model, the endpoint, the last error, the fix
    assert dead_url in stop_lines[0] and "ClientConnectorError" in stop_lines[0], stop_lines[0]
    assert "run the same command" in stop_lines[0]
    db = str(tmp_path / "r.duckdb")
    assert rows(db, "SELECT model, status, count(*) FROM results GROUP BY ALL ORDER BY 1, 2") == \
        [("dead", "pending", 40), ("good", "ok", 40)]
    fixed = sim("--port", str(port))
    again = run(config, mrni_dir)
    assert again.returncode == 0, again.stderr
    assert fixed.stats()["requests"] == 40  # the dead model's prompts, and nothing the good one had
    assert rows(db, "SELECT count(*) FROM results WHERE status = 'ok'") == [(80,)]


def test_a_misspelt_model_id_stops_after_a_few_requests_and_resumes_after_the_fix(sim, tmp_path, mrni_dir):
    port = free_port()
    server = sim("--port", str(port), "--models", "sim-model")
    config = write_config(tmp_path / "c.toml", tmp_path / "r.duckdb",
                          [model("typo", server.base_url, model="sim-modle", max_concurrency=16)])
    first = run(config, mrni_dir, limit=60)
    assert first.returncode == 1, first.stderr
    assert server.stats()["requests"] <= 20
    assert "typo: stopped:" in first.stderr and "sim-modle" in first.stderr and "model_not_found" in first.stderr
    db = str(tmp_path / "r.duckdb")
    assert rows(db, "SELECT DISTINCT status FROM results") == [("pending",)]  # nothing stored as final
    server.stop()
    deployed = sim("--port", str(port), "--models", "sim-model,sim-modle")  # the fix: the model exists now
    again = run(config, mrni_dir, limit=60)
    assert again.returncode == 0, again.stderr
    assert deployed.stats()["requests"] == 60
    assert rows(db, "SELECT DISTINCT status FROM results") == [("ok",)]


def test_retry_failed_sends_the_final_failures_again_and_nothing_else(sim, tmp_path, mrni_dir):
    port = free_port()
    sizes = sorted(estimate_tokens(messages_text(list(p.messages)))
                   for p in load_prompts(SweepConfig(limit=40), str(mrni_dir)))
    limit = sizes[len(sizes) // 2]  # the longer half of the prompts fail for good: too long for the context
    strict = sim("--port", str(port), "--context-limit", str(limit))
    config = write_config(tmp_path / "c.toml", tmp_path / "r.duckdb", [model("m", strict.base_url)])
    first = run(config, mrni_dir)
    assert first.returncode == 0, first.stderr  # per-prompt final failures are a finished outcome
    db = str(tmp_path / "r.duckdb")
    (failed,) = rows(db, "SELECT count(*) FROM results WHERE status = 'failed'")[0]
    assert 0 < failed < 40
    strict.stop()
    roomy = sim("--port", str(port))
    plain = run(config, mrni_dir)
    assert plain.returncode == 0 and roomy.stats()["requests"] == 0  # final stays final
    other_class = run(config, mrni_dir, "--retry-failed", "invalid_output")
    assert other_class.returncode == 0 and roomy.stats()["requests"] == 0
    retried = run(config, mrni_dir, "--retry-failed", "context_length")
    assert retried.returncode == 0, retried.stderr
    assert roomy.stats()["requests"] == failed  # exactly the failures, nothing already answered
    assert rows(db, "SELECT DISTINCT status FROM results") == [("ok",)]


def test_fault_storms_and_429_storms_on_a_healthy_server_never_stop_a_model(sim, tmp_path, mrni_dir):
    """With a hair-trigger breaker (3 failures, no time floor), a naive one would trip at once here:
    15% of the answers are 5xx, resets or hangs past the timeout, and a 429 storm holds the key."""
    faulty = sim("--fault-500", "0.05", "--fault-reset", "0.05", "--fault-hang", "0.05", "--hang-s", "2",
                 "--latency-ms", "5")
    storm = sim("--rpm", "600", "--window-s", "1", "--latency-ms", "5",  # 10/s, sent unpaced: 429s
                "--no-quota-headers")  # (with them the engine keeps to the quota they report: no storm)
    config = write_config(tmp_path / "c.toml", tmp_path / "r.duckdb",
                          [model("faulty", faulty.base_url, timeout_s=0.5, max_concurrency=8),
                           model("stormy", storm.base_url, max_concurrency=16)],
                          breaker_failures=3, breaker_seconds=0, max_attempts=12)
    done = run(config, mrni_dir, limit=150)
    assert done.returncode == 0, done.stderr
    assert "stopped" not in done.stderr
    db = str(tmp_path / "r.duckdb")
    assert rows(db, "SELECT model, count(*) FROM results WHERE status = 'ok' GROUP BY 1 ORDER BY 1") == \
        [("faulty", 150), ("stormy", 150)]
    classes = {c for (c,) in rows(db, "SELECT DISTINCT error_class FROM attempts WHERE outcome <> 'ok'")}
    assert {"http_500", "connection", "timeout", "rate_limited"} <= classes, classes
    # and the same hair-trigger breaker does stop a model whose endpoint is gone
    port = free_port()
    dead = write_config(tmp_path / "d.toml", tmp_path / "d.duckdb", [model("dead", f"http://127.0.0.1:{port}/v1")],
                        breaker_failures=3, breaker_seconds=0)
    stopped = run(dead, mrni_dir, limit=10)
    assert stopped.returncode == 1 and "dead: stopped:" in stopped.stderr

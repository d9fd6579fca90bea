"""Spend control on the simulated server: the response cache, budget caps, and drift checks."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from helpers import fairsweep_cmd, rows

MODEL = "openai/gpt-4o-mini"  # priced by litellm's packaged map; served here by the simulated server


def config(path: Path, db: str, base_url: str, run: str = "r1", **fields) -> Path:
    model = {"name": "mini", "model": MODEL, "api_base": base_url, "api_key_env": "SIM_SPEND_KEY",
             "max_concurrency": 4, **{k: v for k, v in fields.items() if k in ("max_cost", "temperature", "cache")}}
    top = {k: v for k, v in fields.items() if k in ("strict_drift",)}
    lines = [f'db = "{db}"', f'run = "{run}"', 'benchmarks = ["mrni"]', "flush_ms = 100"]
    lines += [f"{k} = {str(v).lower() if isinstance(v, bool) else v}" for k, v in top.items()]
    lines += ["", "[[models]]"] + [f"{k} = {v!r}".replace("'", '"') if isinstance(v, str) else
                                   f"{k} = {str(v).lower() if isinstance(v, bool) else v}" for k, v in model.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def run(cfg: Path, mrni_dir: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "FAIRSWEEP_MRNI_DIR": str(mrni_dir), "SIM_SPEND_KEY": "sk-sim-not-a-real-key"}
    return subprocess.run(fairsweep_cmd("run", "--config", str(cfg), "--no-progress", *extra), env=env,
                          capture_output=True, text=True, timeout=180)


def test_a_second_run_with_identical_requests_sends_nothing(sim, tmp_path, mrni_dir):
    server = sim()
    db = str(tmp_path / "cache.duckdb")
    first = run(config(tmp_path / "a.toml", db, server.base_url, run="a"), mrni_dir, "--limit", "10")
    assert first.returncode == 0, first.stderr
    server.reset_stats()
    second = run(config(tmp_path / "b.toml", db, server.base_url, run="b"), mrni_dir, "--limit", "12")
    assert second.returncode == 0, second.stderr
    assert server.stats()["requests"] == 2  # only the two prompts run "a" never asked
    assert rows(db, "SELECT count(*) FROM attempts a JOIN requests r USING (request_id) "
                    "WHERE r.run = 'b' AND a.outcome = 'cached'") == [(10,)]
    assert rows(db, "SELECT count(*), count(DISTINCT response) > 1 FROM results WHERE run = 'b' AND status = 'ok'") \
        == [(12, True)]
    assert rows(db, "SELECT sum(cost_usd) FROM responses s JOIN requests r USING (request_id) "
                    "JOIN attempts a ON a.attempt_id = s.attempt_id WHERE r.run = 'b' AND a.outcome = 'cached'") \
        == [(0.0,)]  # served answers cost nothing again
    sampled = run(config(tmp_path / "c.toml", db, server.base_url, run="c", temperature=0.7), mrni_dir,
                  "--limit", "3")
    assert sampled.returncode == 0 and server.stats()["requests"] == 2 + 3  # sampling is never cached


def test_a_budget_cap_stops_at_the_cap_and_a_raised_cap_resumes(sim, tmp_path, mrni_dir):
    server = sim("--latency-ms", "20")
    db = str(tmp_path / "budget.duckdb")
    capped = run(config(tmp_path / "cap.toml", db, server.base_url, max_cost=0.0004), mrni_dir, "--limit", "200")
    assert capped.returncode == 1
    assert "budget reached" in capped.stderr and "raise max_cost" in capped.stderr
    spent, stored, most = rows(db, "SELECT sum(cost_usd), count(*), max(cost_usd) FROM responses")[0]
    assert 0 < stored < 200
    assert 0.0004 <= spent <= 0.0004 + 4 * most  # over by at most the requests in flight (concurrency 4)
    raised = run(config(tmp_path / "raised.toml", db, server.base_url, max_cost=1.0), mrni_dir, "--limit", "200")
    assert raised.returncode == 0, raised.stderr
    assert rows(db, "SELECT count(*), count(DISTINCT request_id) FROM responses") == [(200, 200)]


def test_a_changed_fingerprint_on_resume_is_detected(sim, tmp_path, mrni_dir):
    import socket
    with socket.socket() as probe:  # one port for the whole test: the run's api_base must not change
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])
    db = str(tmp_path / "drift.duckdb")
    before = sim("--port", port, "--fingerprint", "fp_before")
    assert run(config(tmp_path / "a.toml", db, before.base_url), mrni_dir, "--limit", "5").returncode == 0
    before.stop()
    after = sim("--port", port, "--fingerprint", "fp_after", "--model-version", "gpt-4o-mini-2099")
    resumed = run(config(tmp_path / "b.toml", db, after.base_url, cache=False), mrni_dir, "--limit", "8")
    assert resumed.returncode == 0, resumed.stderr
    assert "DRIFT" in resumed.stderr and "fp_after" in resumed.stderr
    events = rows(db, "SELECT field, previous, observed FROM drift_events ORDER BY field")
    assert events == [("provider_model", "gpt-4o-mini", "gpt-4o-mini-2099"),
                      ("system_fingerprint", "fp_before", "fp_after")]
    after.stop()
    third = sim("--port", port, "--fingerprint", "fp_third", "--model-version", "gpt-4o-mini-2099")
    strict = run(config(tmp_path / "c.toml", db, third.base_url, cache=False, strict_drift=True), mrni_dir,
                 "--limit", "60")
    assert strict.returncode == 1 and "strict_drift" in strict.stderr
    assert rows(db, "SELECT count(*) FROM responses WHERE system_fingerprint = 'fp_third'")[0][0] <= 4
    assert rows(db, "SELECT count(*) FROM drift_events WHERE observed = 'fp_third'") == [(1,)]

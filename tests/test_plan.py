"""`fairsweep plan` / `run --dry-run`: counts match what a run then sends; costs are never a silent zero."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from helpers import fairsweep_cmd, rows


def write_config(path: Path, db: str, base_url: str, **extra) -> Path:
    lines = [f'db = "{db}"', 'run = "plan"', 'benchmarks = ["mrni"]', "", "[[models]]", 'name = "sim"',
             'model = "sim-model"', f'api_base = "{base_url}"', "max_concurrency = 4", "rpm = 6000"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in extra.items()]
    lines += ["", "[[models]]", 'name = "gpt"', 'model = "openai/gpt-4o-mini"', f'api_base = "{base_url}"',
              'api_key_env = "SIM_PLAN_KEY"', "rpm = 600", "max_concurrency = 8"]
    path.write_text("\n".join(lines) + "\n")
    return path


def plan_rows(stdout: str) -> dict[str, list[str]]:
    found = {}
    for line in stdout.splitlines():
        cells = [c.strip() for c in re.split(r"[│┃]", line) if c.strip()]
        if cells and cells[0] in ("sim", "gpt", "total"):
            found[cells[0]] = cells
    return found


def test_plan_counts_match_what_the_run_then_sends(sim, tmp_path, mrni_dir):
    server = sim()
    env = {**os.environ, "FAIRSWEEP_MRNI_DIR": str(mrni_dir), "SIM_PLAN_KEY": "sk-test-not-a-real-key"}
    db = str(tmp_path / "plan.duckdb")
    config = write_config(tmp_path / "sweep.toml", db, server.base_url)
    first = subprocess.run(fairsweep_cmd("run", "--config", str(config), "--limit", "10", "--no-progress"),
                           env=env, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    plan = subprocess.run(fairsweep_cmd("plan", "--config", str(config), "--limit", "30"),
                          env=env, capture_output=True, text=True, timeout=120)
    assert plan.returncode == 0, plan.stderr
    table = plan_rows(plan.stdout)
    # model, adapter, planned, stored, cached, to send, ...
    assert table["sim"][2:6] == ["30", "10", "0", "20"]
    assert table["gpt"][2:6] == ["30", "10", "0", "20"]
    assert table["total"][1:5] == ["60", "20", "0", "40"]
    assert "unknown" in table["sim"][9]  # a custom server's price is unknown, never $0
    server.reset_stats()
    dry = subprocess.run(fairsweep_cmd("run", "--config", str(config), "--limit", "30", "--dry-run"),
                         env=env, capture_output=True, text=True, timeout=120)
    assert dry.returncode == 0 and plan_rows(dry.stdout)["total"][4] == "40"
    assert server.stats()["requests"] == 0  # a dry run sends nothing
    run = subprocess.run(fairsweep_cmd("run", "--config", str(config), "--limit", "30", "--no-progress"),
                         env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert server.stats()["ok"] == 40
    assert rows(db, "SELECT count(*) FROM results WHERE status = 'ok'") == [(60,)]

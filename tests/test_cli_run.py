"""`fairsweep run` as a user runs it: a subprocess, a TOML config, the sim server, kills and resumes."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import fairsweep_cmd, rows, stored_fingerprints, wait_for_ok


def write_config(path: Path, db: str, base_url: str, run: str = "sweep", **model) -> Path:
    fields = {"name": "sim", "model": "sim-model", "api_base": base_url, "max_concurrency": 4, "timeout_s": 5,
              **model}
    lines = [f'db = "{db}"', f'run = "{run}"', 'benchmarks = ["mrni"]', "flush_ms = 100", "", "[[models]]"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in fields.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def env_with(mrni_dir: Path) -> dict:
    return {**os.environ, "FAIRSWEEP_MRNI_DIR": str(mrni_dir)}


def test_sigkill_at_a_random_moment_then_resume_loses_and_repeats_nothing(sim, tmp_path, mrni_dir):
    server = sim("--latency-ms", "40", "--latency-jitter-ms", "20", "--fault-500", "0.03")
    db = str(tmp_path / "kill.duckdb")
    config = write_config(tmp_path / "sweep.toml", db, server.base_url)
    seed = random.randrange(1 << 30)
    print(f"kill seed {seed}")
    proc = subprocess.Popen(fairsweep_cmd("run", "--config", str(config), "--limit", "300", "--no-progress"),
                            env=env_with(mrni_dir), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_for_ok(server, random.Random(seed).randint(1, 280))  # a random moment, counted in answers
    proc.send_signal(signal.SIGKILL)
    proc.communicate()  # drains and closes its pipes
    assert proc.returncode == -signal.SIGKILL
    first = stored_fingerprints(db)  # the file opens: no corruption
    assert 0 < len(first) < 300, "the kill should land mid-run"
    server.reset_stats()
    resumed = subprocess.run(fairsweep_cmd("run", "--config", str(config), "--limit", "300", "--no-progress"),
                             env=env_with(mrni_dir), capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    sent_again = set(server.stats()["per_prompt"])
    assert not (sent_again & first), "a prompt already stored was sent again"
    assert rows(db, "SELECT count(*), count(DISTINCT prompt_key), count(*) FILTER (WHERE status = 'ok') "
                    "FROM results") == [(300, 300, 300)]
    assert rows(db, "SELECT count(*) FROM responses") == [(300,)]


def test_ctrl_c_commits_what_arrived_and_prints_the_resume_command(sim, tmp_path, mrni_dir):
    server = sim("--latency-ms", "100")
    db = str(tmp_path / "int.duckdb")
    config = write_config(tmp_path / "sweep.toml", db, server.base_url)
    proc = subprocess.Popen(fairsweep_cmd("run", "--config", str(config), "--limit", "200", "--no-progress"),
                            env=env_with(mrni_dir), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_ok(server, 10)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Resume with" in err and f"run --config {config}" in err
    answered = server.stats()["ok"]
    stored = rows(db, "SELECT count(*) FROM responses")[0][0]
    assert answered - 4 <= stored <= answered  # only the in-flight requests (concurrency 4) can be lost


def test_a_second_writer_gets_a_clear_error(sim, tmp_path, mrni_dir):
    server = sim("--latency-ms", "200")
    db = str(tmp_path / "busy.duckdb")
    config = write_config(tmp_path / "sweep.toml", db, server.base_url)
    first = subprocess.Popen(fairsweep_cmd("run", "--config", str(config), "--limit", "100", "--no-progress"),
                             env=env_with(mrni_dir), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_ok(server, 1)
        second = subprocess.run(fairsweep_cmd("run", "--config", str(config), "--limit", "100", "--no-progress"),
                                env=env_with(mrni_dir), capture_output=True, text=True, timeout=60)
        assert second.returncode == 2
        assert second.stderr.strip().count("\n") == 0
        assert "in use by another fairsweep process" in second.stderr
    finally:
        first.send_signal(signal.SIGINT)
        first.wait(timeout=30)
    assert rows(db, "SELECT count(*) FROM responses")[0][0] > 0


def test_resuming_with_a_changed_configuration_is_refused(sim, tmp_path, mrni_dir):
    server = sim()
    db = str(tmp_path / "conf.duckdb")
    config = write_config(tmp_path / "a.toml", db, server.base_url)
    ok = subprocess.run(fairsweep_cmd("run", "--config", str(config), "--limit", "3", "--no-progress"),
                        env=env_with(mrni_dir), capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    changed = write_config(tmp_path / "b.toml", db, server.base_url, temperature=0.7)
    refused = subprocess.run(fairsweep_cmd("run", "--config", str(changed), "--limit", "3", "--no-progress"),
                             env=env_with(mrni_dir), capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2
    assert "--run NEW_NAME" in refused.stderr and "models" in refused.stderr
    new_run = subprocess.run(fairsweep_cmd("run", "--config", str(changed), "--run", "sweep-2", "--limit", "3",
                                           "--no-progress"),
                             env=env_with(mrni_dir), capture_output=True, text=True, timeout=60)
    assert new_run.returncode == 0, new_run.stderr
    assert rows(db, "SELECT run, count(*) FROM results GROUP BY 1 ORDER BY 1") == [("sweep", 3), ("sweep-2", 3)]


@pytest.mark.parametrize("content, fragment", [
    ("db = \n", "not valid TOML"),
    ('runs = "x"\n', "unknown key"),
    ('[[models]]\nname = "a"\n', "'model' is required"),
    ('[[models]]\nmodel = "openai/x"\napi_key = "sk-123"\n', "api_key_env"),
    ('benchmarks = ["nope"]\n', "unknown benchmark"),
    ('[[models]]\nmodel = "local/smollm2"\nrpm = -5\n', "rpm must be a positive number"),
])
def test_bad_config_gives_one_line_error(tmp_path, content, fragment):
    config = tmp_path / "bad.toml"
    config.write_text(content)
    result = subprocess.run(fairsweep_cmd("run", "--config", str(config)), capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.startswith("fairsweep: error:") and result.stderr.strip().count("\n") == 0
    assert fragment in result.stderr
    assert "sk-123" not in result.stderr


def test_missing_data_gives_the_fetch_hint(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "FAIRSWEEP_MRNI_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "empty-cache")
    result = subprocess.run(fairsweep_cmd("run", "--db", str(tmp_path / "x.duckdb")), env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "fairsweep data fetch" in result.stderr
    assert not (tmp_path / "x.duckdb").exists()  # nothing half-done


def test_local_model_answers_a_few_real_prompts(tmp_path, mrni_dir):
    db = str(tmp_path / "local.duckdb")
    result = subprocess.run(fairsweep_cmd("run", "--db", db, "--run", "local", "--sample", "3", "--seed", "1",
                                          "--no-progress"),
                            env=env_with(mrni_dir), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    answers = rows(db, "SELECT model, status, response, completion_tokens FROM results")
    assert len(answers) == 3
    assert all(a[0] == "smollm2" and a[1] == "ok" and a[2].strip() and a[3] > 0 for a in answers)
    status = subprocess.run(fairsweep_cmd("status", "--db", db), capture_output=True, text=True, timeout=60)
    assert status.returncode == 0 and "smollm2" in status.stdout


def test_python_cli_py_works_from_a_checkout():
    from helpers import REPO
    result = subprocess.run([sys.executable, str(REPO / "cli.py"), "--version"], capture_output=True, text=True,
                            timeout=60, cwd=REPO)
    assert result.returncode == 0 and result.stdout.startswith("fairsweep ")

"""`fairsweep bench init NAME` writes a starter set and a config that run as they are (here on the simulated
server); `bench check` reads a file; existing files are never overwritten."""

from __future__ import annotations

import re
import subprocess

from helpers import fairsweep_cmd, rows


def test_init_writes_a_set_and_config_that_run(tmp_path, server):
    done = subprocess.run(fairsweep_cmd("bench", "init", "mine", "--dir", "sets"), cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    config = (tmp_path / "sets" / "mine.toml").read_text()
    assert 'model = "local/smollm2"' in config and 'path = "mine.jsonl"' in config
    # point the starter config at the simulated server, and run it from another folder
    config = re.sub(r'model = "local/smollm2".*\nmax_tokens = 32', f'name = "sim"\nmodel = "sim-model"\n'
                    f'api_base = "{server.base_url}"', config)
    (tmp_path / "sets" / "mine.toml").write_text(config)
    done = subprocess.run(fairsweep_cmd("run", "--config", "sets/mine.toml", "--no-progress"), cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert rows(str(tmp_path / "mine.duckdb"), "SELECT count(*), count(kind) FROM promptset_scored") == [(4, 4)]
    assert rows(str(tmp_path / "mine.duckdb"), "SELECT count(*) FROM promptset_flips WHERE grp = '(all)'") == [(1,)]
    again = subprocess.run(fairsweep_cmd("bench", "init", "mine", "--dir", "sets"), cwd=tmp_path,
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 2 and "exists" in again.stderr


def test_init_example_and_check(tmp_path):
    done = subprocess.run(fairsweep_cmd("bench", "init", "vig", "--example"), cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    done = subprocess.run(fairsweep_cmd("bench", "check", "vig.jsonl"), cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and "300 items, 150 pairs" in done.stdout, done.stderr
    (tmp_path / "bad.jsonl").write_text('{"id": 1, "prompt": "x", "choices": ["a", "b"], "answer": "c"}\n')
    done = subprocess.run(fairsweep_cmd("bench", "check", "bad.jsonl"), cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and "row 1, column answer" in done.stderr

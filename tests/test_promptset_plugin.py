"""A third-party benchmark: the package under tests/plugin_pkg installed (pip, no network) into a fresh virtual
environment and run there by `fairsweep run` / `report` through its entry point in `fairsweep.benchmarks`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fairsweep.sim.server import SimServerProcess
from fairsweep.sim.state import prompt_fingerprint

from helpers import rows
from package_check import REPO, borrowing_venv, build

PLUGIN = Path(__file__).resolve().parent / "plugin_pkg"


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A new venv with fairsweep's wheel installed (its dependencies borrowed from this environment, as in
    test_package.py) and the plugin pip-installed: the plugin is found through its entry point alone."""
    root = tmp_path_factory.mktemp("venv")
    _, wheel = build(REPO, root / "dist")
    python = Path(borrowing_venv(root / "env", wheel))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    source = shutil.copytree(PLUGIN, root / "src")  # setuptools builds in the source tree: not in the repository
    done = subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index",
                           "--disable-pip-version-check", "--no-cache-dir", str(source)],
                          capture_output=True, text=True, timeout=300, env=env, cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    return python, env


def test_the_plugin_runs_through_its_entry_point(venv, tmp_path):
    python, env = venv
    answers = {prompt_fingerprint([{"role": "user", "content": f"What is {i} + {i + 2}?"}]): f"It is {2 * i + 2 + (i == 4)}."
               for i in range(5)}
    (tmp_path / "answers.json").write_text(json.dumps({"by_fingerprint": answers}))
    with SimServerProcess(["--answers", str(tmp_path / "answers.json")]) as sim:
        (tmp_path / "c.toml").write_text(f'db = "p.duckdb"\nrun = "p1"\nbenchmarks = ["toy-plugin"]\nflush_ms = 50\n'
                                         f'[[models]]\nname = "sim"\nmodel = "sim-model"\napi_base = "{sim.base_url}"\n')
        done = subprocess.run([str(python), "-m", "fairsweep.cli", "run", "--config", "c.toml", "--no-progress"],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "scored toy-plugin: answered 5, accuracy 0.8" in done.stderr
    assert rows(str(tmp_path / "p.duckdb"), "SELECT count(*) FROM toy_plugin_labels") == [(5,)]  # labelled live
    done = subprocess.run([str(python), "-m", "fairsweep.cli", "report", "--config", "c.toml", "--bench", "toy-plugin"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "toy-plugin run p1 model sim: answered 5, accuracy 0.80" in done.stdout, done.stderr


def test_without_the_package_the_name_is_unknown(tmp_path):
    (tmp_path / "c.toml").write_text('benchmarks = ["toy-plugin"]\n')
    done = subprocess.run([sys.executable, "-m", "fairsweep.cli", "run", "--config", "c.toml", "--no-progress"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and 'unknown benchmark "toy-plugin"' in done.stderr, done.stderr

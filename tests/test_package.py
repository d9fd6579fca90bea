"""The package as users get it: the wheel holds every module and data file of the checkout (and the check
notices when packaging leaves a subpackage out), and the wheel, installed into a fresh virtual environment
(not editable, the checkout off sys.path, run from a folder outside it), runs every command: data, a sweep on
the simulated server with the local and the Ray executor (workers importing the installed wheel), report,
export, query and a short run on the embedded model. .ci/run repeats this with a full dependency install."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import fairsweep
from package_check import (REPO, build, borrowing_venv, expected_in_wheel, missing_from_wheel, run_smoke,
                           tracked_files)

# the packaging of the last release: packages listed by hand, engine/batch forgotten
HAND_LISTED_SETUP = """from setuptools import setup
setup(package_dir={"fairsweep": "."}, packages=["fairsweep", "fairsweep.engine", "fairsweep.engine.executors",
      "fairsweep.providers", "fairsweep.storage", "fairsweep.benchmarks", "fairsweep.benchmarks.mrni",
      "fairsweep.benchmarks.gama"], package_data={"fairsweep.storage": ["sql/*.sql", "migrations_sql/*.sql"]})
"""


@pytest.fixture(scope="module")
def dists(tmp_path_factory) -> tuple[Path, Path]:
    return build(REPO, tmp_path_factory.mktemp("dist"))


def test_the_wheel_holds_every_module_and_data_file_of_the_checkout(dists):
    sdist, wheel = dists
    assert missing_from_wheel(REPO, wheel) == []
    expected = expected_in_wheel(REPO)
    for must in ("fairsweep/engine/batch/sender.py", "fairsweep/storage/sql/00_core.sql",
                 "fairsweep/storage/migrations_sql/0001_core.sql", "fairsweep/benchmarks/mrni/pinned.json",
                 "fairsweep/providers/openai_compatible.json", "fairsweep/cli.py"):
        assert must in expected  # the listing is the checkout's, not the packaging's
    assert not any(p.startswith(("fairsweep/tests/", "fairsweep/bench/")) for p in expected)
    assert sdist.name == f"fairsweep-{fairsweep.__version__}.tar.gz"


def test_the_listing_check_names_what_hand_listed_packaging_leaves_out(tmp_path):
    copy = tmp_path / "checkout"
    for rel in tracked_files(REPO):
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, copy / rel)
    (copy / "setup.py").write_text(HAND_LISTED_SETUP)
    subprocess.run(["git", "init", "-q", str(copy)], check=True)
    subprocess.run(["git", "-C", str(copy), "add", "-A"], check=True)
    _, wheel = build(copy, tmp_path / "dist")
    missing = missing_from_wheel(copy, wheel)
    assert "fairsweep/engine/batch/__init__.py" in missing and "fairsweep/engine/batch/sender.py" in missing
    assert "fairsweep/benchmarks/mrni/pinned.json" in missing  # its data files too
    assert "fairsweep/engine/scheduler.py" not in missing and "fairsweep/storage/sql/00_core.sql" not in missing


def test_the_installed_wheel_runs_every_command_outside_the_checkout(dists, tmp_path, mrni_dir):
    _, wheel = dists
    python = borrowing_venv(tmp_path / "venv", wheel)
    (tmp_path / "elsewhere").mkdir()
    log = run_smoke(python, tmp_path / "elsewhere", mrni_dir, fairsweep.__version__)
    print("\n".join(log))
    assert len(log) >= 10
